/**
 * The one in-process memory of each drain, forgotten in one call when its
 * Eviction is gone (the framework calls {@linkcode DrainMemory.forget}
 * then, framework/handler.ts ForgetHandler): the starts it issued
 * and what Nova answered, the confirms and aborts it sent, the duration model
 * that paces the passes, when the next pass is due, its count in the ledger
 * and place in the budget line, the finalizer's settle marks and the
 * informer's watch of its host. A restart loses it
 * all on purpose: the status and a fresh look at Nova are enough to go on.
 *
 * @module
 */

import type { ActionNote, StartNote } from "./once.ts";
import type { ObservedMigration } from "../../openstack/informer/snapshot.ts";
import {
  type MigrationKind,
  migrationPhase,
  waitingInNova,
} from "../../openstack/informer/nova_states.ts";
import type { StartBackoff } from "./plan_types.ts";
import { Durations, Pace } from "../../openstack/informer/pacing.ts";
import { NovaClock } from "../../openstack/informer/nova_clock.ts";
import { InFlightLedger } from "./ledger.ts";
import type { DrainMarks } from "./lesson.ts";
import { BudgetWaiters } from "./budget.ts";
import type { HostInformer } from "../../openstack/informer/informer.ts";
import type { ProgressMarks } from "./settle.ts";

/** A start this process issued, and Nova's answer so far. */
export interface IssuedStart extends StartNote {
  /** live or cold. */
  kind: MigrationKind;
  /** Controller clock when it was issued. */
  issuedAtMs: number;
  /** Nova's request id of an accepted start (its instance action). */
  requestId?: string;
}

/**
 * What the finalizer of a deleted drain keeps between its runs (a restart
 * starts the stall bounds again, never shortens them).
 */
export interface SettleState {
  /** When each record's current state was first seen (settle.ts). */
  marks: ProgressMarks;
  /** Controller clock of this process's first wait for the migrations. */
  waitingSinceMs: number | undefined;
  /** Failed finalizer runs in a row. */
  failures: number;
}

/** What one drain remembers. */
export interface DrainState {
  /** Starts by server id (the last one per VM). */
  readonly starts: Map<string, IssuedStart>;
  /** The confirms sent, by server id (once.ts: none sent twice blindly). */
  readonly confirms: Map<string, ActionNote>;
  /** The aborts sent, by migration id (once.ts). */
  readonly aborts: Map<string, ActionNote>;
  /** Flavor RAM of the VMs seen on the host. */
  readonly ram: Map<string, number>;
  /** The duration model (its first samples shared by every drain of the process). */
  readonly pace: Pace;
  /**
   * Controller clock before which a pass need not look at Nova, and the
   * inputs it was computed from: a pass woken earlier by an unrelated
   * change (a Hypervisor status sync) returns at once.
   */
  due: { atMs: number; fingerprint: string } | undefined;
  /** A start answer came in that the next pass must act on. */
  woken: boolean;
  /** Controller clock of the last look at Nova of a finished drain. */
  lastFinishedCheckMs: number | undefined;
  /** VMs whose starts went unanswered, backing off (act.ts). */
  readonly startBackoff: Map<string, StartBackoff>;
  /**
   * Controller clock when this drain first saw each member of its wave
   * still enabled: the start of that member's bounded wait (wave.ts).
   */
  readonly waveSeen: Map<string, number>;
  /**
   * Controller clock when each VM's migration record was first seen past
   * Nova's queue (its copy under way): where the migration timeout runs
   * from ({@linkcode noteCopyStarts}).
   */
  readonly copyStarted: Map<string, number>;
  /** Controller clock of this process's first pass of the drain. */
  firstSeenMs?: number;
  /** When its first migration started and its last ended (lesson.ts). */
  marks: DrainMarks;
  /** The finalizer's memory once the Eviction is deleted (finalize.ts). */
  readonly settle: SettleState;
}

/**
 * Per-drain memory by Eviction key.
 *
 * @example
 * ```ts
 * import { DrainMemory } from "./memory.ts";
 * import { PollingInformer } from "../../openstack/informer/informer.ts";
 * import { NovaLister } from "../../openstack/informer/lister.ts";
 * const nova = { listServersOnHost: () => Promise.resolve([]),
 *   listMigrations: () => Promise.resolve([]), getServer: () => Promise.reject() };
 * const memory = new DrainMemory(new PollingInformer(new NovaLister(nova, { now: Date.now })));
 * memory.of("a").ram.set("vm", 1024);
 * memory.forget("a");
 * console.assert(memory.of("a").ram.size === 0);
 * ```
 */
export class DrainMemory {
  readonly #states = new Map<string, DrainState>();
  /** Migration durations every drain learns from (one Nova, one clock). */
  readonly #cloud: Durations;
  /** Migrations in flight per Eviction of this process, for the cluster budget. */
  readonly ledger = new InFlightLedger();
  /** This process's drains waiting for budget, in line. */
  readonly budgetWaiters = new BudgetWaiters();
  /**
   * What the drains know of their hosts (openstack/informer/): shared by
   * every drain of this process, each drain's host watched by its key.
   */
  readonly informer: HostInformer;

  /**
   * A memory whose drains see their hosts through `informer` and time
   * Nova's migrations by `novaClock`.
   */
  constructor(informer: HostInformer, novaClock: NovaClock = new NovaClock()) {
    this.informer = informer;
    this.#cloud = new Durations(novaClock);
  }

  /** The state of a drain (created empty). */
  of(key: string): DrainState {
    let s = this.#states.get(key);
    if (s === undefined) {
      s = {
        starts: new Map(),
        confirms: new Map(),
        aborts: new Map(),
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

  /**
   * Forgets everything about a drain: its state (settle marks included),
   * its count in the ledger, its place in the line for budget and its
   * informer's watch of its host. The framework calls it
   * once the Eviction is gone (controller.ts registers it).
   */
  forget(key: string): void {
    this.#states.delete(key);
    this.ledger.delete(key);
    this.budgetWaiters.delete(key);
    this.informer.forget(key);
  }
}

/**
 * Notes in `copyStarted` the VMs whose record leaving `host` is in
 * progress past Nova's queue, first seen now; forgets those with no such
 * record any more. Returns the map.
 *
 * @example
 * ```ts
 * import { noteCopyStarts } from "./memory.ts";
 * const copies = new Map<string, number>();
 * const rec = (status: string) => ({ id: 1, instanceUuid: "vm", migrationType: "live-migration", status, sourceCompute: "h", createdAt: "" });
 * noteCopyStarts(copies, [rec("queued")], "h", 5);
 * console.assert(!copies.has("vm"));
 * noteCopyStarts(copies, [rec("running")], "h", 9);
 * noteCopyStarts(copies, [rec("running")], "h", 12);
 * console.assert(copies.get("vm") === 9);
 * ```
 */
export function noteCopyStarts(
  copyStarted: Map<string, number>,
  migrations: readonly ObservedMigration[],
  host: string,
  nowMs: number,
): Map<string, number> {
  const copying = new Set<string>();
  for (const m of migrations) {
    if (m.sourceCompute !== host) continue;
    if (migrationPhase(m.status) !== "in_progress") continue;
    if (waitingInNova(m.status)) continue;
    copying.add(m.instanceUuid);
    if (!copyStarted.has(m.instanceUuid)) {
      copyStarted.set(m.instanceUuid, nowMs);
    }
  }
  for (const id of [...copyStarted.keys()]) {
    if (!copying.has(id)) copyStarted.delete(id);
  }
  return copyStarted;
}
