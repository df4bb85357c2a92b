/**
 * Preflight of a drain: find the host's compute service, disable it (marked as ours), record it.
 * @module
 */

import {
  CONDITION_EVICTING,
  CONDITION_HYPERVISOR_DISABLED,
  CONDITION_PREFLIGHT,
  REASON_ALREADY_DISABLED,
  REASON_DISABLED,
  REASON_FAILED,
  REASON_HYPERVISOR_NOT_FOUND,
  REASON_NOT_IN_NOVA,
  REASON_NOT_REGISTERED,
  REASON_SUCCEEDED,
  setCondition,
} from "../conditions.ts";
import type { EvictionStatus, Hypervisor } from "../../models/mod.ts";
import { disabledByUs, ourDisabledReason } from "../compute_service.ts";
import type { NovaClient } from "../../openstack/mod.ts";

/** What the preflight found. */
export type PreflightOutcome =
  /** The service is disabled and recorded: drain. */
  | { kind: "ready"; status: EvictionStatus; disabledNow: boolean }
  /** Nova has no compute service by the host's name: nothing drained, done. */
  | { kind: "unregistered"; status: EvictionStatus }
  /** The host registered once but Nova no longer knows it. */
  | { kind: "failed"; status: EvictionStatus; message: string };

/** What {@linkcode preflight} looks at. */
export interface PreflightInput {
  host: string;
  /** The Eviction's spec.reason. */
  reason: string;
  hypervisor: Hypervisor | undefined;
  status: EvictionStatus;
  now: Date;
  generation: number | undefined;
}

/**
 * Runs the preflight. A host that never registered ends at once (NotInNova, not Succeeded:
 * the name may be a typo); a service disabled already is kept (the finalizer re-enables only ours).
 *
 * @example
 * ```ts ignore
 * const out = await preflight(nova, { host: "node042", reason: "kernel", hypervisor, status: {}, now, generation: 1 });
 * if (out.kind === "ready") console.log(out.status.hypervisorServiceId);
 * ```
 */
export async function preflight(
  nova: Pick<NovaClient, "findComputeService" | "setComputeServiceStatus">,
  input: PreflightInput,
  signal?: AbortSignal,
): Promise<PreflightOutcome> {
  const service = await nova.findComputeService(input.host, signal);
  if (service === undefined) return withoutService(input);
  const disabledNow = service.status === "enabled";
  if (disabledNow) {
    await nova.setComputeServiceStatus(
      service.id,
      false,
      ourDisabledReason(input.reason),
      signal,
    );
  }
  const ours = disabledNow || disabledByUs(service.disabledReason);
  let status = setOne(
    input,
    input.status,
    CONDITION_HYPERVISOR_DISABLED,
    "True",
    ours ? REASON_DISABLED : REASON_ALREADY_DISABLED,
    disabledNow
      ? `compute service ${service.id} disabled: ${
        ourDisabledReason(input.reason)
      }`
      : ours
      ? `compute service ${service.id} disabled by evictor: ${service.disabledReason}`
      : `compute service ${service.id} was already disabled by someone else (${
        JSON.stringify(service.disabledReason ?? "")
      }); it will not be re-enabled`,
  );
  status = setOne(
    input,
    status,
    CONDITION_PREFLIGHT,
    "True",
    REASON_SUCCEEDED,
    `compute service ${service.id} of host ${input.host} is disabled`,
  );
  return {
    kind: "ready",
    disabledNow,
    status: {
      ...status,
      hypervisorServiceId: service.id,
      startedAt: status.startedAt ?? input.now.toISOString(),
    },
  };
}

function setOne(
  input: PreflightInput,
  status: EvictionStatus,
  type: string,
  value: "True" | "False",
  reason: string,
  message: string,
): EvictionStatus {
  return {
    ...status,
    conditions: setCondition(
      status.conditions ?? [],
      { type, status: value, reason, message },
      input.now,
      input.generation,
    ),
  };
}

/**
 * The Evicting message of a drain that ended because Nova knows no such host.
 *
 * @example
 * ```ts
 * import { nothingDrainedMessage } from "./preflight.ts";
 * console.log(nothingDrainedMessage("nod042"));
 * // nothing drained: Nova has no compute service named nod042
 * ```
 */
export function nothingDrainedMessage(host: string): string {
  return `nothing drained: Nova has no compute service named ${host}`;
}

/** No compute service on the host: never registered, done; registered once, failed. */
function withoutService(input: PreflightInput): PreflightOutcome {
  const { host } = input;
  const nowIso = input.now.toISOString();
  const ids = input.hypervisor?.status;
  const registered = (ids?.hypervisorId ?? "") !== "" ||
    (ids?.serviceId ?? "") !== "";
  if (registered) {
    const message =
      `Nova has no nova-compute service on host ${host}, but Hypervisor ${host} ` +
      `records Nova ids (hypervisorId ${
        JSON.stringify(ids?.hypervisorId ?? "")
      }, serviceId ${JSON.stringify(ids?.serviceId ?? "")})`;
    let status = setOne(
      input,
      input.status,
      CONDITION_PREFLIGHT,
      "False",
      REASON_HYPERVISOR_NOT_FOUND,
      message,
    );
    status = setOne(
      input,
      status,
      CONDITION_EVICTING,
      "False",
      REASON_FAILED,
      message,
    );
    return { kind: "failed", status, message };
  }
  let status = setOne(
    input,
    input.status,
    CONDITION_PREFLIGHT,
    "True",
    REASON_NOT_REGISTERED,
    `Nova has no compute service named ${host}${
      input.hypervisor === undefined
        ? " and no Hypervisor has that name: check it"
        : `; Hypervisor ${host} records no Nova ids (never registered)`
    }`,
  );
  status = setOne(
    input,
    status,
    CONDITION_EVICTING,
    "False",
    REASON_NOT_IN_NOVA,
    nothingDrainedMessage(host),
  );
  return {
    kind: "unregistered",
    status: {
      ...status,
      outstandingInstances: [],
      outstandingCount: 0,
      outstandingRamMb: 0,
      inFlightCount: 0,
      migratedCount: status.migratedCount ?? 0,
      startedAt: status.startedAt ?? nowIso,
      finishedAt: status.finishedAt ?? nowIso,
    },
  };
}
