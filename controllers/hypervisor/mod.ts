/**
 * The Hypervisor controllers: status sync from Nova and Placement (with
 * optional discovery) and maintenance-driven drains. Each can be registered
 * alone; together they share one Hypervisor reconcile handler.
 *
 * @example
 * ```ts ignore
 * import { registerHypervisorSync, registerMaintenance } from "./mod.ts";
 * registerHypervisorSync(operator, { nova, placement, resyncIntervalMs: 300_000, discover: false });
 * registerMaintenance(operator, { nova });
 * ```
 *
 * @module
 */

export { type HypervisorSyncDeps, registerHypervisorSync } from "./sync.ts";
export { type MaintenanceDeps, registerMaintenance } from "./maintenance.ts";
export {
  drainRequested,
  maintenanceReason,
  type ReEnableInput,
  shouldReEnable,
} from "./decide.ts";
