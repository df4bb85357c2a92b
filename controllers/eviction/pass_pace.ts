/**
 * Pacing of a pass: when a pass woken early may return at once, what the
 * duration model learns, and when to look again.
 *
 * @module
 */

import type { ReconcileResult } from "../../framework/handler.ts";
import type { LimitSettings } from "../../limits/resolve.ts";
import { latestRecords } from "./classify.ts";
import { traitsHold } from "./gates.ts";
import type { Observation } from "./observe.ts";
import { type PaceView, requeueAfterMs } from "./pacing.ts";
import type { Plan } from "./plan.ts";
import type { Pass } from "./pass.ts";
import { budgetLeftFor } from "./pass_budget.ts";

/** What a pass depends on besides Nova: a change forces a full pass. */
export function fingerprintOf(
  pass: Pass,
  policyVersion: string | undefined,
): string {
  const hv = pass.hypervisor;
  return JSON.stringify([
    pass.ev.metadata?.generation,
    hv?.status?.traits ?? null,
    traitsHold(pass.host, hv) ?? null,
    policyVersion ?? null,
    pass.status.finishedAt ?? null,
  ]);
}

/**
 * A pass woken before it is due (e.g. by a Hypervisor status sync) with
 * nothing it depends on changed, no start answer or notified event to act
 * on and no budget
 * freed for starts the budget held back returns at once: no Nova call, and
 * nothing planned from old data. A drain in line for budget stays there,
 * in its place (woken, it waits again when another drain took the slot).
 */
export function skipEarly(
  pass: Pass,
  fingerprint: string,
  settings: LimitSettings,
): ReconcileResult | undefined {
  const { ctx, deps, state } = pass;
  const due = state.due;
  if (due === undefined || state.woken || pass.retried) return undefined;
  if (deps.watches?.woken(ctx.key) === true) return undefined;
  if (pass.status.finishedAt !== undefined) return undefined;
  if (due.fingerprint !== fingerprint) return undefined;
  const leftMs = (due.atMs - deps.clock.now()) / pass.rate;
  if (leftMs <= 0) return undefined;
  const standing = deps.budgetWaiters.standing(ctx.key);
  if (standing === "woken") {
    const clusterMax = settings.spec.clusterMaxConcurrentMigrations;
    if (clusterMax === undefined || budgetLeftFor(pass, settings, 1) > 0) {
      return undefined;
    }
    deps.budgetWaiters.add(ctx.key);
  }
  return { requeueAfterMs: Math.max(1, Math.round(leftMs)) };
}

/** The pacing model's view of this pass (its records, the drain's memory). */
export function paceView(pass: Pass, plan: Plan): PaceView {
  const { state } = pass;
  return {
    nowMs: pass.deps.clock.now(),
    inFlight: plan.next.inFlight ?? [],
    records: pass.records,
    ramOf: (id) => state.ram.get(id),
    issuedAt: (id) => state.starts.get(id)?.issuedAtMs,
    pending: (id) => state.starts.get(id)?.state === "pending",
    pollMs: pass.deps.pollIntervalMs * pass.rate,
    limit: plan.next.effectiveLimit ?? 1,
  };
}

/**
 * Part of planning: the pacing model learns from this pass's records (how
 * long the migrations that completed took), while the start notes still
 * say which of them this process started and when.
 */
export function learn(pass: Pass, plan: Plan, seen: Observation): void {
  pass.records = new Map(
    [...latestRecords(seen.migrations, pass.host)].map(([id, r]) => [
      id,
      r.inProgress ?? r.latest,
    ]),
  );
  pass.state.pace.learn(paceView(pass, plan));
}

/**
 * Requeue: when to look again (pacing.ts): the earliest expected finish,
 * timed in the controller's clock.
 */
export function requeue(
  pass: Pass,
  plan: Plan,
  fingerprint: string,
): ReconcileResult {
  const { deps, state } = pass;
  const view = paceView(pass, plan);
  const nowMs = view.nowMs;
  if (plan.finished) {
    state.lastFinishedCheckMs = nowMs;
    state.due = undefined;
    return { requeueAfterMs: finishedLookMs(pass, plan.next.finishedAt) };
  }
  if (plan.settleAtMs !== undefined) {
    // Seen empty, not settled: look again by the settle time, at least
    // every poll interval (each look may find a VM on its way here).
    const leftMs = Math.max(1, (plan.settleAtMs - nowMs) / pass.rate);
    const delay = Math.round(Math.min(deps.pollIntervalMs, leftMs));
    state.due = { atMs: nowMs + delay * pass.rate, fingerprint };
    return { requeueAfterMs: Math.max(1, delay) };
  }
  const { dueMs, untimed } = state.pace.dueInMs(view);
  const summary = plan.summary;
  const held = plan.summary.held !== undefined;
  // Ready VMs the budget holds back are no reason to look sooner: the
  // drain waits in line for budget (woken when a slot frees) and is paced
  // by its own migrations meanwhile; waiting for budget costs no Nova call.
  const delay = held && plan.inFlightCount === 0
    ? deps.slowPollMs
    : requeueAfterMs({
      dueMs,
      untimed,
      inFlight: plan.inFlightCount,
      retryInMs: plan.nextRetryAtMs === undefined
        ? undefined
        : Math.max(0, plan.nextRetryAtMs - nowMs),
      watching: summary.busy > 0,
      pollIntervalMs: deps.pollIntervalMs,
      maxPollMs: deps.maxPollMs,
      slowPollMs: deps.slowPollMs,
      rate: pass.rate,
    });
  state.due = { atMs: nowMs + delay * pass.rate, fingerprint };
  return { requeueAfterMs: delay };
}

/**
 * The wait (real ms) after a look at a finished drain, taken at `atMs`
 * (default now): as long as the drain has been finished, between the
 * poll interval and the slow finished check, so the looks double in
 * spacing (the first ones a poll interval apart).
 */
export function finishedLookMs(
  pass: Pass,
  finishedAt: string | undefined,
  atMs = pass.deps.clock.now(),
): number {
  const { deps } = pass;
  const since = Date.parse(finishedAt ?? "");
  const finishedForMs = Number.isNaN(since)
    ? deps.finishedCheckMs
    : Math.max(0, atMs - since) / pass.rate;
  return Math.round(
    Math.min(
      deps.finishedCheckMs,
      Math.max(deps.pollIntervalMs, finishedForMs),
    ),
  );
}
