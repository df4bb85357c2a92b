/**
 * Who disabled a nova-compute service: evictor marks the disabled reasons it
 * writes, so that the eviction and maintenance controllers re-enable a
 * service only when evictor disabled it and nothing still wants it disabled,
 * and never undo what a person or another tool did.
 *
 * @module
 */

/** The prefix of every disabled reason evictor writes. */
export const DISABLED_REASON_PREFIX = "evictor: ";

/** Nova's limit for `disabled_reason`. */
const MAX_REASON_LENGTH = 255;

/**
 * The disabled reason evictor writes for `reason`: marked, one line, at most
 * 255 characters.
 *
 * @example
 * ```ts
 * import { ourDisabledReason } from "./compute_service.ts";
 * console.assert(ourDisabledReason("kernel 6.12") === "evictor: kernel 6.12");
 * ```
 */
export function ourDisabledReason(reason: string): string {
  const oneLine = reason.replace(/\s+/g, " ").trim();
  return (DISABLED_REASON_PREFIX + oneLine).slice(0, MAX_REASON_LENGTH);
}

/**
 * Whether a service's disabled reason is one evictor wrote.
 *
 * @example
 * ```ts
 * import { disabledByUs } from "./compute_service.ts";
 * console.assert(disabledByUs("evictor: kernel"));
 * console.assert(!disabledByUs("hardware replacement"));
 * ```
 */
export function disabledByUs(
  disabledReason: string | null | undefined,
): boolean {
  return (disabledReason ?? "").startsWith(DISABLED_REASON_PREFIX);
}
