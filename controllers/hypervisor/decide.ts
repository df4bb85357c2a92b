/**
 * Pure maintenance decisions: whether a Hypervisor asks for a drain, the
 * reason evictor writes, when to disable the compute service and when to
 * re-enable it.
 *
 * The re-enable rule, shared by the maintenance controller and the
 * eviction controller's finalizer: a compute service is re-enabled exactly
 * when nothing wants it disabled, that is when all of these hold:
 *
 * 1. it is disabled and evictor disabled it (its reason is marked, see
 *    `disabledByUs`): a service someone else disabled stays disabled;
 * 2. the Hypervisor does not ask for a drain (spec.maintenance is not
 *    manual, auto or termination);
 * 3. no Eviction for the host is left (counting ones being deleted: the
 *    finalizer of the last one, or the maintenance controller once it is
 *    gone, re-enables; an Eviction's finalizer does not count itself).
 *
 * Both controllers may act on the same transition; enabling twice is
 * harmless, and each re-reads the service before acting.
 *
 * @module
 */

import { disabledByUs, ourDisabledReason } from "../compute_service.ts";

/** The values of Hypervisor spec.maintenance. */
export type MaintenanceMode = "" | "manual" | "auto" | "ha" | "termination";

/** The part of a compute service the decisions read. */
export interface ServiceState {
  /** enabled or disabled. */
  status: "enabled" | "disabled";
  /** Why it was disabled (null when enabled or no reason). */
  disabledReason: string | null;
}

/**
 * Whether a maintenance mode asks evictor to drain the host: manual, auto
 * and termination do; "", absent and ha (handled elsewhere) do not.
 *
 * @example
 * ```ts
 * import { drainRequested } from "./decide.ts";
 * console.assert(drainRequested("manual") && !drainRequested("ha") && !drainRequested(undefined));
 * ```
 */
export function drainRequested(mode: MaintenanceMode | undefined): boolean {
  return mode === "manual" || mode === "auto" || mode === "termination";
}

/**
 * The reason of a maintenance drain: spec.maintenanceReason, or one naming
 * the mode when it is empty. It becomes the Eviction's spec.reason.
 *
 * @example
 * ```ts
 * import { maintenanceReason } from "./decide.ts";
 * console.assert(maintenanceReason("auto", undefined) === "hypervisor maintenance auto");
 * console.assert(maintenanceReason("manual", " kernel ") === "kernel");
 * ```
 */
export function maintenanceReason(
  mode: MaintenanceMode | undefined,
  reason: string | undefined,
): string {
  const trimmed = (reason ?? "").trim();
  return trimmed !== "" ? trimmed : `hypervisor maintenance ${mode ?? ""}`
    .trim();
}

/**
 * The disabled reason to write when disabling for maintenance, or
 * undefined when the service must be left as it is (no drain asked, no
 * service, or already disabled: by evictor or by someone else).
 *
 * @example
 * ```ts
 * import { disableFor } from "./decide.ts";
 * const s = { status: "enabled" as const, disabledReason: null };
 * console.assert(disableFor("manual", "kernel", s) === "evictor: kernel");
 * console.assert(disableFor("ha", "kernel", s) === undefined);
 * ```
 */
export function disableFor(
  mode: MaintenanceMode | undefined,
  reason: string | undefined,
  service: ServiceState | undefined,
): string | undefined {
  if (!drainRequested(mode) || service?.status !== "enabled") return undefined;
  return ourDisabledReason(maintenanceReason(mode, reason));
}

/** What {@linkcode shouldReEnable} looks at. */
export interface ReEnableInput {
  /** The service now; undefined when Nova has none for the host. */
  service: ServiceState | undefined;
  /** The Hypervisor's spec.maintenance (undefined: no Hypervisor). */
  maintenance: MaintenanceMode | undefined;
  /** Evictions for the host still present (a finalizer excludes its own). */
  evictionsLeft: number;
}

/**
 * Whether to re-enable a compute service now (the rule in the module
 * documentation).
 *
 * @example
 * ```ts
 * import { shouldReEnable } from "./decide.ts";
 * const ours = { status: "disabled" as const, disabledReason: "evictor: kernel" };
 * console.assert(shouldReEnable({ service: ours, maintenance: "", evictionsLeft: 0 }));
 * console.assert(!shouldReEnable({ service: ours, maintenance: "manual", evictionsLeft: 0 }));
 * console.assert(!shouldReEnable({ service: ours, maintenance: "", evictionsLeft: 1 }));
 * ```
 */
export function shouldReEnable(input: ReEnableInput): boolean {
  const s = input.service;
  return s !== undefined && s.status === "disabled" &&
    disabledByUs(s.disabledReason) &&
    !drainRequested(input.maintenance) &&
    input.evictionsLeft === 0;
}
