// Builders shared by the planner's tests.
import type {
  EvictionStatusFailedItem,
  EvictionStatusInFlightItem,
} from "../../models/mod.ts";
import type { PlanOptions } from "../../controllers/eviction/plan_options.ts";
import type {
  ObservedMigration,
  ObservedServer,
} from "../../openstack/informer/snapshot.ts";
import type { PlanInput } from "../../controllers/eviction/plan.ts";
import type { Plan } from "../../controllers/eviction/plan_types.ts";

export const HOST = "node042";
export const T0 = new Date("2026-11-29T12:00:00Z");

export const OPTIONS: PlanOptions = {
  gracePeriodMs: 60_000,
  retryBaseMs: 30_000,
  retryCapMs: 240_000,
  maxAttempts: 3,
  retryWindowMs: 0,
  abortStuckMigrations: false,
  clockSkewMs: 5_000,
};

/** T0 plus `seconds`. */
export function at(seconds: number): Date {
  return new Date(T0.getTime() + seconds * 1000);
}

/** Nova's zone-less timestamp for T0 plus `seconds`. */
export function novaTime(seconds: number): string {
  return at(seconds).toISOString().replace("Z", "").replace(
    /\.(\d{3})$/,
    ".$1000",
  );
}

export function vm(
  id: string,
  ramMb = 1024,
  overrides: Partial<ObservedServer> = {},
): ObservedServer {
  return {
    id,
    status: "ACTIVE",
    host: HOST,
    taskState: null,
    flavor: { ramMb },
    ...overrides,
  };
}

export function mig(
  id: number,
  instanceUuid: string,
  status: string,
  overrides: Partial<ObservedMigration> = {},
): ObservedMigration {
  return {
    id,
    instanceUuid,
    migrationType: "live-migration",
    status,
    sourceCompute: HOST,
    createdAt: novaTime(-10),
    updatedAt: novaTime(-5),
    ...overrides,
  };
}

export function entry(
  id: string,
  startedAtSeconds: number,
  extras: Partial<EvictionStatusInFlightItem> = {},
): EvictionStatusInFlightItem {
  return {
    id,
    kind: "live",
    startedAt: at(startedAtSeconds).toISOString(),
    ...extras,
  };
}

export function failure(
  id: string,
  attempts: number,
  lastAttemptSeconds: number,
  reason = "live-migration 1 ended error",
): EvictionStatusFailedItem {
  return {
    id,
    reason,
    attempts,
    lastAttemptAt: at(lastAttemptSeconds).toISOString(),
  };
}

export function input(overrides: Partial<PlanInput> = {}): PlanInput {
  return {
    host: HOST,
    servers: [],
    migrations: [],
    departed: [],
    status: undefined,
    limit: 4,
    limitSource: "policy",
    clusterBudgetLeft: Infinity,
    now: T0,
    options: OPTIONS,
    ...overrides,
  };
}

/** A plan with no outcomes; `over` sets those a test needs. */
export function emptyPlan(over: Partial<Plan> = {}): Plan {
  return {
    start: [],
    confirmResize: [],
    abort: [],
    forceComplete: [],
    notConverging: [],
    requestOutcomes: [],
    stuck: [],
    done: [],
    movedByOthers: [],
    gone: [],
    failed: [],
    skipped: [],
    newlyFound: [],
    waiting: [],
    inFlightCount: 0,
    finished: false,
    settleAtMs: undefined,
    blocked: false,
    arriving: [],
    nextRetryAtMs: undefined,
    next: {},
    summary: { ready: 0, busy: 0, backoff: 0, needsPerson: 0, held: undefined },
    ...over,
  };
}
