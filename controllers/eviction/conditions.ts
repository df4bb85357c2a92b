/**
 * The conditions a drain derives from its next status, and {@linkcode changeCondition}.
 * @module
 */

import {
  CONDITION_DRAINED,
  CONDITION_EVICTING,
  CONDITION_MIGRATING_INSTANCE,
  CONDITION_NOVA_NOTIFICATIONS,
  type ConditionUpdate,
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
  setCondition,
} from "../conditions.ts";
import type {
  EvictionStatus,
  EvictionStatusConditionsItem,
} from "../../models/mod.ts";
import type { NotificationStanding } from "../../openstack/informer/informer.ts";
import type { OnTimeout } from "../../limits/convergence.ts";

export {
  CONDITION_EVICTING,
  type ConditionUpdate,
  setCondition,
} from "../conditions.ts";

/**
 * `status` with `update` set, and `event` when its status or reason changed (the message
 * alone is no news: counts in it change every pass).
 *
 * @example
 * ```ts
 * import { changeCondition } from "./conditions.ts";
 * const update = { type: "Evicting", status: "False", reason: "Duplicate", message: "m" } as const;
 * const a = changeCondition({}, update, new Date(0), 1, { type: "Warning", reason: "DuplicateEviction" });
 * console.assert(a.event?.message === "m");
 * console.assert(changeCondition(a.status, update, new Date(1), 1, a.event).event === undefined);
 * ```
 */
export function changeCondition(
  status: EvictionStatus,
  update: ConditionUpdate,
  now: Date,
  generation: number | undefined,
  event?: ConditionEvent,
): { status: EvictionStatus; event?: Required<ConditionEvent> } {
  const conditions = status.conditions ?? [];
  const before = conditions.find((c) => c.type === update.type);
  const next = {
    ...status,
    conditions: setCondition(conditions, update, now, generation),
  };
  const changed = before?.status !== update.status ||
    before.reason !== update.reason;
  if (!changed || event === undefined) return { status: next };
  return {
    status: next,
    event: { ...event, message: event.message ?? update.message },
  };
}

/** The Event that tells a condition's change. */
export interface ConditionEvent {
  type: "Normal" | "Warning";
  reason: string;
  message?: string;
}

function condition(type: string) {
  return (status: "True" | "False", reason: string, message: string) => ({
    type,
    status,
    reason,
    message,
  });
}

/** How the VMs not in flight stand, for the Evicting condition. */
export interface DrainSummary {
  /** Movable now but not started (no slot, cluster budget, starts held). */
  ready: number;
  /** In a transient state, or their whereabouts unknown this pass. */
  busy: number;
  backoff: number;
  /** Skipped, in ERROR, or out of attempts. */
  needsPerson: number;
  /** Why starts are held (e.g. stale traits). */
  held: string | undefined;
  /** VMs in backoff whose starts Nova left unanswered several times in a row. */
  unanswered?: number;
}

