/**
 * The verdict of a pure validate function.
 *
 * @module
 */

/**
 * Allowed (possibly with warnings, shown by kubectl) or denied with a
 * one-line message that names the field, the bad value and what is
 * expected.
 */
export type Verdict =
  | { readonly allowed: true; readonly warnings: readonly string[] }
  | {
    readonly allowed: false;
    readonly message: string;
    readonly warnings: readonly string[];
  };

/**
 * Allows, with warnings.
 *
 * @example
 * ```ts
 * import { allowed } from "./verdict.ts";
 * console.assert(allowed(["no effect"]).allowed);
 * ```
 */
export function allowed(warnings: readonly string[] = []): Verdict {
  return { allowed: true, warnings: Object.freeze([...warnings]) };
}

/**
 * Denies with a message, keeping the warnings.
 *
 * @example
 * ```ts
 * import { denied } from "./verdict.ts";
 * const v = denied("metadata.name: got \"x\"; expected \"default\"");
 * console.assert(!v.allowed && v.message.startsWith("metadata.name"));
 * ```
 */
export function denied(
  message: string,
  warnings: readonly string[] = [],
): Verdict {
  return { allowed: false, message, warnings: Object.freeze([...warnings]) };
}
