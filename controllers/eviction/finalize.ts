/**
 * The finalizer of an Eviction: when it is deleted, re-enable the compute
 * service that the drain disabled, unless the Hypervisor is in maintenance,
 * someone else disabled the service, or another Eviction of the same
 * hypervisor still stands. First, the migrations it started must settle:
 * while Nova shows migrations in progress from the host, the Eviction keeps
 * its finalizer and its `status.inFlightCount`, so every process still
 * counts them against the cluster budget (budget_share.ts). The wait is bounded:
 * our cold migrations waiting in VERIFY_RESIZE are confirmed (nobody else
 * would), a record without progress for `stalledAfterMs` stops counting
 * (settle.ts), and after `giveUpAfterMs` the finalizer stops waiting with a
 * Warning Event and `evictor_eviction_finalizer_gave_up_total`. Waiting is
 * not a failure: it requeues without an error; a failure retries after at
 * most `maxPollMs`.
 *
 * @module
 */

import { backoffDelay } from "../../framework/backoff.ts";
import type {
  FinalizeResult,
  HandlerContext,
} from "../../framework/handler.ts";
import type { Eviction } from "../../models/mod.ts";
import { isDeleting } from "../../framework/kind.ts";
import {
  errText,
  PermanentError,
  TemporaryError,
} from "../../framework/errors.ts";
import { EvictionKind, HypervisorKind } from "../kinds.ts";
import { keepDisabledBecause } from "./host_holds.ts";
import { keepLesson } from "./hypervisor_last_drain.ts";
import type { EvictionPassDeps } from "./pass.ts";
import { DEFAULT_PLAN_OPTIONS } from "./plan_options.ts";
import { type ActionNote, maySendAgain } from "./once.ts";
import type { Migration } from "../../openstack/mod.ts";
import { listSome } from "./event_notes.ts";
import { type SettleLook, settleLook, unlistedStarts } from "./settle.ts";
import { abortRequested, cancelAborts } from "./abort_in_flight.ts";

/**
 * The finalizer's bounds; built once by the controller (its memory is the
 * drain's, memory.ts SettleState).
 */
export interface FinalizerDeps {
  /** A record without progress this long stops counting (drain clock ms). */
  stalledAfterMs: number;
  /** The finalizer stops waiting after this long (drain clock ms). */
  giveUpAfterMs: number;
}

/** Default bounds: 15 minutes without progress, one hour in all. */
export const DEFAULT_FINALIZER_BOUNDS: Readonly<
  Pick<FinalizerDeps, "stalledAfterMs" | "giveUpAfterMs">
> = Object.freeze({ stalledAfterMs: 15 * 60_000, giveUpAfterMs: 60 * 60_000 });

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
  bounds: Partial<Pick<FinalizerDeps, "stalledAfterMs" | "giveUpAfterMs">> = {},
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
 * Runs the finalizer of one Eviction: returns a requeue while migrations
 * from the host still settle, nothing once the service is handled. A
 * failure is retried after a delay doubling from the poll interval to
 * `maxPollMs`, never the framework's long backoff.
 *
 * @example
 * ```ts ignore
 * operator.finalize(EvictionKind, (ctx) => finalizeEviction(ctx, deps, fin));
 * ```
 */
export async function finalizeEviction(
  ctx: HandlerContext<Eviction> & { object: Eviction },
  deps: EvictionPassDeps,
  fin: FinalizerDeps,
): Promise<FinalizeResult | void> {
  try {
    const settle = deps.memory.of(ctx.key).settle;
    const waiting = await waitForSettled(ctx, deps, fin);
    if (waiting !== undefined) {
      settle.failures = 0;
      return waiting;
    }
    await restoreService(ctx, deps);
    // Only now: a re-enable that keeps failing backs off as a list does.
    settle.failures = 0;
    // The last chance to keep what the drain learned (hypervisor_last_drain.ts).
    await keepLesson({
      client: ctx.client,
      eviction: ctx.key,
      host: ctx.object.spec.hypervisor,
      status: ctx.object.status ?? {},
      marks: deps.memory.of(ctx.key).marks,
      hypervisor: ctx.cache(HypervisorKind).get(ctx.object.spec.hypervisor),
      log: ctx.logger,
    });
  } catch (err) {
    if (err instanceof PermanentError) throw err;
    const failures = ++deps.memory.of(ctx.key).settle.failures;
    const delayMs = backoffDelay(
      Math.max(0, failures - 1),
      deps.pollIntervalMs,
      deps.maxPollMs,
    );
    throw new TemporaryError(
      `finalizer of Eviction ${ctx.key} failed: ${errText(err)}`,
      { delayMs, cause: err },
    );
  }
  wakeOthers(ctx, deps);
}

