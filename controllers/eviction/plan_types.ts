/**
 * The planner's input and output types (plan.ts planPass), below both the
 * planner and its steps (plan_steps.ts) so that neither imports the other
 * for them.
 *
 * @module
 */

import type {
  EvictionStatus,
  EvictionStatusSkippedItem,
} from "../../models/mod.ts";
import type { DrainSummary } from "./conditions.ts";
import type { MigrationKind } from "../../openstack/informer/nova_states.ts";
import type { PlanOptions } from "./plan_options.ts";
import type { ActionNote, StartNote } from "./once.ts";
import type {
  DepartedServer,
  ObservedMigration,
  ObservedServer,
} from "../../openstack/informer/snapshot.ts";

/** Where the limit came from (status.limitSource). */
export type LimitSource = "policy" | "flags" | "eviction";

/** A failure seen this pass (a counted attempt, or a VM newly in ERROR). */
export interface FailureReport {
  /** Server id. */
  id: string;
  /** Why, e.g. Nova's fault message or the failed migration record. */
  reason: string;
  /** Attempts counted so far, this one included. */
  attempts: number;
  /** True when the VM will not be retried any more (until a person asks). */
  exhausted: boolean;
  /** Whether the cause may go away by itself. */
  transient: boolean;
}

/** The planner (plan.ts planPass), given to the phases that re-plan under the cluster budget. */
export type Planner = (input: PlanInput) => Plan;

/** Everything one pass of the planner looks at. */
export interface PlanInput {
  /** The compute service host being drained (`OS-EXT-SRV-ATTR:host`). */
  host: string;
  /** The VMs listed on the host this pass. Duplicates (pagination) are ignored. */
  servers: readonly ObservedServer[];
  /**
   * Migration records of the host since the drain started, with the host
   * as source or as destination (`os-migrations?host=` matches both).
   */
  migrations: readonly ObservedMigration[];
  /** `GET /servers/{id}` answers for the ids of {@linkcode departedIds}. */
  departed: readonly DepartedServer[];
  /** The Eviction's current status (undefined on the first pass). */
  status: EvictionStatus | undefined;
  /** Resolved per-host limit: an integer >= 0. */
  limit: number;
  /** Where the limit came from. */
  limitSource: LimitSource;
  /**
   * How many new migrations may start cluster-wide right now: the cluster
   * maximum minus everything in flight in all Evictions (this one's
   * included); Infinity when unbounded.
   */
  clusterBudgetLeft: number;
  /** The current time. */
  now: Date;
  /** Planner options. */
  options: PlanOptions;
  /** metadata.generation of the Eviction, copied to observedGeneration. */
  generation?: number;
  /**
   * Set to say why no migration may start this pass (e.g. the Hypervisor's
   * TraitsUpdated condition is not True, so the limit may be stale).
   * Everything else (failures, confirmations, aborts, status) still happens.
   */
  holdStarts?: string;
  /**
   * Controller clock when this process first saw each in-flight VM's copy
   * under way (its record past `queued`): the migration timeout runs from
   * there, else (after a restart) from the start in status.
   */
  copyStartedAtMs?: ReadonlyMap<string, number>;
  /**
   * Live migrations Nova runs at once from this host, when the drain has
   * seen it queue (nova_limit.ts): no more live migrations are started
   * than that, so no slot and no cluster budget is spent on Nova's queue.
   */
  novaLiveLimit?: number;
  /**
   * Live migrations started beyond `novaLiveLimit`, to wait in Nova's
   * queue (default 0): without a cluster budget one queued migration costs
   * nothing and Nova starts its copy the moment one ends, sooner than the
   * next look would.
   */
  novaQueueAhead?: number;
  /** What this process knows of the answers to its starts, by server id. */
  starts?: ReadonlyMap<string, StartNote>;
  /**
   * Controller clock when the direct look at Nova that `servers`,
   * `migrations` and `departed` rest on began (a snapshot's: its list's);
   * default `now`. Only a look begun after the answer to a
   * start, a confirm or an abort of ours may show it needed again
   * (once.ts).
   */
  lookedAtMs?: number;
  /** The confirms this process sent, by server id. */
  confirms?: ReadonlyMap<string, ActionNote>;
  /** The aborts this process sent, by migration id. */
  aborts?: ReadonlyMap<string, ActionNote>;
  /**
   * VMs whose starts went unanswered (5xx, timeout, reset) with Nova showing
   * nothing of them: not started again before `retryAtMs` (epoch ms), never
   * charged; `count` unknown answers in a row.
   */
  startBackoff?: ReadonlyMap<string, StartBackoff>;
}

