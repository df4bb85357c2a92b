/**
 * Nova response shapes (microversion 2.59 and later) as zod schemas that
 * turn them into the client's camelCase types.
 *
 * @module
 */

import { z } from "zod";

const nullableString = z.string().nullable().optional().transform((v) =>
  v ?? null
);

/** Raw server as returned by `GET /servers/detail` and `GET /servers/{id}`. */
export const serverSchema = z.object({
  id: z.string(),
  name: z.string(),
  status: z.string(),
  tenant_id: z.string().optional(),
  updated: z.string().optional(),
  locked: z.boolean().optional(),
  "OS-EXT-SRV-ATTR:host": nullableString,
  "OS-EXT-SRV-ATTR:hypervisor_hostname": nullableString,
  "OS-EXT-STS:task_state": nullableString,
  "OS-EXT-STS:vm_state": nullableString,
  "OS-EXT-STS:power_state": z.number().int().nullable().optional(),
  flavor: z.object({
    ram: z.number().int().nonnegative(),
    vcpus: z.number().int().nonnegative(),
    original_name: z.string().optional(),
    disk: z.number().int().nonnegative().optional(),
    ephemeral: z.number().int().nonnegative().optional(),
    swap: z.number().int().nonnegative().optional(),
    extra_specs: z.record(z.string(), z.string()).optional(),
  }),
  fault: z.object({
    code: z.number().int(),
    message: z.string(),
    created: z.string().optional(),
  }).optional(),
}).transform((s) => {
  const server: Server = {
    id: s.id,
    name: s.name,
    status: s.status,
    host: s["OS-EXT-SRV-ATTR:host"],
    hypervisorHostname: s["OS-EXT-SRV-ATTR:hypervisor_hostname"],
    taskState: s["OS-EXT-STS:task_state"],
    vmState: s["OS-EXT-STS:vm_state"],
    powerState: s["OS-EXT-STS:power_state"] ?? null,
    flavor: {
      ramMb: s.flavor.ram,
      vcpus: s.flavor.vcpus,
      ...(s.flavor.original_name === undefined
        ? {}
        : { originalName: s.flavor.original_name }),
      ...(s.flavor.disk === undefined ? {} : { disk: s.flavor.disk }),
      ...(s.flavor.ephemeral === undefined
        ? {}
        : { ephemeral: s.flavor.ephemeral }),
      ...(s.flavor.swap === undefined ? {} : { swap: s.flavor.swap }),
      ...(s.flavor.extra_specs === undefined
        ? {}
        : { extraSpecs: s.flavor.extra_specs }),
    },
    ...(s.tenant_id === undefined ? {} : { tenantId: s.tenant_id }),
    ...(s.updated === undefined ? {} : { updated: s.updated }),
    ...(s.fault === undefined
      ? {}
      : { fault: { code: s.fault.code, message: s.fault.message } }),
  };
  return server;
});

/** A server (VM) as the client sees it. */
export interface Server {
  /** Server UUID. */
  id: string;
  /** Display name. */
  name: string;
  /** ACTIVE, SHUTOFF, MIGRATING, RESIZE, VERIFY_RESIZE, ERROR, ... */
  status: string;
  /** Compute service host (`OS-EXT-SRV-ATTR:host`). */
  host: string | null;
  /** Hypervisor hostname (`OS-EXT-SRV-ATTR:hypervisor_hostname`). */
  hypervisorHostname: string | null;
  /** `OS-EXT-STS:task_state`, e.g. migrating, resize_prep, deleting. */
  taskState: string | null;
  /** `OS-EXT-STS:vm_state`, e.g. active, stopped, resized, error. */
  vmState: string | null;
  /** `OS-EXT-STS:power_state`: 0 nostate, 1 running, 3 paused, 4 shutdown, 6 crashed, 7 suspended. */
  powerState: number | null;
  /**
   * Embedded flavor (2.47+); disk, ephemeral and swap when Nova sends
   * them, extra specs when the caller may see them (the capacity check).
   */
  flavor: {
    ramMb: number;
    vcpus: number;
    originalName?: string;
    disk?: number;
    ephemeral?: number;
    swap?: number;
    extraSpecs?: Record<string, string>;
  };
  /** Owning project. */
  tenantId?: string;
  /** Last update time. */
  updated?: string;
  /** Present only on ERROR servers. */
  fault?: { code: number; message: string };
}

