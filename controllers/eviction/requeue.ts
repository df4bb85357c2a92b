/**
 * When to look again: a drain learns how long its migrations take (a line
 * through duration against flavor RAM, from the ones that finished) and
 * polls when the next running migration is expected to finish, so a freed
 * slot is refilled at once without polling Nova every few seconds in
 * between. Without a model yet, or when a migration is overdue, it polls
 * at the poll interval. Migrations that Nova still queues (its own
 * per-host limit) cannot finish before a running one and are ignored.
 *
 * @module
 */

import type { EvictionStatus } from "../../models/mod.ts";
import { parseNovaTime } from "./nova_states.ts";
import type { ObservedMigration } from "./observation.ts";

/** A finished migration: how big, how long (clock ms). */
interface Sample {
  ramMb: number;
  durationMs: number;
}

interface DrainModel {
  samples: Sample[];
  /** Flavor RAM of the VMs seen on the host. */
  ram: Map<string, number>;
  /** When a VM was first seen running after having been seen queued. */
  activeSince: Map<string, number>;
  /** VMs seen queued. */
  queued: Set<string>;
}

const MAX_SAMPLES = 64;
const QUEUED = new Set(["accepted", "queued"]);
const LIVE_DONE = new Set(["completed", "finished", "confirmed"]);

/**
 * A fitted line `durationMs = a + b * ramMb`, or undefined without samples.
 *
 * @example
 * ```ts
 * import { fitDuration } from "./requeue.ts";
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

/**
 * Per-drain duration models, in process (a restart starts learning again).
 *
 * @example
 * ```ts
 * import { Pacer } from "./requeue.ts";
 * const p = new Pacer();
 * p.observe("e", 2048, 4000);
 * console.assert(p.predictMs("e", 4096) === 8000);
 * ```
 */
export class Pacer {
  readonly #models = new Map<string, DrainModel>();

  #model(key: string): DrainModel {
    let m = this.#models.get(key);
    if (m === undefined) {
      m = {
        samples: [],
        ram: new Map(),
        activeSince: new Map(),
        queued: new Set(),
      };
      this.#models.set(key, m);
    }
    return m;
  }

  /** Remembers a VM's flavor RAM (seen on the host). */
  noteRam(key: string, id: string, ramMb: number): void {
    this.#model(key).ram.set(id, ramMb);
  }

  /** A VM's flavor RAM, if it was seen on the host. */
  ramOf(key: string, id: string): number | undefined {
    return this.#models.get(key)?.ram.get(id);
  }

  /** Records a finished migration of `ramMb` that took `durationMs`. */
  observe(key: string, ramMb: number, durationMs: number): void {
    if (!(durationMs > 0) || !(ramMb >= 0)) return;
    const m = this.#model(key);
    m.samples.push({ ramMb, durationMs });
    if (m.samples.length > MAX_SAMPLES) m.samples.shift();
  }

  /** Expected duration of a migration of `ramMb`, or undefined without a model. */
  predictMs(key: string, ramMb: number): number | undefined {
    const fit = fitDuration(this.#models.get(key)?.samples ?? []);
    return fit === undefined ? undefined : fit.a + fit.b * ramMb;
  }

  /**
   * Notes the state of a VM's in-progress record this pass; returns when
   * its migration effectively started running (clock ms): when it was
   * first seen running after a queue, else `createdMs`.
   */
  noteRecord(
    key: string,
    id: string,
    status: string,
    createdMs: number,
    nowMs: number,
  ): number {
    const m = this.#model(key);
    if (QUEUED.has(status)) {
      m.queued.add(id);
      return createdMs;
    }
    if (m.queued.has(id) && !m.activeSince.has(id)) {
      m.activeSince.set(id, nowMs);
    }
    return m.activeSince.get(id) ?? createdMs;
  }

  /** When `id` effectively started, if it was queued first. */
  activeSince(key: string, id: string): number | undefined {
    return this.#models.get(key)?.activeSince.get(id);
  }

  /** Forgets a drain. */
  forget(key: string): void {
    this.#models.delete(key);
  }
}

/** Whether record `a` is more recent than `b` (created_at, then id). */
function newer(a: ObservedMigration, b: ObservedMigration): boolean {
  const ta = parseNovaTime(a.createdAt) ?? 0;
  const tb = parseNovaTime(b.createdAt) ?? 0;
  if (ta !== tb) return ta > tb;
  return Number(a.id) > Number(b.id);
}

