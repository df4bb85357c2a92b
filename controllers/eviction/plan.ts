/**
 * The pure planner of a drain: from one pass's observation of Nova, the
 * Eviction's status, the resolved limit, the cluster budget and the current
 * time, it decides what to start, confirm and abort, and computes the next
 * status. No I/O, no clock, no randomness.
 *
 * @module
 */

import { CONDITION_EVICTING, stoppedForPerson } from "../conditions.ts";
import type {
  EvictionStatus,
  EvictionStatusSkippedItem,
} from "../../models/mod.ts";
import {
  arrivingRecords,
  type FailureReport,
  latestRecords,
} from "./classify.ts";
import type { DrainSummary } from "./conditions.ts";
import { assembleStatus, byId, type LimitSource } from "./next_status.ts";
import type { MigrationKind } from "./nova_states.ts";
import {
  type ActionNote,
  type DepartedServer,
  type ObservedMigration,
  type ObservedServer,
  type PlanOptions,
  type StartNote,
  validatePlanOptions,
} from "./observation.ts";
import {
  arrivals,
  classifyOnHost,
  departures,
  foldNotes,
  newAcc,
  onHostView,
  pendingStarts,
  pickStarts,
  stuckAndAborts,
  unfinishedElsewhere,
} from "./plan_steps.ts";

