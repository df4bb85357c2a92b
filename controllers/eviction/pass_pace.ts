/**
 * Pacing of a pass: when a pass woken early may return at once, what the
 * duration model learns, and when to look again.
 *
 * @module
 */

import type { ReconcileResult } from "../../framework/handler.ts";
import { traitsHold } from "./host_holds.ts";
import { type PaceView, requeueAfterMs } from "./pacing.ts";
import { glanceIsQuiet } from "./first_look.ts";
import type { PlanOptions } from "./plan_options.ts";
import type { Plan } from "./plan_types.ts";
import {
  finishedLookMs,
  knownNovaLimit,
  learnNovaLimitFrom,
  type Pass,
} from "./pass.ts";
import { latestRecords } from "../../openstack/informer/nova_records.ts";
import type { Observation } from "../../openstack/informer/snapshot.ts";

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
 * nothing it depends on changed, no start answer or change on its host
 * to act on and no budget
 * freed for starts the budget held back returns at once: no Nova call, and
 * nothing planned from old data. A drain in line for budget stays there,
 * in its place (woken, it waits again when another drain took the slot).
 */
export function skipEarly(
  pass: Pass,
  fingerprint: string,
  slotFree: () => boolean,
): ReconcileResult | undefined {
  const { ctx, deps, state } = pass;
  const due = state.due;
  if (due === undefined || state.woken || pass.retryValue !== undefined) {
    return undefined;
  }
  if (deps.memory.informer.woken(ctx.key)) return undefined;
  if (pass.status.finishedAt !== undefined) return undefined;
  if (due.fingerprint !== fingerprint) return undefined;
  const leftMs = (due.atMs - deps.clock.now()) / pass.rate;
  if (leftMs <= 0) return undefined;
  const standing = deps.memory.budgetWaiters.standing(ctx.key);
  if (standing === "woken") {
    if (slotFree()) return undefined;
    deps.memory.budgetWaiters.add(ctx.key);
  }
  return { requeueAfterMs: Math.max(1, Math.round(leftMs)) };
}

