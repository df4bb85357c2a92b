/**
 * What Nova's versioned notifications mean to a host's view (checked against
 * Nova Zed's `compute/manager.py`, `conductor/manager.py`). Nova sends no
 * event when a queued migration begins to prepare, nor when the copy starts.
 * @module
 */

import type { NovaNotification } from "../notification_types.ts";

/** Record statuses in the order a migration passes them (higher: later). */
const RANK: Readonly<Record<string, number>> = {
  accepted: 0,
  queued: 0,
  "pre-migrating": 1,
  preparing: 1,
  migrating: 2,
  running: 2,
  "post-migrating": 3,
  finished: 4,
  confirming: 5,
  reverting: 5,
  completed: 6,
  failed: 6,
  error: 6,
  cancelled: 6,
  confirmed: 6,
  reverted: 6,
  done: 6,
};

/**
 * The rank of a record status; unknown ones rank 0 (a notified step replaces it).
 *
 * @example
 * ```ts
 * import { statusRank } from "./notified_events.ts";
 * console.assert(statusRank("running") > statusRank("preparing"));
 * console.assert(statusRank("completed") === statusRank("error"));
 * ```
 */
export function statusRank(status: string): number {
  return RANK[status.toLowerCase()] ?? 0;
}

/**
 * Whether a record in this status is over (no later step follows).
 *
 * @example
 * ```ts
 * import { recordEnded } from "./notified_events.ts";
 * console.assert(recordEnded("completed") && !recordEnded("finished"));
 * ```
 */
export function recordEnded(status: string): boolean {
  return statusRank(status) >= 6;
}

/** One step of a migration, as a notification tells it. */
export interface MigrationStep {
  migrationType: "live-migration" | "migration";
  /** The record status the step leaves (undefined: no change of its own). */
  status: string | undefined;
  /** Its publisher is the destination. */
  onDestination: boolean;
  /** The payload's host is the source (false once the VM moved). */
  payloadIsSource: boolean;
}

const LIVE = "instance.live_migration_";
const step = (
  status: string | undefined,
  onDestination: boolean,
  payloadIsSource = true,
  migrationType: MigrationStep["migrationType"] = "live-migration",
): MigrationStep => ({
  migrationType,
  status,
  onDestination,
  payloadIsSource,
});

const STEPS: Readonly<Record<string, MigrationStep>> = {
  [`${LIVE}pre.start`]: step("preparing", true),
  [`${LIVE}pre.end`]: step("running", true),
  [`${LIVE}post.start`]: step("running", false),
  [`${LIVE}post_dest.start`]: step("running", true, false),
  [`${LIVE}post_dest.end`]: step("running", true, false),
  [`${LIVE}post.end`]: step("completed", false),
  [`${LIVE}rollback.start`]: step(undefined, false),
  [`${LIVE}rollback.end`]: step("failed", false),
  [`${LIVE}rollback_dest.start`]: step(undefined, true),
  [`${LIVE}rollback_dest.end`]: step(undefined, true),
  [`${LIVE}abort.start`]: step(undefined, false),
  [`${LIVE}abort.end`]: step("cancelled", false),
  [`${LIVE}force_complete.start`]: step(undefined, false),
  [`${LIVE}force_complete.end`]: step(undefined, false),
  "instance.resize_prep.start": step("pre-migrating", true, true, "migration"),
  "instance.resize_prep.end": step("pre-migrating", true, true, "migration"),
  "instance.resize.start": step("migrating", false, true, "migration"),
  "instance.resize.end": step("post-migrating", false, true, "migration"),
  "instance.resize_finish.start": step(
    "post-migrating",
    true,
    false,
    "migration",
  ),
  "instance.resize_finish.end": step("finished", true, false, "migration"),
  "instance.resize_confirm.start": step("confirming", false, true, "migration"),
  "instance.resize_confirm.end": step("confirmed", false, true, "migration"),
  "instance.resize_revert.start": step("reverting", true, false, "migration"),
  "instance.resize_revert.end": step("reverted", false, true, "migration"),
};

/** The conductor's failure of a migration (no valid host, a failed pre-check). */
export const MIGRATE_SERVER_ERROR = "compute_task.migrate_server.error";

/**
 * The migration step an event is, if any; `cold` says which kind
 * `compute_task.migrate_server.error` ends.
 *
 * @example
 * ```ts
 * import { migrationStepOf } from "./notified_events.ts";
 * console.assert(migrationStepOf("instance.live_migration_post.end", false)?.status === "completed");
 * console.assert(migrationStepOf("instance.update", false) === undefined);
 * ```
 */
