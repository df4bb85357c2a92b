/**
 * Durations as flags write them: `500ms`, `2s`, `1.5m`, `1h`.
 *
 * @module
 */

const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * Parses a duration into milliseconds; undefined when it is not one.
 *
 * @example
 * ```ts
 * import { parseDuration } from "./duration.ts";
 * console.assert(parseDuration("2s") === 2000);
 * console.assert(parseDuration("soon") === undefined);
 * ```
 */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(text.trim());
  if (!m) return undefined;
  const value = Number(m[1]) * (UNIT_MS[m[2] ?? ""] ?? NaN);
  return Number.isFinite(value) ? Math.round(value) : undefined;
}
