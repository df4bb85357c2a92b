/**
 * When to look again. A drain learns how long its migrations take (a line
 * through duration against flavor RAM, per kind, from the migrations that
 * completed, as Nova's own records time them) and schedules the next pass
 * when the earliest running migration is expected to finish: a freed slot
 * is refilled at once, and Nova is not polled in between. Until a drain has
 * samples of its own, what the process's other drains learned times it.
 *
 * One clock: every absolute time here is the controller's clock (the
 * injected one, which runs at the simulator's rate in tests). Nova's
 * timestamps are only ever subtracted from each other (a duration), never
 * compared with the controller's clock.
 *
 * @module
 */

import type { EvictionStatusInFlightItem } from "../../models/mod.ts";
import {
  kindOfMigrationType,
  type MigrationKind,
  parseNovaTime,
} from "./nova_states.ts";
import type { ObservedMigration } from "./observation.ts";

/** A finished migration: how big, how long (ms). */
interface Sample {
  ramMb: number;
  durationMs: number;
}

/** Record statuses of a migration that waits (Nova's per-host queue). */
const WAITING: ReadonlySet<string> = new Set(["accepted", "queued"]);
/** Record statuses of a migration that is done copying. */
const COMPLETED: ReadonlySet<string> = new Set(["completed", "finished"]);

const MAX_SAMPLES = 64;
/** Wake this much after the expected end (durations jitter). */
export const LATE_MARGIN = 0.03;
/** The margin while Nova queues migrations of the host (it stays busy). */
export const QUEUED_MARGIN = 0.25;

/**
 * A fitted line `durationMs = a + b * ramMb`, or undefined without samples.
 *
 * @example
 * ```ts
 * import { fitDuration } from "./pacing.ts";
 * const f = fitDuration([{ ramMb: 1000, durationMs: 3000 }, { ramMb: 3000, durationMs: 5000 }]);
 * console.assert(f !== undefined && Math.abs(f.a - 2000) < 1e-6 && Math.abs(f.b - 1) < 1e-9);
 * ```
 */
export function fitDuration(
  samples: readonly Sample[],
): { a: number; b: number } | undefined {
  if (samples.length === 0) return undefined;
  const n = samples.length;
  const mx = samples.reduce((s, x) => s + x.ramMb, 0) / n;
  const my = samples.reduce((s, x) => s + x.durationMs, 0) / n;
  let sxx = 0;
  let sxy = 0;
  for (const x of samples) {
    sxx += (x.ramMb - mx) ** 2;
    sxy += (x.ramMb - mx) * (x.durationMs - my);
  }
  if (sxx === 0 || sxy <= 0) {
    // One size only (or noise): proportional to RAM through the mean.
    return mx > 0 ? { a: 0, b: my / mx } : { a: my, b: 0 };
  }
  const b = sxy / sxx;
  const a = my - b * mx;
  return a >= 0 ? { a, b } : { a: 0, b: my / mx };
}

interface Active {
  /** Controller clock when it was known to run (our start, or first seen running). */
  sinceMs: number;
  /** Nova's time it started running, when a record showed it. */
  novaSinceMs: number | undefined;
  /** Seen waiting in Nova's queue first (its created_at says nothing then). */
  queued: boolean;
}

/** What {@linkcode Pace.learn} and {@linkcode Pace.dueInMs} look at. */
export interface PaceView {
  /** The controller's clock now. */
  nowMs: number;
  /** The drain's in-flight entries after this pass. */
  inFlight: readonly EvictionStatusInFlightItem[];
  /** The latest record leaving the host, per server id. */
  records: ReadonlyMap<string, ObservedMigration>;
  /** Flavor RAM per server id. */
  ramOf: (id: string) => number | undefined;
  /** Controller clock of our start of a VM, if this process issued one. */
  issuedAt: (id: string) => number | undefined;
  /** Starts still waiting for Nova's answer. */
  pending: (id: string) => boolean;
}

/**
 * The duration model and running migrations of one drain.
 *
 * @example
 * ```ts
 * import { Pace } from "./pacing.ts";
 * const p = new Pace();
 * p.sample("live", 2048, 4000);
 * console.assert(p.predictMs("live", 4096) === 8000);
 * ```
 */
