/**
 * One pass of a drain: the phases of `mod.ts`, in that order. Gate in
 * pass_gate.ts, the cluster budget in pass_budget.ts, pacing (skip early,
 * learn, requeue) in pass_pace.ts, the shared pass and its one status
 * write in pass.ts; observe, the intent write, act and report here.
 *
 * @module
 */

import type {
  HandlerContext,
  ReconcileResult,
} from "../../framework/handler.ts";
import { ApiError, TemporaryError } from "../../framework/errors.ts";
import { isDeleting } from "../../framework/kind.ts";
import { effectiveSettings, POLICY_NAME } from "../../limits/resolve.ts";
import type { Eviction, EvictionStatus } from "../../models/mod.ts";
import { errText } from "../../openstack/mod.ts";
import { EvictionKind, EvictionPolicyKind, HypervisorKind } from "../kinds.ts";
import { actOnPlan } from "./act.ts";
import { novaReasons, withReasons } from "./explain.ts";
import { withNovaLimit } from "./nova_limit.ts";
import { type Observation, observe } from "./observe.ts";
import type { PlanOptions } from "./observation.ts";
import { type Plan, planPass } from "./plan.ts";
import { lookAtHost } from "./pass_view.ts";
import { reportPass } from "./report.ts";
import { retryRemovalPatch } from "./retry.ts";
import {
  emit,
  type EvictionPassDeps,
  limitOfDrain,
  type Pass,
  planOptionsFor,
  record,
  wakeSiblings,
} from "./pass.ts";
import { gate } from "./pass_gate.ts";
import {
  claimBeforeLooking,
  confirmAcrossProcesses,
  planAndReserve,
  planInputFor,
  waitForBudget,
  wakeForBudgetLeft,
} from "./pass_budget.ts";
import { fingerprintOf, learn, requeue, skipEarly } from "./pass_pace.ts";

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
  if (ctx.object === undefined) {
    deps.ledger.delete(ctx.key);
    deps.memory.forget(ctx.key);
    deps.budgetWaiters.delete(ctx.key);
    deps.watches?.forget(ctx.key);
    return {};
  }
  const ev = deps.memory.freshest(ctx.key, ctx.object);
  if (isDeleting(ev)) return {};
  const host = ev.spec.hypervisor;
  const pass: Pass = {
    ctx,
    deps,
    ev,
    host,
    log: ctx.logger.child({ hypervisor: host }),
    state: deps.memory.of(ctx.key),
    status: ev.status ?? {},
    hypervisor: ctx.cache(HypervisorKind).get(host),
    rate: deps.clock.rate ?? 1,
    retried: false,
    records: new Map(),
  };
  const gated = await gate(pass);
  if (gated !== undefined) return gated;

  const policy = ctx.cache(EvictionPolicyKind).get(POLICY_NAME);
  const settings = effectiveSettings(policy?.spec, deps.flagSettings);
  const options: PlanOptions = {
    ...planOptionsFor(deps.planOptions, settings),
    settleMs: deps.settleMs * pass.rate,
  };
  const waitingForBudget = await waitForBudget(pass, settings);
  if (waitingForBudget !== undefined) return waitingForBudget;
  const fingerprint = fingerprintOf(pass, policy?.metadata?.resourceVersion);
  const early = skipEarly(pass, fingerprint, settings);
  if (early !== undefined) return early;
  // A full pass: it plans with the budget as it is now (and waits again
  // if that holds its starts back).
  deps.budgetWaiters.delete(ctx.key);

  const resolved = limitOfDrain(settings, ctx.cache(HypervisorKind), ev.spec);
  claimBeforeLooking(pass, settings, resolved.limit);
  // Nova afresh, or the host's notified view for a pass that only starts.
  const { seen, planned } = await lookAtHost(pass, (s) => {
    const input = planInputFor(pass, s, settings, options, resolved);
    return { input, plan: planPass(input) };
  }, () => observeOrKeep(pass, options));
  const reserved = planAndReserve(
    pass,
    seen,
    settings,
    options,
    resolved,
    planned,
  );
  const confirmed = await confirmAcrossProcesses(pass, reserved, settings);
  learn(pass, confirmed, seen);
  // Nova's words for this pass's failures (one read per failure; failures
  // are rare, so the starts may wait for it) and Nova's own limit.
  const plan = withNovaLimitShown(
    pass,
    withReasons(
      confirmed,
      await novaReasons(
        confirmed,
        pass.state.starts,
        (id, requestId) =>
          deps.nova.getInstanceAction(id, requestId, ctx.signal),
      ),
    ),
  );
  // The observed rate goes with the status, for the predictions of later
  // drains (capacity/makespan.ts rateFromHistory).
  const observed = pass.state.pace.slotRate();
  const next = observed === undefined
    ? plan.next
    : { ...plan.next, observedMigrationRate: observed };
  // Intent before starts: the pass's starts are in the written status
  // before they are issued, so a new leader knows them (and confirms our
  // cold ones). One write: the record below then has nothing to add.
  if (plan.start.length > 0) await writeIntent(pass, plan, next);
  act(pass, plan);
  await record(pass, next);
  await report(pass, plan);
  return requeue(pass, plan, fingerprint);
}

