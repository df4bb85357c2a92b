/**
 * The cluster budget of a pass: waiting in line, claiming free slots before
 * looking, reserving them with the plan, the intent write before starts
 * (the one status write of a pass besides its end), and confirming across
 * processes after it.
 *
 * @module
 */

import { errText, TemporaryError } from "../../framework/errors.ts";
import {
  clusterBudgetLeft,
  effectiveSettings,
  type LimitSettings,
  POLICY_NAME,
  type resolveLimit,
} from "../../limits/resolve.ts";
import type { Eviction, EvictionStatus } from "../../models/mod.ts";
import { EvictionKind, EvictionPolicyKind, HypervisorKind } from "../kinds.ts";
import { changeCondition, CONDITION_EVICTING } from "./conditions.ts";
import { REASON_WAITING_FOR_BUDGET } from "../conditions.ts";
import { traitsHold } from "./gates.ts";
import { noteCopyStarts } from "./memory.ts";
import type { PlanOptions } from "./observation.ts";
import type { Plan, PlanInput, Planner } from "./plan_types.ts";
import {
  aboutToStart,
  type BudgetWaiter,
  idleWaiters,
  inFlightByEviction,
  startsByRemainingWork,
  waitsForBudget,
} from "./budget.ts";
import {
  clusterInFlight,
  knownNovaLimit,
  learnNovaLimitFrom,
  limitOfDrain,
  type Pass,
  record,
  type Step,
} from "./pass.ts";
import type { Observation } from "../../openstack/informer/snapshot.ts";

/**
 * Budget: a drain with nothing in flight, while the cluster budget is spent
 * by others, waits without a Nova call (nothing of its own can move); it is
 * woken when budget frees (budget.ts) and by its slow check, and says so
 * (WaitingForBudget: other processes leave it a slot as this one does).
 * Ends the pass when it waits.
 */
export function waitForBudget(pass: Pass, settings: LimitSettings): Step {
  const { ctx, deps, state, status } = pass;
  const clusterMax = settings.spec.clusterMaxConcurrentMigrations;
  if (clusterMax === undefined || pass.retryValue !== undefined) return {};
  if ((status.inFlightCount ?? 0) > 0 || deps.memory.ledger.get(ctx.key) > 0) {
    return {};
  }
  if (state.starts.size > 0 || status.outstandingCount === 0) return {};
  // Stopped with only VMs for a person: no budget would move them, so it
  // never waits for budget (nor does any drain leave it a slot).
  const evicting = status.conditions?.find((c) =>
    c.type === CONDITION_EVICTING
  );
  if (evicting?.status === "False") return {};
  if (budgetLeftFor(pass, settings, 1) > 0) return {};
  const now = new Date(deps.clock.now());
  const waiting = changeCondition(
    status,
    {
      type: CONDITION_EVICTING,
      status: "True",
      reason: REASON_WAITING_FOR_BUDGET,
      message:
        `the cluster budget (clusterMaxConcurrentMigrations ${clusterMax}) is spent by other drains; waiting for a migration to finish`,
    },
    now,
    pass.ev.metadata?.generation,
  ).status;
  state.due = undefined;
  deps.memory.budgetWaiters.add(ctx.key);
  return { status: waiting, end: { requeueAfterMs: deps.slowPollMs } };
}

/**
 * Slots of the cluster budget left for this drain's starts now, from the
 * ledger and the cached statuses (no request).
 */
export function budgetLeftFor(
  pass: Pass,
  settings: LimitSettings,
  want: number,
): number {
  const { ctx, deps } = pass;
  const mine = inFlightOf(pass);
  const others = deps.memory.ledger.othersInFlight(
    ctx.key,
    clusterInFlight(pass),
  );
  return allowedStarts(
    pass,
    settings,
    clusterBudgetLeft(
      settings.spec.clusterMaxConcurrentMigrations,
      others + mine,
    ),
    mine,
    want,
  );
}

/**
 * The VMs a drain has left to start (outstanding, not in flight); before
 * its first look, the instances its Hypervisor's status sync counts on
 * the host; unknown, the most (a drain that never looked gets a slot
 * before drains whose work is known, and the same for every drain, so
 * drains that never looked never leave a slot to each other).
 */
function remainingWork(pass: Pass, ev: Eviction | undefined): number {
  const status = ev?.status;
  if (status?.outstandingCount !== undefined) {
    return Math.max(0, status.outstandingCount - (status.inFlightCount ?? 0));
  }
  const host = ev?.spec.hypervisor;
  const reported = host === undefined
    ? undefined
    : pass.ctx.cache(HypervisorKind).get(host)?.status?.numInstances;
  return reported ?? Number.MAX_SAFE_INTEGER;
}

