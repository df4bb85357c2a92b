/**
 * What the phases of one drain pass share: its dependencies, the pass's
 * own state, what a phase returns ({@linkcode Step}) and the one status
 * write ({@linkcode record}). A phase reads the pass and returns a Step;
 * the pass applies it (reconcile.ts `apply`) and writes the status once,
 * at its end, the intent write before starts (pass_budget.ts writeIntent)
 * the one exception.
 *
 * @module
 */

import { errText } from "../../framework/errors.ts";
import type { HandlerContext } from "../../framework/handler.ts";
import type { Logger } from "../../framework/logger.ts";
import { type LimitSettings, resolveLimit } from "../../limits/resolve.ts";
import type { Eviction, EvictionStatus, Hypervisor } from "../../models/mod.ts";
import { EvictionKind } from "../kinds.ts";
import type { PendingEvent } from "./report.ts";
import type { DrainMemory, DrainState } from "./memory.ts";
import type { EvictionMetrics } from "./metrics.ts";
import type { NovaClient } from "../../openstack/mod.ts";
import { DEFAULT_PLAN_OPTIONS, type PlanOptions } from "./observation.ts";
import { statusEqual } from "./status_equal.ts";
import { withDrained } from "./conditions.ts";
import { inFlightByEviction } from "./budget.ts";
import type { CapacityDeps } from "../../capacity/gate.ts";

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
  /** Nova (its calls counted by the client, openstack/nova_metrics.ts). */
  nova: NovaClient;
  /** Nova's clock minus the controller's (ms), once learned and steady (nova_clock.ts). */
  novaClockOffsetMs: () => number;
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
  /** The oldest snapshot a pass may plan from before a direct look (real ms). */
  relistMs: number;
  /**
   * How long consecutive fresh looks must find the host empty before the
   * drain is declared done (real ms, `--drain-settle`).
   */
  settleMs: number;
  /** Overrides of the planner's options (the policy's timeout wins). */
  planOptions: Partial<PlanOptions>;
  /** Time source. */
  clock: EvictionClock;
  /**
   * Per-drain memory, with the ledger of migrations in flight per Eviction
   * and the drains waiting for budget (one forget).
   */
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
    abortStuckMigrations: settings.spec.abortStuckMigrations,
    ...(timeout === undefined ? {} : { migrationTimeoutSeconds: timeout }),
  };
}

/**
 * What a phase decided, for the pass to apply (reconcile.ts `apply`, the
 * one place that changes a pass): a phase reads the pass and returns this.
 */
export interface Step {
  /** The status the phase leaves; absent: unchanged. */
  status?: EvictionStatus;
  /** The wait until the next look, when the phase ends the pass here. */
  end?: NextLook;
  /** Why this pass starts nothing: its wave is not yet disabled. */
  hold?: string;
  /** A retry annotation's value the phase applied (removed after the write). */
  retry?: string;
  /** What must follow the pass's status write (waking the wave's peers). */
  after?: () => void;
}

/**
 * Why a pass ends, as the wait until its next look on the controller's
 * clock; pass_pace.ts `requeue` turns it into the framework's real ms.
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
  };
  return Object.fromEntries(
    Object.entries(real).map(([k, ms]) => [k, ms * rate]),
  ) as unknown as PassTimes;
}

/**
 * What the phases of one pass share, read-only to them: each returns a
 * {@linkcode Step} and the pass applies it; only the status write
 * ({@linkcode record}) updates `ev`.
 */
export interface Pass {
  readonly ctx: HandlerContext<Eviction>;
  readonly deps: EvictionPassDeps;
  /** The Eviction, with the freshest status this process knows. */
  ev: Eviction;
  readonly host: string;
  readonly log: Logger;
  readonly state: DrainState;
  /** The status so far (the preflight and a retry request change it). */
  readonly status: EvictionStatus;
  readonly hypervisor: Hypervisor | undefined;
  /** Clock ms per real ms. */
  readonly rate: number;
  /** The deps' durations on the controller's clock ({@linkcode passTimes}). */
  readonly times: PassTimes;
  /** The retry annotation's value this pass applied (removed after the write). */
  readonly retryValue?: string;
  /** The ledger's count before this pass claimed budget, if it did. */
  readonly claimedFrom?: number;
  /** Why this pass starts nothing: its wave is not yet disabled. */
  readonly waveHold?: string;
  /**
   * What must follow the pass's status write (waking drains that read it,
   * e.g. the wave's peers waiting for this host to be disabled).
   */
  readonly afterRecord: readonly (() => void)[];
}

/**
 * Record: writes the status when it changed, through the framework
 * (`ctx.updateStatus`: guarded by the resourceVersion this process knows,
 * no GET first; a 409 re-reads). The framework remembers the written
 * object, so an older cached status can never come back (read-your-writes:
 * `ctx.object`, `ctx.latest`). The only writer of an Eviction's status in a pass:
 * once at its end (reconcile.ts), and before a pass issues starts, with
 * them in it (pass_budget.ts writeIntent), so a restart or a new leader
 * finds every start of ours. The Drained condition is set here, from the
 * status written.
 */
export async function record(
  pass: Pass,
  status: EvictionStatus,
): Promise<void> {
  const { ctx, ev } = pass;
  // Drained is read off the rest: every write carries it (conditions.ts).
  const next = withDrained(status, new Date(pass.deps.clock.now()));
  if (statusEqual(ev.status, next)) return;
  const written = await ctx.updateStatus(() => next);
  pass.ev = {
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
 * The wait (real ms) after a look at a finished drain, taken at `atMs`
 * (default now): as long as the drain has been finished, between the
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
