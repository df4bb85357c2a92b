/**
 * How long after a migration's predicted end to look: an early look spends
 * calls and idles the slot a poll interval, a late one idles it from the end.
 * @module
 */

/** A finished migration: what the model predicted and what it took (ms). */
export interface MarginSample {
  predictedMs: number;
  actualMs: number;
}

/** The most early looks per migration a margin may cost, on average. */
export const MAX_EARLY_LOOKS = 0.2;
/** Margins stay within these fractions of the prediction. */
export const MARGIN_RANGE: readonly [number, number] = [-0.1, 0.25];
/** A look this fraction after a sample's end still counts as after it. */
const HEDGE = 0.01;

/**
 * Mean idle slot time and early looks per migration when looking `margin`
 * past the predicted end, then every `pollMs`.
 *
 * @example
 * ```ts
 * import { marginCost } from "./margin.ts";
 * // done at 10 s and 11 s; looking at 10.5 s: 0.5 s idle, or early (+2 s)
 * const c = marginCost([{ predictedMs: 10_000, actualMs: 10_000 },
 *   { predictedMs: 10_000, actualMs: 11_000 }], 0.05, 2000);
 * console.assert(c.idleMs === 1000 && c.earlyLooks === 0.5);
 * ```
 */
export function marginCost(
  samples: readonly MarginSample[],
  margin: number,
  pollMs: number,
): { idleMs: number; earlyLooks: number } {
  if (!(pollMs > 0)) throw new RangeError(`pollMs must be > 0, got ${pollMs}`);
  if (samples.length === 0) return { idleMs: 0, earlyLooks: 0 };
  let idle = 0;
  let early = 0;
  for (const s of samples) {
    const look = s.predictedMs * (1 + margin);
    const late = s.actualMs - look;
    const looks = late > 0 ? Math.ceil(late / pollMs) : 0;
    idle += look + looks * pollMs - s.actualMs;
    early += looks;
  }
  return { idleMs: idle / samples.length, earlyLooks: early / samples.length };
}

/**
 * The margin that idles least with at most `maxEarlyLooks` early looks
 * per migration; of equal ones the later.
 *
 * @example
 * ```ts
 * import { bestMargin } from "./margin.ts";
 * const spread = [9000, 9500, 10_000, 10_500, 11_000].map((actualMs) => ({
 *   predictedMs: 10_000, actualMs }));
 * // a poll interval long against the spread: past the latest end
 * console.assert(Math.abs(bestMargin(spread, 20_000, 0.03) - 0.11) < 1e-9);
 * ```
 */
export function bestMargin(
  samples: readonly MarginSample[],
  pollMs: number,
  fallback: number,
  maxEarlyLooks = MAX_EARLY_LOOKS,
): number {
  const valid = samples.filter((s) => s.predictedMs > 0 && s.actualMs > 0);
  if (valid.length === 0) return fallback;
  const [lo, hi] = MARGIN_RANGE;
  const clamp = (m: number) => Math.min(hi, Math.max(lo, m));
  // Where the idle time can drop as the margin grows: a look lands just
  // after a sample's end, or one or two polls before it (one look fewer).
  const candidates = [
    ...new Set([
      lo,
      hi,
      ...valid.flatMap((s) =>
        [0, 1, 2].map((k) =>
          clamp((s.actualMs - k * pollMs) / s.predictedMs - 1 + HEDGE)
        )
      ),
    ]),
  ].sort((a, b) => b - a);
  let best = hi;
  let bestIdle = Infinity;
  for (const m of candidates) {
    const cost = marginCost(valid, m, pollMs);
    if (cost.earlyLooks > maxEarlyLooks) continue;
    if (cost.idleMs < bestIdle - 1e-9) {
      best = m;
      bestIdle = cost.idleMs;
    }
  }
  return best;
}
