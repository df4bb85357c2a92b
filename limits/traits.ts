/**
 * Placement trait names as the concurrency limits use them: the syntax
 * placement accepts, the standard namespaces of os-traits, and how two
 * names are compared.
 *
 * Matching of a policy's trait against a host's traits is exact and
 * case-sensitive, as in placement (trait names are upper-case by syntax, so
 * a name that differs only in case is a different, invalid name). Two
 * entries of one policy are duplicates when they differ only in case:
 * {@linkcode traitKey} is the comparison key for that.
 *
 * @module
 */

/** The longest trait name placement accepts. */
export const MAX_TRAIT_NAME_LENGTH = 255;

/** Placement's trait syntax: upper-case letters, digits and underscore. */
export const TRAIT_NAME_PATTERN: RegExp = /^[A-Z0-9_]+$/;

/**
 * The standard trait namespaces: the top-level packages of the os-traits
 * library (`os_traits/compute`, `hw`, `misc`, `owner`, `storage`). Every
 * standard trait starts with one of these; every other trait must start
 * with {@linkcode CUSTOM_TRAIT_PREFIX}.
 */
export const STANDARD_TRAIT_NAMESPACES: readonly string[] = Object.freeze([
  "COMPUTE_",
  "HW_",
  "MISC_",
  "OWNER_",
  "STORAGE_",
]);

/** The prefix of operator-defined traits. */
export const CUSTOM_TRAIT_PREFIX = "CUSTOM_";

/**
 * Whether `name` is a syntactically valid placement trait name: 1 to 255
 * characters, each an upper-case letter, a digit or an underscore.
 *
 * @example
 * ```ts
 * import { isTraitName } from "./traits.ts";
 * console.assert(isTraitName("CUSTOM_HANA_EXCLUSIVE_HOST"));
 * console.assert(!isTraitName("custom_hana"));
 * ```
 */
export function isTraitName(name: unknown): name is string {
  return typeof name === "string" &&
    name.length <= MAX_TRAIT_NAME_LENGTH &&
    TRAIT_NAME_PATTERN.test(name);
}

/**
 * Whether a trait name can match a host at all: it is `CUSTOM_...` or in a
 * standard namespace ({@linkcode STANDARD_TRAIT_NAMESPACES}).
 *
 * @example
 * ```ts
 * import { isKnownTraitNamespace } from "./traits.ts";
 * console.assert(isKnownTraitNamespace("HW_CPU_X86_AVX2"));
 * console.assert(isKnownTraitNamespace("CUSTOM_HANA_EXCLUSIVE_HOST"));
 * console.assert(!isKnownTraitNamespace("HANA_EXCLUSIVE_HOST"));
 * ```
 */
export function isKnownTraitNamespace(name: string): boolean {
  if (name.startsWith(CUSTOM_TRAIT_PREFIX)) {
    return name.length > CUSTOM_TRAIT_PREFIX.length;
  }
  return STANDARD_TRAIT_NAMESPACES.some((ns) =>
    name.startsWith(ns) && name.length > ns.length
  );
}

/**
 * The key under which two trait names of one policy count as the same
 * entry: the name in upper case, so that `custom_a` and `CUSTOM_A` collide.
 *
 * @example
 * ```ts
 * import { traitKey } from "./traits.ts";
 * console.assert(traitKey("Custom_A") === traitKey("CUSTOM_A"));
 * ```
 */
export function traitKey(name: string): string {
  return name.toUpperCase();
}
