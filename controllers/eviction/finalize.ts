/**
 * The finalizer of an Eviction: the drain's last passes, at limit 0. The
 * drain's look (the informer's, observe.ts) and planner (plan.ts) run with
 * no starts and no aborts; while the plan holds migrations in flight, the
 * Eviction keeps its finalizer and its `status.inFlightCount` (budget.ts
 * counts it), our resizes are confirmed as the drain confirms them (act.ts,
 * once.ts), and with `--abort-in-flight` our live migrations are aborted
 * (abort_in_flight.ts). The wait is bounded: a record without progress
 * for `stalledAfterMs` stops counting (settle.ts), and after
 * `giveUpAfterMs` the finalizer stops waiting (a Warning Event and
 * `evictor_eviction_finalizer_gave_up_total`). Then the compute service is
 * re-enabled unless gates.ts keeps it disabled. Waiting is no failure; a
 * failure retries after at most `maxPollMs`.
 *
 * @module
 */

import { backoffDelay } from "../../framework/backoff.ts";
import type {
  FinalizeResult,
  HandlerContext,
} from "../../framework/handler.ts";
import type { Eviction, EvictionStatus } from "../../models/mod.ts";
import { isDeleting } from "../../framework/kind.ts";
import {
  errText,
  PermanentError,
  TemporaryError,
} from "../../framework/errors.ts";
import { EvictionKind, HypervisorKind } from "../kinds.ts";
import { keepDisabledBecause } from "./gates.ts";
import { keepLesson } from "./keep_lesson.ts";
import { type EvictionPassDeps, planOptionsFor } from "./pass.ts";
import type { ActionNote } from "./once.ts";
import { listSome } from "./event_notes.ts";
import { describeSettling, settleLook } from "./settle.ts";
import {
  abortRequested,
  type CancelAbort,
  cancelAborts,
} from "./abort_in_flight.ts";
import { observe } from "./observe.ts";
import { type Plan, type PlanInput, planPass } from "./plan.ts";
import { actOnPlan } from "./act.ts";
import type { PendingEvent } from "./report.ts";

/** The finalizer's bounds (drain clock ms), built once by the controller. */
export interface FinalizerDeps {
  /** A record without progress this long stops counting. */
  stalledAfterMs: number;
  /** The finalizer stops waiting after this long. */
  giveUpAfterMs: number;
}

/** Default bounds: 15 minutes without progress, one hour in all. */
export const DEFAULT_FINALIZER_BOUNDS: Readonly<FinalizerDeps> = Object.freeze(
  { stalledAfterMs: 15 * 60_000, giveUpAfterMs: 60 * 60_000 },
);

/**
 * Finalizer deps with the default bounds, checked.
 *
 * @example
 * ```ts
 * import { finalizerDeps } from "./finalize.ts";
 * console.assert(finalizerDeps({ giveUpAfterMs: 1000 }).giveUpAfterMs === 1000);
 * ```
 */
export function finalizerDeps(
  bounds: Partial<FinalizerDeps> = {},
): FinalizerDeps {
  const b = { ...DEFAULT_FINALIZER_BOUNDS, ...bounds };
  for (const [name, v] of Object.entries(b)) {
    if (!Number.isFinite(v) || v <= 0) {
      throw new RangeError(`${name} must be a number > 0, got ${v}`);
    }
  }
  return b;
}

type Ctx = HandlerContext<Eviction> & { object: Eviction };

/**
 * Runs the finalizer of one Eviction: a requeue while migrations from the
 * host settle, nothing once the service is handled. A failure is retried
 * after a delay doubling from the poll interval to `maxPollMs`.
 *
 * @example
 * ```ts ignore
 * operator.finalize(EvictionKind, (ctx) => finalizeEviction(ctx, deps, fin));
 * ```
 */
export async function finalizeEviction(
  ctx: Ctx,
  deps: EvictionPassDeps,
  fin: FinalizerDeps,
): Promise<FinalizeResult | void> {
  const { key, object } = ctx;
  const host = object.spec.hypervisor;
  const state = deps.memory.of(key);
  try {
    const waiting = await waitForSettled(ctx, deps, fin);
    if (waiting !== undefined) {
      state.settle.failures = 0;
      return waiting;
    }
    await restoreService(ctx, deps);
    // Only now: a re-enable that keeps failing backs off as a list does.
    state.settle.failures = 0;
    // The last chance to keep what the drain learned.
    await keepLesson({
      client: ctx.client,
      eviction: key,
      host,
      status: object.status ?? {},
      marks: state.marks,
      hypervisor: ctx.cache(HypervisorKind).get(host),
      log: ctx.logger,
    });
  } catch (err) {
    if (err instanceof PermanentError) throw err;
    const failures = ++state.settle.failures;
    throw new TemporaryError(
      `finalizer of Eviction ${key} failed: ${errText(err)}`,
      {
        delayMs: backoffDelay(
          failures - 1,
          deps.pollIntervalMs,
          deps.maxPollMs,
        ),
        cause: err,
      },
    );
  }
  // Its budget and its host are free: out of the budget line before the
  // others are woken, so that no wake for a freed slot goes to it. Its
  // memory goes with the Eviction (DrainMemory.forget).
  deps.memory.budgetWaiters.delete(key);
  deps.memory.budgetWaiters.wake((k) => ctx.enqueue(EvictionKind, k));
  deps.metrics.inFlight.remove({ hypervisor: host });
  for (const name of othersOf(ctx)) ctx.enqueue(EvictionKind, name);
}

