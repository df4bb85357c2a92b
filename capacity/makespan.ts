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
export const DEFAULT_RATE: MigrationRate = {
  mbPerSecond: 1000,
  overheadSeconds: 5,
};

/** A migration rate: MB of guest RAM copied per second, plus a fixed time per migration. */
export interface MigrationRate {
  /** Copy rate, MB per second. */
  readonly mbPerSecond: number;
  /** Fixed time per migration (scheduling, preparing, switch-over), seconds. */
  readonly overheadSeconds: number;
}

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
  const { ramMb, limit, mbPerSecond, overheadSeconds } = input;
  const wave = predictWave({
    hosts: [{ host: "", ramMb, limit }],
    mbPerSecond,
    overheadSeconds,
  });
  return wave.get("") ?? { predictedSeconds: 0, lowerBoundSeconds: 0 };
}

/** One host of a wave, for {@linkcode predictWave}. */
export interface WaveHost {
  /** The host's name (the key of the result). */
  host: string;
  /** Flavor RAM of each VM to migrate off it, MB. */
  ramMb: readonly number[];
  /** Its migration limit in force. */
  limit: number;
  /**
   * Seconds each migration already running on it still takes: each holds
   * one of its slots until then (none: the drain starts with all free).
   */
  busySeconds?: readonly number[] | undefined;
  /**
   * Each VM's migration time, seconds, where a model other than the wave's
   * rate gives it (a live forecast); it stands for `ramMb` and the rate.
   */
  migrationSeconds?: readonly number[] | undefined;
}

/** Input of {@linkcode predictWave}. */
export interface WaveInput {
  /** The hosts drained together. */
  hosts: readonly WaveHost[];
  /** Migrations in flight at once over all of them (the cluster budget); none: unbounded. */
  budget?: number | undefined;
  /** Copy rate, MB per second. */
  mbPerSecond: number;
  /** Fixed time per migration, seconds. */
  overheadSeconds: number;
}

/**
 * Predicts the makespans of drains that run together under one cluster
 * budget: each host's VMs go largest first onto its own `limit` slots, as
 * in {@linkcode predictMakespan}, and a slot the budget frees goes to the
 * host with the most work left. That is what the controller does where it
 * matters most, a host of a low limit beside one of a high limit (the
 * latter leaves slots to the former); between drains of one limit the
 * controller lets a drain refill its own slots, so there one drain may end
 * earlier and another later than predicted. Each host's lower bound is its
 * own, as if it ran alone: the budget can only make a drain longer.
 *
 * @throws {RangeError} when a limit or the budget is not an integer >= 1,
 * a rate is not positive, or a RAM amount or a time in seconds is negative.
 *
 * @example
 * ```ts
 * import { predictWave } from "./makespan.ts";
 * const m = predictWave({
 *   hosts: [{ host: "a", ramMb: [2000, 2000], limit: 2 }, { host: "b", ramMb: [2000, 2000], limit: 2 }],
 *   budget: 2, mbPerSecond: 1000, overheadSeconds: 0,
 * });
 * console.log(m.get("a"), m.get("b"));
 * // { predictedSeconds: 4, lowerBoundSeconds: 2 } { predictedSeconds: 4, lowerBoundSeconds: 2 }
 * ```
 */
