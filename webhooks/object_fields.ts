/**
 * Reading the few metadata fields the validators need from an object that
 * has not been parsed yet.
 *
 * @module
 */

import { quoteValue } from "../limits/quote.ts";
import { isRecord } from "../limits/validation.ts";
import { isDeleting, type KubeObject } from "../framework/kind.ts";

/**
 * `metadata.name` of an object, when it is a string.
 *
 * @example
 * ```ts
 * import { objectName } from "./object_fields.ts";
 * console.assert(objectName({ metadata: { name: "default" } }) === "default");
 * console.assert(objectName({}) === undefined);
 * ```
 */
export function objectName(obj: unknown): string | undefined {
  if (!isRecord(obj)) return undefined;
  const meta = obj["metadata"];
  if (!isRecord(meta)) return undefined;
  const name = meta["name"];
  return typeof name === "string" ? name : undefined;
}

/**
 * Whether the object is being deleted (`metadata.deletionTimestamp` set):
 * such an object must stay writable (finalizers are removed by updates).
 *
 * @example
 * ```ts
 * import { isBeingDeleted } from "./object_fields.ts";
 * console.assert(isBeingDeleted({ metadata: { deletionTimestamp: "2026-01-01T00:00:00Z" } }));
 * ```
 */
export function isBeingDeleted(obj: unknown): boolean {
  return isRecord(obj) && isRecord(obj["metadata"]) &&
    isDeleting(obj as KubeObject);
}

/**
 * Formats a list of names for a message: quoted and escaped, at most `max` of them,
 * then `and N more`.
 *
 * @example
 * ```ts
 * import { nameList } from "./object_fields.ts";
 * console.assert(nameList(["a", "b", "c"], 2) === '"a", "b" and 1 more');
 * ```
 */
export function nameList(items: readonly string[], max = 5): string {
  const shown = items.slice(0, max).map((n) => quoteValue(n));
  const rest = items.length - shown.length;
  return rest > 0 ? `${shown.join(", ")} and ${rest} more` : shown.join(", ");
}