async function restoreService(
  ctx: HandlerContext<Eviction> & { object: Eviction },
  deps: EvictionPassDeps,
): Promise<void> {
  const { key, object, signal } = ctx;
  const host = object.spec.hypervisor;
  const log = ctx.logger.child({ hypervisor: host });
  const service = await deps.nova.findComputeService(host, signal);
  if (service === undefined || service.status !== "disabled") return;
  const why = keepDisabledBecause(
    ctx.cache(HypervisorKind).get(host),
    service.disabledReason,
    othersOf(ctx, key, host).length > 0,
  );
  if (why !== undefined) {
    log.info({ serviceId: service.id, why }, "compute service left disabled");
    await ctx.event(
      "Normal",
      "HypervisorLeftDisabled",
      `compute service ${service.id} of host ${host} left disabled: ${why}`,
    );
    return;
  }
  try {
    await deps.nova.setComputeServiceStatus(
      service.id,
      true,
      undefined,
      signal,
    );
  } catch (err) {
    throw new Error(
      `re-enabling compute service ${service.id} of host ${host} failed: ${
        errText(err)
      }`,
      { cause: err },
    );
  }
  log.info({ serviceId: service.id }, "compute service re-enabled");
  await ctx.event(
    "Normal",
    "HypervisorReEnabled",
    `compute service ${service.id} of host ${host} re-enabled`,
  );
}

function othersOf(
  ctx: HandlerContext<Eviction>,
  key: string,
  host: string,
): Eviction[] {
  return ctx.cache(EvictionKind).list((e) =>
    e.metadata?.name !== key && e.spec.hypervisor === host && !isDeleting(e)
  );
}

/**
 * A finalized drain frees its budget and its host: the drains waiting for
 * either look again. Its memory goes once the Eviction is gone (the
 * framework calls DrainMemory.forget).
 */
function wakeOthers(
  ctx: HandlerContext<Eviction> & { object: Eviction },
  deps: EvictionPassDeps,
): void {
  const { key } = ctx;
  const host = ctx.object.spec.hypervisor;
  // It waits for nothing now: out of the line before the others are woken,
  // so that no wake counted by freed slots goes to it.
  deps.memory.budgetWaiters.delete(key);
  deps.memory.budgetWaiters.wake((k) => ctx.enqueue(EvictionKind, k));
  deps.metrics.inFlight.remove({ hypervisor: host });
  for (const e of othersOf(ctx, key, host)) {
    const name = e.metadata?.name;
    if (name !== undefined) ctx.enqueue(EvictionKind, name);
  }
}

/**
 * Looks at the host's migrations (all of them: a `changes-since` filter
 * misses a queued record, whose `updated_at` Nova does not touch), confirms
 * our cold migrations in VERIFY_RESIZE, writes the count still settling to
 * `status.inFlightCount` when it changed and to the ledger. Returns a
 * requeue while any counts and the bound is not reached.
 */
async function waitForSettled(
  ctx: HandlerContext<Eviction> & { object: Eviction },
  deps: EvictionPassDeps,
  fin: FinalizerDeps,
): Promise<FinalizeResult | undefined> {
  const { key, signal } = ctx;
  const ev = ctx.object;
  const host = ev.spec.hypervisor;
  const log = ctx.logger.child({ hypervisor: host });
  const recorded = Math.max(
    ev.status?.inFlightCount ?? 0,
    deps.memory.ledger.get(key),
  );
  if (recorded === 0) return undefined;
  const nowMs = deps.clock.now();
  const settle = deps.memory.of(key).settle;
  const since = settle.waitingSinceMs ??= nowMs;
  const migrations = await deps.nova.listMigrations({ host }, signal);
  const look = settleLook({
    host,
    migrations,
    ourCold: new Set(
      (ev.status?.inFlight ?? [])
        .filter((e) => e.kind === "cold" && e.adopted !== true)
        .map((e) => e.id),
    ),
    marks: settle.marks,
    nowMs,
    stalledAfterMs: fin.stalledAfterMs,
  });
  settle.marks = look.marks;
  await confirmOurs(ctx, deps, look.confirm, nowMs);
  if (abortRequested(ev)) await abortOurs(ctx, deps, migrations, nowMs);
  // A start Nova has not listed yet is running too (its record comes after
  // the 202): without it a delete right after a start ends the wait early.
  const unlisted = unlistedStarts({
    host,
    inFlight: ev.status?.inFlight ?? [],
    migrations,
    nowMs,
    graceMs: deps.planOptions.gracePeriodMs ??
      DEFAULT_PLAN_OPTIONS.gracePeriodMs,
    novaOffsetMs: deps.nova.novaClockOffsetMs(),
  });
  const running = look.counted.length + unlisted.length;
  const before = ev.status?.inFlightCount ?? 0;
  if (running !== before) {
    // the finalizer's own write (no pass runs on a deleted Eviction)
    await ctx.updateStatus((s) => ({ ...s, inFlightCount: running }));
  }
  deps.memory.ledger.set(key, running);
  if (running === 0) {
    if (look.stalled.length > 0) {
      await ctx.event(
        "Warning",
        "MigrationsStalled",
        `Eviction ${key} deleted: ${
          describe(look.stalled)
        } from ${host} showed no progress for ${
          Math.round(fin.stalledAfterMs / 1000)
        } s and no longer count`,
      );
    }
    return undefined;
  }
  const waitedMs = nowMs - since;
  if (waitedMs >= fin.giveUpAfterMs) {
    return await giveUp(ctx, deps, look, waitedMs);
  }
  const detail = { running, stalled: look.stalled.length };
  // Info when something changed (or on the first look), debug otherwise:
  // waiting is the normal course of a deletion, not a failure.
  if (running !== before || since === nowMs) {
    log.info(detail, "deleted drain: migrations settling");
  } else log.debug(detail, "deleted drain: migrations settling");
  return { requeueAfterMs: deps.pollIntervalMs };
}

