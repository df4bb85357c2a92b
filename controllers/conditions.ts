/**
 * Conditions of every controller: one `setCondition` (the Kubernetes way of
 * setting one condition in a list), and every condition type and reason
 * evictor writes or reads, so that no module repeats them as literals.
 *
 * @module
 */

import type { EvictionStatusConditionsItem } from "../models/mod.ts";

// The capacity check's condition and reasons are capacity/'s own words.
export {
  CONDITION_CAPACITY_CHECKED,
  REASON_CHECK_FAILED,
  REASON_FITS,
  REASON_NO_TARGET,
} from "../capacity/verdict.ts";

/** Eviction condition type: the drain as a whole. */
export const CONDITION_EVICTING = "Evicting";
/**
 * Eviction condition type: True only once the host is empty and settled
 * (the drain Succeeded, status.finishedAt set), for
 * `kubectl wait --for=condition=Drained`; False with why otherwise.
 */
export const CONDITION_DRAINED = "Drained";
/** Eviction condition type: migrations of single VMs; sticky False/Failed while any failure remains. */
export const CONDITION_MIGRATING_INSTANCE = "MigratingInstance";
/** Eviction condition type: the preflight checks. */
export const CONDITION_PREFLIGHT = "PreflightChecksSucceeded";
/** Eviction and Hypervisor condition type: the compute service is disabled. */
export const CONDITION_HYPERVISOR_DISABLED = "HypervisorDisabled";
/** Eviction condition type: the compute service was enabled again. */
export const CONDITION_HYPERVISOR_REENABLED = "HypervisorReEnabled";
/** Eviction condition type: the other pending Evictions' hosts are disabled (wave.ts). */
export const CONDITION_WAVE_SETTLED = "WaveSettled";
/** Eviction condition type: Nova's own per-host limit binds (nova_limit.ts). */
export const CONDITION_NOVA_LIMITED = "NovaLimited";
/**
 * Eviction condition type: whether the drain plans from Nova's
 * notifications about its host, or polls because they were found deaf or
 * wrong (eviction/conditions.ts notificationsCondition).
 */
export const CONDITION_NOVA_NOTIFICATIONS = "NovaNotifications";
/** Hypervisor condition type: status.traits is current and customTraits applied. */
export const CONDITION_TRAITS_UPDATED = "TraitsUpdated";
/** Hypervisor condition type: set while Nova does not know the host. */
export const CONDITION_ONBOARDING = "Onboarding";

// Reasons, by the condition that carries them (one constant per word).

/** Evicting: no pass has run yet (the Hypervisor's mirror; `kubectl get`'s State before the first). */
export const REASON_PENDING = "Pending";
/** Drained: the drain goes on (the Evicting condition is True, or the host is not yet settled empty). */
export const REASON_DRAINING = "Draining";
/** Evicting: the host was seen empty, not yet by a look a settle interval later. */
export const REASON_SETTLING = "Settling";
/** Evicting, MigratingInstance, PreflightChecksSucceeded: done. */
export const REASON_SUCCEEDED = "Succeeded";
/** Evicting: migrations in flight. */
export const REASON_RUNNING = "Running";
/** Evicting: Nova left starts unanswered several times in a row. */
export const REASON_STARTS_UNANSWERED = "StartsUnanswered";
/** Evicting: nothing in flight, some VM will move without help. */
export const REASON_WAITING = "Waiting";
/** Evicting: nothing in flight, the cluster budget spent by other drains. */
export const REASON_WAITING_FOR_BUDGET = "WaitingForBudget";
/** Evicting: what is left needs a person, and some VM failed (status.failed); MigratingInstance: some VM failed. */
export const REASON_FAILED = "Failed";
/**
 * Evicting: what is left needs a person and no VM failed: only VMs left
 * alone (status.skipped: SUSPENDED, RESCUE, SHELVED, refused by Nova) stay.
 */
