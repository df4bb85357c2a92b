/**
 * Pacing of a pass: skipping early, what the duration model learns, and the next look.
 * @module
 */

import type { ReconcileResult } from "../../framework/handler.ts";
import { traitsHold } from "./host_holds.ts";
import { nextLookMs, type PaceView } from "../../openstack/informer/pacing.ts";
import { glanceIsQuiet } from "../../openstack/informer/first_look.ts";
import type { PlanOptions } from "./plan_options.ts";
import type { Plan } from "./plan_types.ts";
import { finishedLookMs, type NextLook, type Pass } from "./pass.ts";
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
 * A pass woken before it is due with nothing changed returns at once, without a Nova call;
 * a drain in line for budget keeps its place.
 */
export function skipEarly(
  pass: Pass,
  fingerprint: string,
  slotFree: () => boolean,
): NextLook | undefined {
  const { ctx, deps, state } = pass;
  const due = state.due;
  if (due === undefined || state.woken || pass.retryValue !== undefined) {
    return undefined;
  }
  if (deps.memory.informer.woken(ctx.key)) return undefined;
  if (pass.status.finishedAt !== undefined) return undefined;
  if (due.fingerprint !== fingerprint) return undefined;
  const leftMs = due.atMs - deps.clock.now();
  if (leftMs <= 0) return undefined;
  const standing = deps.memory.budgetWaiters.standing(ctx.key);
  if (standing === "woken") {
    if (slotFree()) return undefined;
    deps.memory.budgetWaiters.add(ctx.key);
  }
  return { inMs: leftMs };
}

/** The pacing model's view of this pass. */
export function paceView(
  pass: Pass,
  plan: Plan,
  records: PaceView["records"],
  progress?: PaceView["progress"],
): PaceView {
  const { state } = pass;
  return {
    nowMs: pass.deps.clock.now(),
    inFlight: plan.next.inFlight ?? [],
    records,
    ramOf: (id) => state.ram.get(id),
    issuedAt: (id) => state.starts.get(id)?.issuedAtMs,
    pending: (id) => state.starts.get(id)?.state === "pending",
    pollMs: pass.times.pollMs,
    limit: plan.next.effectiveLimit ?? 1,
    novaLimit: plan.next.novaLiveMigrationLimit,
    progress,
  };
}

function paceRecords(
  latest: ReturnType<typeof latestRecords>,
): PaceView["records"] {
  return new Map([...latest].map(([id, r]) => [id, r.inProgress ?? r.latest]));
}

/** The pacing model learns from this pass's records while the start notes still say which are ours; returns them. */
export function learn(
  pass: Pass,
  plan: Plan,
  seen: Observation,
): PaceView["records"] {
  const records = paceRecords(latestRecords(seen.migrations, pass.host));
  pass.state.pace.learn(paceView(pass, plan, records, seen.progress));
  return records;
}

/** The wait until the next look in real ms (the one place a pass converts by the clock's rate). */
export function requeue(pass: Pass, look: NextLook): ReconcileResult {
  return { requeueAfterMs: Math.max(1, Math.round(look.inMs / pass.rate)) };
}

/** The next look of a pass that planned, and whether a glance will do for it. */
export function nextLook(
  pass: Pass,
  plan: Plan,
  fingerprint: string,
  records: PaceView["records"],
): NextLook {
  const { deps, state } = pass;
  const { pollMs, maxPollMs, slowPollMs } = pass.times;
  const view = paceView(pass, plan, records);
  const nowMs = view.nowMs;
  state.pace.planGlance(undefined);
  if (plan.finished) {
    state.lastFinishedCheckMs = nowMs;
    state.due = undefined;
    return { inMs: finishedLookMs(pass, plan.next.finishedAt) };
  }
  const summary = plan.summary;
  const held = summary.held !== undefined;
  let inMs: number;
  if (plan.settleAtMs !== undefined) {
    // Seen empty, not settled: polling looks every poll interval for a VM on its way
    // here; a watching informer wakes the drain when one comes.
    const leftMs = Math.max(1, plan.settleAtMs - nowMs);
    inMs = deps.memory.informer.watching(pass.ctx.key)
      ? leftMs
      : Math.min(pollMs, leftMs);
  } else {
    // times the running migrations' ends for the informer's trust too
    const due = state.pace.dueInMs(view);
    // Ready VMs held back by the budget are no reason to look sooner: a freed slot wakes the drain.
    inMs = held && plan.inFlightCount === 0 ? slowPollMs : nextLookMs({
      ...due,
      inFlight: plan.inFlightCount,
      retryInMs: plan.nextRetryAtMs === undefined
        ? undefined
        : Math.max(0, plan.nextRetryAtMs - nowMs),
      watching: summary.busy > 0,
      pollMs,
      maxPollMs,
      slowPollMs,
    });
    const read = byProgressRead(pass, nowMs, inMs, plan.inFlightCount);
    // A start's bound (Plan.lookByMs) wants a full look: never a glance.
    const byBound = plan.lookByMs !== undefined &&
      plan.lookByMs - nowMs < read.inMs;
    inMs = byBound
      ? Math.max(pollMs, (plan.lookByMs ?? nowMs) - nowMs)
      : read.inMs;
    const glanceWill = !read.due && !byBound && !held && summary.busy === 0 &&
      plan.nextRetryAtMs === undefined && state.pace.firstLooksOnly(view);
    state.pace.planGlance(glanceWill ? view : undefined);
  }
  state.due = { atMs: nowMs + inMs, fingerprint };
  return { inMs };
}

