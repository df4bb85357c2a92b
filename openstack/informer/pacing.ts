/**
 * The informer's schedule: a per-drain duration model (copy time against
 * flavor RAM) timing the next look and how late an end event may come.
 * @module
 */

import { parseNovaTime } from "../nova_time.ts";
import type { EvictionStatusInFlightItem } from "../../models/mod.ts";
import {
  kindOfMigrationType,
  type MigrationKind,
  migrationPhase,
  waitingInNova,
} from "./nova_states.ts";
import { firstLookAt, pastConductor } from "./first_look.ts";
import type { ObservedMigration } from "./snapshot.ts";
import { bestMargin, MAX_EARLY_LOOKS } from "./margin.ts";
import { NovaClock } from "./nova_clock.ts";

interface Sample {
  ramMb: number;
  durationMs: number;
}

const COMPLETED: ReadonlySet<string> = new Set(["completed", "finished"]);

const MAX_SAMPLES = 64;
/** Samples of one size that judge its spread alone. */
const SAME_SIZE_SAMPLES = 5;
/** Wake this much after the expected end while few samples tell the spread. */
export const LATE_MARGIN = 0.03;
/** The share of its expected time a migration's end event may come late. */
export const LATE_END_SHARE = 0.25;
/** Poll intervals an untimed end may be late (first copies race their end events). */
export const UNTIMED_POLLS = 4;
/**
 * An untimed copy's least length: its memory once over 25 GbE (3 GB/s),
 * so a 64 GiB copy is not looked for every few seconds before its first
 * progress reads time it.
 */
export const FASTEST_COPY_MB_PER_MS = 3;
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
    // one size only (or noise): through 0 and the mean
    return mx > 0 ? { a: 0, b: my / mx } : { a: my, b: 0 };
  }
  const b = sxy / sxx;
  const a = my - b * mx;
  return a >= 0 ? { a, b } : { a: 0, b: my / mx };
}

/** A running migration as last timed (`end` a guess while untimed). */
type Due = { since: number; end: number; timed: boolean };

interface Active {
  /** A VM's next attempt has another record. */
  recordId: string;
  /** Since when it copies; NaN while it waits. */
  sinceMs: number;
  novaSinceMs: number | undefined;
  /** Seen in Nova's queue first (its created_at says nothing then). */
  queued: boolean;
}

/** What {@linkcode Pace.learn} and {@linkcode Pace.dueInMs} look at. */
export interface PaceView {
  nowMs: number;
  inFlight: readonly EvictionStatusInFlightItem[];
  /** The latest record leaving the host, per server id. */
  records: ReadonlyMap<string, ObservedMigration>;
  ramOf: (id: string) => number | undefined;
  /** Our start of a VM, if this process issued one. */
  issuedAt: (id: string) => number | undefined;
  /** Starts still waiting for Nova's answer. */
  pending: (id: string) => boolean;
  pollMs: number;
  /** The drain's limit (at 1, an early look is a whole pass more: none planned). */
  limit: number;
  novaLimit?: number | undefined;
  /** Times a copy the model cannot. */
  progress?: ReadonlyMap<string, MeasuredEta> | undefined;
}

/** A copy's ETA as a read measured it. */
export interface MeasuredEta {
  readAtMs: number;
  etaSeconds?: number | undefined;
}

/** Our copies under way fill Nova's known limit: a start not listed yet will queue. */
function fillsNovaLimit(view: PaceView): boolean {
  if (view.novaLimit === undefined) return false;
  const copying = view.inFlight.filter((e) => {
    const s = view.records.get(e.id)?.status.toLowerCase();
    return s !== undefined && !waitingInNova(s) &&
      migrationPhase(s) === "in_progress";
  });
  return copying.length >= view.novaLimit;
}

/**
 * When a copy Nova held queued began (Nova's clock): as the host's last copy
 * before its record's last update ended. Not the update alone: libvirt saves
 * progress every 5 s, so a copy first seen long after it began times short.
 *
 * @example
 * ```ts
 * import { slotFreedAt } from "./pacing.ts";
 * const rec = (status: string, createdAt: string, updatedAt: string) => ({ instanceUuid: "a",
 *   migrationType: "live-migration", status, sourceCompute: "h", createdAt, updatedAt });
 * const q = rec("running", "2026-01-01T00:00:00", "2026-01-01T00:01:30");
 * const before = rec("completed", "2025-12-31T23:59:00", "2026-01-01T00:01:00");
 * const earlier = rec("completed", "2025-12-31T23:58:00", "2026-01-01T00:00:20");
 * console.assert(slotFreedAt(q, [q, earlier, before]) === Date.parse("2026-01-01T00:01:00Z"));
 * console.assert(slotFreedAt(q, [q]) === undefined);
 * ```
 */
