/**
 * What Nova's server and migration states mean to a drain. Pure lookups,
 * kept apart from the planner so that the tables are easy to audit against
 * Nova's `vm_states.py`, `task_states.py` and `objects/migration.py`.
 *
 * @module
 */

/** How a VM is moved off the host. */
export type MigrationKind = "live" | "cold";

/** The phase of one Nova migration record, as far as a drain cares. */
export type MigrationPhase = "in_progress" | "failed" | "done";

/** Server statuses that only a person can resolve; the drain never loops on them. */
const NEEDS_PERSON_STATUSES: ReadonlySet<string> = new Set([
  "SUSPENDED",
  "RESCUE",
  "SHELVED",
  "SHELVED_OFFLOADED",
  "UNKNOWN",
  // A VERIFY_RESIZE VM *listed on this host* was resized onto it (instance
  // host is the destination after finish_resize); its owner must confirm or
  // revert. Our own cold migrations show VERIFY_RESIZE on the destination.
  "VERIFY_RESIZE",
]);

/** Server statuses of VMs that are being deleted. */
const DELETED_STATUSES: ReadonlySet<string> = new Set([
  "DELETED",
  "SOFT_DELETED",
]);

/** Task states of VMs that are being deleted. */
const DELETING_TASK_STATES: ReadonlySet<string> = new Set([
  "deleting",
  "soft-deleting",
]);

const MIGRATION_IN_PROGRESS: ReadonlySet<string> = new Set([
  // live-migration
  "queued",
  "preparing",
  "running",
  "post-migrating",
  "accepted",
  // cold migration / resize
  "pre-migrating",
  "migrating",
  "confirming",
  "reverting",
]);

const MIGRATION_FAILED: ReadonlySet<string> = new Set([
  "error",
  "failed",
  "cancelled",
  "reverted",
]);

const MIGRATION_DONE: ReadonlySet<string> = new Set([
  "completed",
  "finished",
  "confirmed",
  "done",
]);

/** Live migration record statuses that `DELETE /servers/{id}/migrations/{mid}` can abort (2.65+). */
const ABORTABLE: ReadonlySet<string> = new Set([
  "queued",
  "preparing",
  "running",
]);

/**
 * The phase of a migration record status. Statuses this table does not know
 * count as in progress: treating an unknown state as finished could trigger
 * a second migration of the same VM, which is the one thing a drain must
 * never do; a stuck one is reported by the migration timeout instead.
 *
 * @example
 * ```ts
 * import { migrationPhase } from "./nova_states.ts";
 * console.assert(migrationPhase("queued") === "in_progress");
 * console.assert(migrationPhase("error") === "failed");
 * console.assert(migrationPhase("completed") === "done");
 * ```
 */
export function migrationPhase(status: string): MigrationPhase {
  const s = status.toLowerCase();
  if (MIGRATION_IN_PROGRESS.has(s)) return "in_progress";
  if (MIGRATION_FAILED.has(s)) return "failed";
  if (MIGRATION_DONE.has(s)) return "done";
  return "in_progress";
}

/** Record statuses of a migration Nova holds before its copy begins. */
const NOT_YET_COPYING: ReadonlySet<string> = new Set(["accepted", "queued"]);

/**
 * Whether Nova still holds a migration before its copy: `accepted` (the
 * conductor has not scheduled it) or `queued` (behind the source host's
 * `max_concurrent_live_migrations`). Such a record is waiting, not stuck:
 * the migration timeout runs from when its copy began.
 *
 * @example
 * ```ts
 * import { waitingInNova } from "./nova_states.ts";
 * console.assert(waitingInNova("queued"));
 * console.assert(!waitingInNova("running"));
 * ```
 */
export function waitingInNova(status: string): boolean {
  return NOT_YET_COPYING.has(status.toLowerCase());
}

/**
 * Whether a live migration in this record status can be aborted by Nova.
 *
 * @example
 * ```ts
 * import { isAbortable } from "./nova_states.ts";
 * console.assert(isAbortable("running"));
 * console.assert(!isAbortable("post-migrating"));
 * ```
 */
export function isAbortable(status: string): boolean {
  return ABORTABLE.has(status.toLowerCase());
}

/**
 * The kind of a migration record's `migration_type`: only `live-migration`
 * is live; `migration`, `resize` and `evacuation` move a VM cold.
 *
 * @example
 * ```ts
 * import { kindOfMigrationType } from "./nova_states.ts";
 * console.assert(kindOfMigrationType("live-migration") === "live");
 * console.assert(kindOfMigrationType("migration") === "cold");
 * ```
 */
export function kindOfMigrationType(migrationType: string): MigrationKind {
  return migrationType.toLowerCase() === "live-migration" ? "live" : "cold";
}

/**
 * Whether a record's migration_type is what a drain's start of `kind`
 * creates: `live-migration` for live, `migration` for cold (a `resize` is
 * always a user's own).
 *
 * @example
 * ```ts
 * import { isOurKind } from "./nova_states.ts";
 * console.assert(isOurKind("migration", "cold"));
 * console.assert(!isOurKind("resize", "cold"));
 * ```
 */
