/**
 * The in-process memory of each drain; a restart loses it on purpose (the status and a look suffice).
 * @module
 */

import { type ActionNote, forgetUntracked, type StartNote } from "./once.ts";
import type { EvictionStatusInFlightItem } from "../../models/mod.ts";
import type { ObservedMigration } from "../../openstack/informer/snapshot.ts";
import {
  beforeCopy,
  type MigrationKind,
  migrationPhase,
} from "../../openstack/informer/nova_states.ts";
import type { StartBackoff } from "./plan_types.ts";
import { parseNovaTime } from "../../openstack/nova_time.ts";
import { Durations, Pace } from "../../openstack/informer/pacing.ts";
import { NovaClock } from "../../openstack/informer/nova_clock.ts";
import { InFlightLedger } from "./ledger.ts";
import type { DrainMarks } from "./drain_lesson.ts";
import { BudgetWaiters } from "./budget_share.ts";
import type { HostInformer } from "../../openstack/informer/informer.ts";
import type { ProgressMarks } from "./settle.ts";

/** A start this process issued, and Nova's answer so far. */
export interface IssuedStart extends StartNote {
  kind: MigrationKind;
  issuedAtMs: number;
  /** Of an accepted start (its instance action). */
  requestId?: string;
}

/** What the finalizer of a deleted drain keeps between its runs (finalize.ts). */
export interface SettleState {
  /** When each record's current state was first seen (settle.ts). */
  marks: ProgressMarks;
  /** This process's first wait for the migrations. */
  waitingSinceMs: number | undefined;
  /** Failed finalizer runs in a row. */
  failures: number;
}

/**
 * What one drain remembers (controller clock). A pass changes it only through its Steps; act's
 * answers write their notes, the start backoff and `woken` as they come.
 */
export interface DrainState {
  /** The last start per VM. */
  readonly starts: Map<string, IssuedStart>;
  /** By server id; aborts and force-completes by migration id (once.ts). */
  readonly confirms: Map<string, ActionNote>;
  readonly aborts: Map<string, ActionNote>;
  readonly forceCompletes: Map<string, ActionNote>;
  /** Flavor RAM of the VMs seen on the host. */
  readonly ram: Map<string, number>;
  /** The duration model (its first samples shared by every drain of the process). */
  readonly pace: Pace;
  /** Before when a pass need not look, and from what inputs. */
  due: { atMs: number; fingerprint: string } | undefined;
  /** A start answer came in that the next pass must act on. */
  woken: boolean;
  lastFinishedCheckMs: number | undefined;
  /** VMs whose starts went unanswered, backing off. */
  readonly startBackoff: Map<string, StartBackoff>;
  /** When this drain first saw each member of its wave still enabled (wave.ts). */
  readonly waveSeen: Map<string, number>;
  /** When each VM's copy began ({@linkcode copyStartsSeen}). */
  readonly copyStarted: Map<string, number>;
  /** This process's first pass of the drain. */
  firstSeenMs?: number;
  marks: DrainMarks;
  /** The finalizer's, once the Eviction is deleted. */
  readonly settle: SettleState;
}

/**
 * A Step's change of its drain's record: fields set, maps replaced, `ram` added to; untracked notes
 * forgotten, then `issued` added.
 */
export interface RecordChange {
  due?: DrainState["due"];
  woken?: boolean;
  lastFinishedCheckMs?: number;
  firstSeenMs?: number;
  marks?: DrainMarks;
  copyStarted?: ReadonlyMap<string, number>;
  waveSeen?: ReadonlyMap<string, number>;
  ram?: ReadonlyMap<string, number>;
  tracked?: { servers: ReadonlySet<string>; migrations: ReadonlySet<string> };
  issued?: {
    starts: readonly IssuedStart[];
    confirms: ReadonlyMap<string, ActionNote>;
    aborts: ReadonlyMap<string, ActionNote>;
    forceCompletes?: ReadonlyMap<string, ActionNote>;
  };
}

/**
 * Applies a pass's change to its drain's record.
 *
 * @example
 * ```ts
 * import { changeRecord, DrainMemory } from "./memory.ts";
 * import { PollingInformer } from "../../openstack/informer/informer.ts";
 * import { NovaLister } from "../../openstack/informer/lister.ts";
 * import type { NovaClient } from "../../openstack/mod.ts";
 * const lister = new NovaLister({} as NovaClient, { now: Date.now });
 * const s = new DrainMemory(new PollingInformer(lister)).of("a");
 * changeRecord(s, { woken: true, ram: new Map([["vm", 512]]) });
 * console.assert(s.woken && s.ram.get("vm") === 512);
 * ```
 */
export function changeRecord(state: DrainState, c: RecordChange): void {
  if ("due" in c) state.due = c.due;
  if (c.woken !== undefined) state.woken = c.woken;
  if (c.lastFinishedCheckMs !== undefined) {
    state.lastFinishedCheckMs = c.lastFinishedCheckMs;
  }
  if (c.firstSeenMs !== undefined) state.firstSeenMs = c.firstSeenMs;
  if (c.marks !== undefined) state.marks = c.marks;
  if (c.copyStarted !== undefined) replace(state.copyStarted, c.copyStarted);
  if (c.waveSeen !== undefined) replace(state.waveSeen, c.waveSeen);
  for (const [id, mb] of c.ram ?? []) state.ram.set(id, mb);
  if (c.tracked !== undefined) {
    forgetUntracked(state.starts, c.tracked.servers);
    forgetUntracked(state.confirms, c.tracked.servers);
    forgetUntracked(state.aborts, c.tracked.migrations);
    forgetUntracked(state.forceCompletes, c.tracked.migrations);
  }
  for (const s of c.issued?.starts ?? []) state.starts.set(s.id, s);
  for (const [id, n] of c.issued?.confirms ?? []) state.confirms.set(id, n);
  for (const [id, n] of c.issued?.aborts ?? []) state.aborts.set(id, n);
  for (const [id, n] of c.issued?.forceCompletes ?? []) {
    state.forceCompletes.set(id, n);
  }
}

