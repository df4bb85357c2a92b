/**
 * One pass of a drain: the phases of `mod.ts`, in that order, each a short
 * function here or in its own file.
 *
 * @module
 */

import type {
  HandlerContext,
  ReconcileResult,
} from "../../framework/handler.ts";
import { ApiError, TemporaryError } from "../../framework/errors.ts";
import { isDeleting } from "../../framework/kind.ts";
import type { Logger } from "../../framework/logger.ts";
import {
  clusterBudgetLeft,
  effectiveSettings,
  type LimitSettings,
  POLICY_NAME,
  resolveLimit,
} from "../../limits/resolve.ts";
import type { Eviction, EvictionStatus, Hypervisor } from "../../models/mod.ts";
import { errText } from "../../openstack/mod.ts";
import { EvictionKind, EvictionPolicyKind, HypervisorKind } from "../kinds.ts";
import { actOnPlan, type PendingEvent } from "./act.ts";
import { latestRecords } from "./classify.ts";
import { CONDITION_EVICTING, setCondition } from "./conditions.ts";
import { novaReasons, withReasons } from "./explain.ts";
import {
  learnNovaLimit,
  NOVA_LIMIT_TTL_MS,
  observedNovaLimit,
  withNovaLimit,
} from "./nova_limit.ts";
import { drainingAhead, traitsHold } from "./gates.ts";
import type { InFlightLedger } from "./ledger.ts";
import { type DrainMemory, type DrainState, noteCopyStarts } from "./memory.ts";
import type { EvictionMetrics } from "./metrics.ts";
import type { CountedNova } from "./nova_calls.ts";
import { type Observation, observe } from "./observe.ts";
import {
  DEFAULT_PLAN_OPTIONS,
  type ObservedMigration,
  type PlanOptions,
} from "./observation.ts";
import { type PaceView, requeueAfterMs } from "./pacing.ts";
import { type Plan, type PlanInput, planPass } from "./plan.ts";
import { preflight } from "./preflight.ts";
import { reportPass } from "./report.ts";
import { applyRetry, RETRY_ANNOTATION } from "./retry.ts";
import { statusEqual } from "./status_equal.ts";
import {
  type BudgetWaiters,
  idleWaiters,
  inFlightByEviction,
  startsAllowed,
} from "./budget.ts";
import {
  CONDITION_WAVE_SETTLED,
  pendingMembers,
  waveCondition,
  type WaveDecision,
  waveGate,
} from "./wave.ts";
import { type CapacityDeps, capacityPhase } from "../../capacity/gate.ts";

/** The controller's time source. */
export interface EvictionClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * Clock milliseconds per real millisecond (default 1). A simulator's
   * scaled clock runs faster; requeue delays computed in clock time are
   * divided by it, once, when a pass returns.
   */
  rate?: number;
}

/** What a pass needs; built once by `registerEvictionController`. */
export interface EvictionPassDeps {
  /** Nova, every call counted. */
  nova: CountedNova;
  /** Limit settings from the flags (used without an EvictionPolicy). */
  flagSettings: LimitSettings;
  /** The shortest wait between passes (real ms). */
  pollIntervalMs: number;
  /** The longest wait while migrations are in flight (real ms). */
  maxPollMs: number;
  /** Wait while nothing can move without a person or a change (real ms). */
  slowPollMs: number;
  /** Wait between checks of a finished drain's host (real ms). */
  finishedCheckMs: number;
  /** Overrides of the planner's options (the policy's timeout wins). */
  planOptions: Partial<PlanOptions>;
  /** Time source. */
  clock: EvictionClock;
  /** Migrations in flight per Eviction, for the cluster budget. */
  ledger: InFlightLedger;
  /** Per-drain memory. */
  memory: DrainMemory;
  /** Metrics. */
  metrics: EvictionMetrics;
  /** Nova lookups of one pass at once. */
  actConcurrency: number;
  /**
   * Every Eviction of the cluster, whatever this process's label selector
   * (for the cluster budget); without it, the operator's cache. With
   * `caughtUp` (an informer's), the cross-process check of the budget waits
   * for the watch to deliver the pass's own intent instead of listing.
   */
  allEvictions?: {
    list(): Eviction[];
    caughtUp?(resourceVersion: string, timeoutMs: number): Promise<boolean>;
  };
  /** This process's drains waiting for budget. */
  budgetWaiters: BudgetWaiters;
  /** The longest wait of a drain for its wave's hosts to be disabled (real ms). */
  waveSettleMs: number;
  /** Placement for the capacity check, and the wave's shared report; without it there is none. */
  capacity?: CapacityDeps;
}

