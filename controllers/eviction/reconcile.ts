/**
 * One pass of a drain: the phases of `mod.ts`, in that order. Nova ready
 * in nova_ready.ts, gate in pass_gate.ts, the cluster budget and the
 * intent write in pass_budget.ts, pacing (skip early, learn, requeue) in
 * pass_pace.ts, the shared pass and its one status write in pass.ts;
 * observe, act and report here. Each phase reads the pass and returns
 * what it decided (a Step: the status it leaves, the pass's end when it
 * ends there), which `apply` makes the pass's; the status is then written
 * once (record), whatever phase ended it.
 *
 * @module
 */

import type {
  HandlerContext,
  ReconcileResult,
} from "../../framework/handler.ts";
import { ApiError, errText } from "../../framework/errors.ts";
import { isDeleting } from "../../framework/kind.ts";
import {
  effectiveSettings,
  type LimitSettings,
  POLICY_NAME,
} from "../../limits/resolve.ts";
import type { Eviction, EvictionStatus } from "../../models/mod.ts";
import { EvictionKind, EvictionPolicyKind, HypervisorKind } from "../kinds.ts";
import { actOnPlan } from "./act.ts";
import { notificationsCondition, setCondition } from "./conditions.ts";
import { novaReasons, withReasons } from "./explain.ts";
import { keepLesson } from "./keep_lesson.ts";
import { noteMarks } from "./lesson.ts";
import { withNovaLimit } from "./nova_limit.ts";
import { novaReady } from "./nova_ready.ts";
import { forgetUntracked } from "./once.ts";
import type { PlanOptions } from "./observation.ts";
import type { PaceView } from "../../openstack/informer/pacing.ts";
import { type Plan, planPass } from "./plan.ts";
import { lookAtHost } from "./pass_look.ts";
import { reportPass } from "./report.ts";
import { retryRemovalPatch } from "./retry.ts";
import {
  emit,
  type EvictionPassDeps,
  limitOfDrain,
  type NextLook,
  type Pass,
  passTimes,
  planOptionsFor,
  record,
  type Step,
  wakeSiblings,
} from "./pass.ts";
import { gate } from "./pass_gate.ts";
import {
  budgetLeftFor,
  claimBeforeLooking,
  confirmAcrossProcesses,
  giveBack,
  keepCopyStarts,
  planAndReserve,
  planInputFor,
  waitForBudget,
  wakeForBudgetLeft,
  writeIntent,
} from "./pass_budget.ts";
import {
  changesSince,
  fingerprintOf,
  glance,
  learn,
  nextLook,
  requeue,
  skipEarly,
} from "./pass_pace.ts";
import type { Observation } from "../../openstack/informer/snapshot.ts";

export type { EvictionClock, EvictionPassDeps } from "./pass.ts";
export { planOptionsFor } from "./pass.ts";

/**
 * Runs one pass of the drain of `ctx.object`. Never throws for a single
 * VM's trouble; an observation error (a list call) throws a TemporaryError
 * that keeps the poll interval.
 *
 * @example
 * ```ts ignore
 * operator.reconcile(EvictionKind, (ctx) => reconcileEviction(ctx, deps));
 * ```
 */
export async function reconcileEviction(
  ctx: HandlerContext<Eviction>,
  deps: EvictionPassDeps,
): Promise<ReconcileResult> {
  // Gone: the framework forgets the drain (DrainMemory.forget, controller.ts).
  if (ctx.object === undefined) return {};
  // the framework's read-your-writes: never older than our last write
  const ev = ctx.object;
  if (isDeleting(ev)) return {};
  const pass: MutablePass = newPass(ctx, deps, ev);
  const ran = await runPhases(pass).then(
    (end): { end: PassEnd } => ({ end }),
    (error: unknown): { error: unknown } => ({ error }),
  );
  // Record: the pass's one status write, whichever phase ended it; after a
  // failed phase, what the pass kept (the preflight's result), never
  // starts that were not issued.
  const written = record(pass, pass.status);
  if ("error" in ran) {
    await written.catch(() => {});
    throw ran.error;
  }
  await written;
  for (const then of pass.afterRecord) then();
  // What an ended drain learned outlives its Eviction (lesson.ts).
  await keepLesson({
    client: ctx.client,
    eviction: ctx.key,
    host: pass.host,
    status: pass.status,
    marks: pass.state.marks,
    hypervisor: ctx.cache(HypervisorKind).get(pass.host),
    log: pass.log,
  });
  const { end } = ran;
  if (!("plan" in end)) return requeue(pass, end.wait);
  await report(pass, end.plan, end.before);
  return requeue(
    pass,
    nextLook(pass, end.plan, end.fingerprint, end.records),
  );
}

/** How the phases ended: early with the wait a phase set, or with a full pass's plan. */
type PassEnd =
  | { wait: NextLook }
  | {
    plan: Plan;
    fingerprint: string;
    before: EvictionStatus;
    records: PaceView["records"];
  };

/** The pass as this file holds it: the phases read it, {@linkcode apply} changes it. */
type MutablePass = { -readonly [K in keyof Pass]: Pass[K] };