export function slotFreedAt(
  r: ObservedMigration,
  records: Iterable<ObservedMigration>,
): number | undefined {
  const created = parseNovaTime(r.createdAt);
  const updated = parseNovaTime(r.updatedAt ?? r.createdAt);
  if (created === undefined || updated === undefined) return undefined;
  let freed: number | undefined;
  for (const o of records) {
    if (o === r || !COMPLETED.has(o.status.toLowerCase())) continue;
    const end = parseNovaTime(o.updatedAt ?? undefined);
    if (end === undefined || end < created || end > updated) continue;
    freed = Math.max(freed ?? -Infinity, end);
  }
  return freed;
}

/** Samples from own drains a drain needs before it times by them alone. */
const OWN_SAMPLES = 3;

/**
 * Finished migrations' durations and Nova's clock, of one drain or of all a
 * process's drains (a later drain times its first migrations by theirs).
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
  readonly samples: Record<MigrationKind, Sample[]> = { live: [], cold: [] };
  readonly clock: NovaClock;

  constructor(clock: NovaClock = new NovaClock()) {
    this.clock = clock;
  }

  add(kind: MigrationKind, ramMb: number, durationMs: number): void {
    const list = this.samples[kind];
    list.push({ ramMb, durationMs });
    if (list.length > MAX_SAMPLES) list.shift();
  }
}

/**
 * One drain's model: its own durations once it has {@linkcode OWN_SAMPLES}
 * of two sizes (hosts differ), `cloud`'s before.
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
  readonly #looked = new Map<
    string,
    {
      issuedAtMs: number;
      atMs: number;
      pastConductor: boolean;
      /** The conductor still decides (record `accepted`, or none). */
      withConductor: boolean;
    }
  >();
  #glance: PaceView | undefined;
  #endsBy: ReadonlyMap<string, number> = new Map();
  #expected: ReadonlyMap<string, number | undefined> = new Map();
  /** Record keys already read as Nova's clock at our start. */
  readonly #paired = new Set<string>();
  /** Record keys already sampled (a record stays listed). */
  readonly #sampled = new Set<string>();
  readonly #eta = new Map<string, MeasuredEta>();
  /** Copy start to the pass that saw it end, our clock (poll latency in). */
  readonly #slots: Sample[] = [];

  constructor(cloud?: Durations) {
    this.#cloud = cloud ?? this.#own;
  }

  /** The samples of `kind` to time by (one size alone fits a line through 0). */
  #samplesOf(kind: MigrationKind): Sample[] {
    const own = this.#own.samples[kind];
    const sizes = new Set(own.map((x) => x.ramMb)).size;
    return own.length >= OWN_SAMPLES && sizes >= 2
      ? own
      : this.#cloud.samples[kind];
  }

  /** Slot time as copy rate and per-migration cost (Nova's queue left out). */
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
   * A migration's slot time as the completed ones show it; before any,
   * the time the fastest link we expect takes to copy its memory once.
   */
  #slotMs(ramMb: number | undefined): number {
    if (ramMb === undefined) return 0;
    const fit = fitDuration(this.#slots);
    return fit === undefined
      ? ramMb / FASTEST_COPY_MB_PER_MS
      : Math.max(0, fit.a + fit.b * ramMb);
  }

  /** Controller ms per Nova ms; undefined while unknown. */
  clockPerNovaMs(): number | undefined {
    return this.#cloud.clock.localPerNovaMs();
  }

  sample(kind: MigrationKind, ramMb: number, durationMs: number): void {
    if (!(durationMs > 0) || !(ramMb >= 0)) return;
    this.#own.add(kind, ramMb, durationMs);
    if (this.#cloud !== this.#own) this.#cloud.add(kind, ramMb, durationMs);
  }

  /** Expected running time (Nova ms); undefined without a model. */
  predictMs(kind: MigrationKind, ramMb: number): number | undefined {
    const fit = fitDuration(this.#samplesOf(kind));
    return fit === undefined ? undefined : fit.a + fit.b * ramMb;
  }

  /** {@linkcode predictMs} on the controller's clock, once Nova's is paired. */
  predictLocalMs(kind: MigrationKind, ramMb: number): number | undefined {
    const novaMs = this.predictMs(kind, ramMb);
    const perNovaMs = this.clockPerNovaMs();
    return novaMs === undefined || perNovaMs === undefined
      ? undefined
      : novaMs * perNovaMs;
  }

  /** How late to wake past an expected end, as a fraction of it (margin.ts). */
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

  /** Learns copy starts, completed copy times and this look at our starts. */
  learn(view: PaceView): void {
    for (const [id, r] of view.records) {
      const keys = recordKeys(id, r, view.issuedAt(id));
      // only Nova's own record was created as it accepted our start
      if (r.id !== undefined) {
        this.#pairClocks(keys, view.issuedAt(id), r.createdAt);
      }
      const status = r.status.toLowerCase();
      const known = this.#active.get(id);
      const same = known !== undefined && keys.includes(known.recordId)
        ? known
        : undefined;
      if (waitingInNova(status)) {
        // with the conductor, or behind Nova's per-host limit: not copying
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
    for (const [id, p] of view.progress ?? []) this.#eta.set(id, p);
    for (const id of this.#eta.keys()) {
      if (!this.#active.has(id)) this.#eta.delete(id);
    }
    for (const e of view.inFlight) this.#noteLook(e.id, view);
    for (const id of this.#looked.keys()) {
      if (!live.has(id)) this.#looked.delete(id);
    }
  }

  /** A migration first seen copying: since when. */
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
    const freed = slotFreedAt(r, view.records.values());
    // at Nova's limit 1, a copy that ended since its creation held it queued
    const held = queued ||
      (r.id !== undefined && view.novaLimit === 1 && freed !== undefined);
    if (!held) {
      // a record known only from events was created by the copy's first step
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
    const novaSince = freed ?? parseNovaTime(r.updatedAt ?? r.createdAt);
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
      queued: true,
    };
  }

  /** Once per record: a duration sample (Nova's clock) and a slot time (ours). */
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
    // a look late on purpose (Nova's queue kept the host busy) adds no idle
    // slot: at most a poll interval past Nova's end counts
    const endedMs = parseNovaTime(r.updatedAt ?? undefined);
    const endedLocal = endedMs === undefined
      ? undefined
      : this.#cloud.clock.toLocal(endedMs);
    const seenMs = endedLocal === undefined
      ? view.nowMs
      : Math.min(view.nowMs, endedLocal + view.pollMs);
    const slot = copySpan(issued, known?.sinceMs, queued, seenMs);
    if (slot === undefined) return;
    this.#slots.push({ ramMb: ram, durationMs: slot.copyMs });
    if (this.#slots.length > MAX_SAMPLES) this.#slots.shift();
  }

  /** Our start's record reads Nova's clock at our start. */
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
   * Ms until the earliest end or first look due; while Nova's queue holds
   * work of the host, how long an untimed copy has run. Sets endsBy.
   */
  dueInMs(view: PaceView): {
    dueMs: number | undefined;
    untimed: boolean;
    untimedRunMs?: number;
  } {
    const { model, first, untimed, byId, backlog } = this.#ends(view);
    this.#endsBy = new Map(
      [...byId].map(([id, { since, end, timed }]) => [
        id,
        end + Math.max(
          timed ? view.pollMs : UNTIMED_POLLS * view.pollMs,
          LATE_END_SHARE * (end - since),
        ),
      ]),
    );
    this.#expected = new Map(
      [...byId].map(([id, { end, timed }]) => [id, timed ? end : undefined]),
    );
    const look = lookAt([...model, ...first], view.pollMs);
    const untimedSince = Math.min(
      ...[...byId.values()].filter((e) => !e.timed).map((e) => e.since),
    );
    return {
      dueMs: look === undefined ? undefined : Math.max(0, look - view.nowMs),
      untimed,
      ...(untimed && backlog && Number.isFinite(untimedSince)
        ? { untimedRunMs: Math.max(0, view.nowMs - untimedSince) }
        : {}),
    };
  }

  /** The next look is due only for first looks: a glance may stand in for it. */
  firstLooksOnly(view: PaceView): boolean {
    const { model, first, untimed } = this.#ends(view);
    if (untimed || first.length === 0) return false;
    const look = lookAt([...model, ...first], view.pollMs);
    return look !== undefined && model.every((end) => end > look);
  }

  planGlance(view: PaceView | undefined): void {
    this.#glance = view;
  }

  /** By when each running migration's end should be heard of. */
  endsBy(): ReadonlyMap<string, number> {
    return this.#endsBy;
  }

  /** Each running migration's expected end; undefined while untimed. */
  expectedEnds(): ReadonlyMap<string, number | undefined> {
    return this.#expected;
  }

  /** The planned glance's view, once. */
  takeGlance(): PaceView | undefined {
    const view = this.#glance;
    this.#glance = undefined;
    return view;
  }

  #ends(
    view: PaceView,
  ): {
    model: number[];
    first: number[];
    untimed: boolean;
    byId: Map<string, Due>;
    backlog: boolean;
  } {
    const byId = new Map<string, Due>();
    const model: number[] = [];
    const first: number[] = [];
    let untimed = false;
    // Nova queues on this host: a start not listed yet waits there too
    const queueing = [...view.records.values()].some((r) =>
      r.status.toLowerCase() === "queued"
    );
    const full = fillsNovaLimit(view);
    const perNovaMs = this.clockPerNovaMs();
    for (const entry of view.inFlight) {
      // a fast failure of a start frees its slot, unless it waits behind ours
      const firstLook = full ? undefined : this.#firstLook(entry.id, view);
      if (firstLook !== undefined) first.push(firstLook);
      const status = view.records.get(entry.id)?.status.toLowerCase();
      if (status !== undefined && waitingInNova(status)) continue;
      if (status === undefined && (queueing || full)) continue;
      const since = this.#active.get(entry.id)?.sinceMs ??
        view.issuedAt(entry.id) ?? Number.NaN;
      const end = this.#endOf(entry, since, view, perNovaMs, queueing);
      if (end === undefined) untimed = true;
      else model.push(end);
      // no record: not copying as far as anyone told, no end due yet
      if (status === undefined || Number.isNaN(since)) continue;
      byId.set(entry.id, {
        since,
        end: end ?? since + this.#slotMs(view.ramOf(entry.id)),
        timed: end !== undefined,
      });
    }
    return { model, first, untimed, byId, backlog: queueing || full };
  }

  #endOf(
    entry: EvictionStatusInFlightItem,
    since: number,
    view: PaceView,
    perNovaMs: number | undefined,
    queueing: boolean,
  ): number | undefined {
    const ram = view.ramOf(entry.id);
    const localMs = ram === undefined
      ? undefined
      : this.predictLocalMs(entry.kind, ram);
    if (
      localMs === undefined || perNovaMs === undefined || Number.isNaN(since)
    ) return this.#measuredEnd(entry.id);
    // while Nova's queue keeps the host busy, a late look costs nothing
    const margin = queueing ? QUEUED_MARGIN : this.marginOf(
      entry.kind,
      ram!,
      view.pollMs / perNovaMs,
      view.limit <= 1 ? 0 : MAX_EARLY_LOOKS,
    );
    return since + localMs * (1 + margin);
  }

  /** Without a model: the end a read's ETA gives. */
  #measuredEnd(id: string): number | undefined {
    const p = this.#eta.get(id);
    if (p?.etaSeconds === undefined) return undefined;
    return p.readAtMs + p.etaSeconds * 1000 * (1 + LATE_MARGIN);
  }

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
      // the conductor writes the record after Nova's 202, seconds later on a
      // loaded cloud
      withConductor: status === undefined
        ? !view.pending(id)
        : status.toLowerCase() === "accepted",
    });
  }

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
 * Keys a migration is learned once by (Nova id, our start, else its creation).
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
 * The earliest end, or the last within half a poll interval of it (idling
 * one slot briefly beats idling the others a poll interval).
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

