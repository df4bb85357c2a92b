/**
 * The finalizer of an Eviction: passes at limit 0 until its migrations settle (bounded), then the
 * compute service re-enabled unless host_holds.ts keeps it disabled.
 * @module
 */

import { backoffDelay } from "../../framework/backoff.ts";
import type {
  FinalizeResult,
  HandlerContext,
} from "../../framework/handler.ts";
import { isDeleting } from "../../framework/kind.ts";
import {
  errText,
  PermanentError,
  TemporaryError,
} from "../../framework/errors.ts";
import type { Eviction, EvictionStatus } from "../../models/mod.ts";
import { EvictionKind, HypervisorKind } from "../kinds.ts";
import { act } from "./phase_act.ts";
import {
  abortRequested,
  type CancelAbort,
  cancelAborts,
} from "./abort_in_flight.ts";
import { listSome } from "./event_notes.ts";
import { keepDisabledBecause } from "./host_holds.ts";
import { keepLesson } from "./hypervisor_last_drain.ts";
import type { ActionNote } from "./once.ts";
import {
  apply,
  type EvictionPassDeps,
  newPass,
  planOptionsFor,
} from "./pass.ts";
import { type Plan, type PlanInput, planPass } from "./plan.ts";
import { describeSettling, settleLook } from "./settle.ts";
import { changesSince } from "./phase_pace.ts";

/** The finalizer's bounds (drain clock ms). */
export interface FinalizerDeps {
  /** A record without progress this long stops counting (settle.ts). */
  stalledAfterMs: number;
  /** The finalizer stops waiting after this long. */
  giveUpAfterMs: number;
}

/** 15 minutes without progress, one hour in all. */
export const DEFAULT_FINALIZER_BOUNDS: Readonly<FinalizerDeps> = Object.freeze(
  { stalledAfterMs: 15 * 60_000, giveUpAfterMs: 60 * 60_000 },
);

/**
 * Finalizer bounds with the defaults, checked.
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

/**
 * The plan for a deleted Eviction: limit 0, nothing started or aborted.
 *
 * @example
 * ```ts
 * import { deletedPlan } from "./finalize.ts";
 * import { DEFAULT_PLAN_OPTIONS } from "./plan_options.ts";
 * const vm = { id: "a", status: "ACTIVE", host: "h", taskState: null, flavor: { ramMb: 1 } };
 * const plan = deletedPlan({ host: "h", servers: [vm], migrations: [], departed: [],
 *   status: undefined, now: new Date(0), options: DEFAULT_PLAN_OPTIONS });
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

type Ctx = HandlerContext<Eviction> & { object: Eviction };

/**
 * Runs the finalizer of one Eviction: a requeue while migrations settle; failures back off.
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
    if (waiting === undefined) await restoreService(ctx, deps);
    // only now: a re-enable that keeps failing backs off as a list does
    state.settle.failures = 0;
    if (waiting !== undefined) return waiting;
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
    const n = ++state.settle.failures;
    const delayMs = backoffDelay(n - 1, deps.pollIntervalMs, deps.maxPollMs);
    throw new TemporaryError(
      `finalizer of Eviction ${key} failed: ${errText(err)}`,
      { delayMs, cause: err },
    );
  }
  // out of the budget line before the others are woken, so no wake for a freed slot goes to it
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
  try {
    await deps.nova.setComputeServiceStatus(
      service.id,
      true,
      undefined,
      ctx.signal,
    );
  } catch (err) {
    const message = `re-enabling ${what} failed: ${errText(err)}`;
    throw new Error(message, { cause: err });
  }
  log.info({ serviceId: service.id }, "compute service re-enabled");
  await ctx.event("Normal", "HypervisorReEnabled", `${what} re-enabled`);
}

/** The other Evictions of the host that stand. */
function othersOf(ctx: Ctx): string[] {
  const host = ctx.object.spec.hypervisor;
  return ctx.cache(EvictionKind).list((e) =>
    e.metadata?.name !== ctx.key && e.spec.hypervisor === host &&
    !isDeleting(e)
  ).flatMap((e) => e.metadata?.name ?? []);
}