export function isOurKind(
  migrationType: string,
  kind: MigrationKind | undefined,
): boolean {
  const t = migrationType.toLowerCase();
  return kind === "live" ? t === "live-migration" : t === "migration";
}

/**
 * Whether the server's own state says a migration is running: status
 * MIGRATING or RESIZE, or task_state `migrating` or `resize_*`. Returns the
 * kind, or undefined when the server is not migrating.
 *
 * @example
 * ```ts
 * import { inFlightKindOfServer } from "./nova_states.ts";
 * console.assert(inFlightKindOfServer("MIGRATING", "migrating") === "live");
 * console.assert(inFlightKindOfServer("ACTIVE", "resize_prep") === "cold");
 * console.assert(inFlightKindOfServer("ACTIVE", null) === undefined);
 * ```
 */
export function inFlightKindOfServer(
  status: string,
  taskState: string | null | undefined,
): MigrationKind | undefined {
  const s = status.toUpperCase();
  const t = (taskState ?? "").toLowerCase();
  if (s === "MIGRATING" || t === "migrating") return "live";
  if (s === "RESIZE" || t.startsWith("resize_")) return "cold";
  return undefined;
}

/**
 * Whether the VM is being deleted (task_state deleting, or already DELETED).
 *
 * @example
 * ```ts
 * import { isBeingDeleted } from "./nova_states.ts";
 * console.assert(isBeingDeleted("ACTIVE", "deleting"));
 * console.assert(!isBeingDeleted("ACTIVE", null));
 * ```
 */
export function isBeingDeleted(
  status: string,
  taskState: string | null | undefined,
): boolean {
  return DELETED_STATUSES.has(status.toUpperCase()) ||
    DELETING_TASK_STATES.has((taskState ?? "").toLowerCase());
}

/**
 * Whether only a person can make this VM movable (SUSPENDED, RESCUE,
 * SHELVED, SHELVED_OFFLOADED, UNKNOWN, or an incoming VERIFY_RESIZE).
 *
 * @example
 * ```ts
 * import { needsPerson } from "./nova_states.ts";
 * console.assert(needsPerson("SUSPENDED"));
 * console.assert(!needsPerson("ACTIVE"));
 * ```
 */
export function needsPerson(status: string): boolean {
  return NEEDS_PERSON_STATUSES.has(status.toUpperCase());
}

/**
 * How the drain moves a VM in this status: ACTIVE and PAUSED live, SHUTOFF
 * cold; undefined for every other status (not movable right now).
 *
 * @example
 * ```ts
 * import { startKindOfStatus } from "./nova_states.ts";
 * console.assert(startKindOfStatus("PAUSED") === "live");
 * console.assert(startKindOfStatus("SHUTOFF") === "cold");
 * console.assert(startKindOfStatus("BUILD") === undefined);
 * ```
 */
export function startKindOfStatus(status: string): MigrationKind | undefined {
  const s = status.toUpperCase();
  if (s === "ACTIVE" || s === "PAUSED") return "live";
  if (s === "SHUTOFF") return "cold";
  return undefined;
}

/** What a 409 on a migration start means. */
export type ConflictKind =
  /** A task runs on the VM (e.g. task_state migrating): look at it. */
  | "busy"
  /** The VM's state does not allow the action (e.g. vm_state stopped): re-plan. */
  | "wrong_state"
  /** The VM cannot be moved this way (vTPM, SEV, locked, ...): skip it. */
  | "unsupported";

/**
 * Reads Nova's 409 message on `os-migrateLive` or `migrate`: Nova answers
 * 409 for an instance in the wrong task_state ("... while it is in
 * task_state migrating"), in the wrong vm_state ("... while it is in
 * vm_state stopped"), and for instances the operation is not supported for
 * (`OperationNotSupportedForVTPM`, `...ForSEV`, a locked instance).
 *
 * @example
 * ```ts
 * import { conflictKind } from "./nova_states.ts";
 * console.assert(conflictKind("Cannot 'os-migrateLive' instance a while it is in task_state migrating") === "busy");
 * console.assert(conflictKind("Cannot 'os-migrateLive' instance a while it is in vm_state stopped") === "wrong_state");
 * console.assert(conflictKind("Operation 'live-migration' not supported for SEV-enabled instance (a).") === "unsupported");
 * ```
 */
export function conflictKind(message: string): ConflictKind {
  const m = message.toLowerCase();
  if (m.includes("task_state")) return "busy";
  if (m.includes("vm_state")) return "wrong_state";
  return "unsupported";
}

/**
 * Whether a refusal's cause may go away by itself: Nova's "No valid host
 * was found" (capacity may free up).
 *
 * @example
 * ```ts
 * import { isTransientRefusal } from "./nova_states.ts";
 * console.assert(isTransientRefusal("No valid host was found. There are not enough hosts available."));
 * console.assert(!isTransientRefusal("Invalid input for field/attribute host."));
 * ```
 */
export function isTransientRefusal(message: string): boolean {
  return /no valid host/i.test(message);
}
