/**
 * The pure part of the Hypervisor status sync: the status that a sync
 * pass's observation of Nova and Placement gives, and the retry delay.
 *
 * @module
 */

import { backoffDelay } from "../../framework/backoff.ts";
import {
  CONDITION_HYPERVISOR_DISABLED,
  CONDITION_ONBOARDING,
  CONDITION_TRAITS_UPDATED,
  REASON_HYPERVISOR_NOT_FOUND,
  REASON_NOT_IN_NOVA,
  REASON_UPDATED,
} from "../conditions.ts";
import type { HypervisorStatus } from "../../models/mod.ts";
import type { ServiceState } from "./decide.ts";
import { serviceCondition, withCondition } from "./mirror.ts";

export {
  CONDITION_ONBOARDING,
  CONDITION_TRAITS_UPDATED,
  REASON_NOT_IN_NOVA,
} from "../conditions.ts";

/** What one sync pass saw. */
export interface SyncObservation {
  /** The Hypervisor (compute host) name. */
  host: string;
  /** Nova's hypervisor; undefined when Nova does not know the host. */
  hypervisor:
    | { id: string; serviceId?: string | undefined; numInstances: number }
    | undefined;
  /** The nova-compute service; undefined when there is none. */
  service: (ServiceState & { id: string }) | undefined;
  /** The provider's traits after applying customTraits, or why that failed. */
  traits:
    | { ok: true; traits: string[] }
    | { ok: false; reason: string; message: string }
    | undefined;
}

/**
 * The Hypervisor status after a sync pass. Fields this pass did not observe
 * are kept (status.traits stays as it was when Placement failed), and an
 * Onboarding condition is only written while Nova does not know the host
 * (and removed once it does), so that an upstream agent's use of it is
 * left alone otherwise.
 *
 * @example
 * ```ts
 * import { syncedStatus } from "./sync_status.ts";
 * const s = syncedStatus({}, { host: "n1", hypervisor: { id: "h", numInstances: 2 },
 *   service: undefined, traits: { ok: true, traits: ["CUSTOM_A"] } }, new Date(0), 1);
 * console.assert(s.hypervisorId === "h" && s.traits?.[0] === "CUSTOM_A");
 * ```
 */
export function syncedStatus(
  prev: HypervisorStatus,
  obs: SyncObservation,
  now: Date,
  generation?: number,
): HypervisorStatus {
  let next: HypervisorStatus = { ...prev };
  if (obs.service !== undefined) {
    next = withCondition(
      next,
      serviceCondition(obs.service),
      CONDITION_HYPERVISOR_DISABLED,
      now,
    );
  }
  if (obs.hypervisor === undefined) {
    next = withCondition(
      next,
      {
        type: CONDITION_ONBOARDING,
        status: "True",
        reason: REASON_NOT_IN_NOVA,
        message:
          `Nova has no hypervisor named "${obs.host}": waiting for its nova-compute to register`,
      },
      CONDITION_ONBOARDING,
      now,
      generation,
    );
    return withCondition(
      next,
      {
        type: CONDITION_TRAITS_UPDATED,
        status: "False",
        reason: REASON_HYPERVISOR_NOT_FOUND,
        message: `Nova has no hypervisor named "${obs.host}"`,
      },
      CONDITION_TRAITS_UPDATED,
      now,
      generation,
    );
  }
  const serviceId = obs.service?.id ?? obs.hypervisor.serviceId;
  next = {
    ...next,
    hypervisorId: obs.hypervisor.id,
    ...(serviceId === undefined ? {} : { serviceId }),
    numInstances: obs.hypervisor.numInstances,
  };
  const onboarding = next.conditions?.find((c) =>
    c.type === CONDITION_ONBOARDING
  );
  if (onboarding?.reason === REASON_NOT_IN_NOVA) {
    next = withCondition(next, undefined, CONDITION_ONBOARDING, now);
  }
  if (obs.traits === undefined) return next;
  if (!obs.traits.ok) {
    return withCondition(
      next,
      {
        type: CONDITION_TRAITS_UPDATED,
        status: "False",
        reason: obs.traits.reason,
        message: obs.traits.message,
      },
      CONDITION_TRAITS_UPDATED,
      now,
      generation,
    );
  }
  return withCondition(
    { ...next, traits: obs.traits.traits },
    {
      type: CONDITION_TRAITS_UPDATED,
      status: "True",
      reason: REASON_UPDATED,
      message: `${obs.traits.traits.length} traits read from Placement`,
    },
    CONDITION_TRAITS_UPDATED,
    now,
    generation,
  );
}

/**
 * The delay before the next sync pass: the resync interval after a
 * success, else a doubling delay from 1 s, never longer than the interval.
 *
 * @example
 * ```ts
 * import { nextSyncDelay } from "./sync_status.ts";
 * console.assert(nextSyncDelay(0, 60_000) === 60_000);
 * console.assert(nextSyncDelay(3, 60_000) === 4_000);
 * ```
 */
export function nextSyncDelay(
  failures: number,
  resyncIntervalMs: number,
): number {
  if (failures <= 0) return resyncIntervalMs;
  return backoffDelay(failures - 1, 1000, resyncIntervalMs);
}

/**
 * Whether two statuses are the same (key order ignored), to skip writes
 * that would change nothing.
 *
 * @example
 * ```ts
 * import { sameStatus } from "./sync_status.ts";
 * console.assert(sameStatus({ a: 1, b: [1] }, { b: [1], a: 1 }));
 * ```
 */
export function sameStatus(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(v: unknown): string {
  return JSON.stringify(
    v,
    (_k, value: unknown) =>
      value !== null && typeof value === "object" && !Array.isArray(value)
        ? Object.fromEntries(
          Object.entries(value as Record<string, unknown>).sort(([x], [y]) =>
            x < y ? -1 : x > y ? 1 : 0
          ),
        )
        : value,
  );
}