/**
 * The Evicting condition for a status whose lists and counts are final.
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
  const is = condition(CONDITION_EVICTING);
  if (
    outstanding === 0 && inFlight === 0 && status.emptySince !== undefined &&
    status.finishedAt === undefined
  ) {
    return is(
      "True",
      REASON_SETTLING,
      `the host has been seen empty since ${status.emptySince}; Succeeded once a later look, a settle interval on, finds it empty too`,
    );
  }
  if (outstanding === 0 && inFlight === 0 && summary.busy === 0) {
    return is(
      "False",
      REASON_SUCCEEDED,
      `the host is empty: ${migrated} VMs migrated`,
    );
  }
  if (inFlight > 0) {
    const of = limit === undefined ? "" : ` (limit ${limit})`;
    return is(
      "True",
      REASON_RUNNING,
      `${inFlight} in flight${of}, ${outstanding} outstanding, ${migrated} migrated` +
        personNote(summary),
    );
  }
  if ((summary.unanswered ?? 0) > 0) {
    return is(
      "True",
      REASON_STARTS_UNANSWERED,
      `Nova is not taking starts: ${summary.unanswered} VMs' starts went unanswered (5xx, timeout) several times in a row and Nova shows nothing of them; retrying with backoff, nothing charged` +
        personNote(summary),
    );
  }
  if (summary.ready > 0 || summary.busy > 0 || summary.backoff > 0) {
    return is(
      "True",
      REASON_WAITING,
      waitingMessage(summary, limit) + personNote(summary),
    );
  }
  if ((status.failed ?? []).length === 0) {
    return is(
      "False",
      REASON_WAITING_FOR_PERSON,
      `waiting for a person: ${summary.needsPerson} VMs left on the host, none failed: ${
        namedVms(status.skipped ?? [])
      }`,
    );
  }
  return is(
    "False",
    REASON_FAILED,
    `${summary.needsPerson} VMs left on the host need a person (see status.failed and status.skipped)`,
  );
}

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
 * MigratingInstance: False/Failed while status.failed has an entry (a later success hid it upstream).
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
  const is = condition(CONDITION_MIGRATING_INSTANCE);
  const more = (n: number, sep: string) =>
    n > 10 ? `${sep} and ${n - 10} more` : "";
  if (failed.length > 0) {
    const shown = failed.slice(0, 10).map((f) =>
      `${f.id} (${f.attempts} attempts): ${f.reason}`
    );
    return is(
      "False",
      REASON_FAILED,
      `${failed.length} VMs failed: ${shown.join("; ")}${
        more(failed.length, ";")
      }`,
    );
  }
  if (inFlight.length > 0) {
    const shown = inFlight.slice(0, 10).map((e) => `${e.id} (${e.kind})`);
    return is(
      "True",
      REASON_MIGRATING,
      `migrating ${shown.join(", ")}${more(inFlight.length, ",")}`,
    );
  }
  if ((status.outstandingCount ?? 0) === 0) {
    return is(
      "False",
      REASON_SUCCEEDED,
      `${status.migratedCount ?? 0} VMs migrated`,
    );
  }
  return is("False", REASON_IDLE, "no migration in flight");
}

/**
 * The status's conditions with Evicting and MigratingInstance set.
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
 * Drained, from a final Evicting: True only for a host drained and settled (`kubectl wait` on it).
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
  const is = condition(CONDITION_DRAINED);
  const no = (reason: string, message: string) => is("False", reason, message);
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
      ? is(
        "True",
        REASON_SUCCEEDED,
        `the host is empty and settled since ${status.finishedAt}: ${
          status.migratedCount ?? 0
        } VMs migrated`,
      )
      : no(REASON_DRAINING, "the host looks empty; not yet settled");
  }
  if (evicting.status !== "False") {
    return no(REASON_DRAINING, `${evicting.reason}: ${evicting.message}`);
  }
  return no(evicting.reason, evicting.message);
}

/**
 * The status with its Drained condition set; the last step before a write.
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
  // no write for Drained alone: without Evicting it is not True either
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
 * NovaNotifications: the drain plans from Nova's notifications, or polls (found deaf or wrong).
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
  const is = condition(CONDITION_NOVA_NOTIFICATIONS);
  if (standing.trusted) {
    return is(
      "True",
      REASON_TRUSTED,
      "the drain plans from Nova's notifications about its host",
    );
  }
  const what = standing.scope === "feed"
    ? "Nova's notification feed is demoted for every host"
    : standing.reason === "deaf"
    ? "Nova's notifications about this host are not heard"
    : "the notified view of this host was found wrong";
  return is(
    "False",
    standing.reason === "deaf" ? REASON_DEAF : REASON_VIEW_WRONG,
    `${what} (${standing.detail}); the drain polls Nova`,
  );
}

/** The condition of live copies that stopped converging. */
export const CONDITION_NOT_CONVERGING = "NotConverging";
/** A copy's remaining memory has not fallen for the progress timeout. */
export const REASON_PROGRESS_STALLED = "ProgressStalled";
/** A copy is past its completion timeout (per GiB of memory). */
export const REASON_COMPLETION_TIMEOUT = "CompletionTimeout";
/** Every copy in flight converges (or none is in flight). */
export const REASON_CONVERGING = "Converging";

