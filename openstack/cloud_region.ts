/**
 * The `regions:` list of a cloud in clouds.yaml, as openstacksdk reads it:
 * each entry a region name, or `{name, values}` whose `values` override the
 * cloud's settings in that region. The region used is the one asked for
 * (`--os-region-name`, else `OS_REGION_NAME`, else `region_name`: the
 * openstack client's order), else the first of the list. Pure: the caller
 * names the file and the key in its errors.
 *
 * @module
 */

/** One region of a cloud, with the settings it overrides there. */
export interface CloudRegion {
  /** The region's name, as the service catalog names it. */
  readonly name: string;
  /** Settings of the cloud's entry that this region overrides. */
  readonly values: Readonly<Record<string, unknown>>;
}

const ENTRY = "a region name or a mapping {name: ..., values: {...}}";

function isMapping(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Reads a cloud's `regions:` value.
 *
 * @throws {TypeError} whose message starts with the key in the cloud's entry
 * (`regions[1].name: ...`) and says what is expected.
 *
 * @example
 * ```ts
 * import { expandRegions } from "./cloud_region.ts";
 * const regions = expandRegions([
 *   "RegionOne",
 *   { name: "RegionTwo", values: { interface: "internal" } },
 * ]);
 * console.log(regions[1]?.values); // { interface: "internal" }
 * ```
 */
export function expandRegions(raw: unknown): CloudRegion[] {
  if (!Array.isArray(raw)) {
    throw new TypeError(
      `regions: got ${
        isMapping(raw) ? "a mapping" : JSON.stringify(raw)
      }; expected a list of entries, each ${ENTRY}`,
    );
  }
  return raw.map((entry: unknown, i): CloudRegion => {
    const at = `regions[${i}]`;
    if (typeof entry === "string" && entry !== "") {
      return { name: entry, values: {} };
    }
    if (!isMapping(entry)) {
      throw new TypeError(
        `${at}: got ${JSON.stringify(entry)}; expected ${ENTRY}`,
      );
    }
    const { name, values } = entry;
    if (typeof name !== "string" || name === "") {
      throw new TypeError(
        `${at}.name: got ${
          name === undefined ? "nothing" : JSON.stringify(name)
        }; expected the region's name (a non-empty string)`,
      );
    }
    if (values !== undefined && !isMapping(values)) {
      throw new TypeError(
        `${at}.values: got ${
          JSON.stringify(values)
        }; expected a mapping of the cloud's settings for region "${name}"`,
      );
    }
    return { name, values: values ?? {} };
  });
}

/**
 * The region a cloud is used in: `wanted` when the list has it, the first
 * of the list when nothing is wanted (openstacksdk's choice), undefined
 * when `wanted` is not in the list (or the list is empty: the caller treats
 * an empty list as none, as openstacksdk does).
 *
 * @example
 * ```ts
 * import { chooseRegion } from "./cloud_region.ts";
 * const regions = [
 *   { name: "RegionOne", values: {} },
 *   { name: "RegionTwo", values: {} },
 * ];
 * console.log(chooseRegion(regions, undefined)?.name); // RegionOne
 * console.log(chooseRegion(regions, "RegionTwo")?.name); // RegionTwo
 * console.log(chooseRegion(regions, "RegionThree")); // undefined
 * ```
 */
export function chooseRegion(
  regions: readonly CloudRegion[],
  wanted: string | undefined,
): CloudRegion | undefined {
  if (wanted === undefined) return regions[0];
  return regions.find((r) => r.name === wanted);
}

/** The region asked for, and where it was asked: used in error messages. */
export interface WantedRegion {
  /** The region's name; undefined when none is asked for. */
  readonly value: string | undefined;
  /** The flag, variable or file key that named it (`OS_REGION_NAME`, ...). */
  readonly label: string;
}

/** Where a region may be asked for, each value possibly unset or empty. */
export interface RegionSources {
  /** The command's flag (`--os-region-name`) and its name. */
  readonly flag?: { readonly value: string | undefined; readonly name: string };
  /** `OS_REGION_NAME`. */
  readonly env: string | undefined;
  /** The cloud's `region_name` in clouds.yaml, and how to name that key. */
  readonly file?: {
    readonly value: string | undefined;
    readonly label: string;
  };
}

function given(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === "" ? undefined : v;
}

/**
 * The region asked for, as openstackclient orders its sources: the flag,
 * else `OS_REGION_NAME` (the flag's default there, so it wins over the
 * file), else the cloud's `region_name`. Empty values count as unset.
 *
 * @example
 * ```ts
 * import { wantedRegion } from "./cloud_region.ts";
 * const w = wantedRegion({
 *   env: "RegionTwo",
 *   file: { value: "RegionOne", label: "clouds.yaml: clouds.c.region_name" },
 * });
 * console.log(w); // { value: "RegionTwo", label: "OS_REGION_NAME" }
 * ```
 */
export function wantedRegion(src: RegionSources): WantedRegion {
  const flag = given(src.flag?.value);
  if (flag !== undefined && src.flag !== undefined) {
    return { value: flag, label: src.flag.name };
  }
  const env = given(src.env);
  if (env !== undefined) return { value: env, label: "OS_REGION_NAME" };
  const file = given(src.file?.value);
  if (file !== undefined && src.file !== undefined) {
    return { value: file, label: src.file.label };
  }
  return { value: undefined, label: "OS_REGION_NAME" };
}
