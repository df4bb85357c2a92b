/**
 * The drain's live forecast of its end (status.predictedFinishAt).
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
 * A copy's duration (controller ms): the pacing model's, else the default rate.
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

/** The plan with status.predictedFinishAt; a VM left for a person is not waited for. */
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
