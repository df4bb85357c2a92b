/**
 * What ended drains teach the next prediction: a drain's cost is a copy
 * rate, a fixed time per migration and a fixed time per drain (the
 * capacity check, disabling the service, waiting for the wave, the last
 * confirms and the settle looks). Ended drains leave what they observed in
 * their Eviction's status and, so that it outlives the Eviction, in their
 * Hypervisor's `status.lastDrain`; this module reads both, newest first.
 * Without history it says how uncertain the documented defaults are: a
 * range up to {@linkcode SLOW_COST}.
 *
 * @module
 */

import { lastDrainOf } from "./last_drain_record.ts";
import {
  calibratedRate,
  DEFAULT_RATE,
  type MigrationRate,
} from "./makespan.ts";

/** What a drain costs: copy rate, time per migration, time per drain. */
export interface DrainCost {
  /** Copy rate, MB of guest RAM per second. */
  readonly mbPerSecond: number;
  /** Fixed time per migration (scheduling, preparing, switch-over), seconds. */
  readonly overheadSeconds: number;
  /** Fixed time per drain (before its first migration and after its last), seconds. */
  readonly fixedSeconds: number;
}

/**
 * The time per drain assumed without history: the wave's 1 s gathering
 * before the capacity check, the check and disabling the service (about
 * 2 s), and the end: the default `--drain-settle` of 6 s between the two
 * empty looks, with a poll interval to see the last migration end.
 */
export const DEFAULT_FIXED_SECONDS = 10;

/** The documented defaults: {@linkcode DEFAULT_RATE} and {@linkcode DEFAULT_FIXED_SECONDS}. */
export const DEFAULT_COST: DrainCost = {
  ...DEFAULT_RATE,
  fixedSeconds: DEFAULT_FIXED_SECONDS,
};

/**
 * The slow end of a prediction without history: 50 MB/s (a shared 1 GbE
 * link with dirty pages copied again), 15 s per migration, 30 s per drain.
 * A real Zed cloud measured 63 MB/s plus 11 s per migration, against the
 * default's 1000 MB/s plus 5 s: the default is the fast end.
 */
export const SLOW_COST: DrainCost = {
  mbPerSecond: 50,
  overheadSeconds: 15,
  fixedSeconds: 30,
};

/** How many of the latest ended drains a prediction learns from. */
export const RATE_HISTORY = 5;

/** What one ended drain learned. */
export interface DrainLesson {
  /** The host it drained. */
  host: string;
  /** When it started, epoch ms (evictor's clock). */
  startedMs: number;
  /** When it ended, epoch ms. */
  endedMs: number;
  /** The migration rate it observed, if it could fit one. */
  rate?: MigrationRate;
  /** Its fixed time per drain, seconds, when it was measured. */
  fixedSeconds?: number;
  /** Its prediction, seconds, when it recorded one. */
  predictedSeconds?: number;
}

/** The status fields of an Eviction that {@linkcode drainLessons} reads. */
export interface EvictionLike {
  /** Its host. */
  spec: { hypervisor: string };
  /** Its status. */
  status?:
    | {
      startedAt?: string | undefined;
      predictedMakespanSeconds?: number | undefined;
      observedMigrationRate?:
        | { mbPerSecond: number; overheadMs: number; migrations: number }
        | undefined;
    }
    | undefined;
}

/**
 * The fields of a Hypervisor that {@linkcode drainLessons} reads: its name,
 * and its record of the latest drain, in its status or, where the CRD
 * prunes that, its annotation (last_drain_record.ts).
 */
export interface HypervisorLike {
  /** Its name (the host), and its annotations. */
  metadata?:
    | {
      name?: string | undefined;
      annotations?: Record<string, string> | undefined;
    }
    | undefined;
  /** Its status. */
  status?:
    | {
      lastDrain?:
        | {
          startedAt: string;
          endedAt: string;
          predictedMakespanSeconds?: number | undefined;
          migrationRate?:
            | { mbPerSecond: number; overheadMs: number; migrations: number }
            | undefined;
          fixedMs?: number | undefined;
        }
        | undefined;
    }
    | undefined;
}