/**
 * The starts the cluster budget allows this drain (`left` free slots,
 * `mine` in flight): a freed slot goes to a waiting drain of a lower
 * limit, or to the waiting drain with the most work left when that one
 * starts without a look at Nova ({@linkcode startsByRemainingWork}): the
 * wave's longest drain is never the last to run, and no hand-over costs a
 * look.
 */
export function allowedStarts(
  pass: Pass,
  settings: LimitSettings,
  left: number,
  mine: number,
  want: number,
): number {
  const waiting = waitingDrains(pass, settings);
  const own = { ...pass.ev, status: { ...pass.status, inFlightCount: mine } };
  const remaining = remainingWork(pass, own);
  return startsByRemainingWork(left, mine, want, remaining, waiting);
}

/** This drain's migrations in flight: the ledger's, or its status's when higher. */
export function inFlightOf(pass: Pass): number {
  return Math.max(
    pass.deps.memory.ledger.get(pass.ctx.key),
    pass.status.inFlightCount ?? 0,
  );
}

/**
 * The drains that wait for budget with nothing in flight, this process's
 * and every other partition's, with their limits in force, their work
 * left and whether a slot handed to them costs a look at Nova (budget.ts
 * startsByRemainingWork leaves slots for those with lower limits than
 * this drain would hold and for those with more work left that start
 * without a look). This process knows its own waiters and whether its
 * informer vouches for their hosts; another process's say so in their
 * Evicting condition (WaitingForBudget), and are taken to need a look; a
 * drain about to start its first migrations counts as waiting, and looks
 * then in any case (budget.ts aboutToStart).
 */
export function waitingDrains(
  pass: Pass,
  settings: LimitSettings,
): BudgetWaiter[] {
  const { ctx, deps } = pass;
  const hypervisors = ctx.cache(HypervisorKind);
  const mine = ctx.cache(EvictionKind);
  return idleWaiters(
    ctx.key,
    (deps.allEvictions ?? mine).list(),
    (e) => {
      const name = e.metadata?.name ?? "";
      if (aboutToStart(e)) return true;
      if (mine.get(name) === undefined) return waitsForBudget(e);
      return deps.memory.budgetWaiters.standing(name) !== undefined &&
        deps.memory.ledger.get(name) === 0;
    },
  ).map((e) => {
    const name = e.metadata?.name ?? "";
    return {
      limit: limitOfDrain(settings, hypervisors, e.spec).limit,
      remaining: remainingWork(pass, e),
      startsWithoutLook: aboutToStart(e) ||
        (mine.get(name) !== undefined &&
          deps.memory.informer.cached(
            name,
            knownNovaLimit(pass, deps.memory.of(name)),
          )),
    };
  });
}

/**
 * Under a cluster budget, a pass claims the free slots it could fill (up
 * to its limit) before it looks at Nova, in the ledger; planning then
 * keeps what it starts and the report frees the rest, waking the drains
 * in line for them. So two passes never look at Nova for the same free
 * slot, the later one finding it spent (two Nova calls for nothing): it
 * waits in line without a look instead. Returns the ledger's count before
 * the claim (to give back when the pass fails before act: giveBack), if it
 * claimed.
 */
export function claimBeforeLooking(
  pass: Pass,
  settings: LimitSettings,
  limit: number,
): number | undefined {
  const { ctx, deps } = pass;
  const clusterMax = settings.spec.clusterMaxConcurrentMigrations;
  if (clusterMax === undefined) return undefined;
  const mine = inFlightOf(pass);
  const left = budgetLeftFor(pass, settings, Math.max(0, limit - mine));
  deps.memory.ledger.set(
    ctx.key,
    mine + Math.max(0, Math.min(left, limit - mine)),
  );
  return mine;
}

/**
 * Gives back what a pass that failed before act holds of the cluster
 * budget in the ledger: after planning, the starts of its `plan` (never
 * issued); before, the slots claimed before looking (any failure: the
 * look, planning, the intent write). Drains in line are woken for them.
 */
export function giveBack(pass: Pass, plan: Plan | undefined): void {
  const { ctx, deps } = pass;
  if (plan !== undefined) {
    deps.memory.ledger.set(ctx.key, plan.inFlightCount - plan.start.length);
  } else if (pass.claimedFrom !== undefined) {
    deps.memory.ledger.set(ctx.key, pass.claimedFrom);
  } else return;
  wakeForBudgetLeft(pass);
}

/**
 * Nova's limit on the host's live migrations, learned from this look
 * (nova_limit.ts), as a plan input.
 */