export { UNANSWERED_REPORT_AFTER } from "./plan_steps.ts";
export type { FailureReport } from "./classify.ts";
export type { DrainSummary } from "./conditions.ts";
export type { MigrationKind } from "./nova_states.ts";
export type { LimitSource } from "./next_status.ts";

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
   * `migrations` and `departed` rest on began (a notified view's: its
   * list's); default `now`. Only a look begun after the answer to a
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

/**
 * The ids to look up with `GET /servers/{id}`: those the previous status
 * tracked (outstanding or in flight), and those whose migration record
 * from this host is still in progress or `finished` (a cold migration
 * awaiting confirmation: found even when the status write that tracked it
 * was lost), that are no longer listed on the host. Sorted, for
 * deterministic requests.
 *
 * @example
 * ```ts
 * import { departedIds } from "./plan.ts";
 * const ids = departedIds(
 *   { outstandingInstances: ["a", "b"], inFlight: [{ id: "c", kind: "live", startedAt: "2026-01-01T00:00:00Z" }] },
 *   [{ id: "a" }],
 *   [{ id: 1, instanceUuid: "d", migrationType: "migration", status: "finished", sourceCompute: "h", createdAt: "2026-01-01T00:00:00" }],
 *   "h",
 * );
 * console.assert(ids.join() === "b,c,d");
 * ```
 */
export function departedIds(
  status: EvictionStatus | undefined,
  servers: readonly { id: string }[],
  migrations: readonly ObservedMigration[],
  host: string,
): string[] {
  const listed = new Set(servers.map((s) => s.id));
  // An arriving VM is not on the host yet: its record says where it is.
  for (const id of arrivingRecords(migrations, host).keys()) listed.add(id);
  const tracked = new Set([
    ...(status?.outstandingInstances ?? []),
    ...(status?.inFlight ?? []).map((e) => e.id),
    ...unfinishedElsewhere(latestRecords(migrations, host), listed).keys(),
  ]);
  return [...tracked].filter((id) => !listed.has(id)).sort();
}

function validateInput(input: PlanInput): void {
  if (typeof input.host !== "string" || input.host === "") {
    throw new RangeError(
      `host must be a non-empty string, got ${JSON.stringify(input.host)}`,
    );
  }
  if (!Number.isInteger(input.limit) || input.limit < 0) {
    throw new RangeError(`limit must be an integer >= 0, got ${input.limit}`);
  }
  const budget = input.clusterBudgetLeft;
  if (
    Number.isNaN(budget) || budget < 0 ||
    (Number.isFinite(budget) && !Number.isInteger(budget))
  ) {
    throw new RangeError(
      `clusterBudgetLeft must be an integer >= 0 or Infinity, got ${budget}`,
    );
  }
  if (!(input.now instanceof Date) || Number.isNaN(input.now.getTime())) {
    throw new RangeError(`now must be a valid Date, got ${String(input.now)}`);
  }
  validatePlanOptions(input.options);
}

/**
 * Plans one pass of a drain.
 *
 * In flight: status MIGRATING/RESIZE, task_state migrating/resize_*, a
 * migration record in progress (queued ones included), or a trigger in
 * status.inFlight within the grace period. Starts: at most
 * `min(limit - inFlight, clusterBudgetLeft)`, largest flavor RAM first,
 * ACTIVE/PAUSED live, SHUTOFF cold; none while `holdStarts` is set. A VM
 * that anything shows in flight is never started.
 *
 * @example
 * ```ts
 * import { planPass } from "./plan.ts";
 * import { DEFAULT_PLAN_OPTIONS } from "./observation.ts";
 * const vm = (id: string, ramMb: number) => ({
 *   id, status: "ACTIVE", host: "node042", taskState: null, flavor: { ramMb },
 * });
 * const plan = planPass({
 *   host: "node042",
 *   servers: [vm("a", 2048), vm("b", 8192), vm("c", 4096)],
 *   migrations: [],
 *   departed: [],
 *   status: undefined,
 *   limit: 2,
 *   limitSource: "policy",
 *   clusterBudgetLeft: Infinity,
 *   now: new Date("2026-01-01T00:00:00Z"),
 *   options: DEFAULT_PLAN_OPTIONS,
 * });
 * console.assert(plan.start.map((s) => s.id).join() === "b,c");
 * console.assert(plan.next.inFlightCount === 2);
 * ```
 */
export function planPass(input: PlanInput): Plan {
  validateInput(input);
  const { host, options, now } = input;
  const prev = foldNotes(input);
  const view = onHostView(input);
  const records = {
    latest: latestRecords(input.migrations, host),
    incoming: arrivingRecords(input.migrations, host),
  };
  const acc = newAcc(input.holdStarts);
  classifyOnHost(input, prev, view, records, acc);
  const arriving = arrivals(prev, view, records, acc);
  const { done, movedByOthers, gone, confirmResize } = departures(
    input,
    prev,
    view,
    records,
    acc,
  );
  const { stuck, abort } = stuckAndAborts(input, view, records, acc.inFlight);
  const start = pickStarts(input, acc);
  const newlyFound = input.status?.outstandingInstances === undefined
    ? []
    : [...view.onHost.keys()].filter((id) =>
      !prev.outstanding.has(id) && !prev.inFlight.has(id)
    ).sort();
  const unanswered = pendingStarts(prev, acc);

  // Assemble: the next status, and the plan around it.
  const next = assembleStatus(prev.status, {
    inFlight: acc.inFlight,
    failed: acc.failed,
    skipped: acc.skipped,
    outstanding: acc.outstanding,
    outstandingRamMb: acc.outstandingRamMb,
    migratedDelta: done.length,
    limit: input.limit,
    limitSource: input.limitSource,
    generation: input.generation,
    now,
    summary: acc.summary,
    unanswered,
    settleMs: options.settleMs ?? 0,
  });
  const finished = next.finishedAt !== undefined;
  const settleAtMs = finished || next.emptySince === undefined
    ? undefined
    : Date.parse(next.emptySince) + (options.settleMs ?? 0);
  return {
    start,
    confirmResize,
    abort,
    stuck,
    done,
    movedByOthers,
    gone,
    failed: acc.failures,
    skipped: next.skipped ?? [],
    newlyFound,
    waiting: acc.waiting.sort(byId),
    inFlightCount: next.inFlightCount ?? 0,
    finished,
    settleAtMs,
    blocked: isBlocked(next),
    arriving,
    nextRetryAtMs: acc.nextRetryAtMs,
    next,
    summary: acc.summary,
  };
}

function isBlocked(status: EvictionStatus): boolean {
  const evicting = (status.conditions ?? []).find((c) =>
    c.type === CONDITION_EVICTING
  );
  return stoppedForPerson(evicting?.reason);
}
