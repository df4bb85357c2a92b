/**
 * The eviction controller: drains a hypervisor by migrating its VMs in
 * parallel within the resolved limits. {@linkcode registerEvictionController}
 * wires it into an Operator; the planner and limit resolution are pure and
 * exported for tools and tests.
 *
 * @example
 * ```ts ignore
 * import { registerEvictionController } from "./mod.ts";
 * registerEvictionController(operator, { nova, flagSettings, pollIntervalMs: 2000 });
 * ```
 *
 * @module
 */

export {
  type EvictionControllerDeps,
  registerEvictionController,
} from "./controller.ts";
export type { EvictionClock } from "./reconcile.ts";
export { EvictionMetrics } from "./metrics.ts";
export { departedIds, type Plan, type PlanInput, planPass } from "./plan.ts";
export { DEFAULT_PLAN_OPTIONS, type PlanOptions } from "./observation.ts";
export {
  clusterBudgetLeft,
  effectiveSettings,
  type LimitSettings,
  policySettings,
  resolveLimit,
} from "./concurrency.ts";
export { CONCURRENCY_FLAG_OPTIONS, parseConcurrencyFlags } from "./flags.ts";
export { drainingAhead, keepDisabledBecause, traitsHold } from "./gates.ts";
