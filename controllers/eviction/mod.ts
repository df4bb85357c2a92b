/**
 * The eviction controller: drains a hypervisor by migrating its VMs in
 * parallel within the resolved limits (`limits/`).
 *
 * One pass of a drain (reconcile.ts) runs these phases, in this order:
 *
 * 1. **gate** — only the oldest Eviction of a hypervisor drains; preflight
 *    disables the compute service; before every start the drain waits,
 *    bounded per member, while another pending Eviction's host is still
 *    enabled (its wave, wave.ts; with migrations in flight it watches them
 *    and only holds its starts); a retry annotation re-arms failed VMs
 *    (retry.ts); a finished drain looks at Nova only when the Hypervisor
 *    reports instances or its slow check is due; a pass woken before it is
 *    due with nothing changed returns at once; a drain with nothing in
 *    flight while the cluster budget is spent waits without a Nova call
 *    (budget.ts), woken when budget frees; one whose starts the budget
 *    held back is paced by its own migrations and woken the same way
 *    (waiting for budget never costs a look at Nova).
 * 2. **observe** — Nova afresh, every pass that decides (observe.ts): the
 *    servers on the host, the migrations from or to it since the drain
 *    started, a lookup only for a VM that left without a telling record.
 * 3. **plan** — a pure function of that observation, the status, the limit
 *    in force, the start answers in memory and the time (plan.ts,
 *    classify.ts); the cluster budget is reserved in the same step
 *    (ledger.ts), the free slots claimed before the look so that two passes
 *    never look for one slot, and a freed slot left to a waiting drain of a
 *    lower limit, which is never starved (budget.ts); under a cluster
 *    budget the status is written first and the cluster's Evictions read as
 *    of after that write (the watch caught up to it, else a list), so two
 *    processes never both spend the last slot.
 * 4. **act** — starts, confirms and aborts are issued, none awaited
 *    (act.ts): their answers become notes in the drain's memory
 *    (memory.ts) that the next pass plans with.
 * 5. **record** — the status is written (only when it changed), alongside
 *    the starts, their entries included, so a restart finds them.
 * 6. **report** — Events and metrics (report.ts).
 * 7. **requeue** — the next pass when the earliest running migration should
 *    finish (pacing.ts, its margin from margin.ts), in the controller's
 *    clock.
 *
 * Succeeded means empty: a fresh list with no server on the host, no
 * migration from or to it in progress, and no start of ours whose outcome
 * is unknown. A VM that appears later reopens the drain.
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
export { RETRY_ANNOTATION } from "./retry.ts";
export { drainingAhead, keepDisabledBecause, traitsHold } from "./gates.ts";