/** `GET /servers/detail` page. */
export const serverListSchema = z.object({
  servers: z.array(serverSchema),
  servers_links: z.array(z.object({ rel: z.string(), href: z.string() }))
    .optional(),
});

/** `GET /servers/{id}`. */
export const serverShowSchema = z.object({ server: serverSchema });

const migrationBase = {
  id: z.number().int(),
  uuid: z.string(),
  status: z.string(),
  source_compute: nullableString,
  dest_compute: nullableString,
  source_node: nullableString,
  dest_node: nullableString,
  dest_host: nullableString,
  created_at: z.string(),
  updated_at: nullableString,
};

/** Raw record of `GET /os-migrations` (2.59+). */
export const migrationSchema = z.object({
  ...migrationBase,
  instance_uuid: z.string(),
  migration_type: z.string(),
}).transform((m): Migration => ({
  id: m.id,
  uuid: m.uuid,
  instanceUuid: m.instance_uuid,
  migrationType: m.migration_type,
  status: m.status,
  sourceCompute: m.source_compute,
  destCompute: m.dest_compute,
  sourceNode: m.source_node,
  destNode: m.dest_node,
  destHost: m.dest_host,
  createdAt: m.created_at,
  updatedAt: m.updated_at,
}));

/** A migration record. */
export interface Migration {
  /** Integer id (used to abort). */
  id: number;
  /** UUID (2.59+). */
  uuid: string;
  /** The server. */
  instanceUuid: string;
  /** live-migration, migration (cold), resize, evacuation. */
  migrationType: string;
  /**
   * Live: queued, preparing, running, post-migrating, completed, error,
   * failed, cancelled. Cold: pre-migrating, migrating, post-migrating,
   * finished, confirmed, reverted, error.
   */
  status: string;
  /** Source compute host. */
  sourceCompute: string | null;
  /** Destination compute host (chosen by the scheduler). */
  destCompute: string | null;
  /** Source node. */
  sourceNode: string | null;
  /** Destination node. */
  destNode: string | null;
  /** Destination host IP. */
  destHost: string | null;
  /** Creation time (ISO 8601, no zone: UTC). */
  createdAt: string;
  /** Last update time. */
  updatedAt: string | null;
}

/** `GET /os-migrations` page. */
export const migrationListSchema = z.object({
  migrations: z.array(migrationSchema),
  migrations_links: z.array(z.object({ rel: z.string(), href: z.string() }))
    .optional(),
});

const nullableInt = z.number().int().nullable().optional().transform((v) =>
  v ?? null
);

/** Raw record of `GET /servers/{id}/migrations` (in-progress live migrations). */
export const serverMigrationSchema = z.object({
  ...migrationBase,
  server_uuid: z.string(),
  memory_total_bytes: nullableInt,
  memory_processed_bytes: nullableInt,
  memory_remaining_bytes: nullableInt,
  disk_total_bytes: nullableInt,
  disk_processed_bytes: nullableInt,
  disk_remaining_bytes: nullableInt,
}).transform((m): ServerMigration => ({
  id: m.id,
  uuid: m.uuid,
  serverUuid: m.server_uuid,
  status: m.status,
  sourceCompute: m.source_compute,
  destCompute: m.dest_compute,
  createdAt: m.created_at,
  updatedAt: m.updated_at,
  memoryTotalBytes: m.memory_total_bytes,
  memoryProcessedBytes: m.memory_processed_bytes,
  memoryRemainingBytes: m.memory_remaining_bytes,
  diskTotalBytes: m.disk_total_bytes,
  diskProcessedBytes: m.disk_processed_bytes,
  diskRemainingBytes: m.disk_remaining_bytes,
}));

