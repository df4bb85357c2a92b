/**
 * The shape of a pass: what its phases share ({@linkcode Pass}, read-only
 * to them), what each returns ({@linkcode Step}), the one place a Step is
 * applied ({@linkcode apply}) and the one status write ({@linkcode record}).
 *
 * @module
 */

import { errText } from "../../framework/errors.ts";
import type { HandlerContext } from "../../framework/handler.ts";
import type { Logger } from "../../framework/logger.ts";
import {
  drainConvergence,
  type LimitSettings,
  resolveLimit,
} from "../../limits/resolve.ts";
import type { ConvergenceSpec } from "../../limits/convergence.ts";
import type { Eviction, EvictionStatus, Hypervisor } from "../../models/mod.ts";
import { EvictionKind, HypervisorKind } from "../kinds.ts";
import type { PendingEvent } from "./report.ts";
import {
  changeRecord,
  type DrainMemory,
  type DrainState,
  type RecordChange,
} from "./memory.ts";
import type { EvictionMetrics } from "./metrics.ts";
import type { NovaClient } from "../../openstack/mod.ts";
import { DEFAULT_PLAN_OPTIONS, type PlanOptions } from "./plan_options.ts";
import { statusEqual } from "./status_equal.ts";
import { withDrained } from "./conditions.ts";
import { inFlightByEviction } from "./budget_share.ts";
import type { CapacityDeps } from "../../capacity/gate.ts";
import { DEFAULT_PROGRESS_INTERVAL_MS } from "../../openstack/informer/progress.ts";

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

/**
 * What a pass needs; built once by `registerEvictionController` (the
 * durations in real ms; controller.ts documents each).
 */
export interface EvictionPassDeps {
  /** Nova (its calls counted by the client, openstack/nova_metrics.ts). */
  nova: NovaClient;
  /** Nova's clock minus the controller's (ms), once learned and steady (nova_clock.ts). */
  novaClockOffsetMs: () => number;
  /** Limit settings from the flags (used without an EvictionPolicy). */
  flagSettings: LimitSettings;
  pollIntervalMs: number;
  maxPollMs: number;
  slowPollMs: number;
  finishedCheckMs: number;
  relistMs: number;
  settleMs: number;
  /** A live copy's progress is read at most once in this (real ms; default 30 s, openstack/informer/progress.ts). */
  progressIntervalMs?: number;
  /** Overrides of the planner's options (the policy's timeout wins). */
  planOptions: Partial<PlanOptions>;
  clock: EvictionClock;
  memory: DrainMemory;
  metrics: EvictionMetrics;
  /** Nova lookups of one pass at once. */
  actConcurrency: number;
  /**
   * Every Eviction of the cloud, whatever this process's label selector;
   * with `caughtUp`, the budget's cross-process check waits for the watch
   * to deliver the pass's intent instead of listing.
   */
  allEvictions?: {
    list(): Eviction[];
    caughtUp?(resourceVersion: string, timeoutMs: number): Promise<boolean>;
  };
  waveSettleMs: number;
  /** Placement for the capacity check; without it there is none. */
  capacity?: CapacityDeps;
}

/** The drain a pass plans for, as its convergence policy needs it. */
export interface DrainOf {
  /** The Hypervisor's traits (status.traits); undefined when unknown. */
  traits: readonly string[] | undefined;
  /** The Eviction's own spec.convergence. */
  convergence: ConvergenceSpec | undefined;
}

/**
 * The planner options of a pass: defaults, the deps' overrides, the
 * policy's. With `drain`, `convergence` is the drain's resolved policy
 * (limits/resolve.ts `drainConvergence`); an override's stands only while
 * neither the settings nor the Eviction set any `convergence`.
 */
export function planOptionsFor(
  overrides: Partial<PlanOptions>,
  settings: LimitSettings,
  drain?: DrainOf,
): PlanOptions {
  const timeout = settings.spec.migrationTimeoutSeconds;
  const own = drain !== undefined && (drain.convergence !== undefined ||
    settings.spec.convergence !== undefined ||
    (settings.spec.traitLimits ?? []).some((t) => t.convergence !== undefined));
  const convergence = drain === undefined ||
      (!own && overrides.convergence !== undefined)
    ? overrides.convergence
    : drainConvergence(settings, drain.traits, drain.convergence);
  return {
    ...DEFAULT_PLAN_OPTIONS,
    ...overrides,
    abortStuckMigrations: settings.spec.abortStuckMigrations,
    ...(timeout === undefined ? {} : { migrationTimeoutSeconds: timeout }),
    ...(convergence === undefined ? {} : { convergence }),
  };
}

