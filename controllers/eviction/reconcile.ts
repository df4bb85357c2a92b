/**
 * One pass of a drain: the phases of `mod.ts`, in that order.
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
import { act, convergenceShown } from "./phase_act.ts";
import { forecastShown } from "./phase_forecast.ts";
import { notificationsCondition, setCondition } from "./conditions.ts";
import { novaReasons, withReasons } from "./explain.ts";
import { keepLesson } from "./hypervisor_last_drain.ts";
import { withNovaLimit } from "./nova_limit.ts";
import { novaReady } from "./phase_nova_ready.ts";
import type { PlanOptions } from "./plan_options.ts";
import type { PaceView } from "../../openstack/informer/pacing.ts";
import { type Plan, planPass } from "./plan.ts";
import { lookAtHost } from "./phase_look.ts";
import { reportPass } from "./report.ts";
import { retryRemovalPatch } from "./retry.ts";
import {
  apply,
  emit,
  type EvictionPassDeps,
  limitOfDrain,
  type MutablePass,
  newPass,
  type NextLook,
  type Pass,
  passPlanOptions,
  record,
  runSteps,
  wakeSiblings,
} from "./pass.ts";
import { GATE } from "./phase_gate.ts";
import {
  budgetLeftFor,
  claimBeforeLooking,
  confirmAcrossProcesses,
  giveBack,
  planAndReserve,
  planInputFor,
  waitForBudget,
  wakeForBudgetLeft,
  writeIntent,
} from "./phase_budget.ts";
import {
  changesSince,
  fingerprintOf,
  glance,
  learn,
  nextLook,
  requeue,
  skipEarly,
} from "./phase_pace.ts";
import type { Observation } from "../../openstack/informer/snapshot.ts";

export type { EvictionClock, EvictionPassDeps } from "./pass.ts";
export { planOptionsFor } from "./pass.ts";

/**
 * Runs one pass of the drain of `ctx.object`; never throws for a single VM's trouble.
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
  if (ctx.object === undefined) return {};
  const ev = ctx.object;
  if (isDeleting(ev)) return {};
  const pass: MutablePass = newPass(ctx, deps, ev);
  const ran = await runPhases(pass).then(
    (end): { end: PassEnd } => ({ end }),
    (error: unknown): { error: unknown } => ({ error }),
  );
  // After a failed phase: what the pass kept, never starts that were not issued.
  const written = record(pass, pass.status);
  if ("error" in ran) {
    await written.catch(() => {});
    throw ran.error;
  }
  await written;
  for (const then of pass.afterRecord) then();
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

/** The phases up to act, in the order of `mod.ts`. */
async function runPhases(pass: MutablePass): Promise<PassEnd> {
  const { ctx, deps } = pass;
  const policy = ctx.cache(EvictionPolicyKind).get(POLICY_NAME);
  const settings = effectiveSettings(policy?.spec, deps.flagSettings);
  const stop = await runSteps(pass, [
    novaReady,
    ...GATE,
    (p) => waitForBudget(p, settings),
  ]);
  if (stop !== undefined) return { wait: stop };
  const options: PlanOptions = {
    ...passPlanOptions(pass, settings),
    settleMs: pass.times.settleMs,
    novaClockOffsetMs: deps.novaClockOffsetMs(),
  };
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
  // A full pass takes the wake before its awaits: an answer that comes
  // during them is one more pass (skipEarly). A failed pass leaves it.
  const woken = pass.state.woken;
  apply(pass, { record: { woken: false } });
  try {
    return await fullPass(pass, settings, options, fingerprint);
  } catch (err) {
    if (woken) apply(pass, { record: { woken: true } });
    throw err;
  }
}

/** A full pass: claim, look, plan (reserve, confirm across processes), intent, act. */
async function fullPass(
  pass: MutablePass,
  settings: LimitSettings,
  options: PlanOptions,
  fingerprint: string,
): Promise<PassEnd> {
  const { ctx, deps, ev } = pass;
  // It plans with the budget as it is now (and waits again if held back).
  deps.memory.budgetWaiters.delete(ctx.key);
  const resolved = limitOfDrain(settings, ctx.cache(HypervisorKind), ev.spec);
  const claimedFrom = claimBeforeLooking(pass, settings, resolved.limit);
  if (claimedFrom !== undefined) apply(pass, { claimedFrom });
  let held: Plan | undefined;
  let acted = false;
  try {
    const planFrom = (s: Observation) => {
      const input = planInputFor(pass, s, settings, options, resolved);
      return { input, plan: planPass(input) };
    };
    const { seen, planned } = await lookAtHost(
      pass,
      planFrom,
      changesSince(pass, options),
      options,
    );
    const reserved = planAndReserve(
      pass,
      planned ?? planFrom(seen),
      settings,
      planPass,
    );
    held = reserved.plan;
    apply(pass, {
      record: {
        ram: new Map(seen.servers.map((s) => [s.id, s.flavor.ramMb])),
        ...(reserved.input.copyStartedAtMs === undefined
          ? {}
          : { copyStarted: reserved.input.copyStartedAtMs }),
      },
    });
    held = await confirmAcrossProcesses(pass, reserved, settings, planPass);
    const records = learn(pass, held, seen);
    const plan = forecastShown(
      pass,
      convergenceShown(pass, await explained(pass, held, seen.novaLimit)),
      seen,
      options,
    );
    // the observed rate goes with the status, for later drains' predictions
    const observed = pass.state.pace.slotRate();
    const next = observed === undefined
      ? plan.next
      : { ...plan.next, observedMigrationRate: observed };
    // a force_complete is sent at most once, and an abort for not
    // converging counts a try (status.aborted): their intent is written first
    if (
      plan.start.length > 0 || plan.forceComplete.length > 0 ||
      plan.abort.some((a) => a.reason !== "stuck")
    ) {
      await writeIntent(pass, plan, next);
    }
    const before = pass.status;
    apply(pass, act(pass, plan, next));
    acted = true;
    return { plan, fingerprint, before, records };
  } finally {
    if (!acted) giveBack(pass, held);
  }
}

/** The plan with Nova's words for its failures (rare: the starts may wait), Nova's limit and the notifications. */
async function explained(
  pass: Pass,
  planned: Plan,
  novaLimit: number | undefined,
): Promise<Plan> {
  const { ctx, deps } = pass;
  const reasons = await novaReasons(
    planned,
    pass.state.starts,
    (id, requestId) => deps.nova.getInstanceAction(id, requestId, ctx.signal),
  );
  return withNotificationsShown(
    pass,
    withNovaLimitShown(pass, novaLimit, withReasons(planned, reasons)),
  );
}

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

/** Events and metrics of the pass; a consumed retry annotation is removed after the write. */
async function report(
  pass: Pass,
  plan: Plan,
  before: EvictionStatus,
): Promise<void> {
  const { ctx, deps, host } = pass;
  const reported = reportPass(
    { host, plan, before, next: plan.next, now: new Date(deps.clock.now()) },
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
