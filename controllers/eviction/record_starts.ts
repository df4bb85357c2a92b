/**
 * Records what became of a plan's starts in the next status.
 *
 * @module
 */

import type { EvictionStatus } from "../../models/mod.ts";
import type { FailureReport } from "./classify.ts";
import { drainConditions, type DrainSummary } from "./conditions.ts";
import { byId } from "./next_status.ts";
import type { PlanOptions } from "./observation.ts";
import type { Plan } from "./plan.ts";

/** How one start went. */
export type StartOutcome =
  /** Nova accepted it (202). */
  | { id: string; outcome: "started" }
  /** Nova answered 409: it already has a migration of this VM in flight. */
  | { id: string; outcome: "conflict" }
  /** Any other error: a failed attempt, retried with backoff. */
  | { id: string; outcome: "error"; message: string }
  /** Not tried (e.g. the pass was cut short): no attempt counted. */
  | { id: string; outcome: "not_attempted" };

/** The status after the starts, and the failures they caused. */
export interface RecordedStarts {
  /** The next status, to compare with `statusEqual` (status_equal.ts) and write. */
  status: EvictionStatus;
  /** Failed starts (for Events and metrics). */
  failed: FailureReport[];
}

/**
 * Records what became of the plan's starts: started and 409 (Nova already
 * migrating it) stay in flight; an error becomes a failed attempt (retried
 * with backoff up to maxAttempts); not attempted frees its slot. A start
 * without an outcome stays in flight: it may have reached Nova, and the
 * grace period settles it next pass. Counts and conditions are recomputed.
 * Throws a RangeError for an outcome whose id the plan did not start.
 *
 * @example
 * ```ts
 * import { planPass } from "./plan.ts";
 * import { recordStarts } from "./record_starts.ts";
 * import { DEFAULT_PLAN_OPTIONS } from "./observation.ts";
 * const now = new Date("2026-01-01T00:00:00Z");
 * const plan = planPass({
 *   host: "h", migrations: [], departed: [], status: undefined, limit: 2,
 *   limitSource: "flags", clusterBudgetLeft: Infinity, now, options: DEFAULT_PLAN_OPTIONS,
 *   servers: [
 *     { id: "a", status: "ACTIVE", host: "h", taskState: null, flavor: { ramMb: 1 } },
 *     { id: "b", status: "ACTIVE", host: "h", taskState: null, flavor: { ramMb: 1 } },
 *   ],
 * });
 * const { status } = recordStarts(plan, [
 *   { id: "a", outcome: "conflict" },
 *   { id: "b", outcome: "error", message: "500 Internal Server Error" },
 * ], now, DEFAULT_PLAN_OPTIONS);
 * console.assert(status.inFlightCount === 1);
 * console.assert(status.failed?.[0]?.attempts === 1);
 * ```
 */
export function recordStarts(
  plan: Plan,
  outcomes: readonly StartOutcome[],
  now: Date,
  options: PlanOptions,
): RecordedStarts {
  const started = new Set(plan.start.map((s) => s.id));
  const byVm = new Map<string, StartOutcome>();
  for (const outcome of outcomes) {
    if (!started.has(outcome.id)) {
      throw new RangeError(
        `start outcome for ${
          JSON.stringify(outcome.id)
        }, which the plan did not start`,
      );
    }
    byVm.set(outcome.id, outcome);
  }
  const nowIso = now.toISOString();
  const prev = plan.next;
  const failedById = new Map((prev.failed ?? []).map((f) => [f.id, f]));
  const summary: DrainSummary = { ...plan.summary };
  const failures: FailureReport[] = [];
  const inFlight = (prev.inFlight ?? []).filter((entry) => {
    const outcome = byVm.get(entry.id);
    if (
      outcome === undefined || outcome.outcome === "started" ||
      outcome.outcome === "conflict"
    ) {
      return true;
    }
    if (outcome.outcome === "not_attempted") {
      summary.ready++;
      return false;
    }
    const attempts = (failedById.get(entry.id)?.attempts ?? 0) + 1;
    const reason =
      `starting the ${entry.kind} migration failed: ${outcome.message}`;
    failedById.set(entry.id, {
      id: entry.id,
      reason,
      attempts,
      lastAttemptAt: nowIso,
    });
    const exhausted = attempts >= options.maxAttempts;
    failures.push({ id: entry.id, reason, attempts, exhausted });
    if (exhausted) summary.needsPerson++;
    else summary.backoff++;
    return false;
  });
  const { conditions: _conditions, ...rest } = prev;
  const base: EvictionStatus = {
    ...rest,
    inFlight,
    inFlightCount: inFlight.length,
    failed: [...failedById.values()].sort(byId),
  };
  const status: EvictionStatus = {
    ...base,
    conditions: drainConditions(
      { ...base, conditions: plan.previousConditions },
      summary,
      now,
      prev.observedGeneration,
    ),
  };
  return { status, failed: failures };
}
