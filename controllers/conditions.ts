/**
 * Conditions of every controller: one `setCondition` (the Kubernetes way of
 * setting one condition in a list) and the condition types of the
 * Eviction, so that no controller repeats them as literals.
 *
 * @module
 */

import type { EvictionStatusConditionsItem } from "../models/mod.ts";

/** Eviction condition type: the drain as a whole. */
export const CONDITION_EVICTING = "Evicting";
/** Eviction condition type: migrations of single VMs; sticky False/Failed while any failure remains. */
export const CONDITION_MIGRATING_INSTANCE = "MigratingInstance";
/** Eviction condition type: the preflight checks. */
export const CONDITION_PREFLIGHT = "PreflightChecksSucceeded";
/** Eviction and Hypervisor condition type: the compute service is disabled. */
export const CONDITION_HYPERVISOR_DISABLED = "HypervisorDisabled";
/** Eviction condition type: the compute service was enabled again. */
export const CONDITION_HYPERVISOR_REENABLED = "HypervisorReEnabled";

/** Evicting reason: nothing in flight, the cluster budget spent by other drains. */
export const REASON_WAITING_FOR_BUDGET = "WaitingForBudget";

/** A condition without its transition time. */
export type ConditionUpdate = Omit<
  EvictionStatusConditionsItem,
  "lastTransitionTime" | "observedGeneration"
>;

/**
 * Sets one condition in a list, the Kubernetes way: lastTransitionTime
 * changes only when the status changes; reason and message are updated in
 * place; other conditions and the order of the list are kept.
 *
 * @example
 * ```ts
 * import { setCondition } from "./conditions.ts";
 * const t0 = new Date("2026-01-01T00:00:00Z");
 * const t1 = new Date("2026-01-01T00:01:00Z");
 * const a = setCondition([], { type: "Evicting", status: "True", reason: "Running", message: "1" }, t0);
 * const b = setCondition(a, { type: "Evicting", status: "True", reason: "Waiting", message: "2" }, t1);
 * console.assert(b[0]?.lastTransitionTime === "2026-01-01T00:00:00.000Z");
 * ```
 */
export function setCondition(
  conditions: readonly EvictionStatusConditionsItem[],
  update: ConditionUpdate,
  now: Date,
  generation?: number,
): EvictionStatusConditionsItem[] {
  const index = conditions.findIndex((c) => c.type === update.type);
  const previous = index === -1 ? undefined : conditions[index];
  const lastTransitionTime =
    previous !== undefined && previous.status === update.status
      ? previous.lastTransitionTime
      : now.toISOString();
  const observedGeneration = generation ?? previous?.observedGeneration;
  const next: EvictionStatusConditionsItem = {
    type: update.type,
    status: update.status,
    ...(observedGeneration === undefined ? {} : { observedGeneration }),
    lastTransitionTime,
    reason: update.reason,
    message: truncate(update.message),
  };
  if (index === -1) return [...conditions, next];
  return conditions.map((c, i) => (i === index ? next : c));
}

const MAX_MESSAGE = 32_768;

function truncate(message: string): string {
  return message.length <= MAX_MESSAGE
    ? message
    : `${message.slice(0, MAX_MESSAGE - 3)}...`;
}