async function restoreService(ctx: Ctx, deps: EvictionPassDeps): Promise<void> {
  const host = ctx.object.spec.hypervisor;
  const log = ctx.logger.child({ hypervisor: host });
  const service = await deps.nova.findComputeService(host, ctx.signal);
  if (service === undefined || service.status !== "disabled") return;
  const what = `compute service ${service.id} of host ${host}`;
  const why = keepDisabledBecause(
    ctx.cache(HypervisorKind).get(host),
    service.disabledReason,
    othersOf(ctx).length > 0,
  );
  if (why !== undefined) {
    log.info({ serviceId: service.id, why }, "compute service left disabled");
    const message = `${what} left disabled: ${why}`;
    return await ctx.event("Normal", "HypervisorLeftDisabled", message);
  }
  await deps.nova.setComputeServiceStatus(
    service.id,
    true,
    undefined,
    ctx.signal,
  )
    .catch((err: unknown) => {
      throw new Error(`re-enabling ${what} failed: ${errText(err)}`, {
        cause: err,
      });
    });
  log.info({ serviceId: service.id }, "compute service re-enabled");
  await ctx.event("Normal", "HypervisorReEnabled", `${what} re-enabled`);
}

/** The other Evictions of the host that stand (not being deleted). */
function othersOf(ctx: Ctx): string[] {
  const host = ctx.object.spec.hypervisor;
  return ctx.cache(EvictionKind).list((e) =>
    e.metadata?.name !== ctx.key && e.spec.hypervisor === host &&
    !isDeleting(e)
  ).flatMap((e) => e.metadata?.name ?? []);
}

/**
 * The drain's plan for a deleted Eviction: the same planner at limit 0,
 * so it starts and aborts nothing; what it holds in flight is what the
 * deletion waits for, and its confirms are the drain's.
 *
 * @example
 * ```ts
 * import { deletedPlan } from "./finalize.ts";
 * import { DEFAULT_PLAN_OPTIONS } from "./observation.ts";
 * const plan = deletedPlan({
 *   host: "h",
 *   servers: [{ id: "a", status: "ACTIVE", host: "h", taskState: null, flavor: { ramMb: 1 } }],
 *   migrations: [], departed: [], status: undefined,
 *   now: new Date("2026-01-01T00:00:00Z"), options: DEFAULT_PLAN_OPTIONS,
 * });
 * console.assert(plan.start.length === 0 && plan.inFlightCount === 0);
 * ```
 */
export function deletedPlan(
  input: Omit<PlanInput, "limit" | "limitSource" | "clusterBudgetLeft">,
): Plan {
  return planPass({
    ...input,
    limit: 0,
    limitSource: input.status?.limitSource ?? "policy",
    clusterBudgetLeft: 0,
    holdStarts: "the Eviction is being deleted",
  });
}

/**
 * Looks at the host as the drain does and plans at limit 0: confirms what
 * the plan confirms, aborts ours when the cancel asked, writes the count
 * still settling to `status.inFlightCount` when it changed and to the
 * ledger. A requeue while any counts and the bound is not reached.
 */
