/**
 * When to look again. A drain learns how long its migrations take (a line
 * through duration against flavor RAM, per kind, from the migrations that
 * completed, as Nova's own records time them) and schedules the next pass
 * when the earliest running migration is expected to finish: a freed slot
 * is refilled at once, and Nova is not polled in between.
 *
 * One clock: every absolute time here is the controller's clock (the
 * injected one, which runs at the simulator's rate in tests). Nova's
 * timestamps are only ever subtracted from each other (a duration), never
 * compared with the controller's clock.
 *
 * @module
 */

import { parseNovaTime } from "../nova_time.ts";
import type { EvictionStatusInFlightItem } from "../../models/mod.ts";
import {
  kindOfMigrationType,
  type MigrationKind,
  migrationPhase,
} from "./nova_states.ts";
import { copySpan } from "./copy_span.ts";
import { firstLookAt, pastConductor } from "./first_look.ts";
import type { ObservedMigration } from "./snapshot.ts";
import { bestMargin, MAX_EARLY_LOOKS } from "./margin.ts";
import { NovaClock } from "./nova_clock.ts";

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
/** Samples of one size it takes to judge that size's spread on its own. */
const SAME_SIZE_SAMPLES = 5;
/** Wake this much after the expected end while few samples tell the spread. */
export const LATE_MARGIN = 0.03;
/**
 * The share of a migration's expected time its end event may come late
 * (a loaded controller or broker) before the view is not trusted to tell
 * it: a look at Nova then (Pace.endsBy).
 */
export const LATE_END_SHARE = 0.25;
/**
 * Poll intervals the end of a migration the model cannot time yet may
 * take past its stand-in end before the view is not trusted to tell it:
 * a drain's first copies would otherwise be looked at as they end, and
 * race their own end events.
 */
export const UNTIMED_POLLS = 4;
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
  /** The migration record's id (a VM's next attempt has another). */
  recordId: string;
  /**
   * Controller clock when its copy was known to run (our start, or when
   * it left Nova's queue); NaN while it waits.
   */
  sinceMs: number;
  /** Nova's time its copy started, when a record showed it. */
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
  /** The poll interval on the controller's clock (the soonest next look). */
  pollMs: number;
  /**
   * The drain's limit. With one slot every look is one migration's, so a
   * look before its end is a whole pass more (two Nova calls over the three
   * a migration needs at least): no early looks are planned there.
   */
  limit: number;
}

/** Samples from own drains a drain needs before it times by them alone. */
const OWN_SAMPLES = 3;

/**
 * Finished migrations' durations and Nova's clock: what one drain learns,
 * or what the drains of one process learn together (one Nova, one clock): a drain that starts later times its first migrations
 * by what the others saw instead of polling until one of its own ends.
 *
 * @example
 * ```ts
 * import { Durations, Pace } from "./pacing.ts";
 * const cloud = new Durations();
 * new Pace(cloud).sample("live", 2048, 4000);
 * console.assert(new Pace(cloud).predictMs("live", 4096) === 8000);
 * ```
 */
export class Durations {
  /** Finished migrations per kind, the latest {@linkcode MAX_SAMPLES}. */
  readonly samples: Record<MigrationKind, Sample[]> = { live: [], cold: [] };
  /**
   * Nova's clock (nova_clock.ts): the one model that converts Nova's
   * durations and times to the controller's clock.
   */
  readonly clock: NovaClock;

  /** Durations learned against `clock` (Nova's answers' `Date` sample it). */
  constructor(clock: NovaClock = new NovaClock()) {
    this.clock = clock;
  }

  /** Records a migration of `ramMb` that ran for `durationMs`. */
  add(kind: MigrationKind, ramMb: number, durationMs: number): void {
    const list = this.samples[kind];
    list.push({ ramMb, durationMs });
    if (list.length > MAX_SAMPLES) list.shift();
  }
}