function newPass(
  ctx: HandlerContext<Eviction>,
  deps: EvictionPassDeps,
  ev: Eviction,
): MutablePass {
  const host = ev.spec.hypervisor;
  const rate = deps.clock.rate ?? 1;
  return {
    ctx,
    deps,
    ev,
    host,
    log: ctx.logger.child({ hypervisor: host }),
    state: deps.memory.of(ctx.key),
    status: ev.status ?? {},
    hypervisor: ctx.cache(HypervisorKind).get(host),
    rate,
    times: passTimes(deps, rate),
    afterRecord: [],
  };
}

/**
 * Applies what a phase decided to the pass (the only place a pass
 * changes, besides the status write's new resourceVersion); returns the
 * pass's result when the phase ended it.
 */
function apply(pass: MutablePass, step: Step): NextLook | undefined {
  if (step.status !== undefined) pass.status = step.status;
  if (step.hold !== undefined) pass.waveHold = step.hold;
  if (step.retry !== undefined) pass.retryValue = step.retry;
  if (step.after !== undefined) {
    pass.afterRecord = [...pass.afterRecord, step.after];
  }
  return step.end;
}

/**
 * The phases up to act, in the order of `mod.ts`: Nova ready, gate, wait
 * for budget, skip early, observe, plan (and reserve, confirm across
 * processes), intent, act. The plan's next status becomes the pass's.
 */
async function runPhases(pass: MutablePass): Promise<PassEnd> {
  const { ctx, deps } = pass;
  const stop = apply(pass, await novaReady(pass)) ??
    apply(pass, await gate(pass));
  if (stop !== undefined) return { wait: stop };

  const policy = ctx.cache(EvictionPolicyKind).get(POLICY_NAME);
  const settings = effectiveSettings(policy?.spec, deps.flagSettings);
  const options: PlanOptions = {
    ...planOptionsFor(deps.planOptions, settings),
    settleMs: pass.times.settleMs,
    novaClockOffsetMs: deps.novaClockOffsetMs(),
  };
  const waitingForBudget = apply(pass, waitForBudget(pass, settings));
  if (waitingForBudget !== undefined) return { wait: waitingForBudget };
  const fingerprint = fingerprintOf(pass, policy?.metadata?.resourceVersion);
  const early = skipEarly(
    pass,
    fingerprint,
    () =>
      settings.spec.clusterMaxConcurrentMigrations === undefined ||
      budgetLeftFor(pass, settings, 1) > 0,
  );
  if (early !== undefined) return { wait: early };
  const glanced = await glance(pass, fingerprint, options);
  if (glanced !== undefined) return { wait: glanced };
  // A full pass takes the wake here, where it was read, before its awaits:
  // a start answer that comes during them marks the drain woken again and
  // is one more pass (skipEarly), not left until the next look is due. A
  // failed pass leaves it for the retry.
  const woken = pass.state.woken;
  pass.state.woken = false;
  try {
    return await fullPass(pass, settings, options, fingerprint);
  } catch (err) {
    if (woken) pass.state.woken = true;
    throw err;
  }
}

/**
 * A full pass, from the budget claim to act: look, plan (and reserve,
 * confirm across processes), intent, act.
 */
async function fullPass(
  pass: MutablePass,
  settings: LimitSettings,
  options: PlanOptions,
  fingerprint: string,
): Promise<PassEnd> {
  const { ctx, deps, ev } = pass;
  // It plans with the budget as it is now (and waits again if that holds
  // its starts back).
  deps.memory.budgetWaiters.delete(ctx.key);

  const resolved = limitOfDrain(settings, ctx.cache(HypervisorKind), ev.spec);
  const claimedFrom = claimBeforeLooking(pass, settings, resolved.limit);
  if (claimedFrom !== undefined) pass.claimedFrom = claimedFrom;
  // Whatever fails before act (the look, planning, the intent write), the
  // budget the pass claimed or reserved goes back (pass_budget.ts giveBack).
  const held: Held = { plan: undefined, acted: false };
  try {
    return await lookPlanAct(
      pass,
      settings,
      options,
      fingerprint,
      resolved,
      held,
    );
  } finally {
    if (!held.acted) giveBack(pass, held.plan);
  }
}

/** What a full pass holds of the budget: its latest plan, and whether it acted. */
interface Held {
  plan: Plan | undefined;
  acted: boolean;
}