/** The planner options of a pass: defaults, the deps' overrides, the policy's. */
export function planOptionsFor(
  overrides: Partial<PlanOptions>,
  settings: LimitSettings,
): PlanOptions {
  const timeout = settings.spec.migrationTimeoutSeconds;
  return {
    ...DEFAULT_PLAN_OPTIONS,
    ...overrides,
    abortStuckMigrations: settings.spec.abortStuckMigrations ??
      overrides.abortStuckMigrations ?? false,
    ...(timeout === undefined ? {} : { migrationTimeoutSeconds: timeout }),
  };
}

/** What the phases of one pass share. */
interface Pass {
  ctx: HandlerContext<Eviction>;
  deps: EvictionPassDeps;
  /** The Eviction, with the freshest status this process knows. */
  ev: Eviction;
  host: string;
  log: Logger;
  state: DrainState;
  /** The status so far (the preflight and a retry request change it). */
  status: EvictionStatus;
  hypervisor: Hypervisor | undefined;
  /** Clock ms per real ms. */
  rate: number;
  /** Set when a retry annotation was consumed (removed after the write). */
  retried: boolean;
  /** The latest record leaving the host per VM, this pass. */
  records: Map<string, ObservedMigration>;
  /** The ledger's count before this pass claimed budget, if it did. */
  claimedFrom?: number;
  /** Why this pass starts nothing: its wave is not yet disabled. */
  waveHold?: string;
}

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
  const options = planOptionsFor(deps.planOptions, settings);
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
  const seen = await observeOrKeep(pass, options);
  const reserved = planAndReserve(pass, seen, settings, options, resolved);
  const confirmed = await confirmAcrossProcesses(pass, reserved, settings);
  learn(pass, confirmed, seen);
  // Nova's words for this pass's failures, read alongside the starts (the
  // request ids are taken before the starts replace any note).
  const reasons = novaReasons(
    confirmed,
    new Map(pass.state.starts),
    (id, requestId) =>
      pass.deps.nova.getInstanceAction(id, requestId, pass.ctx.signal),
  );
  // Without a cluster budget the starts go out with the status write, not
  // after it: a start never waits for the API server. Its entry is in the
  // written status, and the drain's memory knows it even if the write fails.
  act(pass, confirmed);
  const plan = withNovaLimitShown(
    pass,
    withReasons(confirmed, await reasons),
  );
  // The observed rate goes with the status, for the predictions of later
  // drains (capacity/makespan.ts rateFromHistory).
  const observed = pass.state.pace.slotRate();
  await record(
    pass,
    observed === undefined
      ? plan.next
      : { ...plan.next, observedMigrationRate: observed },
  );
  await report(pass, plan);
  return requeue(pass, plan, fingerprint);
}

/**
 * Gate: what must hold before Nova is read. Only the oldest Eviction of a
 * hypervisor drains; the compute service is disabled first (preflight); a
 * retry request is applied; a finished drain looks at Nova only when the
 * Hypervisor reports instances or its slow check is due. Returns the
 * pass's result when it ends here.
 */