export class Pace {
  /**
   * What every drain of this process learned (same Nova, same network):
   * a drain's first migrations are timed by it until the drain has its
   * own samples, instead of polling at every interval.
   */
  readonly #fleet: Pace | undefined;
  readonly #samples: Record<MigrationKind, Sample[]> = { live: [], cold: [] };
  readonly #active = new Map<string, Active>();
  /** Migration record ids already sampled (a record stays listed). */
  readonly #sampled = new Set<string>();
  /**
   * Slot times on the controller's clock: from our start of a migration to
   * the pass that saw it complete (and refilled its slot), any kind. What a
   * drain's makespan is made of, poll latency included.
   */
  readonly #slots: Sample[] = [];
  /**
   * Our starts on both clocks: the controller's clock when we issued each
   * and Nova's `created_at` of its record. Their slope converts Nova's
   * durations to the controller's clock (1 in production; a simulator's
   * time scale otherwise), so the two clocks are never mixed.
   */
  readonly #clockPairs: { clockMs: number; novaMs: number }[] = [];
  /** Record ids already in {@linkcode Pace.#clockPairs}. */
  readonly #paired = new Set<string>();

  /** A drain's model; `fleet` is the one its process's drains share. */
  constructor(fleet?: Pace) {
    this.#fleet = fleet;
  }