/** The plan's next status says what is known of Nova's limit (an Event when first seen). */
function withNovaLimitShown(pass: Pass, plan: Plan): Plan {
  const shown = withNovaLimit(
    plan.next,
    pass.state.novaLimit,
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
 * Observe: Nova afresh. On failure the preflight's result is kept (written),
 * the budget claimed for the pass is given back, and the pass retries after
 * the poll interval.
 */
async function observeOrKeep(
  pass: Pass,
  options: PlanOptions,
): Promise<Observation> {
  const { deps, host, status } = pass;
  const startedMs = Date.parse(status.startedAt ?? "") || deps.clock.now();
  const since = new Date(startedMs - options.clockSkewMs);
  try {
    const seen = await observe(
      deps.nova,
      host,
      status,
      since,
      pass.state.ram,
      deps.actConcurrency,
      pass.log,
      pass.ctx.signal,
    );
    for (const s of seen.servers) pass.state.ram.set(s.id, s.flavor.ramMb);
    return seen;
  } catch (err) {
    if (pass.claimedFrom !== undefined) {
      deps.ledger.set(pass.ctx.key, pass.claimedFrom);
      wakeForBudgetLeft(pass);
    }
    await record(pass, status).catch(() => {});
    throw new TemporaryError(`observing host ${host} failed: ${errText(err)}`, {
      delayMs: deps.pollIntervalMs,
    });
  }
}

/**
 * Writes the status with the pass's starts in it, before they are issued.
 * When the write fails nothing is started: the budget claimed for the
 * starts is given back and the pass is retried after the poll interval.
 */
async function writeIntent(
  pass: Pass,
  plan: Plan,
  next: EvictionStatus,
): Promise<void> {
  const { ctx, deps } = pass;
  try {
    await record(pass, next);
  } catch (err) {
    deps.ledger.set(ctx.key, plan.inFlightCount - plan.start.length);
    wakeForBudgetLeft(pass);
    throw new TemporaryError(
      `recording the starts before issuing them failed: ${errText(err)}`,
      { delayMs: deps.pollIntervalMs },
    );
  }
}

/**
 * Act: forgets the start answers the plan consumed, then issues the plan's
 * calls without waiting for them (act.ts).
 */
function act(pass: Pass, plan: Plan): void {
  const { state, deps, ctx } = pass;
  const inFlight = new Set((plan.next.inFlight ?? []).map((e) => e.id));
  for (const id of state.starts.keys()) {
    if (!inFlight.has(id)) state.starts.delete(id);
  }
  state.woken = false;
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
async function report(pass: Pass, plan: Plan): Promise<void> {
  const { ctx, deps, host } = pass;
  const reported = reportPass(
    {
      key: ctx.key,
      host,
      plan,
      before: pass.status,
      next: plan.next,
      now: new Date(deps.clock.now()),
    },
    deps.metrics,
    pass.log,
  );
  for (const e of reported.events) emit(pass, e);
  deps.ledger.set(ctx.key, plan.next.inFlightCount ?? 0);
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