function rateOf(
  r: { mbPerSecond: number; overheadMs: number } | undefined,
): MigrationRate | undefined {
  return r === undefined || !(r.mbPerSecond > 0)
    ? undefined
    : { mbPerSecond: r.mbPerSecond, overheadSeconds: r.overheadMs / 1000 };
}

/**
 * The lessons of ended drains, newest first: each Hypervisor's
 * `status.lastDrain`, and each ended Eviction whose drain no Hypervisor
 * recorded (the record is written when the drain ends; a host without a
 * Hypervisor object has none). One drain is one host and start time.
 * When an Eviction's drain ended is the controller's to say (`endOf`:
 * its status conditions are not capacity's words).
 *
 * @example
 * ```ts
 * import { drainLessons } from "./history.ts";
 * const lessons = drainLessons([], [{ metadata: { name: "n1" }, status: { lastDrain: {
 *   startedAt: "2026-01-01T00:00:00Z", endedAt: "2026-01-01T00:01:30Z",
 *   migrationRate: { mbPerSecond: 63, overheadMs: 11000, migrations: 3 }, fixedMs: 14000 } } }], () => undefined);
 * console.log(lessons[0]?.rate, lessons[0]?.fixedSeconds);
 * // { mbPerSecond: 63, overheadSeconds: 11 } 14
 * ```
 */
export function drainLessons<E extends EvictionLike>(
  evictions: readonly E[],
  hypervisors: readonly HypervisorLike[],
  endOf: (eviction: E) => number | undefined,
): DrainLesson[] {
  const byDrain = new Map<string, DrainLesson>();
  for (const hv of hypervisors) {
    const d = hv.status?.lastDrain ??
      (hv.metadata === undefined ? undefined : lastDrainOf({
        metadata: hv.metadata,
      }));
    const host = hv.metadata?.name;
    if (d === undefined || host === undefined) continue;
    const startedMs = Date.parse(d.startedAt);
    const endedMs = Date.parse(d.endedAt);
    if (Number.isNaN(startedMs) || Number.isNaN(endedMs)) continue;
    const rate = rateOf(d.migrationRate);
    byDrain.set(`${host}@${startedMs}`, {
      host,
      startedMs,
      endedMs,
      ...(rate === undefined ? {} : { rate }),
      ...(d.fixedMs === undefined ? {} : { fixedSeconds: d.fixedMs / 1000 }),
      ...(d.predictedMakespanSeconds === undefined
        ? {}
        : { predictedSeconds: d.predictedMakespanSeconds }),
    });
  }
  for (const e of evictions) {
    const endedMs = endOf(e);
    const startedMs = Date.parse(e.status?.startedAt ?? "");
    const key = `${e.spec.hypervisor}@${startedMs}`;
    if (endedMs === undefined || Number.isNaN(startedMs) || byDrain.has(key)) {
      continue;
    }
    const rate = rateOf(e.status?.observedMigrationRate);
    const predicted = e.status?.predictedMakespanSeconds;
    byDrain.set(key, {
      host: e.spec.hypervisor,
      startedMs,
      endedMs,
      ...(rate === undefined ? {} : { rate }),
      ...(predicted === undefined ? {} : { predictedSeconds: predicted }),
    });
  }
  return [...byDrain.values()].sort((a, b) =>
    b.endedMs - a.endedMs || (a.host < b.host ? -1 : 1)
  );
}