  /**
   * The observed migration rate on the controller's clock, a line through
   * slot time against flavor RAM (see {@linkcode fitDuration}), as a copy
   * rate and a fixed cost per migration; undefined until two migrations
   * of different sizes this process started have completed.
   */
  slotRate():
    | { mbPerSecond: number; overheadMs: number; migrations: number }
    | undefined {
    const fit = fitDuration(this.#slots);
    if (fit === undefined || !(fit.b > 0)) return undefined;
    const sizes = new Set(this.#slots.map((x) => x.ramMb));
    if (sizes.size < 2) return undefined;
    return {
      mbPerSecond: Math.max(1, Math.round(1000 / fit.b)),
      overheadMs: Math.round(fit.a),
      migrations: this.#slots.length,
    };
  }

  /**
   * Controller-clock ms per Nova ms: the least-squares slope of our starts'
   * issue times against their records' `created_at`, once two starts are
   * at least a second apart on Nova's clock; before that the fleet's
   * (every drain's starts: the clocks are the same), else 1.
   */
  clockPerNovaMs(): number {
    const fleet = this.#fleet;
    return this.#ownClockPerNovaMs() ??
      (fleet === undefined ? undefined : fleet.#ownClockPerNovaMs()) ?? 1;
  }

  #ownClockPerNovaMs(): number | undefined {
    const pairs = this.#clockPairs;
    if (pairs.length < 2) return undefined;
    const n = pairs.length;
    const mx = pairs.reduce((s, p) => s + p.novaMs, 0) / n;
    const my = pairs.reduce((s, p) => s + p.clockMs, 0) / n;
    let sxx = 0;
    let sxy = 0;
    for (const p of pairs) {
      sxx += (p.novaMs - mx) ** 2;
      sxy += (p.novaMs - mx) * (p.clockMs - my);
    }
    const spread = Math.max(...pairs.map((p) => p.novaMs)) -
      Math.min(...pairs.map((p) => p.novaMs));
    if (spread < 1000 || !(sxx > 0)) return undefined;
    const k = sxy / sxx;
    return k > 1e-3 && k < 1e3 ? k : undefined;
  }

  /** Records a migration of `ramMb` that ran for `durationMs`. */
  sample(kind: MigrationKind, ramMb: number, durationMs: number): void {
    if (!(durationMs > 0) || !(ramMb >= 0)) return;
    const list = this.#samples[kind];
    list.push({ ramMb, durationMs });
    if (list.length > MAX_SAMPLES) list.shift();
    this.#fleet?.sample(kind, ramMb, durationMs);
  }

  #fleetSamples(kind: MigrationKind): readonly Sample[] {
    const fleet = this.#fleet;
    return fleet === undefined ? [] : fleet.#samples[kind];
  }

  /**
   * Expected running time of a migration of `ramMb` (Nova's clock): from
   * this drain's samples, else the fleet's, else undefined.
   */
  predictMs(kind: MigrationKind, ramMb: number): number | undefined {
    const fit = fitDuration(this.#samples[kind]) ??
      fitDuration(this.#fleetSamples(kind));
    return fit === undefined ? undefined : fit.a + fit.b * ramMb;
  }

  /**
   * How late to wake after the expected end, as a fraction of it: the
   * 80th percentile of how much longer than the fit the samples took
   * (durations jitter), at least {@linkcode LATE_MARGIN}, at most 25 %.
   * Waking early costs Nova calls (a pass that finds nothing done); waking
   * late leaves a slot idle.
   */
  marginOf(kind: MigrationKind): number {
    const own = this.#samples[kind];
    const samples = own.length > 0 ? own : this.#fleetSamples(kind);
    const fit = fitDuration(samples);
    if (fit === undefined || samples.length < 3) return LATE_MARGIN;
    const over = samples.map((x) => {
      const predicted = fit.a + fit.b * x.ramMb;
      return predicted > 0 ? x.durationMs / predicted - 1 : 0;
    }).sort((a, b) => a - b);
    const q = over[Math.floor(over.length * 0.8)] ?? 0;
    return Math.min(0.25, Math.max(LATE_MARGIN, q));
  }

  /**
   * Learns from one pass: notes when migrations started running, and
   * samples the ones that completed (Nova's completion time minus its
   * start of running: a duration in Nova's clock, never mixed with ours).
   */
  learn(view: PaceView): void {
    for (const [id, r] of view.records) {
      this.#pairClocks(String(r.id), view.issuedAt(id), r.createdAt);
      const status = r.status.toLowerCase();
      const known = this.#active.get(id);
      if (WAITING.has(status)) {
        if (known === undefined) {
          this.#active.set(id, {
            sinceMs: Number.NaN,
            novaSinceMs: undefined,
            queued: true,
          });
        }
        continue;
      }
      if (COMPLETED.has(status)) {
        // Never seen waiting: it ran from its creation (our start) to its
        // last update, the span pacing needs (it times from our start).
        // Seen waiting: from when it was seen running, if it was.
        if (known === undefined && view.issuedAt(id) === undefined) continue;
        if (this.#sampled.has(String(r.id))) continue;
        this.#sampled.add(String(r.id));
        const start = known?.queued === true
          ? known.novaSinceMs
          : parseNovaTime(r.createdAt);
        const end = parseNovaTime(r.updatedAt ?? undefined);
        const ram = view.ramOf(id);
        if (start !== undefined && end !== undefined && ram !== undefined) {
          this.sample(kindOfMigrationType(r.migrationType), ram, end - start);
        }
        const issued = view.issuedAt(id);
        if (issued !== undefined && ram !== undefined && view.nowMs > issued) {
          this.#slots.push({ ramMb: ram, durationMs: view.nowMs - issued });
          if (this.#slots.length > MAX_SAMPLES) this.#slots.shift();
        }
        this.#active.delete(id);
        continue;
      }
      if (known === undefined || Number.isNaN(known.sinceMs)) {
        // Running now: from our start if it never waited, else from now.
        const issued = view.issuedAt(id);
        const wasQueued = known?.queued ?? false;
        this.#active.set(id, {
          sinceMs: !wasQueued && issued !== undefined ? issued : view.nowMs,
          novaSinceMs: wasQueued
            ? parseNovaTime(r.updatedAt ?? r.createdAt)
            : parseNovaTime(r.createdAt),
          queued: wasQueued,
        });
      }
    }
    const live = new Set(view.inFlight.map((e) => e.id));
    for (const id of this.#active.keys()) {
      if (!live.has(id) && !view.records.has(id)) this.#active.delete(id);
    }
  }

  /** Remembers one start of ours on both clocks (once per record). */
  #pairClocks(
    recordId: string,
    issuedMs: number | undefined,
    createdAt: string | null | undefined,
  ): void {
    if (issuedMs === undefined || this.#paired.has(recordId)) return;
    const novaMs = parseNovaTime(createdAt ?? undefined);
    if (novaMs === undefined) return;
    this.#paired.add(recordId);
    for (const pace of [this, this.#fleet]) {
      if (pace === undefined) continue;
      pace.#clockPairs.push({ clockMs: issuedMs, novaMs });
      if (pace.#clockPairs.length > MAX_SAMPLES) pace.#clockPairs.shift();
    }
  }

  /**
   * Controller-clock ms until the earliest running migration is expected
   * to finish (0 when one is overdue), or undefined when nothing runs
   * that the model can time (no samples yet, or only waiting ones).
   */
  dueInMs(view: PaceView): { dueMs: number | undefined; untimed: boolean } {
    let earliest: number | undefined;
    let untimed = false;
    // Nova queues migrations on this host (its own per-host limit): a
    // start not listed yet will wait in that queue too.
    const queueing = [...view.records.values()].some((r) =>
      r.status.toLowerCase() === "queued"
    );
    const perNovaMs = this.clockPerNovaMs();
    for (const entry of view.inFlight) {
      const status = view.records.get(entry.id)?.status.toLowerCase();
      if (status !== undefined && WAITING.has(status)) continue;
      if (status === undefined && queueing) continue;
      const ram = view.ramOf(entry.id);
      const novaMs = ram === undefined
        ? undefined
        : this.predictMs(entry.kind, ram);
      // Nova's durations on the controller's clock
      const predicted = novaMs === undefined ? undefined : novaMs * perNovaMs;
      const since = this.#active.get(entry.id)?.sinceMs ??
        view.issuedAt(entry.id);
      if (
        predicted === undefined || since === undefined || Number.isNaN(since)
      ) {
        untimed = true;
        continue;
      }
      // While Nova's queue holds more work for this host, a late look
      // costs nothing (the host stays busy) and an early one costs calls.
      const margin = queueing ? QUEUED_MARGIN : this.marginOf(entry.kind);
      const end = since + predicted * (1 + margin);
      if (earliest === undefined || end < earliest) earliest = end;
    }
    return {
      dueMs: earliest === undefined
        ? undefined
        : Math.max(0, earliest - view.nowMs),
      untimed,
    };
  }
}

/** What {@linkcode requeueAfterMs} decides from. */
export interface RequeueInput {
  /** Clock ms until the earliest expected finish, if timed. */
  dueMs: number | undefined;
  /** Something runs that the model cannot time yet. */
  untimed: boolean;
  /** Migrations in flight (ours, adopted, pending). */
  inFlight: number;
  /** Clock ms until the earliest retry of a VM in backoff, if any. */
  retryInMs: number | undefined;
  /** Work that moves without us: busy or arriving VMs, free slots with ready VMs. */
  watching: boolean;
  /** Poll interval, real ms (the shortest wait). */
  pollIntervalMs: number;
  /** Longest wait while anything is in flight, real ms. */
  maxPollMs: number;
  /** Wait while nothing can change without a person or an event, real ms. */
  slowPollMs: number;
  /** Clock ms per real ms. */
  rate: number;
}

/**
 * The requeue delay in real ms: when the earliest in-flight migration
 * should finish (converted from clock to real ms once, here), never
 * sooner than the poll interval nor later than `maxPollMs`; the poll
 * interval while something runs that cannot be timed yet or VMs are busy
 * or arriving; until the earliest retry when only backoff remains; the
 * slow poll when nothing can change without a person (a change of the
 * Eviction, the policy or the Hypervisor wakes the drain earlier).
 *
 * @example
 * ```ts
 * import { requeueAfterMs } from "./pacing.ts";
 * const base = { untimed: false, inFlight: 1, retryInMs: undefined, watching: false,
 *   pollIntervalMs: 2000, maxPollMs: 60_000, slowPollMs: 20_000, rate: 1 };
 * console.assert(requeueAfterMs({ ...base, dueMs: 30_000 }) === 30_000);
 * console.assert(requeueAfterMs({ ...base, dueMs: 120_000, rate: 4 }) === 30_000);
 * console.assert(requeueAfterMs({ ...base, dueMs: 0 }) === 2000);
 * ```
 */
export function requeueAfterMs(input: RequeueInput): number {
  const rate = input.rate > 0 ? input.rate : 1;
  const poll = input.pollIntervalMs;
  const clamp = (ms: number) =>
    Math.round(Math.min(input.maxPollMs, Math.max(poll, ms)));
  const retry = input.retryInMs === undefined
    ? undefined
    : input.retryInMs / rate;
  if (input.inFlight > 0) {
    if (input.untimed || input.dueMs === undefined) return poll;
    const due = input.dueMs / rate;
    return clamp(
      input.watching ? poll : retry === undefined ? due : Math.min(due, retry),
    );
  }
  if (input.watching) return poll;
  if (retry !== undefined) {
    return Math.round(Math.max(poll, Math.min(retry, input.slowPollMs * 10)));
  }
  return input.slowPollMs;
}