/**
 * One look and plan at limit 0: confirms and a cancel's aborts go out; the count still settling
 * is kept in `status.inFlightCount` (the budget counts it) and the ledger.
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
  const waitingSince = state.settle.waitingSinceMs ??= nowMs;
  const options = {
    ...planOptionsFor(deps.planOptions, deps.flagSettings),
    novaClockOffsetMs: deps.novaClockOffsetMs(),
  };
  const pass = newPass(ctx, deps, ev);
  const seen = await deps.memory.informer.look(key, {
    host,
    since: changesSince(pass, options),
    status,
    ram: (id) => state.ram.get(id),
    starts: state.starts.values(),
    freshSince: nowMs,
    signal,
  });
  const { starts, confirms, aborts } = state;
  const now = new Date(nowMs);
  const input = { ...seen, host, status, now, options, starts, confirms };
  const plan = deletedPlan({ ...input, aborts });
  apply(pass, act(pass, plan, plan.next));
  const inFlight = plan.next.inFlight ?? [];
  const { migrations } = seen;
  if (abortRequested(ev)) {
    const lookedAtMs = seen.listedAtMs ?? nowMs;
    const ask = { host, migrations, inFlight, aborts, lookedAtMs };
    await abortOurs(ctx, deps, cancelAborts(ask));
  }
  const { stalledAfterMs } = fin;
  const seenNow = { host, inFlight, migrations, nowMs, stalledAfterMs };
  const look = settleLook({ ...seenNow, marks: state.settle.marks });
  state.settle.marks = look.marks;
  const running = look.counted.length;
  if (running !== before) {
    await ctx.updateStatus((s) => ({ ...s, inFlightCount: running }));
  }
  const waitedMs = nowMs - waitingSince;
  const gaveUp = running > 0 && waitedMs >= fin.giveUpAfterMs;
  deps.memory.ledger.set(key, gaveUp ? 0 : running);
  await reportSettling(ctx, deps, fin, look, gaveUp ? waitedMs : undefined);
  if (gaveUp || running === 0) return undefined;
  const detail = { running, stalled: look.stalled.length };
  // debug unless changed: waiting is the normal course of a deletion
  if (running !== before || waitingSince === nowMs) {
    log.info(detail, "deleted drain: migrations settling");
  } else log.debug(detail, "deleted drain: migrations settling");
  return { requeueAfterMs: deps.pollIntervalMs };
}

/** The Warning of a deleted drain that gave up, or whose copies stalled. */
async function reportSettling(
  ctx: Ctx,
  deps: EvictionPassDeps,
  fin: FinalizerDeps,
  look: ReturnType<typeof settleLook>,
  gaveUpAfterMs: number | undefined,
): Promise<void> {
  const { key } = ctx;
  const host = ctx.object.spec.hypervisor;
  if (gaveUpAfterMs !== undefined) {
    deps.metrics.finalizerGaveUp.inc({ hypervisor: host });
    const message = `Eviction ${key} deleted: stopped waiting after ${
      Math.round(gaveUpAfterMs / 1000)
    } s for ${describeSettling(look.counted)} from ${host} to settle`;
    ctx.logger.child({ hypervisor: host }).warn({}, message);
    await ctx.event("Warning", "FinalizerGaveUp", message);
  } else if (look.counted.length === 0 && look.stalled.length > 0) {
    const message = `Eviction ${key} deleted: ${
      describeSettling(look.stalled)
    } from ${host} showed no progress for ${
      Math.round(fin.stalledAfterMs / 1000)
    } s and no longer count`;
    await ctx.event("Warning", "MigrationsStalled", message);
  }
}

/** Sends a cancel's aborts, each noted (once.ts); one Event names those sent. */
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
