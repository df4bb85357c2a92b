/**
 * Part of planning: the drain's live forecast of its end on the status
 * (status.predictedFinishAt), from this pass's plan, what the host shows
 * and what the pacing model learned (forecast.ts, forecast_status.ts).
 *
 * @module
 */

import { DEFAULT_RATE } from "../../capacity/makespan.ts";
import { startKindOfStatus } from "../../openstack/informer/nova_states.ts";
import type { Observation } from "../../openstack/informer/snapshot.ts";
import type { Pace } from "../../openstack/informer/pacing.ts";
import { forecastFinishMs, type QueuedVm } from "./forecast.ts";
import { withForecast } from "./forecast_status.ts";
import type { Pass } from "./pass.ts";
import { maxTries, ruleOf } from "./plan_converge.ts";
import type { PlanOptions } from "./plan_options.ts";
import type { Plan } from "./plan_types.ts";

/**
 * A copy's learned duration on the controller's clock, ms: the pacing
 * model's, else the default rate before it has samples.
 *
 * @example
 * ```ts
 * import { Pace } from "../../openstack/informer/pacing.ts";
 * import { learnedDurationMs } from "./phase_forecast.ts";
 * console.assert(learnedDurationMs(new Pace())("live", 5000) === 10_000); // 5 s + 5 s
 * ```
 */
export function learnedDurationMs(
  pace: Pace,
): (kind: "live" | "cold", ramMb: number) => number {
  return (kind, ramMb) => {
    const learned = pace.predictLocalMs(kind, ramMb);
    if (learned !== undefined && learned > 0) return learned;
    return (ramMb / DEFAULT_RATE.mbPerSecond + DEFAULT_RATE.overheadSeconds) *
      1000;
  };
}

/**
 * The plan with status.predictedFinishAt: the VMs to start are those the
 * plan has waiting (ready, busy, in backoff, arriving), at their flavor
 * RAM, each moved as its status says (live unless shut off); a VM left for
 * a person is not waited for, and with only those left no end is known.
 * The limit is Nova's per-host live limit where that is lower. A host
 * seen empty ends at its settle time.
 */
export function forecastShown(
  pass: Pass,
  plan: Plan,
  seen: Observation,
  options: PlanOptions,
): Plan {
  const { state } = pass;
  const nowMs = pass.deps.clock.now();
  const next = plan.next;
  const servers = new Map(seen.servers.map((s) => [s.id, s]));
  const ramOf = (id: string) =>
    servers.get(id)?.flavor.ramMb ?? state.ram.get(id);
  const toStart: QueuedVm[] = plan.waiting.flatMap((w) => {
    const ramMb = ramOf(w.id);
    if (ramMb === undefined) return [];
    const status = servers.get(w.id)?.status;
    const kind = status === undefined ? "live" : startKindOfStatus(status);
    return [{ id: w.id, kind: kind ?? "live", ramMb }];
  });
  // seen empty: the drain ends when the settle looks agree
  const forecastMs = plan.settleAtMs ?? forecastFinishMs({
    nowMs,
    limit: Math.min(
      next.effectiveLimit ?? 0,
      next.novaLiveMigrationLimit ?? Infinity,
    ),
    inFlight: next.inFlight ?? [],
    expectedEnds: state.pace.expectedEnds(),
    toStart,
    aborted: next.aborted ?? [],
    ramOf,
    durationMs: learnedDurationMs(state.pace),
    onTimeout: ruleOf(options)?.onTimeout,
    maxAbortedTries: maxTries(options),
    needsPerson: plan.summary.needsPerson,
  });
  return { ...plan, next: withForecast(next, forecastMs, new Date(nowMs)) };
}
