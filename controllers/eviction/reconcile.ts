/**
 * One pass of a drain, the thin I/O adapter around the pure planner:
 * preflight once, then observe Nova (one server list, one migration list,
 * a GET only for VMs that left the host), plan, act with bounded
 * concurrency, write status once (only when it changed), requeue.
 *
 * @module
 */

import pLimit from "p-limit";
import type {
  HandlerContext,
  ReconcileResult,
} from "../../framework/handler.ts";
import { TemporaryError } from "../../framework/errors.ts";
import type { Eviction, EvictionStatus } from "../../models/mod.ts";
import { type Migration, NotFoundError } from "../../openstack/mod.ts";
import {
  EvictionKind,
  EvictionPolicyKind,
  HypervisorKind,
  POLICY_NAME,
} from "../kinds.ts";
import {
  clusterBudgetLeft,
  effectiveSettings,
  type LimitSettings,
  resolveLimit,
} from "./concurrency.ts";
import { CONDITION_EVICTING, setCondition } from "./conditions.ts";
import { drainingAhead, traitsHold } from "./gates.ts";
import type { InFlightLedger } from "./ledger.ts";
import type { EvictionMetrics } from "./metrics.ts";
import type { CountedNova } from "./nova_calls.ts";
import {
  DEFAULT_PLAN_OPTIONS,
  type DepartedServer,
  type ObservedServer,
  type PlanOptions,
} from "./observation.ts";
import { completedLiveMoves } from "./refill.ts";
import { departedIds, type Plan, planPass } from "./plan.ts";
import { actOnPlan } from "./act.ts";
import { preflight } from "./preflight.ts";
import { errText, type PendingEvent, reportPass } from "./report.ts";
import { recordStarts } from "./record_starts.ts";
import type { Prober } from "./probe.ts";
import { MAX_POLL_FACTOR, type Pacer, requeueDelay } from "./requeue.ts";
import type { StatusMemo } from "./status_memo.ts";
import { statusEqual } from "./status_equal.ts";
import { capacityPhase } from "../../capacity/gate.ts";
import type {
  CapacityPlacement,
  CapacityReport,
} from "../../capacity/check.ts";
import type { RecentMemo } from "../../capacity/memo.ts";

/** The controller's time source. */
export interface EvictionClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * Clock milliseconds per real millisecond (default 1). A simulator's
   * scaled clock runs faster; requeue delays computed in clock time are
   * divided by it.
   */
  rate?: number;
}

