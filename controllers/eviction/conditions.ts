/**
 * The Evicting and MigratingInstance conditions of an Eviction, derived
 * from its next status. Conditions that the planner does not own
 * (PreflightChecksSucceeded, HypervisorDisabled, ...) are kept as they are.
 *
 * @module
 */

import {
  CONDITION_DRAINED,
  CONDITION_NOVA_NOTIFICATIONS,
  REASON_DEAF,
  REASON_DRAINING,
  REASON_FAILED,
  REASON_IDLE,
  REASON_MIGRATING,
  REASON_NOT_IN_NOVA,
  REASON_PENDING,
  REASON_RUNNING,
  REASON_SETTLING,
  REASON_STARTS_UNANSWERED,
  REASON_SUCCEEDED,
  REASON_TRUSTED,
  REASON_VIEW_WRONG,
  REASON_WAITING,
  REASON_WAITING_FOR_PERSON,
} from "../conditions.ts";
import type {
  EvictionStatus,
  EvictionStatusConditionsItem,
} from "../../models/mod.ts";
import type { NotificationStanding } from "../../openstack/informer/informer.ts";

import {
  CONDITION_EVICTING,
  CONDITION_MIGRATING_INSTANCE,
  type ConditionUpdate,
  setCondition,
} from "../conditions.ts";

export {
  CONDITION_DRAINED,
  CONDITION_EVICTING,
  CONDITION_MIGRATING_INSTANCE,
  type ConditionUpdate,
  setCondition,
} from "../conditions.ts";

/** How the VMs not in flight stand, for the Evicting condition. */
export interface DrainSummary {
  /** Movable now but not started (no slot, cluster budget, starts held). */
  ready: number;
  /** In a transient state, or their whereabouts unknown this pass: look again. */
  busy: number;
  /** Waiting for their retry delay. */
  backoff: number;
  /** Skipped, in ERROR, or out of attempts: nothing happens without a person. */
  needsPerson: number;
  /** Why starts are held (e.g. stale traits); undefined when they are not. */
  held: string | undefined;
  /**
   * VMs (among those in backoff) whose starts Nova left unanswered several
   * times in a row (plan.ts UNANSWERED_REPORT_AFTER).
   */
  unanswered?: number;
}

/**
 * The Evicting condition for a status whose lists and counts are final:
 * - True/Settling: the host has been seen empty (status.emptySince), but
 *   not yet by a look a settle interval later (no finishedAt);
 * - False/Succeeded: nothing left on the host, nothing in flight;
 * - True/Running: migrations in flight;
 * - True/StartsUnanswered: none in flight, and Nova left some VM's starts
 *   unanswered several times in a row (they back off);
 * - True/Waiting: none in flight, but some VM will move without help
 *   (starts held, budget exhausted, retry delay, transient state);
 * - False/Failed: every VM left needs a person, and some VM failed (ERROR,
 *   out of attempts: status.failed);
 * - False/WaitingForPerson: every VM left needs a person and none failed
 *   (status.skipped only: SUSPENDED, RESCUE, SHELVED, refused by Nova); the
 *   message names them.
 *
 * @example
 * ```ts
 * import { evictingCondition } from "./conditions.ts";
 * const c = evictingCondition(
 *   { outstandingCount: 0, inFlightCount: 0, migratedCount: 3 },
 *   { ready: 0, busy: 0, backoff: 0, needsPerson: 0, held: undefined },
 * );
 * console.assert(c.reason === "Succeeded" && c.status === "False");
 * ```
 */