function novaLiveLimit(
  pass: Pass,
  seen: Observation,
): { novaLiveLimit?: number } {
  const limit = learnNovaLimitFrom(pass, seen.migrations);
  return limit === undefined ? {} : { novaLiveLimit: limit };
}

/**
 * The planner's input for this pass: its observation, the limit in force
 * (policy, traits, the Eviction's own cap), the start answers in memory
 * and what the drain learned of Nova's limit; no cluster budget yet. The
 * copies first seen under way go into the input, not the drain's memory
 * ({@linkcode keepCopyStarts}).
 */
export function planInputFor(
  pass: Pass,
  seen: Observation,
  settings: LimitSettings,
  options: PlanOptions,
  resolved: ReturnType<typeof resolveLimit>,
): PlanInput {
  const { deps, ev, host } = pass;
  const hold = traitsHold(host, pass.hypervisor) ?? pass.waveHold;
  const generation = ev.metadata?.generation;
  return {
    host,
    servers: seen.servers,
    migrations: seen.migrations,
    departed: seen.departed,
    status: pass.status,
    limit: resolved.limit,
    limitSource: resolved.source,
    clusterBudgetLeft: Number.POSITIVE_INFINITY,
    now: new Date(deps.clock.now()),
    options,
    starts: pass.state.starts,
    confirms: pass.state.confirms,
    aborts: pass.state.aborts,
    ...(seen.lookedAtMs === undefined ? {} : { lookedAtMs: seen.lookedAtMs }),
    startBackoff: pass.state.startBackoff,
    ...novaLiveLimit(pass, seen),
    // Without a cluster budget a queued migration takes no one's slot, and
    // Nova starts it the moment a copy ends: keep one in Nova's queue.
    novaQueueAhead: settings.spec.clusterMaxConcurrentMigrations === undefined
      ? 1
      : 0,
    // On a copy: the input is made twice when a snapshot's plan is refused,
    // and a copy the snapshot lacks would be first seen again (its timeout
    // restarted); the chosen plan's is kept once (keepCopyStarts).
    copyStartedAtMs: noteCopyStarts(
      new Map(pass.state.copyStarted),
      seen.migrations,
      host,
      deps.clock.now(),
    ),
    ...(generation === undefined ? {} : { generation }),
    ...(hold === undefined ? {} : { holdStarts: hold }),
  };
}

/**
 * Keeps in the drain's memory when each copy was first seen under way, as
 * the input of the pass's chosen plan has it (planInputFor leaves the
 * memory as it was).
 */
export function keepCopyStarts(pass: Pass, input: PlanInput): void {
  const kept = pass.state.copyStarted;
  kept.clear();
  for (const [id, atMs] of input.copyStartedAtMs ?? []) kept.set(id, atMs);
}

/**
 * Reserve: the pass's plan (from a fresh look or the informer's
 * snapshot) against the cluster budget, read and reserved in one
 * synchronous step, so no other drain's pass can spend the same slot; a
 * plan that would overspend it is made again with the slots left.
 */
export function planAndReserve(
  pass: Pass,
  planned: { plan: Plan; input: PlanInput },
  settings: LimitSettings,
  planner: Planner,
): { plan: Plan; input: PlanInput } {
  const { ctx, deps } = pass;
  const { input } = planned;
  const cachedCounts = clusterInFlight(pass);
  let plan = planned.plan;
  deps.memory.ledger.reserve(ctx.key, cachedCounts, (others) => {
    const clusterMax = settings.spec.clusterMaxConcurrentMigrations;
    if (clusterMax !== undefined) {
      const mine = plan.inFlightCount - plan.start.length;
      const budget = allowedStarts(
        pass,
        settings,
        clusterBudgetLeft(clusterMax, others + mine),
        mine,
        plan.start.length,
      );
      if (budget < plan.start.length) {
        plan = planner({ ...input, clusterBudgetLeft: budget });
        // held back by the budget: woken when a slot frees
        deps.memory.budgetWaiters.add(ctx.key);
      }
    }
    return plan.inFlightCount;
  });
  return { plan, input };
}

/**
 * The longest wait (real ms) for the watch to deliver a pass's own intent
 * before the budget is confirmed by a list instead.
 */
export const CAUGHT_UP_TIMEOUT_MS = 1000;

/**
 * The cluster budget across processes: another process may reserve from
 * the same free slots at the same moment (its status not yet in our
 * cache). So, with starts under a cluster budget, the pass writes its
 * status first (its intent: the count in flight with its starts), then
 * reads every Eviction as of a moment after that write. Of any two passes,
 * the later reader sees the other's intent; each gives up the starts by
 * which the total it reads exceeds the budget, so the starts that go out
 * never exceed it.
 *
 * That read is the unpartitioned cache once its watch has delivered the
 * intent itself: a watch delivers changes in the order of their versions,
 * so every intent written before ours is in the cache by then (no request;
 * Informer.caughtUp). Without such a cache, or when the watch lags more
 * than {@linkcode CAUGHT_UP_TIMEOUT_MS}, it is a list from the API server
 * (a quorum read).
 */
