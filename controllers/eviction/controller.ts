/**
 * Registers the eviction controller: its reconcile handler, finalizer, watches and the drains' informer.
 * @module
 */

import type { Operator } from "../../framework/operator.ts";
import { related } from "../../framework/handler.ts";
import type { Eviction } from "../../models/mod.ts";
import type { NovaClient } from "../../openstack/mod.ts";
import type { NotificationFeed } from "../../openstack/notification_types.ts";
import { NotifiedInformer } from "../../openstack/informer/notified_informer.ts";
import {
  type HostInformer,
  type InformerTiming,
  PollingInformer,
  RELIST_POLLS,
} from "../../openstack/informer/informer.ts";
import { InformerMetrics } from "../../openstack/informer/informer_metrics.ts";
import { NovaLister } from "../../openstack/informer/lister.ts";
import { countNovaCalls } from "../../openstack/nova_metrics.ts";
import { EvictionKind, EvictionPolicyKind, HypervisorKind } from "../kinds.ts";
import { type LimitSettings, POLICY_NAME } from "../../limits/resolve.ts";
import {
  finalizeEviction,
  type FinalizerDeps,
  finalizerDeps,
} from "./finalize.ts";
import { Informer } from "../../framework/informer.ts";
import { DrainMemory } from "./memory.ts";
import { EvictionMetrics } from "./metrics.ts";
import { registerEvictionGauges } from "./state_metrics.ts";
import { NovaClock } from "../../openstack/informer/nova_clock.ts";
import type { PlanOptions } from "./plan_options.ts";
import {
  type EvictionClock,
  type EvictionPassDeps,
  reconcileEviction,
} from "./reconcile.ts";
import type {
  CapacityPlacement,
  CapacityReport,
} from "../../capacity/check.ts";
import { CAPACITY_REPORT_TTL_MS, RecentMemo } from "../../capacity/memo.ts";
import type { MigrationRate } from "../../capacity/makespan.ts";
import type { DrainCost } from "../../capacity/history.ts";

/** What the eviction controller needs; durations in real ms, checked by app/config.ts. */
export interface EvictionControllerDeps {
  nova: NovaClient;
  /** In force while there is no EvictionPolicy `default`. */
  flagSettings: LimitSettings;
  /** `--poll-interval`: the shortest wait between two passes. */
  pollIntervalMs: number;
  /** The longest wait while migrations are in flight (default 30 poll intervals). */
  maxPollMs?: number;
  /** Between looks at a finished drain's host (default 60 poll intervals). */
  finishedCheckMs?: number;
  /** `--drain-settle`: how long fresh looks must find a host empty (default 3 poll intervals). */
  settleMs?: number;
  planOptions?: Partial<PlanOptions>;
  /** Evictions reconciled at once (default 4). */
  maxConcurrentReconciles?: number;
  /** Server lookups of one pass at once (default 8). */
  actConcurrency?: number;
  /** While nothing can move without a person or a change (default 10 poll intervals). */
  slowPollMs?: number;
  /** With notifications, the oldest view a pass plans from (default 30 poll intervals). */
  relistMs?: number;
  /** `--migration-progress-interval` (default 30 s). */
  progressIntervalMs?: number;
  /** Default the wall clock; tests pass the simulator's. */
  clock?: EvictionClock;
  /** The longest wait of a drain for its wave's hosts to be disabled (default 15 s). */
  waveSettleMs?: number;
  /** The Evictions sharing this cloud across partitions (default all); test environments scope it. */
  cloudSelector?: string;
  /** For the capacity check before a host is disabled (none without it). */
  placement?: CapacityPlacement;
  /** The cost predictions assume before any drain has ended (capacity/history.ts DEFAULT_COST). */
  defaultMigrationRate?: MigrationRate | DrainCost;
  finalizer?: Partial<Pick<FinalizerDeps, "stalledAfterMs" | "giveUpAfterMs">>;
  /** `--nova-notifications-url`; without it the drains poll. */
  notifications?: NotificationFeed;
}

/**
 * Registers the eviction controller. Call before `operator.start()`.
 *
 * @example
 * ```ts ignore
 * registerEvictionController(operator, {
 *   nova: clients.nova,
 *   flagSettings: parsed.settings,
 *   pollIntervalMs: 2000,
 * });
 * await operator.start();
 * ```
 */
export function registerEvictionController(
  operator: Operator,
  deps: EvictionControllerDeps,
): void {
  const fin = finalizerDeps(deps.finalizer);
  const pass = passDeps(deps, operator);
  // The policy is cluster-wide: never partitioned by the label selector.
  operator.watch(EvictionPolicyKind, { labelSelector: null });
  const evictions = operator.cache(EvictionKind);
  // From the caches at scrape time: on every replica, not only the leader.
  registerEvictionGauges(
    operator.metrics.registry,
    () => ({
      evictions: evictions.list(),
      policy: operator.cache(EvictionPolicyKind).get(POLICY_NAME),
    }),
    () => pass.clock.now(),
  );
  // finished drains too: the Hypervisor's instance count is how they notice a VM cheaply
  const evictionsOf = (host: string | undefined): string[] =>
    host === undefined ? [] : evictions
      .list((e: Eviction) => e.spec.hypervisor === host)
      .map((e) => e.metadata?.name ?? "");
  operator.reconcile(EvictionKind, (ctx) => reconcileEviction(ctx, pass), {
    name: "eviction",
    maxConcurrent: deps.maxConcurrentReconciles ?? 4,
    ignoreStatusUpdates: true, // our own writes must not cost passes (Nova calls)
    forget: (key) => pass.memory.forget(key),
    watches: [
      related(EvictionPolicyKind, () => "all"),
      related(HypervisorKind, (hv) => evictionsOf(hv.metadata?.name)),
    ],
  });
  operator.finalize(EvictionKind, (ctx) => finalizeEviction(ctx, pass, fin));
}

