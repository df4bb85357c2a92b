/**
 * The Nova and Placement calls a simulator served, by route: what both
 * drain benchmarks report as Nova calls (Keystone's are not counted).
 *
 * @module
 */

/**
 * Calls by route (`METHOD /path`), Keystone's left out, most first.
 *
 * @example
 * ```ts
 * import { callsByRoute, totalCalls } from "./calls.ts";
 * const routes = callsByRoute({
 *   "GET /compute/v2.1/servers/detail": 3,
 *   "POST /identity/v3/auth/tokens": 1,
 *   "POST /compute/v2.1/servers/{id}/action": 5,
 * });
 * console.log(Object.keys(routes)[0], totalCalls(routes)); // POST ... 8
 * ```
 */
export function callsByRoute(
  counted: Readonly<Record<string, number>>,
): Record<string, number> {
  return Object.fromEntries(
    Object.entries(counted)
      .filter(([route]) => !route.includes("/identity/"))
      .sort(([, a], [, b]) => b - a),
  );
}

/** All calls of {@linkcode callsByRoute}'s answer. */
export function totalCalls(byRoute: Readonly<Record<string, number>>): number {
  return Object.values(byRoute).reduce((a, n) => a + n, 0);
}