async function giveUp(
  ctx: HandlerContext<Eviction> & { object: Eviction },
  deps: EvictionPassDeps,
  look: SettleLook,
  waitedMs: number,
): Promise<undefined> {
  const host = ctx.object.spec.hypervisor;
  deps.metrics.finalizerGaveUp.inc({ hypervisor: host });
  deps.memory.ledger.set(ctx.key, 0);
  const message = `Eviction ${ctx.key} deleted: stopped waiting after ${
    Math.round(waitedMs / 1000)
  } s for ${describe(look.counted)} from ${host} to settle`;
  ctx.logger.warn({ hypervisor: host }, message);
  await ctx.event("Warning", "FinalizerGaveUp", message);
  return undefined;
}

function describe(records: SettleLook["counted"]): string {
  const shown = records.slice(0, 5).map((m) =>
    `migration ${m.id} of ${m.instanceUuid} (${m.status})`
  );
  const more = records.length > 5 ? ` and ${records.length - 5} more` : "";
  return `${shown.join(", ")}${more}`;
}

/**
 * Confirms our cold migrations at VERIFY_RESIZE (the server says so, not
 * only the `finished` record of the look begun at `lookedAtMs`). A
 * confirm sent before is sent again only when that look began after its
 * answer (once.ts); an unknown outcome is looked at again next time.
 */
async function confirmOurs(
  ctx: HandlerContext<Eviction> & { object: Eviction },
  deps: EvictionPassDeps,
  ids: readonly string[],
  lookedAtMs: number,
): Promise<void> {
  const confirms = deps.memory.of(ctx.key).confirms;
  const log = ctx.logger.child({ hypervisor: ctx.object.spec.hypervisor });
  for (const id of ids) {
    if (!maySendAgain(confirms.get(id), lookedAtMs)) continue;
    const server = await deps.nova.getServer(id, ctx.signal);
    if (server.status.toUpperCase() !== "VERIFY_RESIZE") continue;
    const note: ActionNote = { sentAtMs: deps.clock.now() };
    confirms.set(id, note);
    try {
      const r = await deps.nova.confirmResize(id, ctx.signal);
      log.info({ serverId: id, requestId: r.requestId }, "resize confirmed");
      await ctx.event(
        "Normal",
        "ResizeConfirmed",
        `confirmed the cold migration of ${id}`,
      );
    } catch (err) {
      log.warn({ serverId: id, err: errText(err) }, "confirmResize failed");
    } finally {
      note.answeredAtMs = deps.clock.now();
    }
  }
}

/**
 * Aborts our live migrations still in progress from the host, as a cancel
 * with `--abort-in-flight` asked (abort_in_flight.ts): each sent once per
 * look that began after its answer (once.ts); a failed abort is logged and
 * looked at again (the record may have ended meanwhile). One Event names
 * the migrations aborted by this look.
 */
async function abortOurs(
  ctx: HandlerContext<Eviction> & { object: Eviction },
  deps: EvictionPassDeps,
  migrations: readonly Migration[],
  lookedAtMs: number,
): Promise<void> {
  const host = ctx.object.spec.hypervisor;
  const aborts = deps.memory.of(ctx.key).aborts;
  const log = ctx.logger.child({ hypervisor: host });
  const sent: string[] = [];
  for (
    const a of cancelAborts({
      host,
      migrations,
      inFlight: ctx.object.status?.inFlight ?? [],
      aborts,
      lookedAtMs,
    })
  ) {
    const note: ActionNote = { sentAtMs: deps.clock.now() };
    aborts.set(String(a.migrationId), note);
    try {
      const r = await deps.nova.abortLiveMigration(
        a.id,
        a.migrationId,
        ctx.signal,
      );
      log.info(
        { serverId: a.id, migrationId: a.migrationId, requestId: r.requestId },
        "live migration aborted: the drain was cancelled",
      );
      sent.push(`${a.id} (migration ${a.migrationId})`);
    } catch (err) {
      log.warn(
        { serverId: a.id, migrationId: a.migrationId, err: errText(err) },
        "abort on cancel failed",
      );
    } finally {
      note.answeredAtMs = deps.clock.now();
    }
  }
  if (sent.length > 0) {
    await ctx.event(
      "Normal",
      "MigrationsAborted",
      `Eviction ${ctx.key} cancelled with --abort-in-flight: aborted ${sent.length} live migrations from ${host}: ${
        listSome(sent)
      }`,
    );
  }
}
