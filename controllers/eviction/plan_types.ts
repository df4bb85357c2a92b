/**
 * The planner's input and output types.
 * @module
 */

import type {
  EvictionStatus,
  EvictionStatusAbortedItem,
  EvictionStatusInFlightItem,
  EvictionStatusSkippedItem,
} from "../../models/mod.ts";
import type { DrainSummary, NotConvergingCopy } from "./conditions.ts";
import type { MigrationKind } from "../../openstack/informer/nova_states.ts";
import type { PlanOptions } from "./plan_options.ts";
import type { CopyProgress } from "../../openstack/informer/progress_types.ts";
import type { ActionNote, StartNote } from "./once.ts";
import type { VmRecords } from "../../openstack/informer/nova_records.ts";
import type { ConvergenceRequest } from "./requests.ts";
import type {
  DepartedServer,
  ObservedMigration,
  ObservedServer,
} from "../../openstack/informer/snapshot.ts";

/** Where the limit came from (status.limitSource). */
export type LimitSource = "policy" | "flags" | "eviction";

/** A failure seen this pass (a counted attempt, or a VM newly in ERROR). */
export interface FailureReport {
  id: string;
  /** Why, e.g. Nova's fault message or the failed migration record. */
  reason: string;
  /** Attempts counted so far, this one included. */
  attempts: number;
  /** True when the VM will not be retried any more (until a person asks). */
  exhausted: boolean;
  transient: boolean;
}

/** The planner (plan.ts planPass), given to the phases that re-plan under the cluster budget. */
export type Planner = (input: PlanInput) => Plan;

/** A plan and the input it was made from. */
export interface Planned {
  plan: Plan;
  input: PlanInput;
}

/** Everything one pass of the planner looks at. */
export interface PlanInput {
  host: string;
  /** The VMs listed on the host this pass. Duplicates (pagination) are ignored. */
  servers: readonly ObservedServer[];
  /** Migration records from or to the host since the drain started. */
  migrations: readonly ObservedMigration[];
  /** `GET /servers/{id}` answers for the ids of {@linkcode departedIds}. */
  departed: readonly DepartedServer[];
  status: EvictionStatus | undefined;
  limit: number;
  limitSource: LimitSource;
  /** New migrations the cluster budget allows now; Infinity when unbounded. */
  clusterBudgetLeft: number;
  now: Date;
  options: PlanOptions;
  generation?: number;
  /** Why no migration may start this pass; everything else still happens. */
  holdStarts?: string;
  /** When each in-flight copy began: its timeout runs from there. */
  copyStartedAtMs?: ReadonlyMap<string, number>;
  /** Nova's own limit on the host's live migrations, when seen: no budget is spent on its queue. */
  novaLiveLimit?: number;
  /** Live starts beyond `novaLiveLimit` (default 0): without a cluster budget a queued one costs nothing. */
  novaQueueAhead?: number;
  /** What this process knows of the answers to its starts, by server id. */
  starts?: ReadonlyMap<string, StartNote>;
  /** When the look this input rests on began (default `now`; once.ts). */
  lookedAtMs?: number;
  /** The confirms this process sent, by server id. */
  confirms?: ReadonlyMap<string, ActionNote>;
  /** The aborts this process sent, by migration id. */
  aborts?: ReadonlyMap<string, ActionNote>;
  /** The force-completes this process sent, by migration id (sent at most once). */
  forceCompletes?: ReadonlyMap<string, ActionNote>;
  /** VMs whose starts went unanswered and Nova shows nothing of: never charged. */
  startBackoff?: ReadonlyMap<string, StartBackoff>;
  /** Progress of the live copies in flight, by server id (the informer's reads). */
  progress?: ReadonlyMap<string, CopyProgress>;
  /** A person's requests not answered yet (spec.actions not in status.actions). */
  requests?: readonly ConvergenceRequest[];
}

/** `status.inFlight[]` and `status.aborted[]` items. */
export type {
  EvictionStatusAbortedItem as AbortedItem,
  EvictionStatusInFlightItem as InFlightItem,
};
export type { ConvergenceRequest };

/** A VM's backoff after unanswered starts ({@linkcode PlanInput.startBackoff}). */
export interface StartBackoff {
  count: number;
  retryAtMs: number;
}