/**
 * The planner options of a drain's pass: {@linkcode planOptionsFor} with
 * its Hypervisor's traits (as cached) and its Eviction's convergence.
 */
export function passPlanOptions(
  pass: Pick<Pass, "deps" | "ev" | "hypervisor">,
  settings: LimitSettings,
): PlanOptions {
  return planOptionsFor(pass.deps.planOptions, settings, {
    traits: pass.hypervisor?.status?.traits,
    convergence: pass.ev.spec.convergence,
  });
}

/**
 * What a phase decided, for {@linkcode apply}: a phase reads the pass and
 * returns this; nothing else changes a pass or its drain's record.
 */
export interface Step {
  /** The status the phase leaves; absent: unchanged. */
  status?: EvictionStatus;
  /** The wait until the next look, when the phase ends the pass here. */
  end?: NextLook | undefined;
  /** Why this pass starts nothing: its wave is not yet disabled. */
  hold?: string;
  /** A retry annotation's value the phase applied (removed after the write). */
  retry?: string;
  /** The ledger's count before the pass claimed budget. */
  claimedFrom?: number;
  /** What must follow the pass's status write (waking the wave's peers). */
  after?: () => void;
  /** The changes of the drain's record (memory.ts). */
  record?: RecordChange;
}

/**
 * Why a pass ends, as the wait until its next look on the controller's
 * clock; phase_pace.ts `requeue` turns it into the framework's real ms.
 */
export interface NextLook {
  /** Controller-clock ms from now. */
  inMs: number;
}

/** A pass's durations on the controller's clock ({@linkcode passTimes}). */
export interface PassTimes {
  pollMs: number;
  maxPollMs: number;
  slowPollMs: number;
  finishedCheckMs: number;
  relistMs: number;
  settleMs: number;
  waveSettleMs: number;
  /** How long a new drain waits for the rest of its wave to appear. */
  waveGatherMs: number;
  /** No live copy's progress is read twice within this. */
  progressMs: number;
}

/** A new drain's wait for the rest of its wave to appear (real ms). */
const WAVE_GATHER_MS = 1_000;

/**
 * The deps' durations (real ms) on the controller's clock, which runs
 * `rate` times as fast (a simulator's time scale): the one conversion into
 * it; the pass compares them with that clock only.
 *
 * @example
 * ```ts
 * import { passTimes } from "./pass.ts";
 * const deps = { pollIntervalMs: 2000, maxPollMs: 60_000, slowPollMs: 20_000,
 *   finishedCheckMs: 120_000, relistMs: 60_000, settleMs: 6000, waveSettleMs: 15_000 };
 * console.assert(passTimes(deps, 10).pollMs === 20_000);
 * ```
 */
export function passTimes(
  deps: Pick<
    EvictionPassDeps,
    | "pollIntervalMs"
    | "maxPollMs"
    | "slowPollMs"
    | "finishedCheckMs"
    | "relistMs"
    | "settleMs"
    | "waveSettleMs"
    | "progressIntervalMs"
  >,
  rate: number,
): PassTimes {
  const real: PassTimes = {
    pollMs: deps.pollIntervalMs,
    maxPollMs: deps.maxPollMs,
    slowPollMs: deps.slowPollMs,
    finishedCheckMs: deps.finishedCheckMs,
    relistMs: deps.relistMs,
    settleMs: deps.settleMs,
    waveSettleMs: deps.waveSettleMs,
    waveGatherMs: WAVE_GATHER_MS,
    progressMs: deps.progressIntervalMs ?? DEFAULT_PROGRESS_INTERVAL_MS,
  };
  return Object.fromEntries(
    Object.entries(real).map(([k, ms]) => [k, ms * rate]),
  ) as unknown as PassTimes;
}

/** A phase: reads the pass, returns what it decided. */
export type Phase = (pass: Pass) => Step | Promise<Step>;

/** The pass the phases share, read-only to them. */
export interface Pass {
  readonly ctx: HandlerContext<Eviction>;
  readonly deps: EvictionPassDeps;
  /** The Eviction, with the freshest status this process knows. */
  readonly ev: Eviction;
  readonly host: string;
  readonly log: Logger;
  readonly state: DrainState;
  /** The status so far. */
  readonly status: EvictionStatus;
  readonly hypervisor: Hypervisor | undefined;
  /** Clock ms per real ms. */
  readonly rate: number;
  /** The deps' durations on the controller's clock ({@linkcode passTimes}). */
  readonly times: PassTimes;
  readonly retryValue?: string;
  readonly claimedFrom?: number;
  readonly waveHold?: string;
  readonly afterRecord: readonly (() => void)[];
}