export function evictingCondition(
  status: EvictionStatus,
  summary: DrainSummary,
): ConditionUpdate {
  const outstanding = status.outstandingCount ?? 0;
  const inFlight = status.inFlightCount ?? 0;
  const migrated = status.migratedCount ?? 0;
  const limit = status.effectiveLimit;
  if (
    outstanding === 0 && inFlight === 0 && status.emptySince !== undefined &&
    status.finishedAt === undefined
  ) {
    return {
      type: CONDITION_EVICTING,
      status: "True",
      reason: REASON_SETTLING,
      message:
        `the host has been seen empty since ${status.emptySince}; Succeeded once a later look, a settle interval on, finds it empty too`,
    };
  }
  if (outstanding === 0 && inFlight === 0 && summary.busy === 0) {
    return {
      type: CONDITION_EVICTING,
      status: "False",
      reason: REASON_SUCCEEDED,
      message: `the host is empty: ${migrated} VMs migrated`,
    };
  }
  if (inFlight > 0) {
    return {
      type: CONDITION_EVICTING,
      status: "True",
      reason: REASON_RUNNING,
      message:
        `${inFlight} in flight${
          limit === undefined ? "" : ` (limit ${limit})`
        }, ` +
        `${outstanding} outstanding, ${migrated} migrated` +
        personNote(summary),
    };
  }
  if ((summary.unanswered ?? 0) > 0) {
    return {
      type: CONDITION_EVICTING,
      status: "True",
      reason: REASON_STARTS_UNANSWERED,
      message:
        `Nova is not taking starts: ${summary.unanswered} VMs' starts went unanswered (5xx, timeout) several times in a row and Nova shows nothing of them; retrying with backoff, nothing charged` +
        personNote(summary),
    };
  }
  if (summary.ready > 0 || summary.busy > 0 || summary.backoff > 0) {
    return {
      type: CONDITION_EVICTING,
      status: "True",
      reason: REASON_WAITING,
      message: waitingMessage(summary, limit) + personNote(summary),
    };
  }
  if ((status.failed ?? []).length === 0) {
    return {
      type: CONDITION_EVICTING,
      status: "False",
      reason: REASON_WAITING_FOR_PERSON,
      message: `waiting for a person: ${summary.needsPerson} VMs left on ` +
        `the host, none failed: ${namedVms(status.skipped ?? [])}`,
    };
  }
  return {
    type: CONDITION_EVICTING,
    status: "False",
    reason: REASON_FAILED,
    message: `${summary.needsPerson} VMs left on the host need a person ` +
      `(see status.failed and status.skipped)`,
  };
}

/** Up to five VMs with their reasons, then how many more. */
function namedVms(vms: readonly { id: string; reason: string }[]): string {
  const shown = vms.slice(0, 5).map((v) => `${v.id} (${v.reason})`);
  const more = vms.length > shown.length
    ? `, and ${vms.length - shown.length} more (status.skipped)`
    : "";
  return `${shown.join(", ")}${more}`;
}

function waitingMessage(
  summary: DrainSummary,
  limit: number | undefined,
): string {
  const parts: string[] = [];
  if (summary.ready > 0) {
    const why = summary.held !== undefined
      ? `starts held: ${summary.held}`
      : limit === 0
      ? "the limit is 0"
      : "no cluster budget left";
    parts.push(`${summary.ready} VMs ready (${why})`);
  }
  if (summary.backoff > 0) {
    parts.push(`${summary.backoff} VMs waiting to retry`);
  }
  if (summary.busy > 0) parts.push(`${summary.busy} VMs busy`);
  return parts.join(", ");
}

function personNote(summary: DrainSummary): string {
  return summary.needsPerson > 0
    ? `; ${summary.needsPerson} need a person`
    : "";
}

/**
 * The MigratingInstance condition: False/Failed while any entry of
 * status.failed remains (sticky: a later success of another VM does not
 * hide it, the upstream bug), True/Migrating while migrations are in
 * flight, False/Succeeded once the drain is done, else False/Idle.
 *
 * @example
 * ```ts
 * import { migratingInstanceCondition } from "./conditions.ts";
 * const c = migratingInstanceCondition({
 *   inFlightCount: 1,
 *   inFlight: [{ id: "b", kind: "live", startedAt: "2026-01-01T00:00:00Z" }],
 *   failed: [{ id: "a", reason: "ERROR: boom", attempts: 0, lastAttemptAt: "2026-01-01T00:00:00Z" }],
 * });
 * console.assert(c.status === "False" && c.reason === "Failed");
 * ```
 */