export const REASON_WAITING_FOR_PERSON = "WaitingForPerson";
/** Evicting: an older Eviction drains the same hypervisor. */
export const REASON_DUPLICATE = "Duplicate";
/** Evicting (the Hypervisor's mirror): the preflight failed. */
export const REASON_PREFLIGHT_FAILED = "PreflightFailed";
/** Evicting: Nova and evictor share no compute microversion. */
export const REASON_NOVA_INCOMPATIBLE = "NovaIncompatible";
/** Evicting (the Hypervisor's): the Eviction named after the host drains another. */
export const REASON_EVICTION_NAME_TAKEN = "EvictionNameTaken";
/** MigratingInstance: migrations in flight. */
export const REASON_MIGRATING = "Migrating";
/** MigratingInstance: nothing in flight, nothing failed. */
export const REASON_IDLE = "Idle";
/** PreflightChecksSucceeded: the host never registered in Nova. */
export const REASON_NOT_REGISTERED = "NotRegistered";
/** PreflightChecksSucceeded, TraitsUpdated: Nova does not know the host. */
export const REASON_HYPERVISOR_NOT_FOUND = "HypervisorNotFound";
/** HypervisorDisabled (Eviction): disabled by this drain. */
export const REASON_DISABLED = "Disabled";
/** HypervisorDisabled (Eviction): disabled by someone else before. */
export const REASON_ALREADY_DISABLED = "AlreadyDisabled";
/** HypervisorDisabled (Hypervisor): the service is enabled. */
export const REASON_ENABLED = "Enabled";
/** HypervisorDisabled (Hypervisor): disabled with evictor's reason. */
export const REASON_DISABLED_BY_EVICTOR = "DisabledByEvictor";
/** HypervisorDisabled (Hypervisor): disabled by someone else. */
export const REASON_DISABLED_BY_OTHERS = "DisabledByOthers";
/** WaveSettled: waiting for other Evictions' hosts to be disabled. */
export const REASON_WAITING_FOR_WAVE = "WaitingForWave";
/** WaveSettled: every other pending Eviction's host is disabled. */
export const REASON_ALL_DISABLED = "AllDisabled";
/** WaveSettled: the bound passed with hosts still enabled. */
export const REASON_SETTLE_BOUND_PASSED = "SettleBoundPassed";
/** NovaLimited: Nova queues live migrations beyond its own limit. */
export const REASON_NOVA_QUEUES = "NovaQueues";
/** NovaLimited: Nova ran more at once than the limit it showed (raised). */
export const REASON_LIMIT_RAISED = "LimitRaised";
/** NovaNotifications: the host's notified view is trusted. */
export const REASON_TRUSTED = "Trusted";
/** NovaNotifications: a start of ours on the host was not heard of in time. */
export const REASON_DEAF = "Deaf";
/** NovaNotifications: a relist found the host's notified view wrong. */
export const REASON_VIEW_WRONG = "ViewWrong";
/** TraitsUpdated: read from Placement. */
export const REASON_UPDATED = "Updated";
/** TraitsUpdated: Placement has no resource provider for the host. */
export const REASON_RESOURCE_PROVIDER_NOT_FOUND = "ResourceProviderNotFound";
/** TraitsUpdated: Placement answered with an error. */
export const REASON_PLACEMENT_ERROR = "PlacementError";
/** TraitsUpdated: another failure reading or applying the traits. */
export const REASON_TRAITS_ERROR = "TraitsError";
/**
 * Onboarding: Nova does not know the host yet. Evicting: the drain ended
 * with nothing drained, because Nova has no compute service by the host's
 * name (never registered, or a typo): not Succeeded, so that nobody reads
 * it as a drained host.
 */
export const REASON_NOT_IN_NOVA = "NotInNova";