/** The pass as reconcile.ts holds it: only {@linkcode apply} and {@linkcode record} change it. */
export type MutablePass = { -readonly [K in keyof Pass]: Pass[K] };

/**
 * Applies a Step to the pass and its drain's record: the one place a
 * pass changes (besides its status write's resourceVersion). Returns the
 * pass's result when the Step ends it.
 */
export function apply(
  pass: MutablePass,
  step: Step,
): NextLook | undefined {
  if (step.status !== undefined) pass.status = step.status;
  if (step.hold !== undefined) pass.waveHold = step.hold;
  if (step.retry !== undefined) pass.retryValue = step.retry;
  if (step.claimedFrom !== undefined) pass.claimedFrom = step.claimedFrom;
  if (step.after !== undefined) {
    pass.afterRecord = [...pass.afterRecord, step.after];
  }
  if (step.record !== undefined) changeRecord(pass.state, step.record);
  return step.end;
}

/** A new pass over `ev`: its drain record, status and Hypervisor as cached. */
export function newPass(
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

/** Runs `phases` in order, each Step applied; the result of the first that ends the pass. */
export async function runSteps(
  pass: MutablePass,
  phases: readonly Phase[],
): Promise<NextLook | undefined> {
  for (const phase of phases) {
    const end = apply(pass, await phase(pass));
    if (end !== undefined) return end;
  }
  return undefined;
}

/**
 * Record: writes the status when it changed (`ctx.updateStatus`, guarded
 * by the resourceVersion this process knows; the framework keeps what was
 * written, so an older cached status never comes back), with the Drained
 * condition read off the rest. Called at a pass's end and for the intent
 * before starts (phase budget), so a new leader finds every start of ours.
 */
export async function record(
  pass: Pass,
  status: EvictionStatus,
): Promise<void> {
  const { ctx, ev } = pass;
  const next = withDrained(status, new Date(pass.deps.clock.now()));
  if (statusEqual(ev.status, next)) return;
  const written = await ctx.updateStatus(() => next);
  (pass as MutablePass).ev = {
    ...ev,
    metadata: {
      ...ev.metadata,
      resourceVersion: written.metadata?.resourceVersion,
    },
    status: next,
  };
}

/** Records an Event without holding the pass (errors are logged). */
export function emit(pass: Pass, e: PendingEvent): void {
  pass.ctx.event(
    e.type,
    e.reason,
    e.message,
    e.series === true ? { series: true } : undefined,
  ).catch((err: unknown) =>
    pass.log.warn({ err: errText(err), reason: e.reason }, "event failed")
  );
}

/**
 * The limit in force for a drain: the settings, its Hypervisor's traits
 * (as cached) and its Eviction's own cap.
 */
export function limitOfDrain(
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

/** Enqueues the other Evictions of the same hypervisor (one waits for this one). */
export function wakeSiblings(
  ctx: HandlerContext<Eviction>,
  host: string,
): void {
  for (const e of ctx.cache(EvictionKind).list()) {
    const name = e.metadata?.name;
    if (name === undefined || name === ctx.key) continue;
    if (e.spec.hypervisor === host) ctx.enqueue(EvictionKind, name);
  }
}

/** Migrations in flight per Eviction in the whole cluster, as cached. */
export function clusterInFlight(pass: Pass): Map<string, number> {
  const all = pass.deps.allEvictions ?? pass.ctx.cache(EvictionKind);
  return inFlightByEviction(all.list());
}

/**
 * The wait (controller clock) after a look at a finished drain, taken at
 * `atMs` (default now): as long as the drain has been finished, between the
 * poll interval and the slow finished check, so the looks double in
 * spacing (the first ones a poll interval apart); the slow finished check
 * while the informer watches the host.
 */
export function finishedLookMs(
  pass: Pass,
  finishedAt: string | undefined,
  atMs = pass.deps.clock.now(),
): number {
  const { finishedCheckMs, pollMs } = pass.times;
  // An informer that watches the host wakes the drain as an arrival
  // begins: the looks need not come sooner than the slow finished check.
  if (pass.deps.memory.informer.watching(pass.ctx.key)) return finishedCheckMs;
  const since = Date.parse(finishedAt ?? "");
  const finishedForMs = Number.isNaN(since)
    ? finishedCheckMs
    : Math.max(0, atMs - since);
  return Math.min(finishedCheckMs, Math.max(pollMs, finishedForMs));
}
