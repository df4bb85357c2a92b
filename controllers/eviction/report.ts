/**
 * What a pass tells people: Events on the Eviction and the controller's
 * metrics, for the plan's outcomes (failures, finished and vanished VMs,
 * new and skipped ones, stuck migrations, the end of the drain); and what
 * the requeue model learns from finished migrations.
 *
 * @module
 */

import type { EventType } from "../../framework/events.ts";
import type { Logger } from "../../framework/logger.ts";
import type { EvictionStatus } from "../../models/mod.ts";
import { type Migration, OpenStackError } from "../../openstack/mod.ts";
import type { FailureReport } from "./classify.ts";
import type { EvictionMetrics, KindLabel } from "./metrics.ts";
import type { Plan } from "./plan.ts";
import { type Pacer, recordDurationMs } from "./requeue.ts";

/** An Event to record on the Eviction at the end of the pass. */
export interface PendingEvent {
  /** Normal or Warning. */
  type: EventType;
  /** CamelCase reason. */
  reason: string;
  /** Message. */
  message: string;
}

/**
 * An error's message with its Nova request id, for logs and Events.
 *
 * @example
 * ```ts
 * import { errText } from "./report.ts";
 * console.assert(errText(new Error("boom")) === "boom");
 * ```
 */
export function errText(err: unknown): string {
  if (err instanceof OpenStackError) {
    return err.requestId === undefined
      ? err.message
      : `${err.message} (request ${err.requestId})`;
  }
  return err instanceof Error ? err.message : String(err);
}

/** What {@linkcode reportPass} looks at. */
export interface PassReport {
  /** The Eviction key. */
  key: string;
  /** The drained host. */
  host: string;
  /** The plan. */
  plan: Plan;
  /** Failed starts (from `recordStarts`). */
  startFailures: readonly FailureReport[];
  /** The status before the pass. */
  before: EvictionStatus;
  /** The status after it. */
  next: EvictionStatus;
  /** The migration records of the pass. */
  migrations: readonly Migration[];
  /** The pass's time. */
  now: Date;
}

/**
 * Counts the pass's outcomes in the metrics, teaches the requeue model the
 * finished migrations' durations, and returns the Events to record.
 * `finishedNow` says whether this pass emptied the host.
 *
 * @example
 * ```ts ignore
 * const { events, finishedNow } = reportPass(report, deps, log);
 * ```
 */
export function reportPass(
  r: PassReport,
  deps: { metrics: EvictionMetrics; pacer: Pacer },
  log: Logger,
): { events: PendingEvent[]; finishedNow: boolean } {
  const { key, host, plan, next, migrations, now } = r;
  const status = r.before;
  const events: PendingEvent[] = [];
  const prevInFlight = new Map((status.inFlight ?? []).map((e) => [e.id, e]));
  const startKind = new Map(plan.start.map((s) => [s.id, s.kind]));
  const kindOf = (id: string): KindLabel =>
    prevInFlight.get(id)?.kind ?? startKind.get(id) ?? "unknown";
  for (const f of [...plan.failed, ...r.startFailures]) {
    deps.metrics.failed.inc({ kind: kindOf(f.id) });
    log.warn(
      { serverId: f.id, attempts: f.attempts, exhausted: f.exhausted },
      `migration failed: ${f.reason}`,
    );
    events.push({
      type: "Warning",
      reason: "MigrationFailed",
      message: `${f.id} (attempt ${f.attempts}${
        f.exhausted ? ", no more retries" : ""
      }): ${f.reason}`,
    });
  }
  for (const id of plan.done) {
    const kind = kindOf(id);
    deps.metrics.succeeded.inc({ kind });
    const startedAt = Date.parse(prevInFlight.get(id)?.startedAt ?? "");
    if (!Number.isNaN(startedAt)) {
      deps.metrics.migrationDuration.observe(
        { kind },
        Math.max(0, now.getTime() - startedAt) / 1000,
      );
    }
    const ramMb = deps.pacer.ramOf(key, id);
    const record = migrations.filter((m) =>
      m.instanceUuid === id && m.sourceCompute === host
    ).sort((a, b) =>
      b.id - a.id
    )[0];
    const took = record === undefined
      ? undefined
      : recordDurationMs(deps.pacer, key, record);
    if (ramMb !== undefined && took !== undefined) {
      deps.pacer.observe(key, ramMb, took);
    }
    events.push({
      type: "Normal",
      reason: "MigrationFinished",
      message: `${id} left host ${host}`,
    });
  }
  for (const id of plan.gone) {
    events.push({
      type: "Normal",
      reason: "InstanceGone",
      message: `${id} was deleted during the drain`,
    });
  }
  for (const id of plan.newlyFound) {
    events.push({
      type: "Normal",
      reason: "InstanceFound",
      message: `${id} appeared on host ${host}; it joins the queue`,
    });
  }
  const skippedBefore = new Set((status.skipped ?? []).map((s) => s.id));
  for (const s of plan.skipped) {
    if (skippedBefore.has(s.id)) continue;
    events.push({
      type: "Warning",
      reason: "InstanceSkipped",
      message: `${s.id}: ${s.reason}`,
    });
  }
  for (const s of plan.stuck) {
    events.push({
      type: "Warning",
      reason: "MigrationStuck",
      message: `${s.kind} migration of ${s.id} in flight since ${s.startedAt}`,
    });
  }
  const finishedNow = next.finishedAt !== undefined &&
    status.finishedAt === undefined;
  if (finishedNow) {
    const startedMs = Date.parse(next.startedAt ?? "");
    if (!Number.isNaN(startedMs)) {
      deps.metrics.drainDuration.observe(
        Math.max(0, now.getTime() - startedMs) / 1000,
      );
    }
    events.push({
      type: "Normal",
      reason: "DrainFinished",
      message: `host ${host} is empty: ${next.migratedCount ?? 0} VMs migrated`,
    });
  }

  return { events, finishedNow };
}
