/**
 * The pure planner of a drain: what to start, confirm and abort this pass, and the next status.
 * @module
 */

import { CONDITION_EVICTING, stoppedForPerson } from "../conditions.ts";
import type { EvictionStatus } from "../../models/mod.ts";
import { assembleStatus, byId } from "./next_status.ts";
import { validatePlanOptions } from "./plan_options.ts";
import {
  arrivals,
  classifyOnHost,
  departures,
  foldNotes,
  newAcc,
  onHostView,
  pendingStarts,
  pickStarts,
  type PlanAcc,
  type PrevView,
} from "./plan_steps.ts";
import {
  abortedOf,
  converge,
  type Converged,
  withAborted,
} from "./plan_converge.ts";
import type { Plan, PlanInput } from "./plan_types.ts";
import {
  arrivingRecords,
  latestRecords,
} from "../../openstack/informer/nova_records.ts";

export { UNANSWERED_REPORT_AFTER } from "./plan_steps.ts";
export type { Plan, PlanInput } from "./plan_types.ts";

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
 * Plans one pass of a drain: at most `min(limit - inFlight,
 * clusterBudgetLeft)` starts, largest flavor RAM first; a VM that anything
 * shows in flight is never started.
 *
 * @example
 * ```ts
 * import { planPass } from "./plan.ts";
 * import { DEFAULT_PLAN_OPTIONS } from "./plan_options.ts";
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
  const { host, options } = input;
  const prev = foldNotes(input);
  const view = onHostView(input);
  const records = {
    latest: latestRecords(input.migrations, host),
    incoming: arrivingRecords(input.migrations, host),
  };
  const acc = newAcc(input.holdStarts, abortedOf(input.status));
  classifyOnHost(input, prev, view, records, acc);
  const arriving = arrivals(prev, view, records, acc);
  const out = departures(input, prev, view, records, acc);
  const converged = converge(input, {
    view,
    records,
    inFlight: acc.inFlight,
    prevInFlight: prev.inFlight,
    aborted: acc.aborted,
    outstanding: acc.outstanding,
  });
  acc.inFlight = converged.inFlight;
  const start = pickStarts(input, acc);
  const newlyFound = input.status?.outstandingInstances === undefined
    ? []
    : [...view.onHost.keys()].filter((id) =>
      !prev.outstanding.has(id) && !prev.inFlight.has(id)
    ).sort();
  const next = nextStatus(input, prev, acc, out.done.length, converged.aborted);
  const finished = next.finishedAt !== undefined;
  const settleAtMs = finished || next.emptySince === undefined
    ? undefined
    : Date.parse(next.emptySince) + (options.settleMs ?? 0);
  return {
    start,
    confirmResize: out.confirmResize,
    abort: converged.abort,
    forceComplete: converged.forceComplete,
    notConverging: converged.notConverging,
    requestOutcomes: converged.requestOutcomes,
    stuck: converged.stuck,
    done: out.done,
    movedByOthers: out.movedByOthers,
    gone: out.gone,
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
    ...(converged.lookByMs === undefined
      ? {}
      : { lookByMs: converged.lookByMs }),
    next,
    summary: acc.summary,
  };
}

/** The status after the pass: what the steps accumulated, with the aborted VMs' tries. */
function nextStatus(
  input: PlanInput,
  prev: PrevView,
  acc: PlanAcc,
  migratedDelta: number,
  aborted: Converged["aborted"],
): EvictionStatus {
  return withAborted(
    assembleStatus(prev.status, {
      inFlight: acc.inFlight,
      failed: acc.failed,
      skipped: acc.skipped,
      outstanding: acc.outstanding,
      outstandingRamMb: acc.outstandingRamMb,
      migratedDelta,
      limit: input.limit,
      limitSource: input.limitSource,
      generation: input.generation,
      now: input.now,
      summary: acc.summary,
      unanswered: pendingStarts(prev, acc),
      settleMs: input.options.settleMs ?? 0,
    }),
    aborted,
  );
}

function isBlocked(status: EvictionStatus): boolean {
  const evicting = (status.conditions ?? []).find((c) =>
    c.type === CONDITION_EVICTING
  );
  return stoppedForPerson(evicting?.reason);
}