async function gate(pass: Pass): Promise<ReconcileResult | undefined> {
  const { ctx, deps, ev, host } = pass;
  const now = new Date(deps.clock.now());
  const generation = ev.metadata?.generation;
  const ahead = drainingAhead(ev, ctx.cache(EvictionKind).list());
  if (ahead !== undefined) {
    const other = ahead.metadata?.name ?? "";
    const next: EvictionStatus = {
      ...pass.status,
      conditions: setCondition(
        pass.status.conditions ?? [],
        {
          type: CONDITION_EVICTING,
          status: "False",
          reason: "Duplicate",
          message:
            `Eviction ${other} already drains hypervisor ${host}; this one waits until it is finished or deleted`,
        },
        now,
        generation,
      ),
    };
    if (!statusEqual(pass.status, next)) {
      emit(pass, {
        type: "Warning",
        reason: "DuplicateEviction",
        message: `Eviction ${other} already drains hypervisor ${host}`,
      });
    }
    await record(pass, next);
    return { requeueAfterMs: deps.slowPollMs };
  }

  if (pass.status.hypervisorServiceId === undefined) {
    const held = await checkCapacityFirst(pass, now, generation);
    if (held !== undefined) return held;
    const out = await preflight(deps.nova, {
      host,
      reason: ev.spec.reason,
      hypervisor: pass.hypervisor,
      status: pass.status,
      now,
      generation,
    }, ctx.signal);
    if (out.kind === "failed") {
      if (!statusEqual(pass.status, out.status)) {
        pass.log.error({ err: out.message }, "preflight failed");
        emit(pass, {
          type: "Warning",
          reason: "PreflightFailed",
          message: out.message,
        });
      }
      await record(pass, out.status);
      // No hot loop: a change of the Hypervisor enqueues this Eviction.
      return { requeueAfterMs: deps.slowPollMs * 10 };
    }
    if (out.kind === "unregistered") {
      emit(pass, {
        type: "Normal",
        reason: "DrainFinished",
        message: `host ${host} never registered in Nova: nothing to drain`,
      });
      await record(pass, out.status);
      deps.ledger.set(ctx.key, 0);
      return {};
    }
    if (pass.status.startedAt === undefined) {
      emit(pass, {
        type: "Normal",
        reason: "DrainStarted",
        message: `draining host ${host}${
          out.disabledNow
            ? `; compute service ${out.status.hypervisorServiceId} disabled`
            : ""
        }`,
      });
    }
    pass.status = out.status;
  }

  const waiting = await waveGatePhase(pass, now, generation);
  if (waiting !== undefined) return waiting;

  const retry = ev.metadata?.annotations?.[RETRY_ANNOTATION];
  if (typeof retry === "string") {
    const r = applyRetry(pass.status, retry);
    pass.status = r.status;
    pass.retried = true;
    emit(pass, {
      type: "Normal",
      reason: "RetryRequested",
      message: `re-armed ${
        r.rearmed.length === 0 ? "no VM" : r.rearmed.join(", ")
      }${
        r.ignored.length === 0
          ? ""
          : `; not failed, ignored: ${r.ignored.join(", ")}`
      }`,
    });
  }

  if (pass.status.finishedAt !== undefined && !pass.retried) {
    return watchFinished(pass);
  }
  return undefined;
}

/**
 * Wave (after this drain's own preflight, before every start): waits,
 * bounded per member, while another pending Eviction's compute service is
 * still enabled (wave.ts). A drain with nothing in flight waits without a
 * Nova call; one with migrations in flight goes on watching them and only
 * holds its new starts (`pass.waveHold`). The peers waiting in this
 * process are woken when this drain's disabled service is recorded.
 */