/** A cost, how it was learned, and the costs its uncertainty spans. */
export interface LearnedCost extends DrainCost {
  /**
   * `observed`: the medians of the rates (and fixed times) the latest
   * ended drains measured; `calibrated`: the default scaled by the median
   * actual/predicted makespan of ended drains that measured no rate;
   * `default`: no ended drain to learn from.
   */
  source: "observed" | "calibrated" | "default";
  /** The ended drains it comes from. */
  drains: number;
  /** Their hosts, newest first. */
  hosts: string[];
  /** Whether the time per drain was measured (else assumed). */
  fixedMeasured: boolean;
  /**
   * The costs a prediction's range spans: one per drain learned from, or
   * without history the default and {@linkcode SLOW_COST}.
   */
  spread: DrainCost[];
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1
    ? s[mid] ?? 0
    : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

/**
 * The cost a prediction uses: the medians over the latest
 * {@linkcode RATE_HISTORY} ended drains that observed a rate (their fixed
 * time per drain where measured, else the base's); without one, the base
 * (the documented default unless the operator set another) scaled by the
 * median actual/predicted makespan of ended drains; without those, the
 * base with a range up to {@linkcode SLOW_COST}, headlined at the slow end
 * unless the operator set the base (the documented default is the fast
 * end).
 *
 * @example
 * ```ts
 * import { learnedCost } from "./history.ts";
 * const c = learnedCost([{ host: "n1", startedMs: 0, endedMs: 89_000,
 *   rate: { mbPerSecond: 63, overheadSeconds: 11 }, fixedSeconds: 14 }]);
 * console.log(c.mbPerSecond, c.overheadSeconds, c.fixedSeconds, c.source); // 63 11 14 observed
 * ```
 */
export function learnedCost(
  lessons: readonly DrainLesson[],
  base: DrainCost = DEFAULT_COST,
): LearnedCost {
  const newest = [...lessons].sort((a, b) => b.endedMs - a.endedMs);
  const measuredFixed = newest.flatMap((l) =>
    l.fixedSeconds === undefined ? [] : [l.fixedSeconds]
  ).slice(0, RATE_HISTORY);
  const fixed = measuredFixed.length > 0
    ? median(measuredFixed)
    : base.fixedSeconds;
  const fixedMeasured = measuredFixed.length > 0;
  const observed = newest.filter((l) => l.rate !== undefined).slice(
    0,
    RATE_HISTORY,
  );
  if (observed.length > 0) {
    const spread = observed.map((l) => ({
      mbPerSecond: l.rate?.mbPerSecond ?? base.mbPerSecond,
      overheadSeconds: l.rate?.overheadSeconds ?? base.overheadSeconds,
      fixedSeconds: l.fixedSeconds ?? fixed,
    }));
    return {
      mbPerSecond: median(spread.map((c) => c.mbPerSecond)),
      overheadSeconds: median(spread.map((c) => c.overheadSeconds)),
      fixedSeconds: fixed,
      source: "observed",
      drains: observed.length,
      hosts: observed.map((l) => l.host),
      fixedMeasured,
      spread,
    };
  }
  const records = newest.flatMap((l) =>
    l.predictedSeconds !== undefined && l.predictedSeconds > 0 &&
      l.endedMs > l.startedMs
      ? [{
        host: l.host,
        predictedSeconds: l.predictedSeconds,
        actualSeconds: (l.endedMs - l.startedMs) / 1000,
      }]
      : []
  ).slice(0, RATE_HISTORY);
  const calibrated = calibratedRate(records, base);
  if (calibrated.drains > 0) {
    // A factor of 2 halves the rate and doubles both fixed times.
    const scaled = (factor: number): DrainCost => ({
      mbPerSecond: base.mbPerSecond / factor,
      overheadSeconds: base.overheadSeconds * factor,
      fixedSeconds: fixedMeasured ? fixed : base.fixedSeconds * factor,
    });
    const factor = base.mbPerSecond / calibrated.mbPerSecond;
    return {
      ...scaled(factor),
      source: "calibrated",
      drains: records.length,
      hosts: records.map((r) => r.host),
      fixedMeasured,
      spread: records.map((r) => scaled(r.actualSeconds / r.predictedSeconds)),
    };
  }
  const assumed = { ...base, fixedSeconds: fixed };
  const slow = {
    mbPerSecond: Math.min(assumed.mbPerSecond, SLOW_COST.mbPerSecond),
    overheadSeconds: Math.max(
      assumed.overheadSeconds,
      SLOW_COST.overheadSeconds,
    ),
    fixedSeconds: fixedMeasured
      ? fixed
      : Math.max(fixed, SLOW_COST.fixedSeconds),
  };
  // evictor's own defaults are the range's fast end: with nothing learned
  // and nothing configured, the prediction says the slow end (a person
  // plans a maintenance window by it); a default rate the operator set is
  // theirs to go by
  const builtIn = base.mbPerSecond === DEFAULT_COST.mbPerSecond &&
    base.overheadSeconds === DEFAULT_COST.overheadSeconds;
  return {
    ...(builtIn ? slow : assumed),
    source: "default",
    drains: 0,
    hosts: [],
    fixedMeasured,
    spread: [assumed, slow],
  };
}