/**
 * The duration model and running migrations of one drain. Its durations
 * are its own once it has {@linkcode OWN_SAMPLES} of a kind, of two sizes
 * (hosts differ), those of `cloud` (every drain of the process) before;
 * the clock conversion is the cloud's.
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
  readonly #own = new Durations();
  readonly #cloud: Durations;
  readonly #active = new Map<string, Active>();
  /** The latest look at each start of ours in flight (first_look.ts). */
  readonly #looked = new Map<
    string,
    {
      issuedAtMs: number;
      atMs: number;
      pastConductor: boolean;
      /** The look found the record `accepted`, or none: the conductor decides. */
      withConductor: boolean;
    }
  >();
  /** The view a planned glance times from ({@linkcode Pace.planGlance}). */
  #glance: PaceView | undefined;
  /** By when each timed migration's end should be heard of, as last timed. */
  #endsBy: ReadonlyMap<string, number> = new Map();
  /** Record keys already read as Nova's clock at our start. */
  readonly #paired = new Set<string>();
  /** Migration record ids already sampled (a record stays listed). */
  readonly #sampled = new Set<string>();
  /**
   * Slot times on the controller's clock: from the start of a migration's
   * copy (our start, or when it left Nova's queue) to the pass that saw it
   * complete (and refilled its slot), any kind. What a drain's makespan is
   * made of at the limit Nova runs, poll latency included.
   */
  readonly #slots: Sample[] = [];

  /** A drain's model; `cloud`: what the process's drains learn together. */
  constructor(cloud?: Durations) {
    this.#cloud = cloud ?? this.#own;
  }

  /**
   * The samples of `kind` to time by: the drain's own once they are
   * {@linkcode OWN_SAMPLES} of two sizes at least (one size alone fits a
   * line through zero, far off for the others), else the cloud's.
   */
  #samplesOf(kind: MigrationKind): Sample[] {
    const own = this.#own.samples[kind];
    const sizes = new Set(own.map((x) => x.ramMb)).size;
    return own.length >= OWN_SAMPLES && sizes >= 2
      ? own
      : this.#cloud.samples[kind];
  }

  /**
   * The observed migration rate on the controller's clock, a line through
   * slot time against flavor RAM (see {@linkcode fitDuration}), as a copy
   * rate and a fixed cost per migration, the time waited in Nova's queue
   * left out (a prediction runs at Nova's limit, which accounts for that
   * wait: capacity/makespan.ts predictionLimit); undefined until two migrations
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
   * A migration's slot time on our clock as the drain's completed ones
   * show it (0 before any: a migration the model cannot time may end at
   * any look).
   */
  #slotMs(ramMb: number | undefined): number {
    const fit = fitDuration(this.#slots);
    return fit === undefined || ramMb === undefined
      ? 0
      : Math.max(0, fit.a + fit.b * ramMb);
  }

  /** Controller-clock ms per Nova ms (nova_clock.ts), undefined while unknown. */
  clockPerNovaMs(): number | undefined {
    return this.#cloud.clock.localPerNovaMs();
  }

  /** Records a migration of `ramMb` that ran for `durationMs`. */
  sample(kind: MigrationKind, ramMb: number, durationMs: number): void {
    if (!(durationMs > 0) || !(ramMb >= 0)) return;
    this.#own.add(kind, ramMb, durationMs);
    if (this.#cloud !== this.#own) this.#cloud.add(kind, ramMb, durationMs);
  }

  /** Expected running time of a migration of `ramMb`, or undefined without a model. */
  predictMs(kind: MigrationKind, ramMb: number): number | undefined {
    const fit = fitDuration(this.#samplesOf(kind));
    return fit === undefined ? undefined : fit.a + fit.b * ramMb;
  }

  /**
   * How late to wake after the expected end of a migration of `ramMb`, as
   * a fraction of it: the margin that would have idled a slot least over
   * the finished migrations of that size (of all sizes while fewer than
   * {@linkcode SAME_SIZE_SAMPLES} of it finished), a look that finds it
   * running costing the wait until the next one, at least `pollMs` later,
   * and such early looks at most `maxEarlyLooks` per migration (margin.ts).
   * {@linkcode LATE_MARGIN} while fewer than 3 finished.
   */
  marginOf(
    kind: MigrationKind,
    ramMb: number,
    pollMs: number,
    maxEarlyLooks = MAX_EARLY_LOOKS,
  ): number {
    const all = this.#samplesOf(kind);
    const fit = fitDuration(all);
    if (fit === undefined || all.length < 3) return LATE_MARGIN;
    const same = all.filter((x) => x.ramMb === ramMb);
    const samples = same.length >= SAME_SIZE_SAMPLES ? same : all;
    return bestMargin(
      samples.map((x) => ({
        predictedMs: fit.a + fit.b * x.ramMb,
        actualMs: x.durationMs,
      })),
      pollMs,
      LATE_MARGIN,
      maxEarlyLooks,
    );
  }

  /**
   * Learns from one pass: notes when migrations started copying, samples
   * the ones that completed (Nova's completion time minus the copy's start
   * on Nova's clock, never mixed with ours; the time waited in Nova's
   * queue kept apart, see copy_span.ts), and notes this look at each of
   * our starts (its first look, first_look.ts).
   */
  learn(view: PaceView): void {
    for (const [id, r] of view.records) {
      const keys = recordKeys(id, r, view.issuedAt(id));
      // Nova's record is created as it accepts the start; one known only
      // from events begins at its first step, after any wait in its queue
      if (r.id !== undefined) {
        this.#pairClocks(keys, view.issuedAt(id), r.createdAt);
      }
      const status = r.status.toLowerCase();
      const known = this.#active.get(id);
      const same = known !== undefined && keys.includes(known.recordId)
        ? known
        : undefined;
      if (WAITING.has(status)) {
        // accepted: the conductor schedules it (every migration does);
        // queued: behind Nova's per-host limit, not yet copying.
        this.#active.set(id, {
          recordId: keys[0] ?? "",
          sinceMs: Number.NaN,
          novaSinceMs: undefined,
          queued: status === "queued" || same?.queued === true,
        });
      } else if (COMPLETED.has(status)) {
        this.#completed(view, id, r, keys, same);
      } else if (migrationPhase(status) !== "in_progress") {
        this.#active.delete(id);
      } else if (same === undefined || Number.isNaN(same.sinceMs)) {
        this.#active.set(id, this.#copying(view, id, r, keys[0] ?? "", same));
      }
    }
    const live = new Set(view.inFlight.map((e) => e.id));
    for (const id of this.#active.keys()) {
      if (!live.has(id) && !view.records.has(id)) this.#active.delete(id);
    }
    for (const e of view.inFlight) this.#noteLook(e.id, view);
    for (const id of this.#looked.keys()) {
      if (!live.has(id)) this.#looked.delete(id);
    }
  }

  /**
   * A migration first seen copying: since our start (and its record's
   * creation) when it never waited in Nova's queue; else since it left
   * the queue, Nova's `updated_at` of the status past it (a libvirt
   * compute also updates it with the copy's progress, so that is late by
   * at most the time between two looks), on our clock by the clocks'
   * ratio; when that cannot be told, since this look.
   */
  #copying(
    view: PaceView,
    id: string,
    r: ObservedMigration,
    key: string,
    known: Active | undefined,
  ): Active {
    const issued = view.issuedAt(id);
    const created = parseNovaTime(r.createdAt);
    const queued = known?.queued ?? false;
    if (!queued) {
      // a record known only from events was created by the copy's first
      // step: it began then, after any wait in Nova's queue none told of
      const began = r.id === undefined && created !== undefined
        ? this.#cloud.clock.toLocal(created)
        : undefined;
      return {
        recordId: key,
        sinceMs: Math.max(issued ?? view.nowMs, began ?? -Infinity),
        novaSinceMs: created,
        queued,
      };
    }
    const novaSince = parseNovaTime(r.updatedAt ?? r.createdAt);
    const perNovaMs = this.clockPerNovaMs();
    const waited = novaSince === undefined || created === undefined
      ? undefined
      : Math.max(0, novaSince - created);
    return {
      recordId: key,
      sinceMs: issued === undefined || waited === undefined ||
          perNovaMs === undefined
        ? view.nowMs
        : Math.min(view.nowMs, issued + waited * perNovaMs),
      novaSinceMs: novaSince,
      queued,
    };
  }

  /**
   * A completed migration: its copy time on Nova's clock (a sample of the
   * duration model) and its slot time on ours (our start, or its copy's
   * start past Nova's queue, to this pass: {@linkcode Pace.slotRate}),
   * each once per record; a migration that went from Nova's queue to its
   * end between two looks says nothing of its copy and is not sampled.
   */
  #completed(
    view: PaceView,
    id: string,
    r: ObservedMigration,
    keys: readonly string[],
    known: Active | undefined,
  ): void {
    this.#active.delete(id);
    const issued = view.issuedAt(id);
    if (known === undefined && issued === undefined) return;
    if (keys.some((k) => this.#sampled.has(k))) return;
    for (const k of keys) this.#sampled.add(k);
    const ram = view.ramOf(id);
    if (ram === undefined) return;
    const queued = known?.queued ?? false;
    const nova = copySpan(
      parseNovaTime(r.createdAt) ?? Number.NaN,
      known?.novaSinceMs,
      queued,
      parseNovaTime(r.updatedAt ?? undefined) ?? Number.NaN,
    );
    if (nova !== undefined) {
      this.sample(kindOfMigrationType(r.migrationType), ram, nova.copyMs);
    }
    if (issued === undefined) return;
    const slot = copySpan(issued, known?.sinceMs, queued, view.nowMs);
    if (slot === undefined) return;
    this.#slots.push({ ramMb: ram, durationMs: slot.copyMs });
    if (this.#slots.length > MAX_SAMPLES) this.#slots.shift();
  }

  /** Our start's record: a reading of Nova's clock at our start (once). */
  #pairClocks(
    keys: readonly string[],
    issuedMs: number | undefined,
    createdAt: string | null | undefined,
  ): void {
    if (issuedMs === undefined || keys.some((k) => this.#paired.has(k))) return;
    for (const k of keys) this.#paired.add(k);
    this.#cloud.clock.reading(
      parseNovaTime(createdAt ?? undefined) ?? NaN,
      issuedMs,
    );
  }

  /**
   * Controller-clock ms until the earliest running migration is expected
   * to finish, or a start of ours is due its first look (first_look.ts),
   * 0 when one is overdue; undefined when nothing runs that the model can
   * time (no samples yet, or only waiting ones) and no first look is due.
   */
  dueInMs(view: PaceView): { dueMs: number | undefined; untimed: boolean } {
    const { model, first, untimed, byId } = this.#ends(view);
    this.#endsBy = new Map(
      [...byId].map(([id, { since, end, timed }]) => [
        id,
        end + Math.max(
          timed ? view.pollMs : UNTIMED_POLLS * view.pollMs,
          LATE_END_SHARE * (end - since),
        ),
      ]),
    );
    const look = lookAt([...model, ...first], view.pollMs);
    return {
      dueMs: look === undefined ? undefined : Math.max(0, look - view.nowMs),
      untimed,
    };
  }

  /**
   * Whether the next look, as {@linkcode Pace.dueInMs} times it, is due
   * only for first looks at starts of ours: every migration the model
   * times is expected to end later, none is untimed. A glance at the
   * host's migrations may then stand in for a full look (first_look.ts
   * glanceIsQuiet).
   */
  firstLooksOnly(view: PaceView): boolean {
    const { model, first, untimed } = this.#ends(view);
    if (untimed || first.length === 0) return false;
    const look = lookAt([...model, ...first], view.pollMs);
    return look !== undefined && model.every((end) => end > look);
  }

  /**
   * A glance planned by the pass that timed the next look (pass_pace.ts):
   * the view to time from after it. Taken once.
   */
  planGlance(view: PaceView | undefined): void {
    this.#glance = view;
  }

  /**
   * By when (controller clock) the end of each migration timed at the
   * last {@linkcode Pace.dueInMs} should be known: its expected end and
   * a poll interval or {@linkcode LATE_END_SHARE} of its expected time,
   * whichever is longer. While the model cannot time it, its start and
   * the slot time the drain's completed migrations show stand for its
   * end (its start before the first), and the bound is
   * {@linkcode UNTIMED_POLLS} poll intervals at least. An informer whose view shows one
   * still moving later looks at Nova (its end event may be lost), at
   * spacings that double while it runs on.
   */
  endsBy(): ReadonlyMap<string, number> {
    return this.#endsBy;
  }

  /** The planned glance's view, if any; forgets it. */
  takeGlance(): PaceView | undefined {
    const view = this.#glance;
    this.#glance = undefined;
    return view;
  }

  /**
   * The expected ends of the migrations the model times, the first looks
   * due at our starts, whether something runs that it cannot time, and
   * per migration its start and expected end (when untimed,
   * {@linkcode Pace.endsBy}'s stand-in).
   */
  #ends(
    view: PaceView,
  ): {
    model: number[];
    first: number[];
    untimed: boolean;
    byId: Map<string, { since: number; end: number; timed: boolean }>;
  } {
    const byId = new Map<
      string,
      { since: number; end: number; timed: boolean }
    >();
    const model: number[] = [];
    const first: number[] = [];
    let untimed = false;
    // Nova queues migrations on this host (its own per-host limit): a
    // start not listed yet will wait in that queue too.
    const queueing = [...view.records.values()].some((r) =>
      r.status.toLowerCase() === "queued"
    );
    const perNovaMs = this.clockPerNovaMs();
    for (const entry of view.inFlight) {
      // Our start not looked at yet: a fast failure frees its slot.
      const firstLook = this.#firstLook(entry.id, view);
      if (firstLook !== undefined) first.push(firstLook);
      const status = view.records.get(entry.id)?.status.toLowerCase();
      if (status !== undefined && WAITING.has(status)) continue;
      if (status === undefined && queueing) continue;
      const end = this.#endOf(entry, view, perNovaMs, queueing);
      const since = this.#active.get(entry.id)?.sinceMs ??
        view.issuedAt(entry.id);
      if (end === undefined) untimed = true;
      else model.push(end);
      // no record: not copying as far as anyone told (Nova's queue holds
      // it, or its conductor), so no end is due yet
      if (status === undefined) continue;
      if (since === undefined || Number.isNaN(since)) continue;
      byId.set(entry.id, {
        since,
        end: end ?? since + this.#slotMs(view.ramOf(entry.id)),
        timed: end !== undefined,
      });
    }
    return { model, first, untimed, byId };
  }

  /** When a running migration is expected to end (controller clock). */
  #endOf(
    entry: EvictionStatusInFlightItem,
    view: PaceView,
    perNovaMs: number | undefined,
    queueing: boolean,
  ): number | undefined {
    const ram = view.ramOf(entry.id);
    const novaMs = ram === undefined
      ? undefined
      : this.predictMs(entry.kind, ram);
    const since = this.#active.get(entry.id)?.sinceMs ??
      view.issuedAt(entry.id);
    if (
      novaMs === undefined || perNovaMs === undefined ||
      since === undefined || Number.isNaN(since)
    ) return undefined;
    // While Nova's queue holds more work for this host, a late look
    // costs nothing (the host stays busy) and an early one costs calls.
    const margin = queueing ? QUEUED_MARGIN : this.marginOf(
      entry.kind,
      ram ?? 0,
      view.pollMs / perNovaMs,
      view.limit <= 1 ? 0 : MAX_EARLY_LOOKS,
    );
    // Nova's durations on the controller's clock
    return since + novaMs * perNovaMs * (1 + margin);
  }

  /**
   * Notes this look at our start of `id`: when, and whether it (or an
   * earlier look at the same start) saw it past Nova's conductor.
   */
  #noteLook(id: string, view: PaceView): void {
    const issued = view.issuedAt(id);
    if (issued === undefined || view.nowMs < issued) return;
    const last = this.#looked.get(id);
    const before = last?.issuedAtMs === issued && last.pastConductor;
    const status = view.records.get(id)?.status;
    this.#looked.set(id, {
      issuedAtMs: issued,
      atMs: view.nowMs,
      pastConductor: before || pastConductor(status),
      // No record after Nova's 202 is the conductor too: it writes the
      // record after the answer, seconds later on a loaded cloud.
      withConductor: status === undefined
        ? !view.pending(id)
        : status.toLowerCase() === "accepted",
    });
  }

  /** When to look next at our start of `id` for how it began, if due. */
  #firstLook(id: string, view: PaceView): number | undefined {
    const issued = view.issuedAt(id);
    if (issued === undefined) return undefined;
    const last = this.#looked.get(id);
    const same = last?.issuedAtMs === issued ? last : undefined;
    return firstLookAt(
      issued,
      same?.atMs,
      view.pollMs,
      same?.pastConductor ?? false,
      same?.withConductor ?? false,
    );
  }
}