async function waitForSettled(
  ctx: Ctx,
  deps: EvictionPassDeps,
  fin: FinalizerDeps,
): Promise<FinalizeResult | undefined> {
  const { key, signal, object: ev } = ctx;
  const host = ev.spec.hypervisor;
  const status: EvictionStatus = ev.status ?? {};
  const before = status.inFlightCount ?? 0;
  if (Math.max(before, deps.memory.ledger.get(key)) === 0) return undefined;
  const state = deps.memory.of(key);
  const log = ctx.logger.child({ hypervisor: host });
  const nowMs = deps.clock.now();
  const since = state.settle.waitingSinceMs ??= nowMs;
  const options = {
    ...planOptionsFor(deps.planOptions, deps.flagSettings),
    novaClockOffsetMs: deps.nova.novaClockOffsetMs(),
  };
  const seen = await deps.memory.informer.look(key, host, async () => {
    const lookedAtMs = deps.clock.now();
    const fromMs = (Date.parse(status.startedAt ?? "") || lookedAtMs) -
      options.clockSkewMs + options.novaClockOffsetMs;
    const listed = await observe(
      deps.nova,
      host,
      status,
      new Date(fromMs),
      state.ram,
      deps.actConcurrency,
      log,
      signal,
    );
    return { ...listed, lookedAtMs };
  });
  const { starts, confirms, aborts } = state;
  const plan = deletedPlan({
    host,
    ...seen,
    status,
    now: new Date(nowMs),
    options,
    starts,
    confirms,
    aborts,
  });
  const emit = (e: PendingEvent) =>
    ctx.event(e.type, e.reason, e.message).catch((err: unknown) =>
      log.warn({ err: errText(err), reason: e.reason }, "event failed")
    );
  const wake = () => ctx.enqueue(EvictionKind, key);
  const now = () => deps.clock.now();
  actOnPlan(plan, state, deps, { emit, wake, log, now }, nowMs, signal);
  const inFlight = plan.next.inFlight ?? [];
  if (abortRequested(ev)) {
    const lookedAtMs = seen.lookedAtMs ?? nowMs;
    const { migrations } = seen;
    await abortOurs(
      ctx,
      deps,
      cancelAborts({ host, migrations, inFlight, aborts, lookedAtMs }),
    );
  }
  const look = settleLook({
    host,
    inFlight,
    migrations: seen.migrations,
    marks: state.settle.marks,
    nowMs,
    stalledAfterMs: fin.stalledAfterMs,
  });
  state.settle.marks = look.marks;
  const running = look.counted.length;
  if (running !== before) {
    // the finalizer's own write (no pass runs on a deleted Eviction)
    await ctx.updateStatus((s) => ({ ...s, inFlightCount: running }));
  }
  const waitedMs = nowMs - since;
  const gaveUp = running > 0 && waitedMs >= fin.giveUpAfterMs;
  deps.memory.ledger.set(key, gaveUp ? 0 : running);
  if (gaveUp) {
    deps.metrics.finalizerGaveUp.inc({ hypervisor: host });
    const message = `Eviction ${key} deleted: stopped waiting after ${
      Math.round(waitedMs / 1000)
    } s for ${describeSettling(look.counted)} from ${host} to settle`;
    log.warn({}, message);
    await ctx.event("Warning", "FinalizerGaveUp", message);
  } else if (running === 0 && look.stalled.length > 0) {
    const message = `Eviction ${key} deleted: ${
      describeSettling(look.stalled)
    } from ${host} showed no progress for ${
      Math.round(fin.stalledAfterMs / 1000)
    } s and no longer count`;
    await ctx.event("Warning", "MigrationsStalled", message);
  }
  if (gaveUp || running === 0) return undefined;
  const detail = { running, stalled: look.stalled.length };
  // Info when something changed (or on the first look), debug otherwise:
  // waiting is the normal course of a deletion, not a failure.
  if (running !== before || since === nowMs) {
    log.info(detail, "deleted drain: migrations settling");
  } else log.debug(detail, "deleted drain: migrations settling");
  return { requeueAfterMs: deps.pollIntervalMs };
}

/**
 * Sends a cancel's aborts (`--abort-in-flight`), each noted as once.ts
 * reads it; a failed one is logged and looked at again. One Event names
 * those sent.
 */
async function abortOurs(
  ctx: Ctx,
  deps: EvictionPassDeps,
  todo: readonly CancelAbort[],
): Promise<void> {
  const host = ctx.object.spec.hypervisor;
  const log = ctx.logger.child({ hypervisor: host });
  const sent: string[] = [];
  for (const { id, migrationId } of todo) {
    const note: ActionNote = { sentAtMs: deps.clock.now() };
    deps.memory.of(ctx.key).aborts.set(String(migrationId), note);
    const ids = { serverId: id, migrationId };
    try {
      const r = await deps.nova.abortLiveMigration(id, migrationId, ctx.signal);
      log.info({ ...ids, requestId: r.requestId }, "aborted: drain cancelled");
      sent.push(`${id} (migration ${migrationId})`);
    } catch (err) {
      log.warn({ ...ids, err: errText(err) }, "abort on cancel failed");
    } finally {
      note.answeredAtMs = deps.clock.now();
    }
  }
  if (sent.length === 0) return;
  await ctx.event(
    "Normal",
    "MigrationsAborted",
    `Eviction ${ctx.key} cancelled with --abort-in-flight: aborted ${sent.length} live migrations from ${host}: ${
      listSome(sent)
    }`,
  );
}
