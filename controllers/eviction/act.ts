/**
 * Acting on a plan: confirm resizes, abort stuck migrations and start
 * migrations against Nova, with bounded concurrency. Per-VM errors never
 * throw: a start becomes an outcome for `recordStarts`, or none at all when
 * Nova may have accepted it (no answer, 5xx, abort): such a start stays in
 * flight and the grace period settles it.
 *
 * @module
 */

import pLimit from "p-limit";
import type { Logger } from "../../framework/logger.ts";
import { ConflictError, OpenStackError } from "../../openstack/mod.ts";
import type { EvictionMetrics } from "./metrics.ts";
import type { CountedNova } from "./nova_calls.ts";
import type { Plan, StartAction } from "./plan.ts";
import type { StartOutcome } from "./record_starts.ts";
import { errText, type PendingEvent } from "./report.ts";

/** What acting needs. */
export interface ActDeps {
  /** Nova. */
  nova: CountedNova;
  /** Metrics (migrations started). */
  metrics: EvictionMetrics;
  /** Nova calls at once. */
  actConcurrency: number;
}

/**
 * Carries out the plan's confirms, aborts and starts; returns the known
 * start outcomes and appends Events to `events`.
 *
 * @example
 * ```ts ignore
 * const outcomes = await actOnPlan(plan, deps, log, signal, events);
 * const { status } = recordStarts(plan, outcomes, now, options);
 * ```
 */
export async function actOnPlan(
  plan: Plan,
  deps: ActDeps,
  log: Logger,
  signal: AbortSignal,
  events: PendingEvent[],
): Promise<StartOutcome[]> {
  const act = pLimit(deps.actConcurrency);
  const confirms = plan.confirmResize.map((id) =>
    act(async () => {
      try {
        const r = await deps.nova.confirmResize(id, signal);
        log.info({ serverId: id, requestId: r.requestId }, "resize confirmed");
        events.push({
          type: "Normal",
          reason: "ResizeConfirmed",
          message: `confirmed the cold migration of ${id}`,
        });
      } catch (err) {
        log.warn({ serverId: id, err: errText(err) }, "confirmResize failed");
      }
    })
  );
  const aborts = plan.abort.map((a) =>
    act(async () => {
      try {
        const r = await deps.nova.abortLiveMigration(
          a.id,
          Number(a.migrationId),
          signal,
        );
        log.warn(
          {
            serverId: a.id,
            migrationId: a.migrationId,
            requestId: r.requestId,
          },
          "stuck live migration aborted",
        );
        events.push({
          type: "Warning",
          reason: "MigrationAborted",
          message: `aborted stuck live migration ${a.migrationId} of ${a.id}`,
        });
      } catch (err) {
        log.warn({ serverId: a.id, err: errText(err) }, "abort failed");
      }
    })
  );
  const startOne = async (
    s: StartAction,
  ): Promise<StartOutcome | undefined> => {
    if (signal.aborted) return { id: s.id, outcome: "not_attempted" };
    try {
      const r = s.kind === "live"
        ? await deps.nova.liveMigrate(s.id, signal)
        : await deps.nova.coldMigrate(s.id, signal);
      log.info(
        {
          serverId: s.id,
          kind: s.kind,
          attempt: s.attempt,
          ramMb: s.ramMb,
          requestId: r.requestId,
        },
        "migration started",
      );
      deps.metrics.started.inc({ kind: s.kind });
      events.push({
        type: "Normal",
        reason: "MigrationStarted",
        message:
          `${s.kind} migration of ${s.id} started (attempt ${s.attempt}, ${s.ramMb} MB, request ${
            r.requestId ?? "unknown"
          })`,
      });
      return { id: s.id, outcome: "started" };
    } catch (err) {
      if (err instanceof ConflictError) {
        // Nova already has a migration of it in flight: never trigger twice.
        log.info(
          { serverId: s.id, requestId: err.requestId, err: err.message },
          "Nova answered 409: already in flight",
        );
        return { id: s.id, outcome: "conflict" };
      }
      const status = err instanceof OpenStackError ? err.status : undefined;
      if (status !== undefined && status >= 400 && status < 500) {
        return { id: s.id, outcome: "error", message: errText(err) };
      }
      // No answer, a 5xx or an abort: Nova may have accepted it. It stays
      // in flight and the grace period settles it on a later pass.
      log.warn(
        { serverId: s.id, err: errText(err) },
        "migration start outcome unknown",
      );
      return undefined;
    }
  };
  const outcomes = await Promise.all(
    plan.start.map((s) => act(() => startOne(s))),
  );
  await Promise.all([...confirms, ...aborts]);
  return outcomes.filter((o): o is StartOutcome => o !== undefined);
}