/**
 * The keys a migration is learned once by: Nova's id of its record, and
 * our start of the VM (the same migration whether the informer's view,
 * which knows no id, or Nova's list shows it); its creation when neither
 * is known.
 *
 * @example
 * ```ts
 * import { recordKeys } from "./pacing.ts";
 * const r = { instanceUuid: "a", migrationType: "live-migration", status: "completed",
 *   sourceCompute: "h", destCompute: "d", createdAt: "2026-01-01T00:00:00" };
 * console.assert(recordKeys("a", { ...r, id: 7 }, 5).includes(recordKeys("a", r, 5)[0]!));
 * console.assert(recordKeys("a", { ...r, id: 7 }, undefined)[0] === "7");
 * ```
 */
export function recordKeys(
  vm: string,
  r: ObservedMigration,
  issuedMs: number | undefined,
): string[] {
  const keys = r.id === undefined ? [] : [String(r.id)];
  if (issuedMs !== undefined) keys.push(`${vm}@${issuedMs}`);
  return keys.length > 0 ? keys : [`${vm}@${r.createdAt}`];
}

/**
 * When to look, given the expected ends of the running migrations and the
 * poll interval (the least wait between two looks): at the earliest end,
 * or at the last end within half a poll interval of it, catching those
 * too. The earliest's slot then idles less than half a poll interval
 * longer; the others would idle until the next look, a poll interval
 * after the first: so the later look idles the slots less in total.
 * Undefined without ends.
 *
 * @example
 * ```ts
 * import { lookAt } from "./pacing.ts";
 * console.assert(lookAt([10_000, 10_600, 14_000], 2000) === 10_600);
 * console.assert(lookAt([10_000, 11_500], 2000) === 10_000);
 * console.assert(lookAt([], 2000) === undefined);
 * ```
 */