/**
 * Whether an Evicting reason says the drain stopped until a person acts
 * (Failed or WaitingForPerson): nothing happens on its own, and the drain's
 * end is that condition's transition time.
 *
 * @example
 * ```ts
 * import { stoppedForPerson } from "./conditions.ts";
 * console.assert(stoppedForPerson("WaitingForPerson") && !stoppedForPerson("Waiting"));
 * ```
 */
export function stoppedForPerson(reason: string | undefined): boolean {
  return reason === REASON_FAILED || reason === REASON_WAITING_FOR_PERSON;
}

/** The status fields {@linkcode drainEndMs} reads. */
export interface DrainStatusLike {
  startedAt?: string | undefined;
  finishedAt?: string | undefined;
  predictedMakespanSeconds?: number | undefined;
  conditions?:
    | readonly {
      type: string;
      status: string;
      reason?: string | undefined;
      lastTransitionTime?: string | undefined;
    }[]
    | undefined;
}

/**
 * When a drain ended (epoch ms), or undefined while it runs: finishedAt
 * (the host is empty), or else when it stopped with only VMs that need a
 * person left (the Evicting condition False with reason Failed: evictor
 * has nothing more to migrate, so its migration work ended then).
 *
 * @example
 * ```ts
 * import { drainEndMs } from "./conditions.ts";
 * console.log(drainEndMs({ conditions: [{ type: "Evicting", status: "False",
 *   reason: "Failed", lastTransitionTime: "2026-01-01T00:01:00Z" }] }));
 * // 1767225660000
 * ```
 */
export function drainEndMs(
  status: DrainStatusLike | undefined,
): number | undefined {
  const finished = Date.parse(status?.finishedAt ?? "");
  if (!Number.isNaN(finished)) return finished;
  const stopped = status?.conditions?.find((c) =>
    c.type === CONDITION_EVICTING && c.status === "False" &&
    stoppedForPerson(c.reason)
  );
  const at = Date.parse(stopped?.lastTransitionTime ?? "");
  return Number.isNaN(at) ? undefined : at;
}

/** A condition without its transition time. */
export type ConditionUpdate = Omit<
  EvictionStatusConditionsItem,
  "lastTransitionTime" | "observedGeneration"
>;

/**
 * Sets one condition in a list, the Kubernetes way: lastTransitionTime
 * changes only when the status changes; reason and message are updated in
 * place; other conditions and the order of the list are kept.
 *
 * @example
 * ```ts
 * import { setCondition } from "./conditions.ts";
 * const t0 = new Date("2026-01-01T00:00:00Z");
 * const t1 = new Date("2026-01-01T00:01:00Z");
 * const a = setCondition([], { type: "Evicting", status: "True", reason: "Running", message: "1" }, t0);
 * const b = setCondition(a, { type: "Evicting", status: "True", reason: "Waiting", message: "2" }, t1);
 * console.assert(b[0]?.lastTransitionTime === "2026-01-01T00:00:00.000Z");
 * ```
 */
export function setCondition(
  conditions: readonly EvictionStatusConditionsItem[],
  update: ConditionUpdate,
  now: Date,
  generation?: number,
): EvictionStatusConditionsItem[] {
  const index = conditions.findIndex((c) => c.type === update.type);
  const previous = index === -1 ? undefined : conditions[index];
  const lastTransitionTime =
    previous !== undefined && previous.status === update.status
      ? previous.lastTransitionTime
      : now.toISOString();
  const observedGeneration = generation ?? previous?.observedGeneration;
  const next: EvictionStatusConditionsItem = {
    type: update.type,
    status: update.status,
    ...(observedGeneration === undefined ? {} : { observedGeneration }),
    lastTransitionTime,
    reason: update.reason,
    message: truncate(update.message),
  };
  if (index === -1) return [...conditions, next];
  return conditions.map((c, i) => (i === index ? next : c));
}

const MAX_MESSAGE = 32_768;

function truncate(message: string): string {
  return message.length <= MAX_MESSAGE
    ? message
    : `${message.slice(0, MAX_MESSAGE - 3)}...`;
}