export function predictWave(input: WaveInput): Map<string, Makespan> {
  const { mbPerSecond, overheadSeconds, budget } = input;
  if (!(mbPerSecond > 0) || !Number.isFinite(mbPerSecond)) {
    throw new RangeError(`mbPerSecond must be > 0, got ${mbPerSecond}`);
  }
  if (!(overheadSeconds >= 0) || !Number.isFinite(overheadSeconds)) {
    throw new RangeError(
      `overheadSeconds must be >= 0, got ${overheadSeconds}`,
    );
  }
  if (budget !== undefined && (!Number.isInteger(budget) || budget < 1)) {
    throw new RangeError(`budget must be an integer >= 1, got ${budget}`);
  }
  const hosts = input.hosts.map((h) => {
    if (!Number.isInteger(h.limit) || h.limit < 1) {
      throw new RangeError(`limit must be an integer >= 1, got ${h.limit}`);
    }
    for (const r of h.ramMb) {
      if (!(r >= 0) || !Number.isFinite(r)) {
        throw new RangeError(`RAM amounts must be >= 0 MB, got ${r}`);
      }
    }
    const busy = seconds(h.busySeconds ?? [], "busySeconds");
    const queue = (h.migrationSeconds === undefined
      ? h.ramMb.map((r) =>
        r / mbPerSecond + overheadSeconds
      )
      : seconds(h.migrationSeconds, "migrationSeconds"))
      .sort((a, b) => b - a);
    const total = queue.reduce((a, b) => a + b, 0);
    return {
      ...h,
      queue,
      busy,
      next: 0,
      left: total,
      running: busy.length,
      end: Math.max(0, ...busy),
      bound: Math.max(queue[0] ?? 0, total / h.limit, ...busy),
    };
  });
  const cap = budget ?? Number.POSITIVE_INFINITY;
  const running: { end: number; host: (typeof hosts)[number] }[] = hosts
    .flatMap((h) => h.busy.map((end) => ({ end, host: h })));
  let now = 0;
  for (;;) {
    while (running.length < cap) {
      let pick: (typeof hosts)[number] | undefined;
      for (const h of hosts) {
        if (h.running >= h.limit || h.next >= h.queue.length) continue;
        if (pick === undefined || h.left > pick.left) pick = h;
      }
      if (pick === undefined) break;
      const t = pick.queue[pick.next++] ?? 0;
      pick.left -= t;
      pick.running++;
      running.push({ end: now + t, host: pick });
    }
    if (running.length === 0) break;
    now = Math.min(...running.map((r) => r.end));
    for (let i = running.length - 1; i >= 0; i--) {
      const r = running[i];
      if (r === undefined || r.end > now) continue;
      r.host.running--;
      r.host.end = Math.max(r.host.end, r.end);
      running.splice(i, 1);
    }
  }
  return new Map(
    hosts.map((h) => [h.host, {
      predictedSeconds: h.end,
      lowerBoundSeconds: h.bound,
    }]),
  );
}

/** `list` checked: every entry a finite number of seconds >= 0. */
function seconds(list: readonly number[], name: string): number[] {
  for (const t of list) {
    if (!(t >= 0) || !Number.isFinite(t)) {
      throw new RangeError(`${name} must be >= 0 s, got ${t}`);
    }
  }
  return [...list];
}

/** A finished drain: what was predicted and how long it took. */
export interface DrainRecord {
  /** status.predictedMakespanSeconds. */
  predictedSeconds: number;
  /** finishedAt - startedAt, seconds. */
  actualSeconds: number;
}

/**
 * The copy rate calibrated on finished drains (Eviction history): the
 * median of actual / predicted over drains that recorded a prediction
 * scales the base rate (a factor of 2 halves the MB/s and doubles the
 * overhead). The base rate when there is no history.
 *
 * @example
 * ```ts
 * import { calibratedRate } from "./makespan.ts";
 * const r = calibratedRate([{ predictedSeconds: 100, actualSeconds: 200 }]);
 * console.log(r.mbPerSecond, r.overheadSeconds, r.drains); // 500 10 1
 * ```
 */
export function calibratedRate(
  history: readonly DrainRecord[],
  base: MigrationRate = DEFAULT_RATE,
): { mbPerSecond: number; overheadSeconds: number; drains: number } {
  const ratios = history
    .filter((h) => h.predictedSeconds > 0 && h.actualSeconds > 0)
    .map((h) => h.actualSeconds / h.predictedSeconds)
    .sort((a, b) => a - b);
  if (ratios.length === 0) return { ...base, drains: 0 };
  const mid = Math.floor(ratios.length / 2);
  const factor = ratios.length % 2 === 1
    ? ratios[mid] ?? 1
    : ((ratios[mid - 1] ?? 1) + (ratios[mid] ?? 1)) / 2;
  return {
    mbPerSecond: base.mbPerSecond / factor,
    overheadSeconds: base.overheadSeconds * factor,
    drains: ratios.length,
  };
}