export function lookAt(
  ends: readonly number[],
  pollMs: number,
): number | undefined {
  const sorted = [...ends].sort((a, b) => a - b);
  const first = sorted[0];
  if (first === undefined) return undefined;
  let look = first;
  for (const e of sorted) if (e - first <= pollMs / 2) look = e;
  return look;
}

/** What {@linkcode nextLookMs} decides from (ms on the controller's clock). */
export interface LookInput {
  /** Until the earliest expected finish, if timed. */
  dueMs: number | undefined;
  /** Something runs that the model cannot time yet. */
  untimed: boolean;
  /** Migrations in flight (ours, adopted, pending). */
  inFlight: number;
  /** Until the earliest retry of a VM in backoff, if any. */
  retryInMs: number | undefined;
  /** Work that moves without us: busy or arriving VMs, free slots with ready VMs. */
  watching: boolean;
  /** The poll interval (the shortest wait). */
  pollMs: number;
  /** Longest wait while anything is in flight. */
  maxPollMs: number;
  /** Wait while nothing can change without a person or an event. */
  slowPollMs: number;
}

/**
 * The wait until the next look: when the earliest in-flight migration
 * should finish, never sooner than the poll interval nor later than
 * `maxPollMs`; the poll interval while something runs that cannot be
 * timed yet or VMs are busy or arriving; until the earliest retry when
 * only backoff remains; the slow poll when nothing can change without a
 * person (a change of the Eviction, the policy or the Hypervisor wakes
 * the drain earlier).
 *
 * @example
 * ```ts
 * import { nextLookMs } from "./pacing.ts";
 * const base = { untimed: false, inFlight: 1, retryInMs: undefined, watching: false,
 *   pollMs: 2000, maxPollMs: 60_000, slowPollMs: 20_000 };
 * console.assert(nextLookMs({ ...base, dueMs: 30_000 }) === 30_000);
 * console.assert(nextLookMs({ ...base, dueMs: 0 }) === 2000);
 * ```
 */
export function nextLookMs(input: LookInput): number {
  const { pollMs, retryInMs: retry } = input;
  if (input.inFlight > 0) {
    if (input.untimed || input.dueMs === undefined) return pollMs;
    const due = input.watching
      ? pollMs
      : Math.min(input.dueMs, retry ?? Infinity);
    return Math.min(input.maxPollMs, Math.max(pollMs, due));
  }
  if (input.watching) return pollMs;
  if (retry !== undefined) {
    return Math.max(pollMs, Math.min(retry, input.slowPollMs * 10));
  }
  return input.slowPollMs;
}