async function waveGatePhase(
  pass: Pass,
  now: Date,
  generation: number | undefined,
): Promise<ReconcileResult | undefined> {
  const { ctx, deps } = pass;
  if (pass.status.finishedAt !== undefined) return undefined;
  // every partition's Evictions: another process disables their hosts
  const evictions = (deps.allEvictions ?? ctx.cache(EvictionKind)).list().map((
    e,
  ) => deps.memory.freshest(e.metadata?.name ?? "", e));
  const decision = decideWave(pass, evictions, now);
  const conditions = pass.status.conditions ?? [];
  const current = conditions.find((c) => c.type === CONDITION_WAVE_SETTLED);
  const update = waveCondition(pass.host, decision, evictions);
  const before = pass.status;
  pass.status = {
    ...pass.status,
    conditions: setCondition(conditions, update, now, generation),
  };
  if (current?.status !== update.status || current.reason !== update.reason) {
    emit(pass, {
      type: "Normal",
      reason: decision.go ? "WaveSettled" : "WaitingForWave",
      message: update.message,
    });
  }
  const newlyDisabled = before.hypervisorServiceId !== undefined &&
    pass.ev.status?.hypervisorServiceId === undefined;
  const idle = (pass.status.inFlight ?? []).length === 0;
  if (newlyDisabled || (!decision.go && idle)) await record(pass, pass.status);
  if (newlyDisabled) wakeWaitingPeers(ctx, evictions);
  if (decision.go) return undefined;
  if (!idle) {
    pass.waveHold = update.message;
    return undefined;
  }
  return {
    requeueAfterMs: Math.max(
      1,
      Math.round(Math.min(deps.pollIntervalMs, decision.waitMs / pass.rate)),
    ),
  };
}

/**
 * The wave decision on the drain's clock: each member's wait runs from
 * when this drain began waiting (its WaveSettled=False condition) or first
 * saw the member enabled, whichever is later.
 */
function decideWave(
  pass: Pass,
  evictions: readonly Eviction[],
  now: Date,
): WaveDecision {
  const seen = pass.state.waveSeen;
  const nowMs = now.getTime();
  const current = (pass.status.conditions ?? []).find((c) =>
    c.type === CONDITION_WAVE_SETTLED
  );
  const since = current?.status === "False"
    ? Date.parse(current.lastTransitionTime)
    : Number.NaN;
  const self = { ...pass.ev, status: pass.status };
  const pending = new Set(pendingMembers(self, evictions));
  for (const name of [...seen.keys()]) {
    if (!pending.has(name)) seen.delete(name);
  }
  for (const name of pending) if (!seen.has(name)) seen.set(name, nowMs);
  return waveGate({
    self,
    evictions,
    waitingSinceMs: Number.isNaN(since) ? Number.NEGATIVE_INFINITY : since,
    firstSeenMs: (name) => seen.get(name),
    nowMs,
    settleMs: pass.deps.waveSettleMs * pass.rate,
  });
}

/** Enqueues this process's drains that wait for their wave. */
function wakeWaitingPeers(
  ctx: HandlerContext<Eviction>,
  evictions: readonly Eviction[],
): void {
  for (const e of evictions) {
    const name = e.metadata?.name;
    if (name === undefined || name === ctx.key) continue;
    if (ctx.cache(EvictionKind).get(name) === undefined) continue;
    const c = e.status?.conditions?.find((x) =>
      x.type === CONDITION_WAVE_SETTLED
    );
    if (c?.status === "False") ctx.enqueue(EvictionKind, name);
  }
}

/**
 * Capacity (before the compute service is disabled, and again at the slow
 * interval while `capacityCheck: Hold` waits): does the wave's VMs fit
 * elsewhere, in Placement's view? Returns the pass's result when it holds.
 */
async function checkCapacityFirst(
  pass: Pass,
  now: Date,
  generation: number | undefined,
): Promise<ReconcileResult | undefined> {
  const { ctx, deps, ev, host } = pass;
  if (deps.capacity === undefined) return undefined;
  const gathering = gatherWave(pass, now);
  if (gathering !== undefined) return gathering;
  const spec = ctx.cache(EvictionPolicyKind).get(POLICY_NAME)?.spec;
  const settings = effectiveSettings(spec, deps.flagSettings);
  // every partition's: their VMs compete for the same room
  const evictions = (deps.allEvictions ?? ctx.cache(EvictionKind)).list();
  const hypervisors = ctx.cache(HypervisorKind);
  // A host of the wave: its traits and its own drain's cap (this one's
  // for this host; a host drained by a running Eviction, that one's).
  const limitOf = (name: string) =>
    limitOfDrain(
      settings,
      hypervisors,
      name === host
        ? ev.spec
        : evictions.find((e) =>
          e.spec.hypervisor === name && e.status?.finishedAt === undefined
        )?.spec ?? { hypervisor: name },
    ).limit;
  const phase = await capacityPhase(deps.nova, deps.capacity, {
    host,
    evictions,
    hypervisor: (name) => hypervisors.get(name),
    mode: spec?.capacityCheck,
    limitOf,
    budget: settings.spec.clusterMaxConcurrentMigrations,
    signal: ctx.signal,
    status: pass.status,
    now,
    generation,
    setCondition,
  });
  pass.status = phase.status;
  if (phase.event !== undefined) emit(pass, phase.event);
  if (!phase.hold) return undefined;
  await record(pass, pass.status);
  return { requeueAfterMs: deps.slowPollMs };
}

