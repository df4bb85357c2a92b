/**
 * The drain's predicted makespan: the VMs' migration times (RAM over an
 * observed copy rate, plus a fixed overhead per migration) scheduled
 * largest first onto `limit` slots, the order the drain takes. Beside it
 * the lower bound no schedule beats: max(longest migration, total / limit).
 *
 * @module
 */

/**
 * The copy rate used when no migration has been observed: 1000 MB of
 * guest RAM per second (a 10 GbE link with dirty-page retransfers), with
 * 5 seconds per migration for scheduling, preparation and switch-over.
 */
export const DEFAULT_RATE = { mbPerSecond: 1000, overheadSeconds: 5 } as const;

/** Input of {@linkcode predictMakespan}. */
export interface MakespanInput {
  /** Flavor RAM of each VM to migrate, MB. */
  ramMb: readonly number[];
  /** Migrations in flight at once (the limit in force). */
  limit: number;
  /** Copy rate, MB per second. */
  mbPerSecond: number;
  /** Fixed time per migration, seconds. */
  overheadSeconds: number;
}

/** A prediction. */
export interface Makespan {
  /** Predicted seconds, largest-first list scheduling on `limit` slots. */
  predictedSeconds: number;
  /** No schedule beats this: max(longest, sum / limit), seconds. */
  lowerBoundSeconds: number;
}

/**
 * Predicts a drain's makespan.
 *
 * @throws {RangeError} when `limit` is not an integer >= 1, a rate is not
 * positive, or a RAM amount is negative.
 *
 * @example
 * ```ts
 * import { predictMakespan } from "./makespan.ts";
 * const m = predictMakespan({ ramMb: [4000, 2000, 2000], limit: 2, mbPerSecond: 1000, overheadSeconds: 0 });
 * console.log(m.predictedSeconds, m.lowerBoundSeconds); // 4 4
 * ```
 */
export function predictMakespan(input: MakespanInput): Makespan {
  const { limit, mbPerSecond, overheadSeconds } = input;
  if (!Number.isInteger(limit) || limit < 1) {
    throw new RangeError(`limit must be an integer >= 1, got ${limit}`);
  }
  if (!(mbPerSecond > 0) || !Number.isFinite(mbPerSecond)) {
    throw new RangeError(`mbPerSecond must be > 0, got ${mbPerSecond}`);
  }
  if (!(overheadSeconds >= 0) || !Number.isFinite(overheadSeconds)) {
    throw new RangeError(
      `overheadSeconds must be >= 0, got ${overheadSeconds}`,
    );
  }
  for (const r of input.ramMb) {
    if (!(r >= 0) || !Number.isFinite(r)) {
      throw new RangeError(`RAM amounts must be >= 0 MB, got ${r}`);
    }
  }
  const times = input.ramMb.map((r) => r / mbPerSecond + overheadSeconds)
    .sort((a, b) => b - a);
  if (times.length === 0) return { predictedSeconds: 0, lowerBoundSeconds: 0 };
  const slots: number[] = new Array(Math.min(limit, times.length)).fill(0);
  for (const t of times) {
    let i = 0;
    for (let j = 1; j < slots.length; j++) {
      if ((slots[j] ?? 0) < (slots[i] ?? 0)) i = j;
    }
    slots[i] = (slots[i] ?? 0) + t;
  }
  const sum = times.reduce((a, b) => a + b, 0);
  return {
    predictedSeconds: Math.max(...slots),
    lowerBoundSeconds: Math.max(times[0] ?? 0, sum / limit),
  };
}

/** A completed migration: how much RAM it moved and how long it took. */
export interface ObservedMigration {
  /** Guest RAM, MB. */
  ramMb: number;
  /** Seconds from trigger to done. */
  seconds: number;
}

/**
 * The copy rate observed over completed migrations (total RAM over total
 * time, after the fixed overhead), or the default when there are none.
 *
 * @example
 * ```ts
 * import { observedRate } from "./makespan.ts";
 * console.log(observedRate([{ ramMb: 8000, seconds: 9 }], 1).mbPerSecond); // 1000
 * ```
 */
export function observedRate(
  migrations: readonly ObservedMigration[],
  overheadSeconds: number = DEFAULT_RATE.overheadSeconds,
): { mbPerSecond: number; overheadSeconds: number; observed: number } {
  let ram = 0;
  let secs = 0;
  let n = 0;
  for (const m of migrations) {
    const copy = m.seconds - overheadSeconds;
    if (!(m.ramMb > 0) || !(copy > 0)) continue;
    ram += m.ramMb;
    secs += copy;
    n++;
  }
  if (n === 0) return { ...DEFAULT_RATE, observed: 0 };
  return { mbPerSecond: ram / secs, overheadSeconds, observed: n };
}