/** An in-progress live migration of one server, with progress counters. */
export interface ServerMigration {
  /** Integer id (used to abort). */
  id: number;
  /** UUID. */
  uuid: string;
  /** The server. */
  serverUuid: string;
  /** queued, preparing, running, post-migrating. */
  status: string;
  /** Source compute host. */
  sourceCompute: string | null;
  /** Destination compute host. */
  destCompute: string | null;
  /** Creation time. */
  createdAt: string;
  /** Last update time. */
  updatedAt: string | null;
  /** Guest memory size. */
  memoryTotalBytes: number | null;
  /** Memory copied so far. */
  memoryProcessedBytes: number | null;
  /** Memory left to copy. */
  memoryRemainingBytes: number | null;
  /** Disk size (block migration). */
  diskTotalBytes: number | null;
  /** Disk copied so far. */
  diskProcessedBytes: number | null;
  /** Disk left to copy. */
  diskRemainingBytes: number | null;
}

/** `GET /servers/{id}/migrations`. */
export const serverMigrationListSchema = z.object({
  migrations: z.array(serverMigrationSchema),
});

/**
 * `GET /servers/{id}/migrations/{migration_id}` (2.23+): one in-progress
 * live migration; its `memory_*` counters are null until the copy reports.
 */
export const serverMigrationShowSchema = z.object({
  migration: serverMigrationSchema,
});

/** Raw hypervisor of `GET /os-hypervisors/detail` (2.53+: UUID ids). */
export const hypervisorSchema = z.object({
  id: z.string(),
  hypervisor_hostname: z.string(),
  state: z.string(),
  status: z.string(),
  service: z.object({
    host: z.string(),
    id: z.string(),
    disabled_reason: z.string().nullable().optional(),
  }).optional(),
  servers: z.array(z.object({ uuid: z.string(), name: z.string() }))
    .optional(),
}).transform((h): Hypervisor => ({
  id: h.id,
  hypervisorHostname: h.hypervisor_hostname,
  state: h.state,
  status: h.status,
  ...(h.service === undefined
    ? {}
    : { serviceHost: h.service.host, serviceId: h.service.id }),
  ...(h.servers === undefined ? {} : { servers: h.servers }),
}));

/** A hypervisor (compute node). Its id is also its resource provider UUID. */
export interface Hypervisor {
  /** UUID (2.53+); equals the Placement resource provider UUID. */
  id: string;
  /** Hypervisor hostname. */
  hypervisorHostname: string;
  /** up or down. */
  state: string;
  /** enabled or disabled (of its compute service). */
  status: string;
  /** Compute service host. */
  serviceHost?: string;
  /** Compute service UUID. */
  serviceId?: string;
  /** Servers on it (only when asked with servers). */
  servers?: { uuid: string; name: string }[];
}

/** `GET /os-hypervisors/detail`. */
export const hypervisorListSchema = z.object({
  hypervisors: z.array(hypervisorSchema),
});

/** Raw service of `GET /os-services` (2.53+: UUID ids). */
export const serviceSchema = z.object({
  id: z.string(),
  binary: z.string(),
  host: z.string(),
  status: z.enum(["enabled", "disabled"]),
  state: z.string(),
  disabled_reason: z.string().nullable().optional(),
  zone: z.string().optional(),
  updated_at: z.string().nullable().optional(),
  forced_down: z.boolean().optional(),
}).transform((s): ComputeService => ({
  id: s.id,
  binary: s.binary,
  host: s.host,
  status: s.status,
  state: s.state,
  disabledReason: s.disabled_reason ?? null,
  forcedDown: s.forced_down ?? false,
  ...(s.zone === undefined ? {} : { zone: s.zone }),
}));

/** A Nova service (we use nova-compute). */
export interface ComputeService {
  /** UUID (2.53+). */
  id: string;
  /** nova-compute. */
  binary: string;
  /** Service host. */
  host: string;
  /** enabled or disabled. */
  status: "enabled" | "disabled";
  /** up or down. */
  state: string;
  /** Why it was disabled. */
  disabledReason: string | null;
  /** Forced down by an operator. */
  forcedDown: boolean;
  /** Availability zone. */
  zone?: string;
}

/** `GET /os-services`. */
export const serviceListSchema = z.object({ services: z.array(serviceSchema) });

/** `PUT /os-services/{id}`. */
export const serviceShowSchema = z.object({ service: serviceSchema });