/** How long a new drain waits for the rest of its wave to appear (real ms). */
const WAVE_GATHER_MS = 1_000;

/**
 * Evictions created together (one `kubectl apply`, `kubectl evictor
 * drain A B`) reach the cache some milliseconds apart; a capacity check
 * run at once would judge each without the others and count the same
 * free room twice. So a drain's first capacity check waits
 * {@linkcode WAVE_GATHER_MS} (real) from when this process first saw it.
 */
function gatherWave(pass: Pass, now: Date): ReconcileResult | undefined {
  const seen = pass.state.firstSeenMs ??= now.getTime();
  const leftMs = seen + WAVE_GATHER_MS * pass.rate - now.getTime();
  if (leftMs <= 0) return undefined;
  return { requeueAfterMs: Math.max(1, Math.ceil(leftMs / pass.rate)) };
}

/**
 * A finished drain stays watched while its Eviction exists, cheaply: no
 * Nova call unless the Hypervisor's status sync reports instances on the
 * host (at most once per poll interval) or the slow check is due. Either
 * way the pass then reads Nova afresh, and a VM found there reopens it.
 */
function watchFinished(pass: Pass): ReconcileResult | undefined {
  const { deps, state } = pass;
  const nowMs = deps.clock.now();
  const last = state.lastFinishedCheckMs;
  const sinceReal = last === undefined ? Infinity : (nowMs - last) / pass.rate;
  const reported = pass.hypervisor?.status?.numInstances ?? 0;
  deps.ledger.set(pass.ctx.key, 0);
  if (sinceReal >= deps.finishedCheckMs) return undefined;
  if (reported > 0 && sinceReal >= deps.pollIntervalMs) return undefined;
  const waitMs = reported > 0
    ? deps.pollIntervalMs - sinceReal
    : deps.finishedCheckMs - sinceReal;
  return { requeueAfterMs: Math.max(1, Math.round(waitMs)) };
}

/** Migrations in flight per Eviction in the whole cluster, as cached. */
function clusterInFlight(pass: Pass): Map<string, number> {
  const all = pass.deps.allEvictions ?? pass.ctx.cache(EvictionKind);
  return inFlightByEviction(all.list());
}

/**
 * Budget: a drain with nothing in flight, while the cluster budget is spent
 * by others, waits without a Nova call (nothing of its own can move); it is
 * woken when budget frees (budget.ts) and by its slow check. Returns the
 * pass's result when it waits.
 */
async function waitForBudget(
  pass: Pass,
  settings: LimitSettings,
): Promise<ReconcileResult | undefined> {
  const { ctx, deps, state, status } = pass;
  const clusterMax = settings.spec.clusterMaxConcurrentMigrations;
  if (clusterMax === undefined || pass.retried) return undefined;
  if ((status.inFlightCount ?? 0) > 0 || deps.ledger.get(ctx.key) > 0) {
    return undefined;
  }
  if (state.starts.size > 0 || status.outstandingCount === 0) return undefined;
  // Stopped with only VMs for a person: no budget would move them, so it
  // never waits for budget (nor does any drain leave it a slot).
  const evicting = status.conditions?.find((c) =>
    c.type === CONDITION_EVICTING
  );
  if (evicting?.status === "False") return undefined;
  if (budgetLeftFor(pass, settings, 1) > 0) return undefined;
  const now = new Date(deps.clock.now());
  const next: EvictionStatus = {
    ...status,
    conditions: setCondition(
      status.conditions ?? [],
      {
        type: CONDITION_EVICTING,
        status: "True",
        reason: "Waiting",
        message:
          `the cluster budget (clusterMaxConcurrentMigrations ${clusterMax}) is spent by other drains; waiting for a migration to finish`,
      },
      now,
      pass.ev.metadata?.generation,
    ),
  };
  await record(pass, next);
  state.due = undefined;
  deps.budgetWaiters.add(ctx.key);
  return { requeueAfterMs: deps.slowPollMs };
}

