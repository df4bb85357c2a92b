/**
 * Nova's objects as its API lists them, for the table tests of a pass and
 * of the finalizer: one builder each, the test saying only what differs.
 *
 * @module
 */

import type { ComputeService } from "../../openstack/mod.ts";
import type { Migration, Server } from "../../openstack/nova_types.ts";

/**
 * `host`'s compute service as a drain leaves it: disabled by evictor.
 *
 * @example
 * ```ts
 * import { disabledService } from "./nova_objects.ts";
 * console.assert(disabledService("h").status === "disabled");
 * ```
 */
export function disabledService(
  host: string,
  extra: Partial<ComputeService> = {},
): ComputeService {
  return {
    id: "svc-1",
    binary: "nova-compute",
    host,
    status: "disabled",
    state: "up",
    disabledReason: "evictor: test",
    forcedDown: false,
    ...extra,
  };
}

/**
 * A server on `host`: ACTIVE with 1024 MB, or MIGRATING while `copying`.
 *
 * @example
 * ```ts
 * import { hostServer } from "./nova_objects.ts";
 * console.assert(hostServer("a", "h", { copying: true }).taskState === "migrating");
 * ```
 */
export function hostServer(
  id: string,
  host: string,
  o: { copying?: boolean; ramMb?: number; extra?: Partial<Server> } = {},
): Server {
  return {
    id,
    name: id,
    status: o.copying === true ? "MIGRATING" : "ACTIVE",
    host,
    hypervisorHostname: host,
    taskState: o.copying === true ? "migrating" : null,
    vmState: "active",
    powerState: 1,
    flavor: { ramMb: o.ramMb ?? 1024, vcpus: 1 },
    ...o.extra,
  };
}

/**
 * A live migration of `vm` leaving `host` for node043, created at
 * 2026-01-01T00:59:40 (Nova's clock) and not updated since.
 *
 * @example
 * ```ts
 * import { liveMigration } from "./nova_objects.ts";
 * console.assert(liveMigration(7, "a", "h", "running").uuid === "m-7");
 * ```
 */
export function liveMigration(
  id: number,
  vm: string,
  host: string,
  status: string,
  extra: Partial<Migration> = {},
): Migration {
  return {
    id,
    uuid: `m-${id}`,
    instanceUuid: vm,
    migrationType: "live-migration",
    status,
    sourceCompute: host,
    destCompute: "node043",
    sourceNode: host,
    destNode: "node043",
    destHost: null,
    createdAt: "2026-01-01T00:59:40.000000",
    updatedAt: null,
    ...extra,
  };
}