function passDeps(
  deps: EvictionControllerDeps,
  operator: Operator,
): EvictionPassDeps {
  const relistMs = deps.relistMs ?? deps.pollIntervalMs * RELIST_POLLS;
  const finishedCheckMs = deps.finishedCheckMs ?? deps.pollIntervalMs * 60;
  const actConcurrency = deps.actConcurrency ?? 8;
  const rate = deps.clock?.rate ?? 1;
  const metrics = new EvictionMetrics(operator.metrics.registry);
  const clock = deps.clock ?? { now: () => Date.now() };
  const timing = {
    pollMs: deps.pollIntervalMs,
    relistMs,
    finishedCheckMs,
    rate,
  };
  const lister = new NovaLister(deps.nova, {
    now: () => clock.now(),
    concurrency: actConcurrency,
    warn: (fields, msg) => operator.logger.warn(fields, `Nova ${msg}`),
  });
  countNovaCalls(deps.nova, operator.metrics.registry);
  const novaClock = new NovaClock();
  deps.nova.onServerDate((ms) => novaClock.sample(ms, clock.now()));
  const memory = new DrainMemory(
    hostInformer(operator, deps.notifications, lister, clock, timing),
    novaClock,
  );
  return {
    nova: deps.nova,
    novaClockOffsetMs: () => novaClock.offsetMs(),
    flagSettings: deps.flagSettings,
    pollIntervalMs: deps.pollIntervalMs,
    maxPollMs: deps.maxPollMs ?? deps.pollIntervalMs * 30,
    slowPollMs: deps.slowPollMs ?? deps.pollIntervalMs * 10,
    finishedCheckMs,
    relistMs,
    ...(deps.progressIntervalMs === undefined
      ? {}
      : { progressIntervalMs: deps.progressIntervalMs }),
    settleMs: deps.settleMs ?? deps.pollIntervalMs * 3,
    planOptions: deps.planOptions ?? {},
    clock,
    memory,
    metrics,
    actConcurrency,
    waveSettleMs: deps.waveSettleMs ?? 15_000,
    allEvictions: watchAllEvictions(operator, memory, deps.cloudSelector),
    ...(deps.placement === undefined ? {} : {
      capacity: {
        placement: deps.placement,
        memo: new RecentMemo<CapacityReport>(CAPACITY_REPORT_TTL_MS),
        defaultRate: deps.defaultMigrationRate,
      },
    }),
  };
}

/** Every Eviction of the cloud, whatever the label selector; a drop in flight wakes the budget's waiters. */
function watchAllEvictions(
  operator: Operator,
  memory: DrainMemory,
  cloudSelector: string | undefined,
): NonNullable<EvictionPassDeps["allEvictions"]> {
  const evictions = operator.cache(EvictionKind);
  let all: Informer<Eviction> | undefined;
  operator.onStartup(async () => {
    const informer = new Informer<Eviction>({
      kind: EvictionKind,
      client: operator.client,
      logger: operator.logger.child({ cache: "evictions-all" }),
      ...(cloudSelector === undefined ? {} : { labelSelector: cloudSelector }),
    });
    informer.on((ev) =>
      memory.budgetWaiters.observe(
        ev.key,
        ev.type === "deleted" ? undefined : ev.object,
        (k) => {
          if (evictions.get(k) !== undefined) {
            operator.enqueue(EvictionKind, k);
          }
        },
      )
    );
    informer.start();
    await informer.synced();
    all = informer;
  });
  operator.onCleanup(async () => {
    await all?.stop();
  });
  return {
    list: () => (all ?? evictions).list(),
    caughtUp: (rv, timeoutMs) =>
      all?.caughtUp(rv, timeoutMs) ?? Promise.resolve(false),
  };
}

/** The drains' informer, polling or notified (waking the hosts' drains); its metrics exist in both. */
function hostInformer(
  operator: Operator,
  feed: NotificationFeed | undefined,
  lister: NovaLister,
  clock: EvictionClock,
  timing: InformerTiming,
): HostInformer {
  const registry = operator.metrics.registry;
  if (feed === undefined) {
    new InformerMetrics(registry);
    return new PollingInformer(lister);
  }
  const evictions = operator.cache(EvictionKind);
  const log = operator.logger.child({ informer: "nova-notifications" });
  const metrics = new InformerMetrics(
    registry,
    () => informer.feedDemoted(),
    () => informer.demotedHosts(),
  );
  const informer = new NotifiedInformer(
    feed,
    lister,
    (key) => {
      if (evictions.get(key) !== undefined) {
        operator.enqueue(EvictionKind, key);
      }
    },
    () => clock.now(),
    timing,
    {
      differed(host, diffs) {
        metrics.viewDiffs.inc({ hypervisor: host }, diffs.length);
        log.warn(
          { hypervisor: host, servers: diffs },
          "the relist found the notified view of the host differing (a missed event)",
        );
      },
      demoted(d) {
        metrics.demotions.inc({ scope: d.scope, reason: d.reason });
      },
    },
  );
  operator.onCleanup(() => Promise.resolve(informer.close()));
  return informer;
}
