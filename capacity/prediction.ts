/**
 * A drain's predicted makespan at a cost ({@linkcode DrainCost}): its
 * migrations scheduled as the drain takes them (capacity/makespan.ts
 * predictWave) plus the time per drain, with the range the cost's spread
 * gives. One function for the controller's `status.predictedMakespanSeconds`
 * and `kubectl evictor plan`, so both say the same.
 *
 * @module
 */

import type { DrainCost } from "./history.ts";
import { predictWave, type WaveHost } from "./makespan.ts";

/** A prediction with its range. */
export interface DrainPrediction {
  /** Predicted seconds at the central cost, the time per drain included. */
  predictedSeconds: number;
  /** No schedule beats this at the central cost: time per drain + max(longest, sum / limit). */
  lowerBoundSeconds: number;
  /** The least predicted over the central cost and its spread. */
  lowSeconds: number;
  /** The most predicted over the central cost and its spread. */
  highSeconds: number;
}

/**
 * Predicts the drains of `hosts` run together under `budget` at `cost`,
 * and at each cost of `spread` for the range.
 *
 * @throws {RangeError} as predictWave does, or when a time per drain is
 * negative.
 *
 * @example
 * ```ts
 * import { predictDrains } from "./prediction.ts";
 * const p = predictDrains([{ host: "a", ramMb: [4000, 2000], limit: 1 }], undefined,
 *   { mbPerSecond: 1000, overheadSeconds: 0, fixedSeconds: 10 },
 *   [{ mbPerSecond: 100, overheadSeconds: 0, fixedSeconds: 20 }]);
 * console.log(p.get("a"));
 * // { predictedSeconds: 16, lowerBoundSeconds: 16, lowSeconds: 16, highSeconds: 80 }
 * ```
 */
export function predictDrains(
  hosts: readonly WaveHost[],
  budget: number | undefined,
  cost: DrainCost,
  spread: readonly DrainCost[] = [],
): Map<string, DrainPrediction> {
  const at = (c: DrainCost) => {
    if (!(c.fixedSeconds >= 0) || !Number.isFinite(c.fixedSeconds)) {
      throw new RangeError(`fixedSeconds must be >= 0, got ${c.fixedSeconds}`);
    }
    return {
      fixed: c.fixedSeconds,
      wave: predictWave({
        hosts,
        budget,
        mbPerSecond: c.mbPerSecond,
        overheadSeconds: c.overheadSeconds,
      }),
    };
  };
  const central = at(cost);
  const others = spread.map(at);
  return new Map(hosts.map((h) => {
    const of = (p: typeof central) => {
      const m = p.wave.get(h.host);
      return {
        predicted: p.fixed + (m?.predictedSeconds ?? 0),
        bound: p.fixed + (m?.lowerBoundSeconds ?? 0),
      };
    };
    const c = of(central);
    const all = [c, ...others.map(of)].map((x) => x.predicted);
    return [h.host, {
      predictedSeconds: c.predicted,
      lowerBoundSeconds: c.bound,
      lowSeconds: Math.min(...all),
      highSeconds: Math.max(...all),
    }];
  }));
}
