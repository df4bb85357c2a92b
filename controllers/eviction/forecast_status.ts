/**
 * status.predictedFinishAt from a pass's forecast: a write costs an API call, so a small move is not written.
 * @module
 */

import type { EvictionStatus } from "../../models/mod.ts";

/** A forecast within this of the written one keeps it (ms)... */
export const FORECAST_SLACK_MS = 30_000;
/** ...or within this share of the time left, when that is more. */
export const FORECAST_SLACK_SHARE = 0.1;

/**
 * The value to write: the written one while the forecast is within the slack, else it (to the second).
 *
 * @example
 * ```ts
 * import { forecastToWrite } from "./forecast_status.ts";
 * const now = Date.parse("2026-01-01T00:00:00Z");
 * const kept = "2026-01-01T00:10:00.000Z";
 * console.assert(forecastToWrite(kept, now + 620_000, now) === kept); // 20 s off
 * console.assert(forecastToWrite(kept, now + 700_000, now) === "2026-01-01T00:11:40.000Z");
 * ```
 */
export function forecastToWrite(
  written: string | undefined,
  forecastMs: number | undefined,
  nowMs: number,
): string | undefined {
  if (forecastMs === undefined || !Number.isFinite(forecastMs)) {
    return undefined;
  }
  const writtenMs = written === undefined ? Number.NaN : Date.parse(written);
  const slack = Math.max(
    FORECAST_SLACK_MS,
    FORECAST_SLACK_SHARE * Math.max(0, forecastMs - nowMs),
  );
  if (!Number.isNaN(writtenMs) && Math.abs(forecastMs - writtenMs) <= slack) {
    return written;
  }
  return new Date(Math.ceil(forecastMs / 1000) * 1000).toISOString();
}

/**
 * `next` with status.predictedFinishAt by {@linkcode forecastToWrite}; removed once finished.
 *
 * @example
 * ```ts
 * import { withForecast } from "./forecast_status.ts";
 * const now = new Date("2026-01-01T00:00:00Z");
 * const next = withForecast({}, now.getTime() + 60_000, now);
 * console.assert(next.predictedFinishAt === "2026-01-01T00:01:00.000Z");
 * console.assert(!("predictedFinishAt" in withForecast({ ...next, finishedAt: now.toISOString() }, 0, now)));
 * ```
 */
export function withForecast(
  next: EvictionStatus,
  forecastMs: number | undefined,
  now: Date,
): EvictionStatus {
  const { predictedFinishAt: written, ...rest } = next;
  const at = next.finishedAt === undefined
    ? forecastToWrite(written, forecastMs, now.getTime())
    : undefined;
  return at === undefined ? rest : { ...rest, predictedFinishAt: at };
}