/** The pacing model's view of this pass (its records, the drain's memory). */
export function paceView(
  pass: Pass,
  plan: Plan,
  records: PaceView["records"],
): PaceView {
  const { state } = pass;
  return {
    nowMs: pass.deps.clock.now(),
    inFlight: plan.next.inFlight ?? [],
    records,
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
 * say which of them this process started and when. Returns those records
 * (per VM leaving the host, the one in progress, else the latest), which
 * time the next look.
 */
export function learn(
  pass: Pass,
  plan: Plan,
  seen: Observation,
): PaceView["records"] {
  const records = new Map(
    [...latestRecords(seen.migrations, pass.host)].map(([id, r]) => [
      id,
      r.inProgress ?? r.latest,
    ]),
  );
  pass.state.pace.learn(paceView(pass, plan, records));
  return records;
}

/**
 * Requeue: when to look again (pacing.ts): the earliest expected finish,
 * timed in the controller's clock.
 */
export function requeue(
  pass: Pass,
  plan: Plan,
  fingerprint: string,
  records: PaceView["records"],
): ReconcileResult {
  const { deps, state } = pass;
  const view = paceView(pass, plan, records);
  const nowMs = view.nowMs;
  state.pace.planGlance(undefined);
  if (plan.finished) {
    state.lastFinishedCheckMs = nowMs;
    state.due = undefined;
    return { requeueAfterMs: finishedLookMs(pass, plan.next.finishedAt) };
  }
  if (plan.settleAtMs !== undefined) {
    // Seen empty, not settled: look again at the settle time. Polling
    // looks every poll interval meanwhile (each look may find a VM on its
    // way here); an informer that watches the host wakes the drain as
    // such an arrival begins, so one look at the settle time will do.
    const leftMs = Math.max(1, (plan.settleAtMs - nowMs) / pass.rate);
    const watched = deps.memory.informer.watching(pass.ctx.key);
    const delay = Math.round(
      watched ? leftMs : Math.min(deps.pollIntervalMs, leftMs),
    );
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
  // Due only for first looks at our starts, with nothing else to do then
  // (no busy VM, no retry, no budget to wait for): a glance will do.
  const glanceWill = !held && summary.busy === 0 &&
    plan.nextRetryAtMs === undefined && state.pace.firstLooksOnly(view);
  state.pace.planGlance(glanceWill ? view : undefined);
  return { requeueAfterMs: delay };
}

/**
 * Where a look at the host's migrations starts (Nova's `changes-since`):
 * the drain's start, less the clock skew allowed between Nova and us,
 * read on Nova's clock (Nova filters on its own, nova_clock.ts).
 */
export function changesSince(pass: Pass, options: PlanOptions): Date {
  const startedMs = Date.parse(pass.status.startedAt ?? "") ||
    pass.deps.clock.now();
  return new Date(
    startedMs - options.clockSkewMs + (options.novaClockOffsetMs ?? 0),
  );
}

/**
 * The pass due only for first looks at starts of ours (first_look.ts):
 * one list of the host's migrations instead of a full look. When it shows
 * nothing to act on, the model learns from it and times the next look,
 * with no status write and nothing planned; otherwise (a migration ended
 * or failed, a start not listed, the list failed, or the informer holds
 * the records already) undefined: a full pass looks.
 */
export async function glance(
  pass: Pass,
  fingerprint: string,
  options: PlanOptions,
): Promise<ReconcileResult | undefined> {
  const { ctx, deps, state } = pass;
  const planned = state.pace.takeGlance();
  if (planned === undefined || state.due?.fingerprint !== fingerprint) {
    return undefined;
  }
  if (state.woken || pass.retryValue !== undefined) return undefined;
  if (pass.status.finishedAt !== undefined) return undefined;
  // The informer's snapshot shows the records without a call: the full
  // pass reads it (pass_look.ts), or looks afresh when it is old.
  if (deps.memory.informer.cached(ctx.key, knownNovaLimit(pass))) {
    return undefined;
  }
  // budget freed for this drain: a full pass may start migrations
  if (deps.memory.budgetWaiters.standing(ctx.key) === "woken") return undefined;
  let migrations;
  try {
    migrations = await deps.nova.listMigrations(
      { host: pass.host, changesSince: changesSince(pass, options) },
      ctx.signal,
    );
  } catch {
    return undefined; // the full pass looks again, and says why it failed
  }
  // The list shows Nova's queue as a full look would: learn its limit.
  learnNovaLimitFrom(pass, migrations);
  const latest = latestRecords(migrations, pass.host);
  const quiet = glanceIsQuiet(
    planned.inFlight.map((e) => e.id),
    (id) => planned.issuedAt(id) !== undefined,
    (id) => latest.get(id)?.latest.status,
  );
  if (!quiet) return undefined;
  const view: PaceView = {
    ...planned,
    nowMs: deps.clock.now(),
    records: new Map(
      [...latest].map(([id, r]) => [id, r.inProgress ?? r.latest]),
    ),
  };
  state.pace.learn(view);
  const { dueMs, untimed } = state.pace.dueInMs(view);
  const delay = requeueAfterMs({
    dueMs,
    untimed,
    inFlight: view.inFlight.length,
    retryInMs: undefined,
    watching: false,
    pollIntervalMs: deps.pollIntervalMs,
    maxPollMs: deps.maxPollMs,
    slowPollMs: deps.slowPollMs,
    rate: pass.rate,
  });
  state.due = { atMs: view.nowMs + delay * pass.rate, fingerprint };
  state.pace.planGlance(state.pace.firstLooksOnly(view) ? view : undefined);
  pass.log.debug({ nextLookMs: delay }, "glanced at the migrations: quiet");
  return { requeueAfterMs: delay };
}