/** A VM's backoff after unanswered starts ({@linkcode PlanInput.startBackoff}). */
export interface StartBackoff {
  /** Unknown answers in a row. */
  count: number;
  /** Not started again before this (epoch ms). */
  retryAtMs: number;
}

/** A migration to start. */
export interface StartAction {
  /** Server id. */
  id: string;
  /** live: `os-migrateLive` with host null, block_migration auto; cold: `migrate`. */
  kind: MigrationKind;
  /** Flavor RAM, for logs and the order. */
  ramMb: number;
  /** 1 for the first attempt, n for the n-th. */
  attempt: number;
}

/** A stuck live migration to abort (`DELETE /servers/{id}/migrations/{migrationId}`). */
export interface AbortAction {
  /** Server id. */
  id: string;
  /** The migration record id. */
  migrationId: string;
}

/** A migration in flight for longer than migrationTimeoutSeconds. */
export interface StuckReport {
  /** Server id. */
  id: string;
  /** live or cold. */
  kind: MigrationKind;
  /** The record, when Nova showed one. */
  migrationId?: string;
  /** When it started (status.inFlight[].startedAt). */
  startedAt: string;
  /** Seconds since then. */
  elapsedSeconds: number;
}

/** A VM that stays on the host for now, and why. */
export interface WaitingVm {
  /** Server id. */
  id: string;
  /** ready (no slot), busy, backoff, or unknown (its GET failed). */
  why: "ready" | "busy" | "backoff" | "unknown";
  /** Human-readable detail. */
  detail: string;
}

/** What the reconciler does this pass, and the status to write. */
export interface Plan {
  /** Migrations to start, largest flavor RAM first, then by id. */
  start: StartAction[];
  /**
   * Servers in VERIFY_RESIZE on their destination after a cold migration
   * this drain started: confirm the resize. Nobody else's is ever confirmed.
   */
  confirmResize: string[];
  /** Stuck live migrations to abort (only with abortStuckMigrations). */
  abort: AbortAction[];
  /** Migrations in flight past the timeout (aborted or not). */
  stuck: StuckReport[];
  /** VMs that left the host this pass, migrated by a start of ours. */
  done: string[];
  /** VMs that left the host this pass, moved by someone else (not counted). */
  movedByOthers: string[];
  /** VMs deleted this pass (404). */
  gone: string[];
  /** Failures seen this pass: an attempt that failed, or a VM newly in ERROR. */
  failed: FailureReport[];
  /** Every VM left alone now (being deleted, or needing a person). */
  skipped: EvictionStatusSkippedItem[];
  /** VMs on the host that the previous pass did not know (they join the queue). */
  newlyFound: string[];
  /** VMs that stay on the host for now, by id. */
  waiting: WaitingVm[];
  /** Migrations in flight once the starts are made. */
  inFlightCount: number;
  /**
   * The drain is done: the host is empty, nothing is in flight, and looks
   * at least the settle interval apart have found it so (next.finishedAt).
   */
  finished: boolean;
  /**
   * Seen empty but not yet settled: when (epoch ms) a look may declare it
   * done. Undefined otherwise.
   */
  settleAtMs: number | undefined;
  /** Nothing is in flight and nothing can move without a person. */
  blocked: boolean;
  /**
   * VMs with a migration towards the host in progress: they are waited for
   * (counted outstanding) and drained once they land.
   */
  arriving: string[];
  /** The earliest time a VM in backoff may be retried (epoch ms), if any. */
  nextRetryAtMs: number | undefined;
  /**
   * The complete next status, with an entry in inFlight for every start:
   * written before the starts are issued, so that a restart never loses
   * one (the answers come in on later passes, as {@linkcode StartNote}s).
   */
  next: EvictionStatus;
  /** How the VMs not in flight stand. */
  summary: DrainSummary;
}