export function migratingInstanceCondition(
  status: EvictionStatus,
): ConditionUpdate {
  const failed = status.failed ?? [];
  const inFlight = status.inFlight ?? [];
  if (failed.length > 0) {
    const shown = failed.slice(0, 10).map((f) =>
      `${f.id} (${f.attempts} attempts): ${f.reason}`
    );
    const more = failed.length > shown.length
      ? `; and ${failed.length - shown.length} more`
      : "";
    return {
      type: CONDITION_MIGRATING_INSTANCE,
      status: "False",
      reason: REASON_FAILED,
      message: `${failed.length} VMs failed: ${shown.join("; ")}${more}`,
    };
  }
  if (inFlight.length > 0) {
    const shown = inFlight.slice(0, 10).map((e) => `${e.id} (${e.kind})`);
    const more = inFlight.length > shown.length
      ? `, and ${inFlight.length - shown.length} more`
      : "";
    return {
      type: CONDITION_MIGRATING_INSTANCE,
      status: "True",
      reason: REASON_MIGRATING,
      message: `migrating ${shown.join(", ")}${more}`,
    };
  }
  if ((status.outstandingCount ?? 0) === 0) {
    return {
      type: CONDITION_MIGRATING_INSTANCE,
      status: "False",
      reason: REASON_SUCCEEDED,
      message: `${status.migratedCount ?? 0} VMs migrated`,
    };
  }
  return {
    type: CONDITION_MIGRATING_INSTANCE,
    status: "False",
    reason: REASON_IDLE,
    message: "no migration in flight",
  };
}

/**
 * Both planner-owned conditions set on the status's conditions (others kept).
 *
 * @example
 * ```ts
 * import { drainConditions } from "./conditions.ts";
 * const conditions = drainConditions(
 *   { outstandingCount: 0, inFlightCount: 0 },
 *   { ready: 0, busy: 0, backoff: 0, needsPerson: 0, held: undefined },
 *   new Date("2026-01-01T00:00:00Z"),
 * );
 * console.assert(conditions.length === 2);
 * ```
 */
export function drainConditions(
  status: EvictionStatus,
  summary: DrainSummary,
  now: Date,
  generation?: number,
): EvictionStatusConditionsItem[] {
  const withEvicting = setCondition(
    status.conditions ?? [],
    evictingCondition(status, summary),
    now,
    generation,
  );
  return setCondition(
    withEvicting,
    migratingInstanceCondition(status),
    now,
    generation,
  );
}

/**
 * The Drained condition, read off a status whose Evicting condition is
 * final: True/Succeeded only when the drain Succeeded and settled (Evicting
 * False/Succeeded, nothing outstanding or in flight, status.finishedAt
 * set); otherwise False with why: Pending before the first pass,
 * Draining while the drain goes on (the Evicting reason and message say
 * how), NotInNova when Nova has no such host (nothing was drained), and
 * the Evicting reason when the drain stopped (Failed, WaitingForPerson,
 * PreflightFailed, ...). `kubectl wait --for=condition=Drained` thus
 * returns for a drained host only.
 *
 * @example
 * ```ts
 * import { drainedCondition } from "./conditions.ts";
 * const c = drainedCondition({ outstandingCount: 0, inFlightCount: 0,
 *   finishedAt: "2026-01-01T00:00:00Z", migratedCount: 3,
 *   conditions: [{ type: "Evicting", status: "False", reason: "Succeeded",
 *     message: "", lastTransitionTime: "2026-01-01T00:00:00Z" }] });
 * console.assert(c.status === "True");
 * ```
 */
