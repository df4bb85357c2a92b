/**
 * The eviction controller: drains a hypervisor by migrating its VMs in
 * parallel within the resolved limits (docs/drain.md tells the whole).
 *
 * One pass (reconcile.ts `reconcileEviction`) runs these phases in order;
 * each returns a Step (pass.ts) that `apply` applies, and the status is
 * written once:
 *
 * 1. **Nova ready** (phase_nova_ready.ts): a compute microversion is settled.
 * 2. **gate** (phase_gate.ts): one drain per host, the capacity check, the
 *    preflight, the wave (wave.ts), the retry annotation (retry.ts), the
 *    looks at a finished drain.
 * 3. **wait for budget** (phase_budget.ts, budget_share.ts): no Nova call
 *    while the cluster budget is spent.
 * 4. **skip early** (phase_pace.ts, first_look.ts): a pass woken early with
 *    nothing changed returns at once.
 * 5. **look** (phase_look.ts): the informer's view or a fresh list
 *    (openstack/informer/); budget slots are claimed first.
 * 6. **plan** (plan.ts, plan_steps.ts, classify.ts): a pure function of the
 *    look, the status, the limit, the answers in memory and the time; the
 *    budget reserved in the same step (ledger.ts); Nova's reasons
 *    (explain.ts) and limit (nova_limit.ts) added.
 * 7. **intent** (phase_budget.ts `writeIntent`): the starts written before
 *    they are issued, so a new leader knows them.
 * 8. **act** (phase_act.ts): calls issued, none awaited; the answers become
 *    notes (memory.ts, once.ts).
 * 9. **record** (pass.ts): the status written when it changed; what an
 *    ended drain learned kept (hypervisor_last_drain.ts).
 * 10. **report** (report.ts): Events and metrics.
 * 11. **requeue** (phase_pace.ts, pacing.ts): when the earliest copy should
 *     end, or a poll interval after a start.
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
export { type Plan, type PlanInput, planPass } from "./plan.ts";
export { DEFAULT_PLAN_OPTIONS, type PlanOptions } from "./plan_options.ts";
