/**
 * The real cloud's migration records (os-migrations) as the demo's summary
 * reads them.
 *
 * @module
 */
import { parseNovaTime } from "../openstack/nova_time.ts";
import {
  IN_PROGRESS,
  type MigrationSample,
  type RawMigration,
} from "../tests/harness/nova_migrations.ts";
import type { MigrationRecord } from "./summary.ts";

/**
 * Nova's records of the servers `ours`, once each, as summary records: a
 * record's span (creation to last update, Nova's whole seconds) is its
 * `copyMs`, as the real cloud tells no copy time of its own.
 *
 * @example
 * ```ts
 * import { summaryRecords } from "./nova_records.ts";
 * const [r] = summaryRecords([{ id: 1, instance_uuid: "a", migration_type: "live-migration",
 *   status: "completed", source_compute: "n1", dest_compute: "n2",
 *   created_at: "2026-01-01T00:00:00.000000", updated_at: "2026-01-01T00:00:07.000000" }], new Set(["a"]));
 * console.assert(r?.copyMs === 7000);
 * ```
 */
export function summaryRecords(
  raw: readonly RawMigration[],
  ours: ReadonlySet<string>,
): MigrationRecord[] {
  const byId = new Map<number, RawMigration>();
  for (const m of raw) if (ours.has(m.instance_uuid)) byId.set(m.id, m);
  return [...byId.values()].sort((a, b) => a.id - b.id).map((m) => {
    const createdAt = parseNovaTime(m.created_at);
    if (createdAt === undefined) {
      throw new Error(
        `migration ${m.id}: created_at "${m.created_at}" is not a Nova time`,
      );
    }
    const updatedAt = parseNovaTime(m.updated_at) ?? createdAt;
    return {
      serverId: m.instance_uuid,
      source: m.source_compute,
      type: m.migration_type,
      status: m.status,
      createdAt,
      updatedAt,
      copyMs: updatedAt - createdAt,
    };
  });
}

/**
 * The most live migrations from `hosts` that Nova was working on in one
 * look (accepted, preparing, running; a record Nova holds `queued` spends
 * no slot of evictor's, nor the cluster budget).
 *
 * @example
 * ```ts
 * import { inFlightPeak } from "./nova_records.ts";
 * console.assert(inFlightPeak([], ["n1"]) === 0);
 * ```
 */
export function inFlightPeak(
  samples: readonly MigrationSample[],
  hosts: readonly string[],
): number {
  const counted = IN_PROGRESS.filter((s) => s !== "queued");
  return Math.max(
    0,
    ...samples.map((s) =>
      s.records.filter((m) =>
        hosts.includes(m.source_compute) && counted.includes(m.status)
      ).length
    ),
  );
}
