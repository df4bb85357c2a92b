/**
 * The shape of a pass: what its phases share and return, and where a Step is applied and the status written.
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
  now(): number;
  /** Clock ms per real ms (default 1): a simulator's scaled clock runs faster. */
  rate?: number;
}

/** What a pass needs; durations in real ms (controller.ts documents each). */
export interface EvictionPassDeps {
  nova: NovaClient;
  /** Nova's clock minus the controller's (ms), once learned and steady (nova_clock.ts). */
  novaClockOffsetMs: () => number;
  flagSettings: LimitSettings;
  pollIntervalMs: number;
  maxPollMs: number;
  slowPollMs: number;
  finishedCheckMs: number;
  relistMs: number;
  settleMs: number;
  progressIntervalMs?: number;
  /** Overrides of the planner's options (the policy's timeout wins). */
  planOptions: Partial<PlanOptions>;
  clock: EvictionClock;
  memory: DrainMemory;
  metrics: EvictionMetrics;
  actConcurrency: number;
  /** Every Eviction of the cloud; `caughtUp` spares the budget's check a list. */
  allEvictions?: {
    list(): Eviction[];
    caughtUp?(resourceVersion: string, timeoutMs: number): Promise<boolean>;
  };
  waveSettleMs: number;
  /** Without it there is no capacity check. */
  capacity?: CapacityDeps;
}

/** The drain a pass plans for, as its convergence policy needs it. */
export interface DrainOf {
  /** The Hypervisor's status.traits. */
  traits: readonly string[] | undefined;
  /** The Eviction's spec.convergence. */
  convergence: ConvergenceSpec | undefined;
}

/**
 * The planner options: defaults, overrides, the policy's; with `drain`, its resolved convergence
 * (an override's stands only while neither the settings nor the Eviction set any).
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

/** {@linkcode planOptionsFor} a drain's pass, its Hypervisor as cached. */
export function passPlanOptions(
  pass: Pick<Pass, "deps" | "ev" | "hypervisor">,
  settings: LimitSettings,
): PlanOptions {
  return planOptionsFor(pass.deps.planOptions, settings, {
    traits: pass.hypervisor?.status?.traits,
    convergence: pass.ev.spec.convergence,
  });
}

/** What a phase decided; nothing else changes a pass or its drain's record. */
export interface Step {
  /** Absent: unchanged. */
  status?: EvictionStatus;
  /** Set when the phase ends the pass here. */
  end?: NextLook | undefined;
  /** Why this pass starts nothing: its wave is not yet disabled. */
  hold?: string;
  /** A retry annotation's value the phase applied (removed after the write). */
  retry?: string;
  /** The ledger's count before the pass claimed budget. */
  claimedFrom?: number;
  /** What must follow the pass's status write (waking the wave's peers). */
  after?: () => void;
  record?: RecordChange;
}

/** The wait until a pass's next look (phase_pace.ts `requeue` makes it real ms). */
export interface NextLook {
  /** Controller-clock ms from now. */
  inMs: number;
}

/** A pass's durations on the controller's clock. */
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

const WAVE_GATHER_MS = 1_000;

/**
 * The deps' durations on the controller's clock, which runs `rate` times as fast.
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

/** Reads the pass, returns what it decided. */
export type Phase = (pass: Pass) => Step | Promise<Step>;

/** The pass the phases share, read-only to them. */
export interface Pass {
  readonly ctx: HandlerContext<Eviction>;
  readonly deps: EvictionPassDeps;
  /** With the freshest status this process knows. */
  readonly ev: Eviction;
  readonly host: string;
  readonly log: Logger;
  readonly state: DrainState;
  /** The status so far. */
  readonly status: EvictionStatus;
  readonly hypervisor: Hypervisor | undefined;
  /** Clock ms per real ms. */
  readonly rate: number;
  readonly times: PassTimes;
  readonly retryValue?: string;
  readonly claimedFrom?: number;
  readonly waveHold?: string;
  readonly afterRecord: readonly (() => void)[];
}

/** The pass as reconcile.ts holds it: only {@linkcode apply} and {@linkcode record} change it. */
export type MutablePass = { -readonly [K in keyof Pass]: Pass[K] };

/** Applies a Step to the pass and its drain's record; returns the Step's end. */
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

/** Writes the status when it changed, with Drained: at a pass's end, and before starts (the intent). */
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

/** The limit in force: the settings, the Hypervisor's traits (as cached) and the Eviction's cap. */
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

/** The wait after a look at a finished drain: as long as it has been finished (doubling), within bounds. */
export function finishedLookMs(
  pass: Pass,
  finishedAt: string | undefined,
  atMs = pass.deps.clock.now(),
): number {
  const { finishedCheckMs, pollMs } = pass.times;
  // an informer that watches the host wakes the drain as an arrival begins
  if (pass.deps.memory.informer.watching(pass.ctx.key)) return finishedCheckMs;
  const since = Date.parse(finishedAt ?? "");
  const finishedForMs = Number.isNaN(since)
    ? finishedCheckMs
    : Math.max(0, atMs - since);
  return Math.min(finishedCheckMs, Math.max(pollMs, finishedForMs));
}