export async function confirmAcrossProcesses(
  pass: Pass,
  reserved: { plan: Plan; input: PlanInput },
  settings: LimitSettings,
  planner: Planner,
): Promise<Plan> {
  const { ctx, deps } = pass;
  const { plan, input } = reserved;
  const clusterMax = settings.spec.clusterMaxConcurrentMigrations;
  if (clusterMax === undefined || plan.start.length === 0) return plan;
  await writeIntent(pass, plan, plan.next);
  try {
    const counts = inFlightByEviction(await evictionsAfterWrite(pass));
    const total = deps.memory.ledger.othersInFlight(ctx.key, counts) +
      plan.inFlightCount;
    const over = total - clusterMax;
    if (over <= 0) return plan;
    const cut = planner({
      ...input,
      clusterBudgetLeft: Math.max(0, plan.start.length - over),
    });
    deps.memory.ledger.set(ctx.key, cut.inFlightCount);
    deps.memory.budgetWaiters.add(ctx.key);
    pass.log.info(
      { over, starts: plan.start.length, kept: cut.start.length },
      "another process reserved from the cluster budget at the same time",
    );
    return cut;
  } catch (err) {
    // Nothing is started; the pass's end writes its status without them.
    deps.memory.ledger.set(ctx.key, plan.inFlightCount - plan.start.length);
    wakeForBudgetLeft(pass);
    throw new TemporaryError(
      `confirming the cluster budget failed: ${errText(err)}`,
      { delayMs: deps.pollIntervalMs },
    );
  }
}

/**
 * Intent before starts: writes the status with the pass's starts in it,
 * before they are issued, so that a new leader knows them (and confirms
 * our cold ones) and, under a cluster budget, every process counts them.
 * The one status write of a pass besides its end (pass.ts record). When
 * it fails nothing is started: the budget claimed for the starts is given
 * back and the pass is retried after the poll interval.
 */
export async function writeIntent(
  pass: Pass,
  plan: Plan,
  next: EvictionStatus,
): Promise<void> {
  const { ctx, deps } = pass;
  try {
    await record(pass, next);
  } catch (err) {
    deps.memory.ledger.set(ctx.key, plan.inFlightCount - plan.start.length);
    wakeForBudgetLeft(pass);
    throw new TemporaryError(
      `recording the starts before issuing them failed: ${errText(err)}`,
      { delayMs: deps.pollIntervalMs },
    );
  }
}

/**
 * Every Eviction of the cluster as of a moment after this pass's last
 * status write: the unpartitioned cache once its watch delivered that
 * write, else a list from the API server.
 */
export async function evictionsAfterWrite(pass: Pass): Promise<Eviction[]> {
  const { ctx, deps } = pass;
  const all = deps.allEvictions;
  const rv = pass.ev.metadata?.resourceVersion;
  if (
    all?.caughtUp !== undefined && rv !== undefined &&
    await all.caughtUp(rv, CAUGHT_UP_TIMEOUT_MS)
  ) {
    return all.list();
  }
  const listed = await ctx.client.list(EvictionKind);
  return listed.items as Eviction[];
}

/**
 * Wakes as many drains waiting for budget as there are free slots now
 * (after this pass's starts): a slot this drain freed or left unused goes
 * to a waiting drain at once, not at its slow check: to those with the
 * most work left first (the ones startsByRemainingWork leaves it to).
 */
export function wakeForBudgetLeft(pass: Pass): void {
  const { ctx, deps } = pass;
  if (deps.memory.budgetWaiters.size === 0) return;
  const policy = ctx.cache(EvictionPolicyKind).get(POLICY_NAME);
  const clusterMax = effectiveSettings(policy?.spec, deps.flagSettings).spec
    .clusterMaxConcurrentMigrations;
  if (clusterMax === undefined) return;
  const inFlight =
    deps.memory.ledger.othersInFlight(ctx.key, clusterInFlight(pass)) +
    deps.memory.ledger.get(ctx.key);
  const left = clusterBudgetLeft(clusterMax, inFlight);
  if (left <= 0) return;
  const enqueue = (k: string) => ctx.enqueue(EvictionKind, k);
  // the slot goes to the drain with the most left: wake that one now
  const cache = ctx.cache(EvictionKind);
  deps.memory.budgetWaiters.wake(
    enqueue,
    left,
    (k) => remainingWork(pass, cache.get(k)),
  );
}