/**
 * How long a finished migration took (clock ms) by its record: from its
 * creation, or from when it was first seen running after a queue, to its
 * last update. Undefined when the record says nothing useful.
 *
 * @example
 * ```ts
 * import { Pacer, recordDurationMs } from "./requeue.ts";
 * const d = recordDurationMs(new Pacer(), "e", {
 *   id: 1, instanceUuid: "a", migrationType: "live-migration", status: "completed",
 *   sourceCompute: "h", createdAt: "2026-01-01T00:00:00", updatedAt: "2026-01-01T00:00:10",
 * });
 * console.assert(d === 10_000);
 * ```
 */
export function recordDurationMs(
  pacer: Pacer,
  key: string,
  record: ObservedMigration,
): number | undefined {
  if (!LIVE_DONE.has(record.status.toLowerCase())) return undefined;
  const end = parseNovaTime(record.updatedAt ?? undefined);
  const start = pacer.activeSince(key, record.instanceUuid) ??
    parseNovaTime(record.createdAt);
  if (end === undefined || start === undefined || end <= start) {
    return undefined;
  }
  return end - start;
}

/** What {@linkcode requeueDelay} looks at. */
export interface RequeueInput {
  /** The Eviction key. */
  key: string;
  /** The status just written. */
  next: EvictionStatus;
  /** The migration records of this pass. */
  migrations: readonly ObservedMigration[];
  /** The VMs listed on the host this pass (for their RAM). */
  servers: readonly { id: string; flavor: { ramMb: number } }[];
  /** The current clock time. */
  nowMs: number;
  /** The poll interval (real ms). */
  pollIntervalMs: number;
  /** Clock ms per real ms. */
  rate: number;
  /** Whether a VM waits for a free slot. */
  waitingForSlot: boolean;
}

/** The longest wait, in poll intervals, while migrations are in flight. */
export const MAX_POLL_FACTOR = 15;
/** How soon an overdue migration is looked at again, in expected durations. */
export const OVERDUE_STEP = 0.03;
/** The shortest wait, in poll intervals. */
export const MIN_POLL_FACTOR = 0.05;

/**
 * The requeue delay (real ms) after a pass with migrations in flight: the
 * time until the next running migration is expected to finish (an overdue
 * one: 3 % of its expected duration from now),
 * between `MIN_POLL_FACTOR` and `MAX_POLL_FACTOR` poll intervals; the poll
 * interval itself without a model or when a migration is overdue.
 *
 * @example
 * ```ts
 * import { Pacer, requeueDelay } from "./requeue.ts";
 * const d = requeueDelay(new Pacer(), {
 *   key: "e", next: {}, migrations: [], servers: [], nowMs: 0,
 *   pollIntervalMs: 2000, rate: 1, waitingForSlot: false,
 * });
 * console.assert(d === 2000);
 * ```
 */
export function requeueDelay(pacer: Pacer, input: RequeueInput): number {
  const { key, nowMs, pollIntervalMs, rate } = input;
  const ram = new Map(input.servers.map((s) => [s.id, s.flavor.ramMb]));
  const inProgress = new Map<string, ObservedMigration>();
  for (const r of input.migrations) {
    const prev = inProgress.get(r.instanceUuid);
    if (prev === undefined || newer(r, prev)) inProgress.set(r.instanceUuid, r);
  }
  let earliest: number | undefined;
  let overdue = false;
  for (const entry of input.next.inFlight ?? []) {
    const record = inProgress.get(entry.id);
    const ramMb = ram.get(entry.id) ?? pacer.ramOf(key, entry.id);
    const predicted = ramMb === undefined
      ? undefined
      : pacer.predictMs(key, ramMb);
    if (predicted === undefined) {
      overdue = true; // nothing to go by: poll
      continue;
    }
    // Started this pass: Nova's list predates it; it runs from its trigger.
    const status = record?.status.toLowerCase() ?? "running";
    if (LIVE_DONE.has(status)) {
      overdue = true; // finished on Nova's side: look now-ish
      continue;
    }
    const createdMs = parseNovaTime(record?.createdAt) ??
      parseNovaTime(entry.startedAt) ?? nowMs;
    const start = pacer.noteRecord(key, entry.id, status, createdMs, nowMs);
    if (QUEUED.has(status)) continue;
    // Past its expected end: look again after 3 % of its
    // expected duration (it is probably about to finish).
    const end = Math.max(start + predicted, nowMs + predicted * OVERDUE_STEP);
    if (earliest === undefined || end < earliest) earliest = end;
  }
  const maxMs = pollIntervalMs * MAX_POLL_FACTOR;
  const minMs = pollIntervalMs * MIN_POLL_FACTOR;
  let delay = earliest === undefined
    ? pollIntervalMs
    : (earliest - nowMs) / (rate > 0 ? rate : 1);
  if (overdue) delay = Math.min(delay, pollIntervalMs);
  return Math.round(Math.min(maxMs, Math.max(minMs, delay)));
}