const GIB = 1024 ** 3;

/** A live copy past its bound, as the planner reports it. */
export interface NotConvergingCopy {
  id: string;
  migrationId: string;
  /** `progress`: no new low of the remaining bytes for the progress timeout; `completion`: past its per-GiB bound. */
  why: "progress" | "completion";
  remainingBytes?: number;
  totalBytes?: number;
  /** Seconds since the bound was passed. */
  sinceSeconds: number;
  onTimeout: OnTimeout;
  /** When the policy's action is due (ISO), if not yet sent. */
  actAt?: string;
}

/**
 * NotConverging: True naming each copy, why, and what its policy does when.
 *
 * @example
 * ```ts
 * import { notConvergingCondition } from "./conditions.ts";
 * const c = notConvergingCondition([{ id: "vm", migrationId: "7", why: "progress",
 *   remainingBytes: 2 * 1024 ** 3, totalBytes: 64 * 1024 ** 3, sinceSeconds: 30,
 *   onTimeout: "Abort", actAt: "2026-01-01T01:00:00Z" }]);
 * console.assert(c.status === "True" && c.reason === "ProgressStalled");
 * console.assert(c.message.includes("aborts it at 2026-01-01T01:00:00Z"));
 * console.assert(notConvergingCondition([]).reason === "Converging");
 * ```
 */
export function notConvergingCondition(
  reports: readonly NotConvergingCopy[],
): ConditionUpdate {
  const is = condition(CONDITION_NOT_CONVERGING);
  if (reports.length === 0) {
    return is(
      "False",
      REASON_CONVERGING,
      "every live copy in flight converges",
    );
  }
  const sorted = [...reports].sort((a, b) => a.id < b.id ? -1 : 1);
  const shown = sorted.slice(0, 10).map(notConvergingText);
  const more = sorted.length > 10 ? `; and ${sorted.length - 10} more` : "";
  return is(
    "True",
    reports.some((r) => r.why === "completion")
      ? REASON_COMPLETION_TIMEOUT
      : REASON_PROGRESS_STALLED,
    `${reports.length} live copies do not converge: ${shown.join("; ")}${more}`,
  );
}

/** One copy that does not converge, in words (the condition's and the Event's). */
export function notConvergingText(r: NotConvergingCopy): string {
  const gib = (b: number) => `${(b / GIB).toFixed(1)} GiB`;
  const left = r.remainingBytes === undefined
    ? ""
    : `, ${gib(r.remainingBytes)}${
      r.totalBytes === undefined ? "" : ` of ${gib(r.totalBytes)}`
    } left`;
  const why = r.why === "progress"
    ? `remaining memory not falling for its progress timeout (passed ${r.sinceSeconds} s ago)`
    : `past its completion timeout by ${r.sinceSeconds} s`;
  return `${r.id} (migration ${r.migrationId}): ${why}${left}; ${
    policyText(r)
  }`;
}

function policyText(
  r: Pick<NotConvergingCopy, "onTimeout" | "actAt">,
): string {
  const when = r.actAt === undefined ? "" : ` at ${r.actAt}`;
  switch (r.onTimeout) {
    case "Report":
      return "the policy only reports it (onTimeout Report): a person may run kubectl evictor force-complete or abort";
    case "Abort":
      return `the policy aborts it${when} (onTimeout Abort) and retries the VM alone, last`;
    case "ForceComplete":
      return `the policy force-completes it${when} (onTimeout ForceComplete), and aborts it if it still has not ended forceCompleteTimeoutSeconds later`;
  }
}