/**
 * The next look no later than the next progress read of a copy whose decision is pending,
 * and whether that read is what it is for (then never a glance).
 *
 * @example
 * ```ts ignore
 * const { inMs, due } = byProgressRead(pass, now, 60_000, 1);
 * ```
 */
export function byProgressRead(
  pass: Pass,
  nowMs: number,
  inMs: number,
  inFlight: number,
): { inMs: number; due: boolean } {
  const at = pass.deps.memory.informer.progressDueAtMs(pass.ctx.key);
  if (inFlight === 0 || at === undefined || at - nowMs >= inMs) {
    return { inMs, due: false };
  }
  return { inMs: Math.max(pass.times.pollMs, at - nowMs), due: true };
}

/** Nova's `changes-since` for the host's migrations: the drain's start less the clock skew, on Nova's clock. */
export function changesSince(pass: Pass, options: PlanOptions): Date {
  const startedMs = Date.parse(pass.status.startedAt ?? "") ||
    pass.deps.clock.now();
  return new Date(
    startedMs - options.clockSkewMs + (options.novaClockOffsetMs ?? 0),
  );
}

/**
 * A pass due only for first looks at our starts lists the host's migrations alone;
 * when quiet, the model learns and times the next look; else undefined: a full pass looks.
 */
export async function glance(
  pass: Pass,
  fingerprint: string,
  options: PlanOptions,
): Promise<NextLook | undefined> {
  const { ctx, deps, state } = pass;
  const planned = state.pace.takeGlance();
  if (planned === undefined || state.due?.fingerprint !== fingerprint) {
    return undefined;
  }
  if (state.woken || pass.retryValue !== undefined) return undefined;
  if (pass.status.finishedAt !== undefined) return undefined;
  // The informer's snapshot shows the records without a call.
  if (deps.memory.informer.cached(ctx.key)) return undefined;
  // budget freed for this drain: a full pass may start migrations
  if (deps.memory.budgetWaiters.standing(ctx.key) === "woken") return undefined;
  let migrations;
  try {
    // The informer learns Nova's limit from it as from a full look.
    migrations = await deps.memory.informer.glance(
      pass.host,
      changesSince(pass, options),
      ctx.signal,
    );
  } catch {
    return undefined; // the full pass looks again, and says why it failed
  }
  const latest = latestRecords(migrations, pass.host);
  const quiet = glanceIsQuiet(
    planned.inFlight.map((e) => e.id),
    (id) => planned.issuedAt(id) !== undefined,
    (id) => latest.get(id)?.latest.status,
  );
  if (!quiet) return undefined;
  const view = {
    ...planned,
    nowMs: deps.clock.now(),
    records: paceRecords(latest),
  };
  state.pace.learn(view);
  const read = byProgressRead(
    pass,
    view.nowMs,
    nextLookMs({
      ...state.pace.dueInMs(view),
      inFlight: view.inFlight.length,
      retryInMs: undefined,
      watching: false,
      ...pass.times,
    }),
    view.inFlight.length,
  );
  const inMs = read.inMs;
  state.due = { atMs: view.nowMs + inMs, fingerprint };
  state.pace.planGlance(
    !read.due && state.pace.firstLooksOnly(view) ? view : undefined,
  );
  pass.log.debug({ nextLookMs: inMs }, "glanced at the migrations: quiet");
  return { inMs };
}
