/**
 * A migration Nova ended while its server still shows the task: real Zed does so when
 * `post_live_migration_at_destination` fails (Neutron 401 on an expired token), and
 * refuses a new start (409) until a person resets the state. It holds no slot.
 * @module
 */

import type { EvictionStatusInFlightItem } from "../../models/mod.ts";
import { parseNovaTime } from "../../openstack/nova_time.ts";
import {
  inFlightKindOfServer,
  kindOfMigrationType,
  migrationPhase,
} from "../../openstack/informer/nova_states.ts";
import type { PlanOptions } from "./plan_options.ts";
import type {
  ObservedMigration,
  ObservedServer,
} from "../../openstack/informer/snapshot.ts";
import { recordName } from "../../openstack/informer/nova_records.ts";

/** The start of a `status.skipped` reason for a stalled migration task. */
export const STALLED_PREFIX = "migration ended, task stuck: ";

/**
 * How long a server may show a task after its record ended: the clock skew plus the
 * settle allowance (real Nova clears the task first: only a raced look sees both).
 *
 * @example
 * ```ts
 * import { stallBoundMs } from "./stalled.ts";
 * import { DEFAULT_PLAN_OPTIONS } from "./plan_options.ts";
 * console.assert(stallBoundMs({ ...DEFAULT_PLAN_OPTIONS, settleMs: 6000 }) === 16_000);
 * ```
 */
export function stallBoundMs(options: PlanOptions): number {
  return options.clockSkewMs + (options.settleMs ?? 0);
}

/**
 * Since when (our clock) the server shows a task its latest record says has ended.
 * A later start of ours counts instead: Nova shows a retry's task before its record.
 *
 * @example
 * ```ts
 * import { stalledSinceMs } from "./stalled.ts";
 * const server = { id: "a", status: "MIGRATING", host: "h", taskState: "migrating", flavor: { ramMb: 1 } };
 * const record = { id: 7, instanceUuid: "a", migrationType: "live-migration", status: "completed",
 *   sourceCompute: "h", createdAt: "2026-01-01T00:00:00", updatedAt: "2026-01-01T00:01:00" };
 * console.assert(stalledSinceMs(server, record, undefined, 0) === Date.parse("2026-01-01T00:01:00Z"));
 * ```
 */
export function stalledSinceMs(
  server: ObservedServer,
  latest: ObservedMigration | undefined,
  inProgress: ObservedMigration | undefined,
  novaOffsetMs: number,
  ownStartMs?: number,
): number | undefined {
  const kind = inFlightKindOfServer(server.status, server.taskState);
  if (kind === undefined || inProgress !== undefined || latest === undefined) {
    return undefined;
  }
  if (migrationPhase(latest.status) === "in_progress") return undefined;
  if (kindOfMigrationType(latest.migrationType) !== kind) return undefined;
  const ended = parseNovaTime(latest.updatedAt ?? latest.createdAt);
  if (ended === undefined) return undefined;
  return Math.max(ended - novaOffsetMs, ownStartMs ?? -Infinity);
}

/**
 * The `status.skipped` reason for a server whose task outlived its record by more
 * than {@linkcode stallBoundMs}; else undefined (it still counts in flight).
 *
 * @example
 * ```ts
 * import { stalledReason } from "./stalled.ts";
 * import { DEFAULT_PLAN_OPTIONS } from "./plan_options.ts";
 * const server = { id: "a", status: "MIGRATING", host: "h", taskState: "migrating", flavor: { ramMb: 1 } };
 * const record = { id: 7, instanceUuid: "a", migrationType: "live-migration", status: "completed",
 *   sourceCompute: "h", createdAt: "2026-01-01T00:00:00", updatedAt: "2026-01-01T00:01:00" };
 * const end = Date.parse("2026-01-01T00:01:00Z");
 * console.assert(stalledReason(server, record, undefined, end + 1000, DEFAULT_PLAN_OPTIONS) === undefined);
 * console.assert(stalledReason(server, record, undefined, end + 60_000, DEFAULT_PLAN_OPTIONS) !== undefined);
 * ```
 */
export function stalledReason(
  server: ObservedServer,
  latest: ObservedMigration | undefined,
  inProgress: ObservedMigration | undefined,
  nowMs: number,
  options: PlanOptions,
  entry?: EvictionStatusInFlightItem,
): string | undefined {
  const ownStartMs = entry === undefined || entry.adopted === true
    ? undefined
    : parseNovaTime(entry.startedAt);
  const since = stalledSinceMs(
    server,
    latest,
    inProgress,
    options.novaClockOffsetMs ?? 0,
    ownStartMs,
  );
  if (since === undefined || latest === undefined) return undefined;
  if (nowMs - since <= stallBoundMs(options)) return undefined;
  const name = server.name ? `${server.name} (${server.id})` : server.id;
  return `${STALLED_PREFIX}server ${name} still shows status ` +
    `${server.status.toUpperCase()}, task_state ${
      server.taskState ?? "none"
    }, but its ${recordName(latest)} ended ${latest.status} at ` +
    `${latest.updatedAt ?? latest.createdAt} (Nova time): Nova is not ` +
    `moving it and will not by itself (a failed post-migration step, see ` +
    `its instance action); a person checks which host runs it and resets ` +
    `its state (nova reset-state --active ${server.id}); the drain then ` +
    `moves it or counts it gone`;
}
