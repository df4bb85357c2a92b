/**
 * The eviction controller: drains a hypervisor by migrating its VMs in
 * parallel within the resolved limits (`limits/`).
 *
 * One pass of a drain (reconcile.ts) runs these phases, in this order:
 *
 * 1. **gate** (pass_gate.ts) — only the oldest Eviction of a hypervisor
 *    (of every partition) drains; a host that never registered is asked
 *    again only at the slow check; preflight
 *    disables the compute service; before every start the drain waits,
 *    bounded per member, while another pending Eviction's host is still
 *    enabled (its wave, wave.ts; with migrations in flight it watches them
 *    and only holds its starts); a retry annotation re-arms failed VMs
 *    (retry.ts); a finished drain looks at Nova a poll interval after
 *    Succeeded, then at spacings doubling up to the slow check, and when
 *    the Hypervisor reports instances; a pass woken before it is
 *    due with nothing changed returns at once; a drain with nothing in
 *    flight while the cluster budget is spent waits without a Nova call
 *    (budget.ts), woken when budget frees; one whose starts the budget
 *    held back is paced by its own migrations and woken the same way
 *    (waiting for budget never costs a look at Nova; pass_budget.ts,
 *    pass_pace.ts).
 * 2. **observe** — Nova afresh, every pass that decides (observe.ts): the
 *    servers on the host, the migrations from or to it since the drain
 *    started (once no server is left, also every record still in progress,
 *    however old), a lookup only for a VM that left without a telling
 *    record. With Nova's notifications (`deps.watches`, pass_view.ts) each
 *    look also lists the host for its list-and-watch view (host_view.ts,
 *    host_watches.ts), whose events wake the drain; a pass that only
 *    starts plans from that view while it is trustworthy, without a Nova
 *    call; one that could finish, settle, confirm, abort or charge a
 *    failure, every pass while the feed is down, and one at the slow poll
 *    interval (the relist, its differences counted) read Nova afresh.
 * 3. **plan** — a pure function of that observation, the status, the limit
 *    in force, the start answers in memory and the time (plan.ts,
 *    classify.ts); the cluster budget is reserved in the same step
 *    (ledger.ts), the free slots claimed before the look so that two passes
 *    never look for one slot, and a freed slot left to a waiting drain of a
 *    lower limit, which is never starved (budget.ts); under a cluster
 *    budget the status is written first and the cluster's Evictions read as
 *    of after that write (the watch caught up to it, else a list), so two
 *    processes never both spend the last slot.
 * 4. **intent** — a pass that starts migrations writes its status, the
 *    starts included, before issuing them (so a new leader knows them).
 * 5. **act** — starts, confirms and aborts are issued, none awaited
 *    (act.ts): their answers become notes in the drain's memory
 *    (memory.ts) that the next pass plans with; unanswered starts back
 *    off per VM.
 * 6. **record** — the status is written when it changed (pass.ts).
 * 7. **report** — Events and metrics (report.ts).
 * 8. **requeue** — the next pass when the earliest running migration should
 *    finish (pacing.ts, its margin from margin.ts), in the controller's
 *    clock.
 *
 * Succeeded means settled empty: fresh looks at least the settle interval
 * apart (`--drain-settle`) found no server on the host, no migration from
 * or to it in progress, and no start of ours without an answer
 * (`Settling` until then). A VM that appears later reopens the drain.
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