export function migrationStepOf(
  eventType: string,
  cold: boolean,
): MigrationStep | undefined {
  if (eventType === MIGRATE_SERVER_ERROR) {
    return step("error", false, true, cold ? "migration" : "live-migration");
  }
  return STEPS[eventType];
}

/**
 * Events whose payload is the instance as just saved. Others are taken
 * where they are sent: `live_migration_post.end` still shows the source.
 */
const SNAPSHOTS: ReadonlySet<string> = new Set([
  "instance.update",
  "instance.create.end",
  "instance.delete.end",
  `${LIVE}post_dest.end`,
]);

/**
 * Whether the event's payload can be taken for the VM's host and states.
 *
 * @example
 * ```ts
 * import { isSnapshot } from "./notified_events.ts";
 * console.assert(isSnapshot("instance.update"));
 * console.assert(!isSnapshot("instance.live_migration_post.end"));
 * ```
 */
export function isSnapshot(eventType: string): boolean {
  return SNAPSHOTS.has(eventType);
}

/** The event says the VM is gone. */
export function isDeletion(n: NovaNotification): boolean {
  return n.eventType === "instance.delete.end" ||
    n.instance?.vmState?.toLowerCase() === "deleted";
}

/** The server id an event is about. */
export function subjectOf(n: NovaNotification): string | undefined {
  return n.instance?.uuid ?? n.task?.instanceUuid;
}

/** Order of events at the same timestamp: the step that comes later in a migration sorts later. */
function tieRank(n: NovaNotification): number {
  const s = migrationStepOf(n.eventType, false);
  if (s !== undefined) return statusRank(s.status ?? "") * 2 + 1;
  return n.eventType === "instance.update" ? 12 : 0;
}

/**
 * Total order of events (timestamp, migration step, message id): a view is
 * independent of the order they arrived in.
 *
 * @example
 * ```ts
 * import { byEventOrder } from "./notified_events.ts";
 * const n = (messageId: string, timestampMs: number) => ({ messageId, eventType: "instance.update",
 *   publisherId: "nova-compute:h", publisherHost: "h", timestampMs, priority: "info" as const });
 * console.assert([n("b", 2), n("a", 1)].sort(byEventOrder)[0]?.messageId === "a");
 * ```
 */
export function byEventOrder(a: NovaNotification, b: NovaNotification): number {
  if (a.timestampMs !== b.timestampMs) return a.timestampMs - b.timestampMs;
  const r = tieRank(a) - tieRank(b);
  if (r !== 0) return r;
  return a.messageId < b.messageId ? -1 : a.messageId > b.messageId ? 1 : 0;
}

/** Nova's API status of `vm_state` with `task_state` (`api/openstack/common.py` _STATE_MAP). */
const DEFAULT_STATUS: Readonly<Record<string, string>> = {
  active: "ACTIVE",
  building: "BUILD",
  stopped: "SHUTOFF",
  resized: "VERIFY_RESIZE",
  paused: "PAUSED",
  suspended: "SUSPENDED",
  rescued: "RESCUE",
  error: "ERROR",
  deleted: "DELETED",
  soft_deleted: "SOFT_DELETED",
  shelved: "SHELVED",
  shelved_offloaded: "SHELVED_OFFLOADED",
};

/**
 * The API status Nova shows for a vm_state and task_state.
 *
 * @example
 * ```ts
 * import { apiStatusOf } from "./notified_events.ts";
 * console.assert(apiStatusOf("active", "migrating") === "MIGRATING");
 * console.assert(apiStatusOf("stopped", "resize_prep") === "RESIZE");
 * console.assert(apiStatusOf("stopped", null) === "SHUTOFF");
 * ```
 */
export function apiStatusOf(
  vmState: string | null,
  taskState: string | null,
): string {
  const vm = (vmState ?? "").toLowerCase();
  const task = (taskState ?? "").toLowerCase();
  const moving = vm === "active" || vm === "paused";
  if (moving && task === "migrating") return "MIGRATING";
  if ((vm === "active" || vm === "stopped") && task.startsWith("resize_")) {
    return "RESIZE";
  }
  if (
    (vm === "active" || vm === "stopped" || vm === "error") &&
    task.startsWith("rebuild")
  ) return "REBUILD";
  if (vm === "active" && task.startsWith("reboot")) {
    return task.includes("hard") ? "HARD_REBOOT" : "REBOOT";
  }
  if (vm === "resized" && task === "resize_reverting") return "REVERT_RESIZE";
  return DEFAULT_STATUS[vm] ?? "UNKNOWN";
}