/** A migration to start. */
export interface StartAction {
  id: string;
  /** live: `os-migrateLive` with host null, block_migration auto; cold: `migrate`. */
  kind: MigrationKind;
  ramMb: number;
  attempt: number;
}

/** A stuck live migration to abort (`DELETE /servers/{id}/migrations/{migrationId}`). */
export interface AbortAction {
  id: string;
  migrationId: string;
  /** Past the flat timeout (`stuck`), past its convergence bound (`timeout`), or asked by a person. */
  reason: "stuck" | "timeout" | "requested";
  requestedBy?: string;
}

/** A live copy to switch to post-copy or pause (Nova's `force_complete`), sent at most once. */
export interface ForceCompleteAction {
  id: string;
  migrationId: string;
  reason: "timeout" | "requested";
  requestedBy?: string;
}

/** A live copy past its progress or completion bound (conditions.ts reports it). */
export type NotConvergingReport = NotConvergingCopy;

/** What became of a person's request (Eviction status.actions). */
export interface RequestOutcome extends ConvergenceRequest {
  outcome: "Sent" | "NotInFlight" | "Refused";
  message: string;
}

/** A migration in flight for longer than migrationTimeoutSeconds. */
export interface StuckReport {
  id: string;
  kind: MigrationKind;
  migrationId?: string;
  startedAt: string;
  elapsedSeconds: number;
}

/** A VM that stays on the host for now, and why. */
export interface WaitingVm {
  id: string;
  /** ready (no slot), busy, backoff, or unknown (its GET failed). */
  why: "ready" | "busy" | "backoff" | "unknown";
  detail: string;
}

/** What the reconciler does this pass, and the status to write. */
export interface Plan {
  /** Migrations to start, largest flavor RAM first, then by id. */
  start: StartAction[];
  /** Our cold migrations in VERIFY_RESIZE: confirm them (nobody else's). */
  confirmResize: string[];
  abort: AbortAction[];
  forceComplete: ForceCompleteAction[];
  notConverging: NotConvergingReport[];
  requestOutcomes: RequestOutcome[];
  /** Migrations in flight past the timeout (aborted or not). */
  stuck: StuckReport[];
  /** VMs that left the host this pass, migrated by a start of ours. */
  done: string[];
  /** VMs that left the host this pass, moved by someone else (not counted). */
  movedByOthers: string[];
  /** Deleted this pass (404). */
  gone: string[];
  failed: FailureReport[];
  /** Every VM left alone now (being deleted, or needing a person). */
  skipped: EvictionStatusSkippedItem[];
  /** VMs on the host that the previous pass did not know (they join the queue). */
  newlyFound: string[];
  waiting: WaitingVm[];
  /** Migrations in flight once the starts are made. */
  inFlightCount: number;
  /** The drain is done: settled empty (next.finishedAt). */
  finished: boolean;
  /** Seen empty, not yet settled: when a look may declare it done (epoch ms). */
  settleAtMs: number | undefined;
  /** Nothing is in flight and nothing can move without a person. */
  blocked: boolean;
  /** VMs migrating towards the host: counted outstanding, drained once they land. */
  arriving: string[];
  /** The earliest time a VM in backoff may be retried (epoch ms), if any. */
  nextRetryAtMs: number | undefined;
  /** The earliest bound of a live start Nova shows no copy of yet: the next look comes no later (epoch ms). */
  lookByMs?: number;
  /** The next status, every start in inFlight: written before the starts are issued. */
  next: EvictionStatus;
  summary: DrainSummary;
}

/** The on-host view: the VMs on the host and the lookups of those that left. */
export interface HostView {
  /** GET answers by id (null: deleted), first answer per id. */
  departedById: Map<string, ObservedServer | null>;
  /** The list, plus any looked-up VM still here (the list and the GET raced). */
  onHost: Map<string, ObservedServer>;
}

/** The host's migration records, latest per VM, and those arriving here. */
export interface Records {
  latest: ReadonlyMap<string, VmRecords>;
  /** Per VM, the migration towards the host in progress. */
  incoming: ReadonlyMap<string, ObservedMigration>;
}