/** What {@linkcode nextLookMs} decides from (ms). */
export interface LookInput {
  dueMs: number | undefined;
  untimed: boolean;
  untimedRunMs?: number | undefined;
  inFlight: number;
  retryInMs: number | undefined;
  /** Work that moves without us: busy or arriving VMs, free slots with ready VMs. */
  watching: boolean;
  pollMs: number;
  maxPollMs: number;
  /** Wait while nothing can change without a person or an event. */
  slowPollMs: number;
}

/**
 * The wait until the next look: the earliest expected end within
 * [pollMs, maxPollMs]; an untimed copy each poll interval or, while Nova's
 * queue keeps the host busy, as late again as it has run.
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
    if (input.untimed && !input.watching && input.untimedRunMs !== undefined) {
      const late = Math.min(input.untimedRunMs, input.slowPollMs);
      return Math.max(pollMs, Math.min(late, input.dueMs ?? Infinity));
    }
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

/**
 * Splits `startMs`..`endMs` at `copyFromMs` (past Nova's queue), so the
 * model learns the copy alone; undefined when queued and the split unknown.
 *
 * @example
 * ```ts
 * import { copySpan } from "./pacing.ts";
 * console.log(copySpan(0, 30_000, true, 40_000)); // { copyMs: 10000, queuedMs: 30000 }
 * console.log(copySpan(0, undefined, false, 40_000)); // { copyMs: 40000, queuedMs: 0 }
 * console.log(copySpan(0, undefined, true, 40_000)); // undefined
 * ```
 */
export function copySpan(
  startMs: number,
  copyFromMs: number | undefined,
  queued: boolean,
  endMs: number,
): { copyMs: number; queuedMs: number } | undefined {
  if (!Number.isFinite(startMs) || !Number.isFinite(endMs)) return undefined;
  if (!(endMs > startMs)) return undefined;
  if (!queued) return { copyMs: endMs - startMs, queuedMs: 0 };
  if (copyFromMs === undefined || !Number.isFinite(copyFromMs)) {
    return undefined;
  }
  const from = Math.min(endMs, Math.max(startMs, copyFromMs));
  if (!(endMs > from)) return undefined;
  return { copyMs: endMs - from, queuedMs: from - startMs };
}
