/**
 * What a pass tells people: Events on the Eviction and the controller's metrics.
 * @module
 */

import type { Logger } from "../../framework/logger.ts";
import type { EvictionStatus } from "../../models/mod.ts";
import type { EvictionMetrics, KindLabel } from "./metrics.ts";
import type { Plan } from "./plan_types.ts";
import { completedNote, type NoteCounts, requestNote } from "./event_notes.ts";
import { notConvergingText } from "./conditions.ts";

/** An Event to record on the Eviction. */
export interface PendingEvent {
  type: "Normal" | "Warning";
  /** CamelCase. */
  reason: string;
  message: string;
  /** A routine summary: one Event per reason, updated (framework/events.ts). */
  series?: boolean;
}

/** What {@linkcode reportPass} looks at. */
export interface PassReport {
  host: string;
  plan: Plan;
  before: EvictionStatus;
  next: EvictionStatus;
  now: Date;
}

/**
 * Counts the pass's outcomes in the metrics; returns the Events, and whether the drain finished or reopened.
 *
 * @example
 * ```ts ignore
 * const { events, finishedNow } = reportPass(report, deps, log);
 * ```
 */
export function reportPass(
  r: PassReport,
  metrics: EvictionMetrics,
  log: Logger,
): { events: PendingEvent[]; finishedNow: boolean; reopened: boolean } {
  const events: PendingEvent[] = [];
  migrationEvents(r, metrics, log, events);
  instanceEvents(r, events);
  convergenceEvents(r, events);
  return { events, ...drainEvents(r, metrics, events) };
}

/** Failed and finished migrations; one `MigrationsCompleted` for the finished. */
function migrationEvents(
  r: PassReport,
  metrics: EvictionMetrics,
  log: Logger,
  events: PendingEvent[],
): void {
  const { host, plan, now } = r;
  const prevInFlight = new Map(
    (r.before.inFlight ?? []).map((e) => [e.id, e]),
  );
  const startKind = new Map(plan.start.map((s) => [s.id, s.kind]));
  const kindOf = (id: string): KindLabel =>
    prevInFlight.get(id)?.kind ?? startKind.get(id) ?? "unknown";
  for (const f of plan.failed) {
    metrics.failed.inc({ kind: kindOf(f.id) });
    log.warn(
      { serverId: f.id, attempts: f.attempts, exhausted: f.exhausted },
      `migration failed: ${f.reason}`,
    );
    events.push({
      type: "Warning",
      reason: "MigrationFailed",
      message: `${f.id} (attempt ${f.attempts}, ${
        f.transient ? "transient" : "permanent"
      }${f.exhausted ? ", no more retries" : ""}): ${f.reason}`,
    });
  }
  for (const id of plan.done) {
    const kind = kindOf(id);
    metrics.succeeded.inc({ kind });
    const startedAt = Date.parse(prevInFlight.get(id)?.startedAt ?? "");
    if (!Number.isNaN(startedAt)) {
      metrics.migrationDuration.observe(
        { kind },
        Math.max(0, now.getTime() - startedAt) / 1000,
      );
    }
    log.info({ serverId: id, kind }, "migration finished");
  }
  if (plan.done.length > 0) {
    events.push({
      type: "Normal",
      reason: "MigrationsCompleted",
      message: completedNote(host, plan.done, countsOf(r.next)),
      series: true,
    });
  }
}

/** Where the drain stands after the pass, for the summaries' notes. */
export function countsOf(status: EvictionStatus): NoteCounts {
  return {
    inFlight: status.inFlightCount ?? 0,
    outstanding: status.outstandingCount ?? 0,
    migrated: status.migratedCount ?? 0,
  };
}

/** VMs deleted, found, newly skipped or stuck: an Event each. */
function instanceEvents(r: PassReport, events: PendingEvent[]): void {
  const { host, plan } = r;
  const add = (type: "Normal" | "Warning", reason: string, message: string) =>
    events.push({ type, reason, message });
  for (const id of plan.gone) {
    add("Normal", "InstanceGone", `${id} was deleted during the drain`);
  }
  for (const id of plan.movedByOthers) {
    add(
      "Normal",
      "InstanceMovedAway",
      `${id} left host ${host}, moved by someone else (not counted as migrated)`,
    );
  }
  for (const id of plan.newlyFound) {
    add(
      "Normal",
      "InstanceFound",
      plan.arriving.includes(id)
        ? `${id} is arriving on host ${host}; it is drained once it lands`
        : `${id} appeared on host ${host}; it joins the queue`,
    );
  }
  const skippedBefore = new Set((r.before.skipped ?? []).map((s) => s.id));
  for (const s of plan.skipped) {
    if (!skippedBefore.has(s.id)) {
      add("Warning", "InstanceSkipped", `${s.id}: ${s.reason}`);
    }
  }
  for (const s of plan.stuck) {
    add(
      "Warning",
      "MigrationStuck",
      `${s.kind} migration of ${s.id} in flight since ${s.startedAt}`,
    );
  }
}

/** A copy newly not converging (once per copy), each person's request, and a VM left for a person. */
function convergenceEvents(r: PassReport, events: PendingEvent[]): void {
  const { plan } = r;
  const marked = new Set(
    (r.before.inFlight ?? []).filter((e) => e.notConverging === true).map((
      e,
    ) => `${e.id}/${e.migrationId}`),
  );
  for (const n of plan.notConverging) {
    if (marked.has(`${n.id}/${n.migrationId}`)) continue;
    events.push({
      type: "Warning",
      reason: "NotConverging",
      message: notConvergingText(n),
    });
  }
  for (const o of plan.requestOutcomes) {
    events.push({
      type: o.outcome === "Sent" ? "Normal" : "Warning",
      reason: `${o.action}Requested`,
      message: requestNote(o),
    });
  }
  const aborted = new Map((r.next.aborted ?? []).map((a) => [a.id, a]));
  for (const f of plan.failed) {
    const tries = aborted.get(f.id)?.tries;
    if (!f.exhausted || tries === undefined) continue;
    events.push({
      type: "Warning",
      reason: "VmLeftForPerson",
      message:
        `${f.id} is left for a person after ${tries} aborted copies: ${f.reason}; kubectl evictor retry re-arms it`,
    });
  }
}

function drainEvents(
  r: PassReport,
  metrics: EvictionMetrics,
  events: PendingEvent[],
): { finishedNow: boolean; reopened: boolean } {
  const { host, next, now } = r;
  const status = r.before;
  const finishedNow = next.finishedAt !== undefined &&
    status.finishedAt === undefined;
  if (finishedNow) {
    const startedMs = Date.parse(next.startedAt ?? "");
    if (!Number.isNaN(startedMs)) {
      metrics.drainDuration.observe(
        Math.max(0, now.getTime() - startedMs) / 1000,
      );
    }
    events.push({
      type: "Normal",
      reason: "DrainFinished",
      message: `host ${host} is empty: ${next.migratedCount ?? 0} VMs migrated`,
    });
  }
  const reopened = status.finishedAt !== undefined &&
    next.finishedAt === undefined;
  if (reopened) {
    events.push({
      type: "Warning",
      reason: "DrainReopened",
      message: `host ${host} is not empty any more: ${
        next.outstandingCount ?? 0
      } VMs on or heading to it; draining again`,
    });
  }
  return { finishedNow, reopened };
}
