/**
 * What Nova's server and migration states mean to a drain; tables to audit
 * against Nova's `vm_states.py`, `task_states.py`, `objects/migration.py`.
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
  // A VERIFY_RESIZE VM *listed on this host* was resized onto it: its
  // owner must confirm or revert (ours show it on the destination).
  "VERIFY_RESIZE",
]);

const DELETED_STATUSES: ReadonlySet<string> = new Set([
  "DELETED",
  "SOFT_DELETED",
]);

const DELETING_TASK_STATES: ReadonlySet<string> = new Set([
  "deleting",
  "soft-deleting",
]);

const MIGRATION_IN_PROGRESS: ReadonlySet<string> = new Set([
  // live-migration
  "queued",
  "preparing",
  "running",
  // after force_complete where post-copy is permitted: no abort any more
  "running (post-copy)",
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

/** What `DELETE /servers/{id}/migrations/{mid}` can abort (2.65+). */
const ABORTABLE: ReadonlySet<string> = new Set([
  "queued",
  "preparing",
  "running",
]);

/**
 * The phase of a migration record status; unknown ones count as in
 * progress (read as finished, they could start a second migration).
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

/**
 * Whether Nova holds a migration before its copy (`accepted`, `queued`):
 * waiting, not stuck; the migration timeout runs from the copy's start.
 *
 * @example
 * ```ts
 * import { waitingInNova } from "./nova_states.ts";
 * console.assert(waitingInNova("queued"));
 * console.assert(!waitingInNova("running"));
 * ```
 */
export function waitingInNova(status: string): boolean {
  const s = status.toLowerCase();
  return s === "accepted" || s === "queued";
}

/**
 * Whether Nova has not begun to copy the VM's memory: waiting or `preparing`
 * (Nova's completion timeout runs from `running`; so does ours).
 *
 * @example
 * ```ts
 * import { beforeCopy } from "./nova_states.ts";
 * console.assert(beforeCopy("preparing"));
 * console.assert(!beforeCopy("running"));
 * ```
 */
export function beforeCopy(status: string): boolean {
  return waitingInNova(status) || status.toLowerCase() === "preparing";
}

/**
 * Whether Nova can abort a live migration in this record status.
 *
 * @example
 * ```ts
 * import { isAbortable } from "./nova_states.ts";
 * console.assert(isAbortable("running"));
 * console.assert(!isAbortable("post-migrating"));
 * console.assert(!isAbortable("running (post-copy)"));
 * ```
 */
export function isAbortable(status: string): boolean {
  return ABORTABLE.has(status.toLowerCase());
}

/**
 * The kind of a record's `migration_type` (only `live-migration` is live).
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
 * Whether a record's migration_type is what our start of `kind` creates
 * (a `resize` is always a user's own).
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
 * The kind of migration the server's own state says is running, if any.
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
 * Whether the VM is being deleted or is deleted.
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
 * Whether only a person can make this VM movable.
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
 * How the drain moves a VM in this status; undefined: not movable now.
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
 * Reads Nova's 409 message on `os-migrateLive` or `migrate`.
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
 * Whether a refusal may go away by itself ("No valid host": capacity may free up).
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
