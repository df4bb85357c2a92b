/**
 * Whether two Eviction statuses are the same (status is written only when changed).
 * @module
 */

import type { EvictionStatus } from "../../models/mod.ts";

/**
 * Structural equality of two statuses; undefined counts as absent, array
 * order matters (every list is in canonical order).
 *
 * @example
 * ```ts
 * import { statusEqual } from "./status_equal.ts";
 * console.assert(statusEqual({ migratedCount: 1 }, { migratedCount: 1, finishedAt: undefined }));
 * console.assert(!statusEqual({ migratedCount: 1 }, { migratedCount: 2 }));
 * console.assert(statusEqual(undefined, {}));
 * ```
 */
export function statusEqual(
  a: EvictionStatus | undefined,
  b: EvictionStatus | undefined,
): boolean {
  return deepEqual(a ?? {}, b ?? {});
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (
    typeof a !== "object" || typeof b !== "object" || a === null || b === null
  ) {
    return typeof a === "number" && typeof b === "number" && Number.isNaN(a) &&
      Number.isNaN(b);
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) {
      return false;
    }
    return a.every((item, i) => deepEqual(item, b[i]));
  }
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  const keys = new Set([...Object.keys(ra), ...Object.keys(rb)]);
  for (const key of keys) {
    if (!deepEqual(ra[key], rb[key])) return false;
  }
  return true;
}
