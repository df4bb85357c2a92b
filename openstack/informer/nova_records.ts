/**
 * What Nova's lists say of a host's VMs, read alike by planner and view.
 * @module
 */

import { parseNovaTime } from "../nova_time.ts";
import type { EvictionStatus } from "../../models/mod.ts";
import { migrationPhase, waitingInNova } from "./nova_states.ts";
import type { ObservedMigration, ObservedServer } from "./snapshot.ts";

/** The records of one VM that matter to the planner. */
export interface VmRecords {
  latest: ObservedMigration;
  inProgress: ObservedMigration | undefined;
}

/**
 * The latest record, and latest in progress, of each VM leaving `host`.
 *
 * @example
 * ```ts
 * import { latestRecords } from "./nova_records.ts";
 * const base = { instanceUuid: "a", migrationType: "live-migration", sourceCompute: "h" };
 * const latest = latestRecords([
 *   { ...base, id: 1, status: "running", createdAt: "2026-01-01T00:00:00" },
 *   { ...base, id: 2, status: "error", createdAt: "2026-01-01T00:05:00" },
 * ], "h");
 * console.assert(latest.get("a")?.latest.id === 2);
 * console.assert(latest.get("a")?.inProgress?.id === 1);
 * ```
 */
export function latestRecords(
  records: readonly ObservedMigration[],
  host: string,
): Map<string, VmRecords> {
  const byVm = new Map<string, VmRecords>();
  for (const record of records) {
    if (record.sourceCompute !== null && record.sourceCompute !== host) {
      continue;
    }
    const known = byVm.get(record.instanceUuid);
    const running = migrationPhase(record.status) === "in_progress";
    if (known === undefined) {
      byVm.set(record.instanceUuid, {
        latest: record,
        inProgress: running ? record : undefined,
      });
      continue;
    }
    if (newer(record, known.latest)) known.latest = record;
    if (
      running &&
      (known.inProgress === undefined || newer(record, known.inProgress))
    ) {
      known.inProgress = record;
    }
  }
  return byVm;
}

/**
 * The migrations towards `host` in progress: work to wait for, never failures.
 *
 * @example
 * ```ts
 * import { arrivingRecords } from "./nova_records.ts";
 * const r = arrivingRecords([{ id: 1, instanceUuid: "a", migrationType: "live-migration",
 *   status: "running", sourceCompute: "other", destCompute: "h", createdAt: "2026-01-01T00:00:00" }], "h");
 * console.assert(r.get("a")?.id === 1);
 * ```
 */
export function arrivingRecords(
  records: readonly ObservedMigration[],
  host: string,
): Map<string, ObservedMigration> {
  const byVm = new Map<string, ObservedMigration>();
  for (const record of records) {
    if (record.destCompute !== host || record.sourceCompute === host) continue;
    if (migrationPhase(record.status) !== "in_progress") continue;
    const known = byVm.get(record.instanceUuid);
    if (known === undefined || newer(record, known)) {
      byVm.set(record.instanceUuid, record);
    }
  }
  return byVm;
}

function newer(a: ObservedMigration, b: ObservedMigration): boolean {
  const ta = parseNovaTime(a.createdAt) ?? -Infinity;
  const tb = parseNovaTime(b.createdAt) ?? -Infinity;
  if (ta !== tb) return ta > tb;
  const ia = Number(a.id);
  const ib = Number(b.id);
  if (!Number.isNaN(ia) && !Number.isNaN(ib) && ia !== ib) return ia > ib;
  return String(a.id) > String(b.id);
}

/** VMs off the host whose migration from it still holds its resources. */
export function unfinishedElsewhere(
  records: ReadonlyMap<string, VmRecords>,
  onHost: { has(id: string): boolean },
): Map<string, ObservedMigration> {
  const found = new Map<string, ObservedMigration>();
  for (const [id, r] of records) {
    if (onHost.has(id)) continue;
    if (r.inProgress !== undefined) found.set(id, r.inProgress);
    else if (r.latest.status.toLowerCase() === "finished") {
      found.set(id, r.latest);
    }
  }
  return found;
}

/**
 * The ids to look up with `GET /servers/{id}`, sorted: tracked or unfinished
 * elsewhere (found even when the status write that tracked it was lost).
 *
 * @example
 * ```ts
 * import { departedIds } from "./nova_records.ts";
 * const ids = departedIds(
 *   { outstandingInstances: ["a", "b"], inFlight: [{ id: "c", kind: "live", startedAt: "2026-01-01T00:00:00Z" }] },
 *   [{ id: "a" }],
 *   [{ id: 1, instanceUuid: "d", migrationType: "migration", status: "finished", sourceCompute: "h", createdAt: "2026-01-01T00:00:00" }],
 *   "h",
 * );
 * console.assert(ids.join() === "b,c,d");
 * ```
 */
