/**
 * Nova's migration records as the real cloud lists them (os-migrations,
 * microversion 2.80), and a sampler of them: what the real-OpenStack lane's
 * tests and the demo's `--cloud openstack` read to see what Nova did.
 *
 * @module
 */
import type { OpenStackCloud } from "./openstack.ts";

/** A migration record as Nova lists it (2.80). */
export interface RawMigration {
  id: number;
  instance_uuid: string;
  migration_type: string;
  status: string;
  source_compute: string;
  dest_compute: string | null;
  created_at: string;
  updated_at: string | null;
}

/** Statuses of a migration record Nova still works on. */
export const IN_PROGRESS: readonly string[] = [
  "accepted",
  "queued",
  "preparing",
  "running",
];

/** One look at Nova's records of a scenario's servers. */
export interface MigrationSample {
  /** When the look ended (ms, this process's clock). */
  at: number;
  /** Every record of the scenario's servers from or to the hosts looked at. */
  records: RawMigration[];
}

/** Lists the records of `host` (both directions), or undefined on a failed call. */
export type MigrationLister = (
  host: string,
) => Promise<RawMigration[] | undefined>;

/**
 * A {@linkcode MigrationLister} on the cloud's admin: every record from or
 * to `host` (without `changes-since`, which leaves out a record Nova has not
 * updated yet).
 */
export function listMigrationsOf(cloud: OpenStackCloud): MigrationLister {
  return async (host) => {
    const r = await cloud.call(
      "compute",
      "GET",
      `/os-migrations?host=${host}`,
      { microversion: "2.80" },
    ).catch(() => undefined);
    return r?.status === 200
      ? (r.body as { migrations: RawMigration[] }).migrations
      : undefined;
  };
}

/**
 * Looks at Nova's records of the servers `ours()` from and to `hosts`
 * every `everyMs` until `stop`, which gives every complete look.
 */
export function sampleNovaMigrations(
  list: MigrationLister,
  ours: () => ReadonlySet<string>,
  hosts: readonly string[],
  everyMs = 300,
): { stop(): Promise<MigrationSample[]> } {
  const samples: MigrationSample[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const lists = await Promise.all(hosts.map(list));
      if (lists.every((l) => l !== undefined)) {
        const mine = ours();
        const byId = new Map<number, RawMigration>();
        for (const m of lists.flat()) {
          if (m && mine.has(m.instance_uuid)) byId.set(m.id, m);
        }
        samples.push({ at: Date.now(), records: [...byId.values()] });
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return samples;
    },
  };
}