/**
 * Slots of the cluster budget left for this drain's starts now, from the
 * ledger and the cached statuses (no request).
 */
function budgetLeftFor(
  pass: Pass,
  settings: LimitSettings,
  want: number,
): number {
  const { ctx, deps } = pass;
  const mine = inFlightOf(pass);
  const others = deps.ledger.othersInFlight(ctx.key, clusterInFlight(pass));
  return startsAllowed(
    clusterBudgetLeft(
      settings.spec.clusterMaxConcurrentMigrations,
      others + mine,
    ),
    mine,
    want,
    waitingLimits(pass, settings),
  );
}

/** This drain's migrations in flight: the ledger's, or its status's when higher. */
function inFlightOf(pass: Pass): number {
  return Math.max(
    pass.deps.ledger.get(pass.ctx.key),
    pass.status.inFlightCount ?? 0,
  );
}

/**
 * The limit in force for a drain: the settings, its Hypervisor's traits
 * (as cached) and its Eviction's own cap.
 */
function limitOfDrain(
  settings: LimitSettings,
  hypervisors: { get(name: string): Hypervisor | undefined },
  spec: { hypervisor: string; maxConcurrentMigrations?: number | undefined },
): ReturnType<typeof resolveLimit> {
  return resolveLimit(
    settings,
    hypervisors.get(spec.hypervisor)?.status?.traits,
    spec.maxConcurrentMigrations,
  );
}

/**
 * The limits in force of the drains that wait here for budget with
 * nothing in flight (budget.ts startsAllowed leaves slots for those with
 * lower limits than this drain would hold).
 */
function waitingLimits(pass: Pass, settings: LimitSettings): number[] {
  const { ctx, deps } = pass;
  const hypervisors = ctx.cache(HypervisorKind);
  return idleWaiters(
    ctx.key,
    (deps.allEvictions ?? ctx.cache(EvictionKind)).list(),
    (name) =>
      deps.budgetWaiters.standing(name) !== undefined &&
      deps.ledger.get(name) === 0,
  ).map((e) => limitOfDrain(settings, hypervisors, e.spec).limit);
}

