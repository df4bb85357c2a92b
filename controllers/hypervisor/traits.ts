/**
 * Pure decisions about a host's custom traits: which CUSTOM_ traits of
 * spec.customTraits to add to the resource provider, which to remove, and
 * which evictor manages afterwards. evictor removes only traits it added
 * itself (recorded in an annotation), never CUSTOM_ traits someone else set.
 *
 * @module
 */

/** The annotation that records the CUSTOM_ traits evictor added to a host. */
export const MANAGED_TRAITS_ANNOTATION = "kvm.cloud.sap/evictor-managed-traits";

const CUSTOM_TRAIT = /^CUSTOM_[A-Z0-9_]{1,248}$/;

/**
 * Whether `name` is a valid custom trait name.
 *
 * @example
 * ```ts
 * import { isCustomTrait } from "./traits.ts";
 * console.assert(isCustomTrait("CUSTOM_GPU") && !isCustomTrait("HW_CPU_X86_AVX"));
 * ```
 */
export function isCustomTrait(name: string): boolean {
  return CUSTOM_TRAIT.test(name);
}

/**
 * Reads the managed-traits annotation (comma separated). Entries that are
 * not custom trait names are returned in `invalid`, so that the caller can
 * name them, and never managed (we could otherwise remove a standard trait).
 *
 * @example
 * ```ts
 * import { parseManagedTraits } from "./traits.ts";
 * const r = parseManagedTraits("CUSTOM_B,CUSTOM_A,bogus");
 * console.assert(r.managed.join() === "CUSTOM_A,CUSTOM_B" && r.invalid.join() === "bogus");
 * ```
 */
export function parseManagedTraits(
  annotation: string | undefined,
): { managed: string[]; invalid: string[] } {
  const managed = new Set<string>();
  const invalid: string[] = [];
  for (const raw of (annotation ?? "").split(",")) {
    const t = raw.trim();
    if (t === "") continue;
    if (isCustomTrait(t)) managed.add(t);
    else invalid.push(t);
  }
  return { managed: [...managed].sort(), invalid };
}

/**
 * The annotation value for a set of managed traits (sorted, comma separated).
 *
 * @example
 * ```ts
 * import { formatManagedTraits } from "./traits.ts";
 * console.assert(formatManagedTraits(["CUSTOM_B", "CUSTOM_A"]) === "CUSTOM_A,CUSTOM_B");
 * ```
 */
export function formatManagedTraits(managed: Iterable<string>): string {
  return [...new Set(managed)].sort().join(",");
}

/** What to do with a resource provider's custom traits. */
export interface TraitPlan {
  /** Wanted traits the provider lacks: evictor adds (and claims) them. */
  add: string[];
  /** Traits evictor added that spec.customTraits no longer lists. */
  remove: string[];
  /** The provider's traits afterwards (sorted). */
  next: string[];
  /**
   * The traits evictor manages afterwards: the wanted ones it manages
   * already or adds now. A wanted trait someone else had set stays theirs.
   */
  managed: string[];
}

/**
 * Plans the custom traits of one resource provider.
 *
 * @param current the provider's traits now
 * @param desired spec.customTraits
 * @param managed the traits evictor added earlier (the annotation)
 *
 * @example
 * ```ts
 * import { planTraits } from "./traits.ts";
 * const p = planTraits(["CUSTOM_OLD", "CUSTOM_THEIRS", "HW_CPU_X86_AVX"], ["CUSTOM_NEW"], ["CUSTOM_OLD"]);
 * console.assert(p.add.join() === "CUSTOM_NEW" && p.remove.join() === "CUSTOM_OLD");
 * console.assert(p.next.join() === "CUSTOM_NEW,CUSTOM_THEIRS,HW_CPU_X86_AVX");
 * ```
 */
export function planTraits(
  current: readonly string[],
  desired: readonly string[],
  managed: readonly string[],
): TraitPlan {
  const cur = new Set(current);
  const want = new Set(desired.filter(isCustomTrait));
  const ours = new Set(managed.filter(isCustomTrait));
  const add = [...want].filter((t) => !cur.has(t)).sort();
  const remove = [...ours].filter((t) => !want.has(t) && cur.has(t)).sort();
  const dropped = new Set(remove);
  const next = [...new Set([...current, ...add])]
    .filter((t) => !dropped.has(t)).sort();
  const managedAfter = [...want].filter((t) => ours.has(t) || !cur.has(t))
    .sort();
  return { add, remove, next, managed: managedAfter };
}