/** What a pass needs; built once by `registerEvictionController`. */
export interface EvictionPassDeps {
  /** Nova, every call counted. */
  nova: CountedNova;
  /** Limit settings from the flags (used without an EvictionPolicy). */
  flagSettings: LimitSettings;
  /** Requeue while migrations are in flight (real ms). */
  pollIntervalMs: number;
  /** Requeue while nothing can move without a person or a change (real ms). */
  slowPollMs: number;
  /** Overrides of the planner's options (the policy's timeout wins). */
  planOptions: Partial<PlanOptions>;
  /** Time source. */
  clock: EvictionClock;
  /** Migrations in flight per Eviction, for the cluster budget. */
  ledger: InFlightLedger;
  /** The last status written per Eviction. */
  memo: StatusMemo;
  /** When in-flight migrations are expected to finish. */
  pacer: Pacer;
  /** What the last full pass of each drain saw (for cheap passes). */
  prober: Prober;
  /** Metrics. */
  metrics: EvictionMetrics;
  /** Nova calls of one pass running at once (GETs, starts, confirms). */
  actConcurrency: number;
  /** Placement for the capacity check, and the wave's shared report; without it there is none. */
  capacity?: { placement: CapacityPlacement; memo: RecentMemo<CapacityReport> };
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

async function writeStatus(
  ctx: HandlerContext<Eviction>,
  deps: EvictionPassDeps,
  current: Eviction,
  next: EvictionStatus,
): Promise<void> {
  if (statusEqual(current.status, next)) return;
  const written = await ctx.updateStatus(() => next);
  deps.memo.remember(ctx.key, current.metadata?.resourceVersion, written);
}

function isDeleting(e: Eviction): boolean {
  const ts = e.metadata?.deletionTimestamp;
  return ts !== undefined && ts !== "";
}

/** Enqueues the other Evictions of the same hypervisor (one waits for this one). */
function wakeSiblings(ctx: HandlerContext<Eviction>, host: string): void {
  for (const e of ctx.cache(EvictionKind).list()) {
    const name = e.metadata?.name;
    if (name === undefined || name === ctx.key) continue;
    if (e.spec.hypervisor === host) ctx.enqueue(EvictionKind, name);
  }
}

/**
 * Runs one pass of the drain of `ctx.object`. Never throws for a single
 * VM's trouble: per-VM errors become failed attempts or log lines and the
 * pass still writes its status and returns its poll delay. Observation
 * errors (the server or migration list) throw a TemporaryError that keeps
 * the poll interval.
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
  const { key, signal } = ctx;
  if (ctx.object === undefined) {
    deps.ledger.delete(key);
    deps.memo.forget(key);
    deps.pacer.forget(key);
    deps.prober.forget(key);
    return {};
  }
  const ev = deps.memo.freshest(key, ctx.object);
  if (isDeleting(ev)) return {};
  const host = ev.spec.hypervisor;
  const log = ctx.logger.child({ hypervisor: host });
  const generation = ev.metadata?.generation;
  const initial: EvictionStatus = ev.status ?? {};
  if (initial.finishedAt !== undefined) {
    deps.ledger.set(key, 0);
    return {};
  }

  const ahead = drainingAhead(ev, ctx.cache(EvictionKind).list());
  if (ahead !== undefined) {
    const other = ahead.metadata?.name ?? "";
    const next: EvictionStatus = {
      ...initial,
      conditions: setCondition(
        initial.conditions ?? [],
        {
          type: CONDITION_EVICTING,
          status: "False",
          reason: "Duplicate",
          message:
            `Eviction ${other} already drains hypervisor ${host}; this one waits until it is finished or deleted`,
        },
        new Date(deps.clock.now()),
        generation,
      ),
    };
    if (!statusEqual(initial, next)) {
      await ctx.event(
        "Warning",
        "DuplicateEviction",
        `Eviction ${other} already drains hypervisor ${host}`,
      );
    }
    await writeStatus(ctx, deps, ev, next);
    return { requeueAfterMs: deps.slowPollMs };
  }

  const hypervisor = ctx.cache(HypervisorKind).get(host);
  const events: PendingEvent[] = [];
  const flush = async () => {
    await Promise.all(
      events.map((e) => ctx.event(e.type, e.reason, e.message)),
    );
  };
  let status = initial;

  if (status.hypervisorServiceId === undefined) {
    // Capacity phase (issue 14): before the compute service is disabled,
    // and again at the slow interval while capacityCheck Hold waits.
    if (deps.capacity !== undefined) {
      const spec = ctx.cache(EvictionPolicyKind).get(POLICY_NAME)?.spec;
      const phase = await capacityPhase(deps.nova, deps.capacity, {
        host,
        evictions: ctx.cache(EvictionKind).list(),
        hypervisor: (name) => ctx.cache(HypervisorKind).get(name),
        mode: spec?.capacityCheck,
        limit: resolveLimit(
          effectiveSettings(spec, deps.flagSettings),
          hypervisor?.status?.traits,
          ev.spec.maxConcurrentMigrations,
        ).limit,
        signal,
        status,
        now: new Date(deps.clock.now()),
        generation,
        setCondition,
      });
      status = phase.status;
      if (phase.event !== undefined) events.push(phase.event);
      if (phase.hold) {
        await writeStatus(ctx, deps, ev, status);
        await flush();
        return { requeueAfterMs: deps.slowPollMs };
      }
    }
    const out = await preflight(deps.nova, {
      host,
      reason: ev.spec.reason,
      hypervisor,
      status,
      now: new Date(deps.clock.now()),
      generation,
    }, signal);
    if (out.kind === "failed") {
      if (!statusEqual(initial, out.status)) {
        log.error({ err: out.message }, "preflight failed");
        events.push({
          type: "Warning",
          reason: "PreflightFailed",
          message: out.message,
        });
      }
      await writeStatus(ctx, deps, ev, out.status);
      await flush();
      // No hot loop: a change of the Hypervisor enqueues this Eviction.
      return { requeueAfterMs: deps.slowPollMs * 10 };
    }
    if (out.kind === "unregistered") {
      events.push({
        type: "Normal",
        reason: "DrainFinished",
        message: `host ${host} never registered in Nova: nothing to drain`,
      });
      await writeStatus(ctx, deps, ev, out.status);
      await flush();
      deps.ledger.set(key, 0);
      return {};
    }
    status = out.status;
    log.info(
      { serviceId: status.hypervisorServiceId, disabledNow: out.disabledNow },
      "preflight succeeded",
    );
    if (initial.startedAt === undefined) {
      events.push({
        type: "Normal",
        reason: "DrainStarted",
        message: `draining host ${host}${
          out.disabledNow
            ? `; compute service ${status.hypervisorServiceId} disabled`
            : ""
        }`,
      });
    }
  }

  // The limit, from the policy in the cache (or the flags), the host's
  // traits and the Eviction's own cap: read every pass, so a policy change
  // is obeyed by the next pass of every drain.
  const policy = ctx.cache(EvictionPolicyKind).get(POLICY_NAME);
  const settings = effectiveSettings(policy?.spec, deps.flagSettings);
  const resolved = resolveLimit(
    settings,
    hypervisor?.status?.traits,
    ev.spec.maxConcurrentMigrations,
  );
  const options = planOptionsFor(deps.planOptions, settings);
  const hold = traitsHold(host, hypervisor);

  const startedMs = Date.parse(status.startedAt ?? "") || deps.clock.now();
  const changesSince = new Date(startedMs - options.clockSkewMs);
  // What, besides Nova, a pass depends on: a change forces a full pass.
  const fingerprint = [
    generation,
    hypervisor?.metadata?.resourceVersion,
    policy?.metadata?.resourceVersion,
  ].join("/");
  const rate = deps.clock.rate ?? 1;
  const maxAgeMs = deps.pollIntervalMs * MAX_POLL_FACTOR * rate;
  let probed: Migration[] | undefined;
  // Set when a probe showed only migrations that completed away: this
  // pass refills from the last server view instead of listing the host.
  let refillFrom: ObservedServer[] | undefined;
  if (
    initial.hypervisorServiceId !== undefined &&
    (status.inFlightCount ?? 0) > 0 &&
    deps.prober.mayProbe(key, fingerprint, deps.clock.now(), maxAgeMs)
  ) {
    // Migrations run and nothing else changed: one list call tells
    // whether a full pass could do anything.
    try {
      probed = await deps.nova.listMigrations({ host, changesSince }, signal);
    } catch (err) {
      throw new TemporaryError(
        `listing the migrations of host ${host} failed: ${errText(err)}`,
        { delayMs: deps.pollIntervalMs },
      );
    }
    const nowMs = deps.clock.now();
    const verdict = deps.prober.verdict(key, fingerprint, probed, {
      host,
      status,
      nowMs,
      maxAgeMs,
      gracePeriodMs: options.gracePeriodMs,
    });
    if (verdict.kind === "idle") {
      return {
        requeueAfterMs: requeueDelay(deps.pacer, {
          key,
          next: status,
          migrations: probed,
          servers: [],
          nowMs,
          pollIntervalMs: deps.pollIntervalMs,
          rate,
          waitingForSlot: true,
        }),
      };
    }
    if (verdict.kind === "refill") refillFrom = verdict.servers;
  }

  let servers: readonly ObservedServer[];
  let migrations: Migration[];
  let departed: DepartedServer[];
  try {
    servers = refillFrom ?? await deps.nova.listServersOnHost(host, signal);
    migrations = probed ??
      await deps.nova.listMigrations({ host, changesSince }, signal);
    const get = pLimit(deps.actConcurrency);
    const ids = departedIds(status, servers, migrations, host);
    for (const server of servers) {
      deps.pacer.noteRam(key, server.id, server.flavor.ramMb);
    }
    const moved = completedLiveMoves(migrations, host);
    const looked = await Promise.all(
      ids.map((id) =>
        get(async (): Promise<DepartedServer | undefined> => {
          const dest = moved.get(id);
          if (dest !== undefined) {
            // Its latest record from this host is a completed live
            // migration: it is on `dest`, and a GET would only say so.
            return {
              id,
              server: {
                id,
                status: "ACTIVE",
                host: dest,
                taskState: null,
                flavor: { ramMb: deps.pacer.ramOf(key, id) ?? 0 },
              },
            };
          }
          try {
            return { id, server: await deps.nova.getServer(id, signal) };
          } catch (err) {
            if (err instanceof NotFoundError) return { id, server: null };
            // Its GET failed: the planner keeps what it knew of it.
            log.warn(
              { serverId: id, err: errText(err) },
              "server lookup failed",
            );
            return undefined;
          }
        })
      ),
    );
    departed = looked.filter((d): d is DepartedServer => d !== undefined);
  } catch (err) {
    // Keep what the preflight did (service id, startedAt) for the next pass.
    await writeStatus(ctx, deps, ev, status).catch(() => {});
    await flush();
    throw new TemporaryError(`observing host ${host} failed: ${errText(err)}`, {
      delayMs: deps.pollIntervalMs,
    });
  }

  const now = new Date(deps.clock.now());
  const cachedCounts = new Map<string, number>();
  for (const e of ctx.cache(EvictionKind).list()) {
    const name = e.metadata?.name;
    if (name === undefined || e.status?.finishedAt !== undefined) continue;
    cachedCounts.set(name, e.status?.inFlightCount ?? 0);
  }
  const input = {
    host,
    servers,
    migrations,
    departed,
    status,
    limit: resolved.limit,
    limitSource: resolved.source,
    clusterBudgetLeft: Number.POSITIVE_INFINITY,
    now,
    options,
    ...(generation === undefined ? {} : { generation }),
    ...(hold === undefined ? {} : { holdStarts: hold }),
  };
  // Plan and reserve in one synchronous step: no other pass can read the
  // ledger between this pass's budget and its reservation.
  let plan: Plan = planPass(input);
  deps.ledger.reserve(key, cachedCounts, (others) => {
    const clusterMax = settings.spec.clusterMaxConcurrentMigrations;
    if (clusterMax !== undefined) {
      const mine = plan.inFlightCount - plan.start.length;
      const budget = clusterBudgetLeft(clusterMax, others + mine);
      if (budget < plan.start.length) {
        plan = planPass({ ...input, clusterBudgetLeft: budget });
      }
    }
    return plan.inFlightCount;
  });

  const outcomes = await actOnPlan(plan, deps, log, signal, events);
  const recorded = recordStarts(plan, outcomes, now, options);
  const next = recorded.status;

  const reported = reportPass(
    {
      key,
      host,
      plan,
      startFailures: recorded.failed,
      before: status,
      next,
      migrations,
      now,
    },
    deps,
    log,
  );
  events.push(...reported.events);
  const finishedNow = reported.finishedNow;

  // The write comes before anything else can fail: the starts must be
  // recorded (restart safety).
  if (refillFrom === undefined) {
    deps.prober.fullPass(
      key,
      fingerprint,
      migrations,
      host,
      deps.clock.now(),
      servers,
    );
  } else deps.prober.refilled(key, migrations, host, servers);
  // Events go out alongside the write: they must not delay the next pass.
  await Promise.all([writeStatus(ctx, deps, ev, next), flush()]);
  deps.ledger.set(key, next.inFlightCount ?? 0);
  deps.metrics.inFlight.set({ hypervisor: host }, next.inFlightCount ?? 0);

  if (finishedNow) {
    deps.pacer.forget(key);
    deps.prober.forget(key);
    wakeSiblings(ctx, host);
    return {};
  }
  const inFlightNow = next.inFlightCount ?? 0;
  if (plan.blocked || (hold !== undefined && inFlightNow === 0)) {
    return { requeueAfterMs: deps.slowPollMs };
  }
  return {
    requeueAfterMs: requeueDelay(deps.pacer, {
      key,
      next,
      migrations,
      servers,
      // The pass took time: the delay counts from its end.
      nowMs: deps.clock.now(),
      pollIntervalMs: deps.pollIntervalMs,
      rate,
      waitingForSlot: plan.waiting.some((w) => w.why === "ready"),
    }),
  };
}
