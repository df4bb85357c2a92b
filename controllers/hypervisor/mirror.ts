/**
 * Pure status decisions of a Hypervisor: its Evicting condition and
 * status.evicted mirror the Eviction of the host; its HypervisorDisabled
 * condition mirrors the compute service.
 *
 * @module
 */

import {
  REASON_DISABLED_BY_EVICTOR,
  REASON_DISABLED_BY_OTHERS,
  REASON_ENABLED,
  REASON_NOT_IN_NOVA,
  REASON_PENDING,
  REASON_PREFLIGHT_FAILED,
  REASON_SUCCEEDED,
} from "../conditions.ts";
import type {
  Eviction,
  HypervisorStatus,
  HypervisorStatusConditionsItem,
} from "../../models/mod.ts";
import {
  CONDITION_EVICTING,
  CONDITION_HYPERVISOR_DISABLED,
  CONDITION_PREFLIGHT,
  type ConditionUpdate,
  setCondition,
} from "../conditions.ts";
import { disabledByUs } from "../compute_service.ts";
import type { ServiceState } from "./decide.ts";

export { CONDITION_HYPERVISOR_DISABLED } from "../conditions.ts";

/** How the Hypervisor shows its drain: absent fields are removed. */
export interface EvictionMirror {
  /** The Evicting condition; undefined removes it (no drain). */
  evicting: ConditionUpdate | undefined;
  /** status.evicted; undefined removes it. */
  evicted: boolean | undefined;
}

/**
 * What the Hypervisor shows of the Eviction of its host:
 * - the Eviction's Evicting condition, named (evicted once it Succeeded);
 * - before it has one: Pending, or PreflightFailed when its preflight failed;
 * - no Eviction while a drain is asked: Pending (it is being created);
 * - no Eviction and no drain asked: nothing (both fields removed).
 *
 * @example
 * ```ts
 * import { mirrorEviction } from "./mirror.ts";
 * const m = mirrorEviction(undefined, false);
 * console.assert(m.evicting === undefined && m.evicted === undefined);
 * ```
 */
export function mirrorEviction(
  eviction: Eviction | undefined,
  drainWanted: boolean,
): EvictionMirror {
  if (eviction === undefined) {
    return drainWanted
      ? {
        evicting: {
          type: CONDITION_EVICTING,
          status: "True",
          reason: REASON_PENDING,
          message: "creating the Eviction for this host",
        },
        evicted: false,
      }
      : { evicting: undefined, evicted: undefined };
  }
  const name = eviction.metadata?.name ?? eviction.spec.hypervisor;
  const conditions = eviction.status?.conditions ?? [];
  const evicting = conditions.find((c) => c.type === CONDITION_EVICTING);
  if (evicting !== undefined) {
    return {
      evicting: {
        type: CONDITION_EVICTING,
        status: evicting.status,
        reason: evicting.reason,
        message: `Eviction ${name}: ${evicting.message}`,
      },
      // Nova knows no such host: nothing of Nova's runs on it (upstream
      // reported this case as Succeeded, and node lifecycles wait for it).
      evicted: evicting.status === "False" &&
        (evicting.reason === REASON_SUCCEEDED ||
          evicting.reason === REASON_NOT_IN_NOVA),
    };
  }
  const preflight = conditions.find((c) => c.type === CONDITION_PREFLIGHT);
  if (preflight?.status === "False") {
    return {
      evicting: {
        type: CONDITION_EVICTING,
        status: "False",
        reason: REASON_PREFLIGHT_FAILED,
        message: `Eviction ${name}: ${preflight.message}`,
      },
      evicted: false,
    };
  }
  return {
    evicting: {
      type: CONDITION_EVICTING,
      status: "True",
      reason: REASON_PENDING,
      message: `Eviction ${name}: not started yet`,
    },
    evicted: false,
  };
}

/**
 * The HypervisorDisabled condition for a compute service: True with reason
 * DisabledByEvictor or DisabledByOthers (the message is Nova's disabled
 * reason), False/Enabled otherwise.
 *
 * @example
 * ```ts
 * import { serviceCondition } from "./mirror.ts";
 * const c = serviceCondition({ status: "disabled", disabledReason: "evictor: kernel" });
 * console.assert(c.reason === "DisabledByEvictor");
 * ```
 */
export function serviceCondition(service: ServiceState): ConditionUpdate {
  if (service.status === "enabled") {
    return {
      type: CONDITION_HYPERVISOR_DISABLED,
      status: "False",
      reason: REASON_ENABLED,
      message: "the nova-compute service is enabled",
    };
  }
  return {
    type: CONDITION_HYPERVISOR_DISABLED,
    status: "True",
    reason: disabledByUs(service.disabledReason)
      ? REASON_DISABLED_BY_EVICTOR
      : REASON_DISABLED_BY_OTHERS,
    message: service.disabledReason ?? "disabled without a reason",
  };
}

/**
 * Sets (or, with `undefined`, removes) a condition of a Hypervisor status;
 * lastTransitionTime changes only when the condition's status does.
 *
 * @example
 * ```ts
 * import { withCondition } from "./mirror.ts";
 * const s = withCondition({}, { type: "Evicting", status: "True", reason: "Pending", message: "" }, "Evicting", new Date(0));
 * console.assert(s.conditions?.length === 1);
 * ```
 */
export function withCondition(
  status: HypervisorStatus,
  update: ConditionUpdate | undefined,
  type: string,
  now: Date,
  generation?: number,
): HypervisorStatus {
  const conditions: HypervisorStatusConditionsItem[] = status.conditions ?? [];
  if (update === undefined) {
    if (!conditions.some((c) => c.type === type)) return status;
    const rest = conditions.filter((c) => c.type !== type);
    const { conditions: _drop, ...others } = status;
    return rest.length === 0 ? others : { ...others, conditions: rest };
  }
  return {
    ...status,
    conditions: setCondition(conditions, update, now, generation),
  };
}

/**
 * A status with the mirror of the host's Eviction applied.
 *
 * @example
 * ```ts
 * import { applyMirror, mirrorEviction } from "./mirror.ts";
 * const s = applyMirror({ evicted: true }, mirrorEviction(undefined, false), new Date(0));
 * console.assert(!("evicted" in s));
 * ```
 */
export function applyMirror(
  status: HypervisorStatus,
  mirror: EvictionMirror,
  now: Date,
): HypervisorStatus {
  const next = withCondition(status, mirror.evicting, CONDITION_EVICTING, now);
  if (mirror.evicted === undefined) {
    const { evicted: _drop, ...rest } = next;
    return rest;
  }
  return { ...next, evicted: mirror.evicted };
}
