/**
 * The phases of a pass that spend the cluster budget.
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
import { traitsHold } from "./host_holds.ts";
import { copyStartsSeen } from "./memory.ts";
import { pendingRequests, type RequestAnswer } from "./requests.ts";
import type { PlanOptions } from "./plan_options.ts";
import type { Plan, PlanInput, Planned, Planner } from "./plan_types.ts";
import {
  aboutToStart,
  type BudgetWaiter,
  idleWaiters,
  inFlightByEviction,
  startsByRemainingWork,
  waitsForBudget,
} from "./budget_share.ts";
import {
  clusterInFlight,
  limitOfDrain,
  type Pass,
  record,
  type Step,
} from "./pass.ts";
import type { Observation } from "../../openstack/informer/snapshot.ts";

/** A drain with nothing in flight waits, without a Nova call, while others spend the cluster budget. */
export function waitForBudget(pass: Pass, settings: LimitSettings): Step {
  const { ctx, deps, state, status } = pass;
  const clusterMax = settings.spec.clusterMaxConcurrentMigrations;
  if (clusterMax === undefined || pass.retryValue !== undefined) return {};
  if ((status.inFlightCount ?? 0) > 0 || deps.memory.ledger.get(ctx.key) > 0) {
    return {};
  }
  if (state.starts.size > 0 || status.outstandingCount === 0) return {};
  // only VMs for a person: no budget would move them
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
  deps.memory.budgetWaiters.add(ctx.key);
  return {
    status: waiting,
    end: { inMs: pass.times.slowPollMs },
    record: { due: undefined },
  };
}

/** Slots of the cluster budget left for this drain now (no request). */
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

/** VMs left to start; before the first look the Hypervisor's count; unknown: the most (drains that never looked never leave a slot to each other). */
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

/** The starts the budget allows this drain, leaving slots to waiting drains. */
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

/** Every partition's drains waiting for budget with nothing in flight (another process's are taken to need a look). */
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
          deps.memory.informer.cached(name)),
    };
  });
}

/** Claims the free slots before the look, so two passes never look for one slot; returns the count before (for giveBack). */
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

/** Gives back what a pass that failed before act holds (its plan's starts, else its claim). */
export function giveBack(pass: Pass, plan: Plan | undefined): void {
  const { ctx, deps } = pass;
  if (plan !== undefined) {
    deps.memory.ledger.set(ctx.key, plan.inFlightCount - plan.start.length);
  } else if (pass.claimedFrom !== undefined) {
    deps.memory.ledger.set(ctx.key, pass.claimedFrom);
  } else return;
  wakeForBudgetLeft(pass);
}

/** The planner's input, no cluster budget yet. Pure: it runs twice when a snapshot's plan is refused. */
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
  const requests = pendingRequests(
    ev.spec.actions,
    (pass.status as { actions?: readonly RequestAnswer[] }).actions,
  );
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
    forceCompletes: pass.state.forceCompletes,
    lookedAtMs: seen.listedAtMs,
    startBackoff: pass.state.startBackoff,
    ...(seen.progress === undefined ? {} : { progress: seen.progress }),
    ...(seen.novaLimit === undefined ? {} : { novaLiveLimit: seen.novaLimit }),
    // Without a cluster budget a queued migration takes no one's slot.
    novaQueueAhead: settings.spec.clusterMaxConcurrentMigrations === undefined
      ? 1
      : 0,
    // Kept in the record only from the chosen plan's input (reconcile.ts):
    // a refused snapshot's would restart a copy's timeout.
    copyStartedAtMs: copyStartsSeen(
      pass.state.copyStarted,
      seen.migrations,
      host,
      deps.clock.now(),
      deps.novaClockOffsetMs(),
      pass.status.inFlight,
    ),
    ...(generation === undefined ? {} : { generation }),
    ...(hold === undefined ? {} : { holdStarts: hold }),
    ...(requests.length === 0 ? {} : { requests }),
  };
}

/** Reserves the plan's starts in one synchronous step; a plan that would overspend the budget is made again. */
export function planAndReserve(
  pass: Pass,
  planned: Planned,
  settings: LimitSettings,
  planner: Planner,
): Planned {
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
        deps.memory.budgetWaiters.add(ctx.key);
      }
    }
    return plan.inFlightCount;
  });
  return { plan, input };
}

/** The longest wait (real ms) for the watch to deliver the pass's intent. */
export const CAUGHT_UP_TIMEOUT_MS = 1000;

/**
 * Another process may reserve the same slots: the starts are written first,
 * then every Eviction read as of after that write; the later reader gives up the excess.
 */
export async function confirmAcrossProcesses(
  pass: Pass,
  reserved: Planned,
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
    // nothing started: the pass's end writes its status without them
    giveBack(pass, plan);
    throw new TemporaryError(
      `confirming the cluster budget failed: ${errText(err)}`,
      { delayMs: deps.pollIntervalMs },
    );
  }
}

/** Writes the status with the starts before they are issued, so a new leader knows them; failed, nothing starts. */
export async function writeIntent(
  pass: Pass,
  plan: Plan,
  next: EvictionStatus,
): Promise<void> {
  const { deps } = pass;
  try {
    await record(pass, next);
  } catch (err) {
    giveBack(pass, plan);
    throw new TemporaryError(
      `recording the starts before issuing them failed: ${errText(err)}`,
      { delayMs: deps.pollIntervalMs },
    );
  }
}

/** Every Eviction as of after this pass's last status write. */
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

/** Wakes as many waiting drains as there are free slots, most work left first. */
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
  const cache = ctx.cache(EvictionKind);
  deps.memory.budgetWaiters.wake(
    (k) => ctx.enqueue(EvictionKind, k),
    left,
    (k) => remainingWork(pass, cache.get(k)),
  );
}