/** Look, plan (reserve, confirm across processes), intent and act. */
async function lookPlanAct(
  pass: MutablePass,
  settings: LimitSettings,
  options: PlanOptions,
  fingerprint: string,
  resolved: ReturnType<typeof limitOfDrain>,
  held: Held,
): Promise<PassEnd> {
  const { ctx, deps } = pass;
  // Nova afresh, or the informer's snapshot for a pass that only starts.
  const planFrom = (s: Observation) => {
    const input = planInputFor(pass, s, settings, options, resolved);
    return { input, plan: planPass(input) };
  };
  const { seen, planned } = await lookAtHost(
    pass,
    planFrom,
    changesSince(pass, options),
  );
  const reserved = planAndReserve(
    pass,
    planned ?? planFrom(seen),
    settings,
    planPass,
  );
  held.plan = reserved.plan;
  keepCopyStarts(pass, reserved.input);
  const confirmed = await confirmAcrossProcesses(
    pass,
    reserved,
    settings,
    planPass,
  );
  held.plan = confirmed;
  const records = learn(pass, confirmed, seen);
  // Nova's words for this pass's failures (one read per failure; failures
  // are rare, so the starts may wait for it), Nova's own limit, and
  // whether the drain plans from Nova's notifications.
  const plan = withNotificationsShown(
    pass,
    withNovaLimitShown(
      pass,
      seen.novaLimit,
      withReasons(
        confirmed,
        await novaReasons(
          confirmed,
          pass.state.starts,
          (id, requestId) =>
            deps.nova.getInstanceAction(id, requestId, ctx.signal),
        ),
      ),
    ),
  );
  // The observed rate goes with the status, for the predictions of later
  // drains (capacity/makespan.ts rateFromHistory).
  const observed = pass.state.pace.slotRate();
  const next = observed === undefined
    ? plan.next
    : { ...plan.next, observedMigrationRate: observed };
  // Intent before starts (pass_budget.ts): the record at the end then has
  // nothing to add.
  if (plan.start.length > 0) await writeIntent(pass, plan, next);
  act(pass, plan);
  held.acted = true;
  const before = pass.status;
  pass.state.marks = noteMarks(pass.state.marks, {
    before,
    started: plan.start.length,
    ended: plan.done.length + plan.failed.length,
    nowMs: deps.clock.now(),
  });
  pass.status = next;
  return { plan, fingerprint, before, records };
}

/** The plan's next status says what is known of Nova's limit (an Event when first seen). */
function withNovaLimitShown(
  pass: Pass,
  novaLimit: number | undefined,
  plan: Plan,
): Plan {
  const shown = withNovaLimit(
    plan.next,
    novaLimit,
    pass.host,
    new Date(pass.deps.clock.now()),
    pass.ev.metadata?.generation,
  );
  if (shown.changed && shown.message !== undefined) {
    emit(pass, {
      type: "Normal",
      reason: "NovaLimited",
      message: shown.message,
    });
  }
  return { ...plan, next: shown.status };
}

/**
 * The plan's next status says whether the drain plans from Nova's
 * notifications about its host or polls because they were found deaf or
 * wrong (conditions.ts notificationsCondition); unchanged without
 * notifications.
 */
function withNotificationsShown(pass: Pass, plan: Plan): Plan {
  const standing = pass.deps.memory.informer.notifications(pass.ctx.key);
  if (standing === undefined) return plan;
  const conditions = setCondition(
    plan.next.conditions ?? [],
    notificationsCondition(standing),
    new Date(pass.deps.clock.now()),
    pass.ev.metadata?.generation,
  );
  return { ...plan, next: { ...plan.next, conditions } };
}

/**
 * Act: forgets the start answers the plan consumed, then issues the plan's
 * calls without waiting for them (act.ts).
 */
function act(pass: Pass, plan: Plan): void {
  const { state, deps, ctx } = pass;
  const next = plan.next.inFlight ?? [];
  const inFlight = new Set(next.map((e) => e.id));
  forgetUntracked(state.starts, inFlight);
  forgetUntracked(state.confirms, inFlight);
  forgetUntracked(
    state.aborts,
    new Set(next.flatMap((e) => e.migrationId ?? [])),
  );
  actOnPlan(
    plan,
    state,
    deps,
    {
      emit: (e) => emit(pass, e),
      wake: () => ctx.enqueue(EvictionKind, ctx.key),
      log: pass.log,
      now: () => deps.clock.now(),
    },
    deps.clock.now(),
    ctx.signal,
  );
}

/**
 * Report: Events and metrics for what the pass saw; a consumed retry
 * annotation is removed (after the write, so the re-arm is recorded).
 */
async function report(
  pass: Pass,
  plan: Plan,
  before: EvictionStatus,
): Promise<void> {
  const { ctx, deps, host } = pass;
  const reported = reportPass(
    {
      host,
      plan,
      before,
      next: plan.next,
      now: new Date(deps.clock.now()),
    },
    deps.metrics,
    pass.log,
  );
  for (const e of reported.events) emit(pass, e);
  deps.memory.ledger.set(ctx.key, plan.next.inFlightCount ?? 0);
  wakeForBudgetLeft(pass);
  deps.metrics.inFlight.set({ hypervisor: host }, plan.next.inFlightCount ?? 0);
  if (reported.finishedNow) wakeSiblings(ctx, host);
  if (pass.retryValue !== undefined) {
    try {
      await ctx.client.patch(
        EvictionKind,
        ctx.key,
        retryRemovalPatch(pass.retryValue),
        "json",
      );
    } catch (err) {
      if (err instanceof ApiError && err.status === 422) {
        // A newer retry request came during the pass: it stays, and the
        // next pass applies it.
        pass.log.info({}, "a newer retry request waits for the next pass");
        ctx.enqueue(EvictionKind, ctx.key);
        return;
      }
      pass.log.warn(
        { err: errText(err) },
        "removing the retry annotation failed",
      );
    }
  }
}