/** What a pass depends on besides Nova: a change forces a full pass. */
function fingerprintOf(pass: Pass, policyVersion: string | undefined): string {
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
 * nothing it depends on changed, no start answer to act on and no budget
 * freed for starts the budget held back returns at once: no Nova call, and
 * nothing planned from old data. A drain in line for budget stays there,
 * in its place (woken, it waits again when another drain took the slot).
 */
function skipEarly(
  pass: Pass,
  fingerprint: string,
  settings: LimitSettings,
): ReconcileResult | undefined {
  const { ctx, deps, state } = pass;
  const due = state.due;
  if (due === undefined || state.woken || pass.retried) return undefined;
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

/**
 * Under a cluster budget, a pass claims the free slots it could fill (up
 * to its limit) before it looks at Nova, in the ledger; planning then
 * keeps what it starts and the report frees the rest, waking the drains
 * in line for them. So two passes never look at Nova for the same free
 * slot, the later one finding it spent (two Nova calls for nothing): it
 * waits in line without a look instead.
 */
function claimBeforeLooking(
  pass: Pass,
  settings: LimitSettings,
  limit: number,
): void {
  const { ctx, deps } = pass;
  const clusterMax = settings.spec.clusterMaxConcurrentMigrations;
  if (clusterMax === undefined) return;
  const mine = inFlightOf(pass);
  const left = budgetLeftFor(pass, settings, Math.max(0, limit - mine));
  deps.ledger.set(ctx.key, mine + Math.max(0, Math.min(left, limit - mine)));
  pass.claimedFrom = mine;
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
 * Plan: the pure planner on this pass's observation, the limit in force
 * now (policy, traits, the Eviction's own cap) and the start answers in
 * memory; the cluster budget is read and reserved in one synchronous step,
 * so no other drain's pass can spend the same slot.
 */
function planAndReserve(
  pass: Pass,
  seen: Observation,
  settings: LimitSettings,
  options: PlanOptions,
  resolved: ReturnType<typeof resolveLimit>,
): { plan: Plan; input: PlanInput } {
  const { ctx, deps, ev, host } = pass;
  const hold = traitsHold(host, pass.hypervisor) ?? pass.waveHold;
  const generation = ev.metadata?.generation;
  const input: PlanInput = {
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
    ...novaLiveLimit(pass, seen),
    copyStartedAtMs: noteCopyStarts(
      pass.state.copyStarted,
      seen.migrations,
      host,
      deps.clock.now(),
    ),
    ...(generation === undefined ? {} : { generation }),
    ...(hold === undefined ? {} : { holdStarts: hold }),
  };
  const cachedCounts = clusterInFlight(pass);
  let plan = planPass(input);
  deps.ledger.reserve(ctx.key, cachedCounts, (others) => {
    const clusterMax = settings.spec.clusterMaxConcurrentMigrations;
    if (clusterMax !== undefined) {
      const mine = plan.inFlightCount - plan.start.length;
      const budget = startsAllowed(
        clusterBudgetLeft(clusterMax, others + mine),
        mine,
        plan.start.length,
        waitingLimits(pass, settings),
      );
      if (budget < plan.start.length) {
        plan = planPass({ ...input, clusterBudgetLeft: budget });
        // held back by the budget: woken when a slot frees
        deps.budgetWaiters.add(ctx.key);
      }
    }
    return plan.inFlightCount;
  });
  return { plan, input };
}

/**
 * Nova's limit on the host's live migrations, learned from this look
 * (nova_limit.ts), as a plan input.
 */
function novaLiveLimit(
  pass: Pass,
  seen: Observation,
): { novaLiveLimit?: number } {
  const memo = learnNovaLimit(
    pass.state.novaLimit,
    observedNovaLimit(seen.migrations, pass.host),
    pass.deps.clock.now(),
    NOVA_LIMIT_TTL_MS * pass.rate,
  );
  pass.state.novaLimit = memo;
  return memo === undefined ? {} : { novaLiveLimit: memo.limit };
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
 * The longest wait (real ms) for the watch to deliver a pass's own intent
 * before the budget is confirmed by a list instead.
 */
const CAUGHT_UP_TIMEOUT_MS = 1000;

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
async function confirmAcrossProcesses(
  pass: Pass,
  reserved: { plan: Plan; input: PlanInput },
  settings: LimitSettings,
): Promise<Plan> {
  const { ctx, deps } = pass;
  const { plan, input } = reserved;
  const clusterMax = settings.spec.clusterMaxConcurrentMigrations;
  if (clusterMax === undefined || plan.start.length === 0) return plan;
  try {
    await record(pass, plan.next);
    const counts = inFlightByEviction(await evictionsAfterWrite(pass));
    const total = deps.ledger.othersInFlight(ctx.key, counts) +
      plan.inFlightCount;
    const over = total - clusterMax;
    if (over <= 0) return plan;
    const cut = planPass({
      ...input,
      clusterBudgetLeft: Math.max(0, plan.start.length - over),
    });
    deps.ledger.set(ctx.key, cut.inFlightCount);
    deps.budgetWaiters.add(ctx.key);
    pass.log.info(
      { over, starts: plan.start.length, kept: cut.start.length },
      "another process reserved from the cluster budget at the same time",
    );
    return cut;
  } catch (err) {
    deps.ledger.set(ctx.key, plan.inFlightCount - plan.start.length);
    await record(pass, pass.status).catch(() => {});
    throw new TemporaryError(
      `confirming the cluster budget failed: ${errText(err)}`,
      { delayMs: deps.pollIntervalMs },
    );
  }
}

/**
 * Every Eviction of the cluster as of a moment after this pass's last
 * status write: the unpartitioned cache once its watch delivered that
 * write, else a list from the API server.
 */
async function evictionsAfterWrite(pass: Pass): Promise<Eviction[]> {
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
 * Record: writes the status when it changed, as a merge patch guarded by
 * the resourceVersion this process knows (no GET first); on a 409 the
 * framework's read-modify-write takes over. The written object's
 * resourceVersion goes to the drain's memory, so an older cached status
 * can never come back. The starts' entries are in it, so a restart finds
 * them (only a crash within the write's milliseconds could lose one: Nova
 * then shows the migration, which the next process watches to its end but
 * never confirms, leaving a cold one to a person).
 */
async function record(pass: Pass, next: EvictionStatus): Promise<void> {
  const { ctx, deps, ev } = pass;
  if (statusEqual(ev.status, next)) return;
  const rv = ev.metadata?.resourceVersion;
  let written: Eviction | undefined;
  if (rv !== undefined) {
    const patch: Record<string, unknown> = { ...next };
    for (const k of Object.keys(ev.status ?? {})) {
      if (!(k in next)) patch[k] = null;
    }
    try {
      written = await ctx.client.patch<Eviction>(
        EvictionKind,
        ctx.key,
        { metadata: { resourceVersion: rv }, status: patch },
        "merge",
        "status",
      );
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 409)) throw err;
    }
  }
  written ??= await ctx.updateStatus(() => next);
  const writtenRv = written.metadata?.resourceVersion;
  if (writtenRv !== undefined) deps.memory.remember(ctx.key, writtenRv, next);
  pass.ev = {
    ...ev,
    metadata: { ...ev.metadata, resourceVersion: writtenRv },
    status: next,
  };
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
  if (pass.retried) {
    try {
      await ctx.client.patch(EvictionKind, ctx.key, {
        metadata: { annotations: { [RETRY_ANNOTATION]: null } },
      });
    } catch (err) {
      pass.log.warn(
        { err: errText(err) },
        "removing the retry annotation failed",
      );
    }
  }
}

/** The pacing model's view of this pass (its records, the drain's memory). */
function paceView(pass: Pass, plan: Plan): PaceView {
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
function learn(pass: Pass, plan: Plan, seen: Observation): void {
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
function requeue(
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
    return { requeueAfterMs: deps.finishedCheckMs };
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
 * Wakes as many drains waiting for budget as there are free slots now
 * (after this pass's starts): a slot this drain freed or left unused goes
 * to a waiting drain at once, not at its slow check.
 */
function wakeForBudgetLeft(pass: Pass): void {
  const { ctx, deps } = pass;
  if (deps.budgetWaiters.size === 0) return;
  const policy = ctx.cache(EvictionPolicyKind).get(POLICY_NAME);
  const clusterMax = effectiveSettings(policy?.spec, deps.flagSettings).spec
    .clusterMaxConcurrentMigrations;
  if (clusterMax === undefined) return;
  const inFlight = deps.ledger.othersInFlight(ctx.key, clusterInFlight(pass)) +
    deps.ledger.get(ctx.key);
  const left = clusterBudgetLeft(clusterMax, inFlight);
  if (left > 0) {
    deps.budgetWaiters.wake((k) => ctx.enqueue(EvictionKind, k), left);
  }
}

/** Records an Event without holding the pass (errors are logged). */
function emit(pass: Pass, e: PendingEvent): void {
  pass.ctx.event(e.type, e.reason, e.message).catch((err: unknown) =>
    pass.log.warn({ err: errText(err), reason: e.reason }, "event failed")
  );
}

/** Enqueues the other Evictions of the same hypervisor (one waits for this one). */
function wakeSiblings(ctx: HandlerContext<Eviction>, host: string): void {
  for (const e of ctx.cache(EvictionKind).list()) {
    const name = e.metadata?.name;
    if (name === undefined || name === ctx.key) continue;
    if (e.spec.hypervisor === host) ctx.enqueue(EvictionKind, name);
  }
}
