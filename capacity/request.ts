/**
 * What one VM asks Placement for, derived from its flavor as Nova's
 * scheduler derives it: VCPU (PCPU with `hw:cpu_policy=dedicated`),
 * MEMORY_MB and DISK_GB (root + ephemeral + swap rounded up to GB), with
 * the flavor's `resources:*` extra specs overriding or adding classes and
 * `trait:*=required|forbidden` adding traits.
 *
 * Numbered request groups (`resources1:*`, `trait1:*`) are folded into the
 * one group: the check treats each compute host as one provider.
 *
 * @module
 */

import type { Resources } from "./assign.ts";

/** A flavor as embedded in a server (Nova 2.47+). */
export interface FlavorSpec {
  /** vCPUs. */
  vcpus: number;
  /** RAM, MB. */
  ramMb: number;
  /** Root disk, GB. */
  disk?: number;
  /** Ephemeral disk, GB. */
  ephemeral?: number;
  /** Swap, MB. */
  swap?: number;
  /** Extra specs. */
  extraSpecs?: Readonly<Record<string, string>>;
}

/** A VM's request to Placement. */
export interface ResourceRequest {
  /** Amounts per resource class (classes with 0 left out). */
  resources: Resources;
  /** Required traits, sorted. */
  required: string[];
  /** Forbidden traits, sorted. */
  forbidden: string[];
}

const RESOURCE_KEY = /^resources\d*:([A-Z0-9_]+)$/;
const TRAIT_KEY = /^trait\d*:([A-Z0-9_]+)$/;

/**
 * The Placement request of a flavor.
 *
 * @throws {TypeError} when a `resources:*` amount is not a non-negative
 * integer or a `trait:*` value is neither `required` nor `forbidden`.
 *
 * @example
 * ```ts
 * import { requestOfFlavor } from "./request.ts";
 * const r = requestOfFlavor({ vcpus: 2, ramMb: 4096, disk: 20, swap: 512,
 *   extraSpecs: { "trait:HW_CPU_X86_AVX2": "required" } });
 * console.log(r.resources, r.required); // { VCPU: 2, MEMORY_MB: 4096, DISK_GB: 21 } [ "HW_CPU_X86_AVX2" ]
 * ```
 */
export function requestOfFlavor(flavor: FlavorSpec): ResourceRequest {
  const specs = flavor.extraSpecs ?? {};
  const dedicated = specs["hw:cpu_policy"] === "dedicated";
  const base: Record<string, number> = {
    [dedicated ? "PCPU" : "VCPU"]: flavor.vcpus,
    MEMORY_MB: flavor.ramMb,
    DISK_GB: (flavor.disk ?? 0) + (flavor.ephemeral ?? 0) +
      Math.ceil((flavor.swap ?? 0) / 1024),
  };
  const amounts: Record<string, number> = { ...base };
  const required = new Set<string>();
  const forbidden = new Set<string>();
  // The unnumbered group overrides the flavor's amounts; numbered groups
  // add to them.
  const keys = Object.keys(specs).sort((a, b) =>
    Number(/^resources\d/.test(a)) - Number(/^resources\d/.test(b)) ||
    (a < b ? -1 : a > b ? 1 : 0)
  );
  for (const key of keys) {
    const value = specs[key] ?? "";
    const r = RESOURCE_KEY.exec(key);
    if (r !== null) {
      const rc = r[1] ?? "";
      if (!/^\d+$/.test(value)) {
        throw new TypeError(
          `flavor extra spec ${key}=${value}: expected a non-negative integer amount`,
        );
      }
      amounts[rc] = key.startsWith("resources:")
        ? Number(value)
        : (amounts[rc] ?? 0) + Number(value);
      continue;
    }
    const t = TRAIT_KEY.exec(key);
    if (t !== null) {
      const trait = t[1] ?? "";
      if (value === "required") required.add(trait);
      else if (value === "forbidden") forbidden.add(trait);
      else {
        throw new TypeError(
          `flavor extra spec ${key}=${value}: expected "required" or "forbidden"`,
        );
      }
    }
  }
  const resources: Record<string, number> = {};
  for (const [rc, n] of Object.entries(amounts)) if (n > 0) resources[rc] = n;
  return {
    resources,
    required: [...required].sort(),
    forbidden: [...forbidden].sort(),
  };
}