export function departedIds(
  status: EvictionStatus | undefined,
  servers: readonly { id: string }[],
  migrations: readonly ObservedMigration[],
  host: string,
): string[] {
  const listed = new Set(servers.map((s) => s.id));
  // An arriving VM is not on the host yet: its record says where it is.
  for (const id of arrivingRecords(migrations, host).keys()) listed.add(id);
  const tracked = new Set([
    ...(status?.outstandingInstances ?? []),
    ...(status?.inFlight ?? []).map((e) => e.id),
    ...unfinishedElsewhere(latestRecords(migrations, host), listed).keys(),
  ]);
  return [...tracked].filter((id) => !listed.has(id)).sort();
}

/**
 * Where a VM that left is, when its record says so (else a lookup tells).
 *
 * @example
 * ```ts
 * import { departureOf } from "./nova_records.ts";
 * const s = departureOf({ instanceUuid: "a", migrationType: "live-migration",
 *   status: "completed", destCompute: "d" }, 1024);
 * console.assert(s?.host === "d" && s.status === "ACTIVE");
 * ```
 */
export function departureOf(
  record: {
    instanceUuid: string;
    migrationType: string;
    status: string;
    destCompute?: string | null;
  },
  ramMb: number,
): ObservedServer | undefined {
  const dest = record.destCompute;
  if (dest === undefined || dest === null) return undefined;
  if (migrationPhase(record.status) !== "done") return undefined;
  const live = record.migrationType.toLowerCase() === "live-migration";
  const awaitingConfirm = !live && record.status.toLowerCase() === "finished";
  return {
    id: record.instanceUuid,
    status: awaitingConfirm ? "VERIFY_RESIZE" : "ACTIVE",
    host: dest,
    taskState: null,
    flavor: { ramMb },
  };
}

/**
 * VMs in a live migration with no record shown while another copies:
 * Nova may hold them `queued`, which no event says (none at `novaLimit`).
 *
 * @example
 * ```ts
 * import { untoldLiveMigrations } from "./nova_records.ts";
 * const vm = (id: string) => ({ id, name: id, status: "MIGRATING", host: "h", hypervisorHostname: "h",
 *   taskState: "migrating", vmState: "active", powerState: 1, flavor: { ramMb: 1, vcpus: 1 } });
 * const copying = { id: 1, instanceUuid: "a", migrationType: "live-migration", status: "running",
 *   sourceCompute: "h", createdAt: "2026-01-01T00:00:00" };
 * const seen = { servers: [vm("a"), vm("b")], migrations: [copying], departed: [] };
 * console.assert(untoldLiveMigrations(seen, "h").join() === "b");
 * console.assert(untoldLiveMigrations({ ...seen, migrations: [] }, "h").length === 0);
 * console.assert(untoldLiveMigrations(seen, "h", 1).length === 0);
 * console.assert(untoldLiveMigrations(seen, "h", 2).join() === "b");
 * ```
 */
export function untoldLiveMigrations(
  seen: {
    servers: readonly Pick<ObservedServer, "id" | "taskState">[];
    migrations: readonly ObservedMigration[];
  },
  host: string,
  novaLimit?: number,
): string[] {
  const latest = latestRecords(seen.migrations, host);
  const told = (id: string) => latest.get(id)?.inProgress !== undefined;
  const copying =
    [...latest.values()].filter((r) =>
      r.inProgress !== undefined && r.inProgress.sourceCompute === host &&
      !waitingInNova(r.inProgress.status)
    ).length;
  if (copying === 0 || copying >= (novaLimit ?? Infinity)) return [];
  return seen.servers
    .filter((s) => s.taskState === "migrating" && !told(s.id))
    .map((s) => s.id);
}

/**
 * How a message names a record.
 *
 * @example
 * ```ts
 * import { recordName } from "./nova_records.ts";
 * console.assert(recordName({ id: 7, migrationType: "live-migration" }) === "live-migration 7");
 * console.assert(recordName({ migrationType: "migration" }) === "migration");
 * ```
 */
export function recordName(
  m: Pick<ObservedMigration, "id" | "migrationType">,
): string {
  return m.id === undefined ? m.migrationType : `${m.migrationType} ${m.id}`;
}
