/**
 * Registers the eviction controller on an {@linkcode Operator}: the
 * reconcile handler (one pass per run), the finalizer that re-enables the
 * compute service, and the watches that make a policy or Hypervisor change
 * reach the running drains.
 *
 * @module
 */

import type { Operator } from "../../framework/operator.ts";
import { related } from "../../framework/handler.ts";
import type { Eviction } from "../../models/mod.ts";
import type { NovaClient } from "../../openstack/mod.ts";
import { EvictionKind, EvictionPolicyKind, HypervisorKind } from "../kinds.ts";
import type { LimitSettings } from "./concurrency.ts";
import { finalizeEviction } from "./finalize.ts";
import { InFlightLedger } from "./ledger.ts";
import { EvictionMetrics } from "./metrics.ts";
import { CountedNova } from "./nova_calls.ts";
import type { PlanOptions } from "./observation.ts";
import {
  type EvictionClock,
  type EvictionPassDeps,
  reconcileEviction,
} from "./reconcile.ts";
import { Prober } from "./probe.ts";
import { Pacer } from "./requeue.ts";
import { StatusMemo } from "./status_memo.ts";
import type {
  CapacityPlacement,
  CapacityReport,
} from "../../capacity/check.ts";
import { CAPACITY_REPORT_TTL_MS, RecentMemo } from "../../capacity/memo.ts";

/** What the eviction controller needs. */
export interface EvictionControllerDeps {
  /** The Nova client. */
  nova: NovaClient;
  /** Limit settings from the flags, in force while there is no EvictionPolicy `default`. */
  flagSettings: LimitSettings;
  /** Poll interval while migrations are in flight (`--poll-interval`), real ms. */
  pollIntervalMs: number;
  /** Overrides of the planner's options (grace period, retries, ...). */
  planOptions?: Partial<PlanOptions>;
  /** Evictions reconciled at once (default 4). */
  maxConcurrentReconciles?: number;
  /** Nova calls of one pass at once (default 8). */
  actConcurrency?: number;
  /**
   * Poll interval when nothing can move without a person or a change
   * (default 10 poll intervals), real ms.
   */
  slowPollMs?: number;
  /** Time source (default the wall clock); tests pass the simulator's. */
  clock?: EvictionClock;
  /** Placement, for the capacity check before a host is disabled (none without it). */
  placement?: CapacityPlacement;
}

function positiveInt(value: number, what: string): void {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`${what} must be an integer >= 1, got ${value}`);
  }
}

/**
 * Registers the eviction controller. Call before `operator.start()`.
 *
 * The EvictionPolicy cache ignores the operator's label selector: the
 * policy is one cluster-wide object that every partition obeys.
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
  positiveInt(deps.pollIntervalMs, "pollIntervalMs");
  const maxConcurrent = deps.maxConcurrentReconciles ?? 4;
  positiveInt(maxConcurrent, "maxConcurrentReconciles");
  const actConcurrency = deps.actConcurrency ?? 8;
  positiveInt(actConcurrency, "actConcurrency");
  const slowPollMs = deps.slowPollMs ?? deps.pollIntervalMs * 10;
  positiveInt(slowPollMs, "slowPollMs");
  const rate = deps.clock?.rate ?? 1;
  if (!(rate > 0) || !Number.isFinite(rate)) {
    throw new RangeError(`clock.rate must be a number > 0, got ${rate}`);
  }

  const metrics = new EvictionMetrics(operator.metrics.registry);
  const pass: EvictionPassDeps = {
    nova: new CountedNova(deps.nova, metrics),
    flagSettings: deps.flagSettings,
    pollIntervalMs: deps.pollIntervalMs,
    slowPollMs,
    planOptions: deps.planOptions ?? {},
    clock: deps.clock ?? { now: () => Date.now() },
    ledger: new InFlightLedger(),
    memo: new StatusMemo(),
    pacer: new Pacer(),
    prober: new Prober(),
    metrics,
    actConcurrency,
    ...(deps.placement === undefined ? {} : {
      capacity: {
        placement: deps.placement,
        memo: new RecentMemo<CapacityReport>(CAPACITY_REPORT_TTL_MS),
      },
    }),
  };

  // The policy is cluster-wide: never partitioned by the label selector.
  operator.watch(EvictionPolicyKind, { labelSelector: null });
  const evictions = operator.cache(EvictionKind);
  const evictionsOf = (host: string | undefined): string[] =>
    host === undefined ? [] : evictions
      .list((e: Eviction) =>
        e.spec.hypervisor === host && e.status?.finishedAt === undefined
      )
      .map((e) => e.metadata?.name ?? "");

  operator.reconcile(EvictionKind, (ctx) => reconcileEviction(ctx, pass), {
    name: "eviction",
    maxConcurrent,
    // Our own status writes must not trigger extra passes (extra Nova calls).
    ignoreStatusUpdates: true,
    watches: [
      related(EvictionPolicyKind, () => "all"),
      related(HypervisorKind, (hv) => evictionsOf(hv.metadata?.name)),
    ],
  });
  operator.finalize(EvictionKind, (ctx) => finalizeEviction(ctx, pass));
}
