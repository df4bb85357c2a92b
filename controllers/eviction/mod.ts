/**
 * The eviction controller: drains a hypervisor by migrating its VMs in
 * parallel within the resolved limits (docs/drain.md tells the whole).
 *
 * One pass of a drain (reconcile.ts `reconcileEviction`) runs these phases,
 * in this order. Each phase up to act reads the pass and returns a Step
 * (pass.ts: the status it leaves, the pass's end, the drain record's
 * changes), which the pass applies in one place (pass.ts `apply`); the
 * status is then written once.
 *
 * 1. **Nova ready** (phase_nova_ready.ts) — the compute microversion is
 *    settled; when Nova and evictor share none,
 *    Evicting=False/NovaIncompatible.
 * 2. **gate** (phase_gate.ts) — only the oldest Eviction of a hypervisor
 *    (of every partition) drains (Duplicate); a host that never registered
 *    is asked again only at the slow check; the capacity check, then the
 *    preflight disables the compute service; before every start the drain
 *    waits, bounded per member, while another pending Eviction's host is
 *    still enabled (its wave, wave.ts; with migrations in flight it watches
 *    them and only holds its starts); a retry annotation re-arms failed VMs
 *    (retry.ts); a finished drain looks at Nova a poll interval after
 *    Succeeded, then at spacings doubling up to the slow check, and when
 *    the Hypervisor reports instances.
 * 3. **wait for budget** (phase_budget.ts) — a drain with nothing in flight
 *    while the cluster budget is spent waits without a Nova call
 *    (WaitingForBudget, which every process reads: a freed slot is left to
 *    a waiting drain of a lower limit, or with more work left when handing
 *    it over costs no look at Nova, budget_share.ts), woken when budget
 *    frees.
 * 4. **skip early** (phase_pace.ts) — a pass woken before it is due with
 *    nothing changed returns at once; one due only for the first looks at
 *    its starts (first_look.ts) reads the host's migrations alone (a
 *    glance) and looks in full only when they show something to act on.
 * 5. **look** (phase_look.ts) — the pass states what it needs of the
 *    informer (openstack/informer/, which lists Nova itself: lister.ts):
 *    any view it vouches for, planned from when the plan only starts or
 *    waits, else a look resting on a list begun after that view's; with
 *    it, the live copies' progress, read by the informer only where due
 *    (openstack/informer/progress.ts). The free budget slots are claimed before the look, so that two passes
 *    never look for one slot (and given back when anything fails before
 *    act).
 * 6. **plan** (plan.ts, plan_steps.ts, classify.ts) — a pure function of
 *    that observation, the status, the limit in force, the start answers in
 *    memory and the time; the cluster budget is reserved in the same step
 *    (ledger.ts); under a cluster budget the starts are written first (the
 *    intent) and the cluster's Evictions read as of after that write (the
 *    watch caught up to it, else a list), so two processes never both
 *    spend the last slot; Nova's words for the pass's failures (explain.ts)
 *    and Nova's own limit (nova_limit.ts) are added. A migration task
 *    that outlived its ended record past a bound (stalled.ts: Nova will
 *    not move on until a person resets the server) is skipped, its slot
 *    freed. The pacing model learns from the look's records (phase_pace.ts
 *    learn).
 * 7. **intent** (phase_budget.ts writeIntent) — a pass that starts
 *    migrations writes its status, the starts included, before issuing
 *    them (so a new leader knows them): the one write besides record.
 * 8. **act** (phase_act.ts) — starts, confirms and aborts are issued, none
 *    awaited: their answers become notes in the drain's memory (memory.ts)
 *    that the next pass plans with; unanswered starts back off per VM.
 * 9. **record** (pass.ts) — the pass's status is written when it changed,
 *    whichever phase ended the pass (also after a failed one); then the
 *    drains that read it are woken (the wave's peers), and what an ended
 *    drain learned is kept beyond its Eviction (hypervisor_last_drain.ts).
 * 10. **report** (report.ts) — Events and metrics of a full pass; a
 *    consumed retry annotation is removed.
 * 11. **requeue** (phase_pace.ts, pacing.ts, margin.ts) — the next pass
 *    when the earliest running migration should finish (its copy timed
 *    from Nova's start of it, pacing.ts copySpan), in the controller's clock, or
 *    a poll interval after a start, for a failure that comes at once
 *    (first_look.ts).
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
export { type Plan, type PlanInput, planPass } from "./plan.ts";
export { DEFAULT_PLAN_OPTIONS, type PlanOptions } from "./plan_options.ts";
