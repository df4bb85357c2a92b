/**
 * `kubectl evictor status`'s line for a drain's forecast end
 * (status.predictedFinishAt): `NAME: ends ~HH:MM:SS (in Nm)`, the time in
 * UTC, as the controller writes it.
 *
 * @module
 */
import type { Eviction } from "../models/mod.ts";

/**
 * The forecast line of one Eviction; undefined when it has no forecast
 * (finished, or nothing known) or it does not parse.
 *
 * @example
 * ```ts
 * import { forecastLine } from "./forecast_line.ts";
 * const e = { metadata: { name: "n1" }, spec: { hypervisor: "n1", reason: "r" },
 *   status: { predictedFinishAt: "2026-01-01T01:05:18Z" } };
 * console.log(forecastLine(e, Date.parse("2026-01-01T01:00:30Z"))); // n1: ends ~01:05:18 (in 5m)
 * ```
 */
export function forecastLine(e: Eviction, nowMs: number): string | undefined {
  const at = e.status?.predictedFinishAt;
  const ms = at === undefined ? Number.NaN : Date.parse(at);
  if (Number.isNaN(ms)) return undefined;
  const clock = new Date(ms).toISOString().slice(11, 19);
  const left = ms - nowMs;
  // a forecast past its time: the drain is late, not done
  const when = left <= 0 ? "due now" : `in ${Math.ceil(left / 60_000)}m`;
  return `${e.metadata?.name ?? e.spec.hypervisor}: ends ~${clock} (${when})`;
}