function replace<V>(map: Map<string, V>, by: ReadonlyMap<string, V>): void {
  map.clear();
  for (const [k, v] of by) map.set(k, v);
}

/**
 * Per-drain memory by Eviction key.
 *
 * @example
 * ```ts
 * import { DrainMemory } from "./memory.ts";
 * import { PollingInformer } from "../../openstack/informer/informer.ts";
 * import { NovaLister } from "../../openstack/informer/lister.ts";
 * import type { NovaClient } from "../../openstack/mod.ts";
 * const lister = new NovaLister({} as NovaClient, { now: Date.now });
 * const memory = new DrainMemory(new PollingInformer(lister));
 * memory.of("a").ram.set("vm", 1024);
 * memory.forget("a");
 * console.assert(memory.of("a").ram.size === 0);
 * ```
 */
export class DrainMemory {
  readonly #states = new Map<string, DrainState>();
  /** Migration durations every drain learns from (one Nova, one clock). */
  readonly #cloud: Durations;
  readonly ledger = new InFlightLedger();
  readonly budgetWaiters = new BudgetWaiters();
  /** What the drains know of their hosts, each watched by its drain's key. */
  readonly informer: HostInformer;

  /** Drains that see their hosts through `informer`, timing Nova by `novaClock`. */
  constructor(informer: HostInformer, novaClock: NovaClock = new NovaClock()) {
    this.informer = informer;
    this.#cloud = new Durations(novaClock);
  }

  /** A drain's state, created empty. */
  of(key: string): DrainState {
    let s = this.#states.get(key);
    if (s === undefined) {
      s = {
        starts: new Map(),
        confirms: new Map(),
        aborts: new Map(),
        forceCompletes: new Map(),
        ram: new Map(),
        pace: new Pace(this.#cloud),
        due: undefined,
        woken: false,
        lastFinishedCheckMs: undefined,
        startBackoff: new Map(),
        waveSeen: new Map(),
        copyStarted: new Map(),
        marks: {},
        settle: { marks: new Map(), waitingSinceMs: undefined, failures: 0 },
      };
      this.#states.set(key, s);
    }
    return s;
  }

  /** Forgets a drain: its state, ledger count, place in line and host watch. */
  forget(key: string): void {
    this.#states.delete(key);
    this.ledger.delete(key);
    this.budgetWaiters.delete(key);
    this.informer.forget(key);
  }
}

/**
 * When each VM's copy leaving `host` began: as `known` has it, else as the status wrote it (a restart
 * never restarts a copy's bound), else when Nova's record last changed (so no queued copy is cut short).
 *
 * @example
 * ```ts
 * import { copyStartsSeen } from "./memory.ts";
 * const rec = (status: string, updatedAt: string | null) => ({ id: 1, instanceUuid: "vm", migrationType: "live-migration", status, sourceCompute: "h", createdAt: "1970-01-01T00:00:01.000000", updatedAt });
 * console.assert(copyStartsSeen(new Map(), [rec("preparing", "1970-01-01T00:00:02.000000")], "h", 5).size === 0);
 * const seen = copyStartsSeen(new Map(), [rec("running", "1970-01-01T00:00:04.000000")], "h", 9);
 * console.assert(seen.get("vm") === 4000);
 * console.assert(copyStartsSeen(seen, [rec("running", "1970-01-01T00:00:08.000000")], "h", 12).get("vm") === 4000);
 * const written = [{ id: "vm", migrationId: "1", copyStartedAt: "1970-01-01T00:00:03.000Z" }];
 * console.assert(copyStartsSeen(new Map(), [rec("running", "1970-01-01T00:00:08.000000")], "h", 12, 0, written).get("vm") === 3000);
 * ```
 */
export function copyStartsSeen(
  known: ReadonlyMap<string, number>,
  migrations: readonly ObservedMigration[],
  host: string,
  nowMs: number,
  novaOffsetMs = 0,
  written: readonly Pick<
    EvictionStatusInFlightItem,
    "id" | "migrationId" | "copyStartedAt"
  >[] = [],
): Map<string, number> {
  const seen = new Map<string, number>();
  for (const m of migrations) {
    if (
      m.sourceCompute !== host || migrationPhase(m.status) !== "in_progress" ||
      beforeCopy(m.status)
    ) continue;
    const id = m.instanceUuid;
    const entry = written.find((e) =>
      e.id === id && e.migrationId === String(m.id)
    );
    const updatedMs = parseNovaTime(m.updatedAt);
    const first = parseNovaTime(entry?.copyStartedAt) ??
      (updatedMs === undefined ? nowMs : updatedMs - novaOffsetMs);
    seen.set(id, known.get(id) ?? Math.min(nowMs, first));
  }
  return seen;
}