export function drainedCondition(status: EvictionStatus): ConditionUpdate {
  const evicting = status.conditions?.find((c) =>
    c.type === CONDITION_EVICTING
  );
  const no = (reason: string, message: string): ConditionUpdate => ({
    type: CONDITION_DRAINED,
    status: "False",
    reason,
    message,
  });
  if (evicting === undefined) {
    return no(REASON_PENDING, "no pass has looked at the host yet");
  }
  if (evicting.reason === REASON_NOT_IN_NOVA) {
    return no(REASON_NOT_IN_NOVA, evicting.message);
  }
  const settledEmpty = (status.outstandingCount ?? 0) === 0 &&
    (status.inFlightCount ?? 0) === 0 && status.finishedAt !== undefined;
  if (evicting.status === "False" && evicting.reason === REASON_SUCCEEDED) {
    return settledEmpty
      ? {
        type: CONDITION_DRAINED,
        status: "True",
        reason: REASON_SUCCEEDED,
        message: `the host is empty and settled since ${status.finishedAt}: ${
          status.migratedCount ?? 0
        } VMs migrated`,
      }
      : no(REASON_DRAINING, "the host looks empty; not yet settled");
  }
  if (evicting.status !== "False") {
    return no(REASON_DRAINING, `${evicting.reason}: ${evicting.message}`);
  }
  return no(evicting.reason, evicting.message);
}

/**
 * The status with its Drained condition set from the rest of it (the
 * Evicting condition's generation); the last step before a status write.
 * A status without an Evicting condition is returned as it is.
 *
 * @example
 * ```ts
 * import { withDrained } from "./conditions.ts";
 * const s = withDrained({ conditions: [{ type: "Evicting", status: "True",
 *   reason: "Running", message: "2 in flight", lastTransitionTime: "2026-01-01T00:00:00Z" }] },
 *   new Date("2026-01-01T00:00:00Z"));
 * console.assert(s.conditions?.[1]?.reason === "Draining");
 * ```
 */
export function withDrained(status: EvictionStatus, now: Date): EvictionStatus {
  const evicting = status.conditions?.find((c) =>
    c.type === CONDITION_EVICTING
  );
  // Before the drain says anything, Drained has nothing to add: absent,
  // it is not True either (and a write of nothing else is not made for it).
  if (evicting === undefined) return status;
  const generation = evicting.observedGeneration ?? status.observedGeneration;
  return {
    ...status,
    conditions: setCondition(
      status.conditions ?? [],
      drainedCondition(status),
      now,
      generation,
    ),
  };
}

/**
 * The NovaNotifications condition for the drain's notified view: True
 * while it is trusted (the drain plans from Nova's notifications); False
 * while it is demoted to polling, reason Deaf (a start of ours on the
 * host was not heard of in time: the feed does not carry this host's
 * events) or ViewWrong (a relist found the view wrong), until it is
 * trusted again.
 *
 * @example
 * ```ts
 * import { notificationsCondition } from "./conditions.ts";
 * const c = notificationsCondition({ trusted: false, reason: "deaf", scope: "host", detail: "ev: no event about the start of a within 10 s of its answer" });
 * console.assert(c.status === "False" && c.reason === "Deaf");
 * console.assert(notificationsCondition({ trusted: true }).reason === "Trusted");
 * ```
 */
export function notificationsCondition(
  standing: NotificationStanding,
): ConditionUpdate {
  if (standing.trusted) {
    return {
      type: CONDITION_NOVA_NOTIFICATIONS,
      status: "True",
      reason: REASON_TRUSTED,
      message: "the drain plans from Nova's notifications about its host",
    };
  }
  const what = standing.scope === "feed"
    ? "Nova's notification feed is demoted for every host"
    : standing.reason === "deaf"
    ? "Nova's notifications about this host are not heard"
    : "the notified view of this host was found wrong";
  return {
    type: CONDITION_NOVA_NOTIFICATIONS,
    status: "False",
    reason: standing.reason === "deaf" ? REASON_DEAF : REASON_VIEW_WRONG,
    message: `${what} (${standing.detail}); the drain polls Nova`,
  };
}
