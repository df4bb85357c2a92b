/**
 * Observe: what Nova shows of the host now. Every pass that can start,
 * confirm or finish reads it afresh: the servers on the host (all tenants,
 * with task and power state), the migrations with the host as source or
 * destination since the drain started (once no server is left, also every
 * record still in progress, however old), and a `GET /servers/{id}` only for a
 * VM that left the list without a record telling where it went.
 *
 * @module
 */

import { errText } from "../../framework/errors.ts";
import pLimit from "p-limit";
import type { Logger } from "../../framework/logger.ts";
import type { EvictionStatus } from "../../models/mod.ts";
import { NotFoundError } from "../../openstack/mod.ts";
import type { CountedNova } from "./nova_calls.ts";
import { migrationPhase } from "../../openstack/informer/nova_states.ts";
import type {
  DepartedServer,
  Observation,
} from "../../openstack/informer/snapshot.ts";
import {
  departedIds,
  departureOf,
  latestRecords,
} from "../../openstack/informer/nova_records.ts";

/**
 * Reads the host's servers and migrations, then looks up the VMs that left
 * it. Throws when a list fails (the pass cannot decide without it); a
 * failed lookup of one VM only leaves that VM out (the planner keeps what
 * it knew of it).
 *
 * @example
 * ```ts ignore
 * const seen = await observe(nova, "node042", status, since, ram, 8, log, signal);
 * ```
 */
export async function observe(
  nova: CountedNova,
  host: string,
  status: EvictionStatus,
  changesSince: Date,
  ram: ReadonlyMap<string, number>,
  concurrency: number,
  log: Logger,
  signal: AbortSignal,
): Promise<Observation> {
  const [servers, recent] = await Promise.all([
    nova.listServersOnHost(host, signal),
    nova.listMigrations({ host, changesSince }, signal),
  ]);
  // The look that may find the host empty also reads the records still in
  // progress whatever their age: Nova filters changes-since on updated_at,
  // which a record queued behind another host's migrations (or stuck) does
  // not touch, so a VM on its way here would be missed.
  const migrations = servers.length === 0
    ? withInProgress(recent, await nova.listMigrations({ host }, signal))
    : recent;
  const latest = latestRecords(migrations, host);
  const get = pLimit(concurrency);
  const looked = await Promise.all(
    departedIds(status, servers, migrations, host).map((id) =>
      get(async (): Promise<DepartedServer | undefined> => {
        const record = latest.get(id)?.latest;
        const known = record === undefined
          ? undefined
          : departureOf(record, ram.get(id) ?? 0);
        if (known !== undefined) return { id, server: known };
        try {
          return { id, server: await nova.getServer(id, signal) };
        } catch (err) {
          if (err instanceof NotFoundError) return { id, server: null };
          log.warn({ serverId: id, err: errText(err) }, "server lookup failed");
          return undefined;
        }
      })
    ),
  );
  return {
    servers,
    migrations,
    departed: looked.filter((d): d is DepartedServer => d !== undefined),
  };
}

/**
 * The recent records, and of all records those still in progress that
 * the recent ones lack (by id).
 *
 * @example
 * ```ts
 * import { withInProgress } from "./observe.ts";
 * const r = (id: number, status: string) => ({ id, instanceUuid: "a",
 *   migrationType: "live-migration", status, sourceCompute: "x",
 *   destCompute: "h", createdAt: "2026-01-01T00:00:00" });
 * const merged = withInProgress([r(2, "completed")], [r(1, "queued"), r(2, "completed"), r(3, "error")]);
 * console.assert(merged.map((m) => m.id).join() === "2,1");
 * ```
 */
export function withInProgress<
  T extends { id: number | string; status: string },
>(
  recent: readonly T[],
  all: readonly T[],
): T[] {
  const known = new Set(recent.map((m) => String(m.id)));
  return [
    ...recent,
    ...all.filter((m) =>
      !known.has(String(m.id)) && migrationPhase(m.status) === "in_progress"
    ),
  ];
}
