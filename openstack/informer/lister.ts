/**
 * The informer's lister: every call the informer makes to Nova, and
 * Nova's per-host limit learned from every list of migrations.
 * @module
 */

import pLimit from "p-limit";
import type { EvictionStatus } from "../../models/mod.ts";
import { NotFoundError } from "../errors.ts";
import type { NovaClient } from "../nova.ts";
import type { Migration, ServerMigration } from "../nova_types.ts";
import { migrationPhase, waitingInNova } from "./nova_states.ts";
import { ProgressReads } from "./progress_reads.ts";
import { departedIds, departureOf, latestRecords } from "./nova_records.ts";
import type {
  DepartedServer,
  Observation,
  ObservedMigration,
} from "./snapshot.ts";

/** The Nova calls a lister makes (progress reads where the client has them). */
export type ListingNova =
  & Pick<NovaClient, "listServersOnHost" | "listMigrations" | "getServer">
  & Partial<Pick<NovaClient, "getServerMigration">>;

/** What a look at a host reads. */
export interface ListRequest {
  host: string;
  /** The drain's start (Nova's clock). */
  since: Date;
  /** Its VMs' departures a look must tell. */
  status: EvictionStatus;
  ram: (id: string) => number | undefined;
  signal?: AbortSignal | undefined;
}

/** Options of {@linkcode NovaLister}. */
export interface ListerOptions {
  now: () => number;
  /** `GET /servers/{id}` of one look at once (default 8). */
  concurrency?: number;
  warn?: (fields: Record<string, unknown>, message: string) => void;
}

/**
 * Lists hosts in Nova, learning each host's Nova limit on the way.
 *
 * @example
 * ```ts ignore
 * const lister = new NovaLister(nova, { now: () => Date.now() });
 * const seen = await lister.list({ host: "node042", since, status, ram: () => undefined });
 * ```
 */
export class NovaLister {
  readonly #nova: ListingNova;
  readonly #now: () => number;
  readonly #get: ReturnType<typeof pLimit>;
  readonly #warn: NonNullable<ListerOptions["warn"]>;
  readonly #limits = new Map<string, number>();

  constructor(nova: ListingNova, options: ListerOptions) {
    this.#nova = nova;
    this.#now = options.now;
    this.#get = pLimit(options.concurrency ?? 8);
    this.#warn = options.warn ?? (() => {});
  }

  /**
   * One look at the host. With no server left, also every record in progress:
   * Nova filters `changes-since` on `updated_at`, which a queued record keeps.
   */
  async list(req: ListRequest): Promise<Observation> {
    const { host, signal } = req;
    const listedAtMs = this.#now();
    const [servers, recent] = await Promise.all([
      this.#nova.listServersOnHost(host, signal),
      this.#nova.listMigrations({ host, changesSince: req.since }, signal),
    ]);
    const migrations = servers.length === 0
      ? withInProgress(
        recent,
        await this.#nova.listMigrations({ host }, signal),
      )
      : recent;
    this.#learn(host, migrations);
    const latest = latestRecords(migrations, host);
    const looked = await Promise.all(
      departedIds(req.status, servers, migrations, host).map((id) =>
        this.#get(async (): Promise<DepartedServer | undefined> => {
          const record = latest.get(id)?.latest;
          const known = record === undefined
            ? undefined
            : departureOf(record, req.ram(id) ?? 0);
          if (known !== undefined) return { id, server: known };
          try {
            return { id, server: await this.#nova.getServer(id, signal) };
          } catch (err) {
            if (err instanceof NotFoundError) return { id, server: null };
            this.#warn({ serverId: id, err: String(err) }, "lookup failed");
            return undefined;
          }
        })
      ),
    );
    return {
      servers,
      migrations,
      departed: looked.filter((d) => d !== undefined),
      listedAtMs,
      ...this.limitOf(host),
    };
  }

  /** The host's migrations changed since `since` (all without it). */
  async migrations(
    host: string,
    since: Date | undefined,
    signal?: AbortSignal,
  ): Promise<Migration[]> {
    const filter = since === undefined
      ? { host }
      : { host, changesSince: since };
    const migrations = await this.#nova.listMigrations(filter, signal);
    this.#learn(host, migrations);
    return migrations;
  }

  /** One live copy's record, bounded with the lookups; undefined once Nova no longer shows it. */
  serverMigration(
    serverId: string,
    migrationId: string,
    signal?: AbortSignal,
  ): Promise<{ atMs: number; migration: ServerMigration | undefined }> {
    const get = this.#nova.getServerMigration?.bind(this.#nova);
    if (get === undefined) {
      return Promise.reject(
        new TypeError("this Nova client cannot read a migration's progress"),
      );
    }
    return this.#get(async () => {
      const migration = await get(serverId, migrationId, signal);
      return { atMs: this.#now(), migration };
    });
  }

  /** The progress reads of an informer's drains, made by this lister. */
  progressReads(): ProgressReads {
    return new ProgressReads(
      (serverId, migrationId, signal) =>
        this.serverMigration(serverId, migrationId, signal),
      this.#warn,
    );
  }

  /** Nova's limit on the host's live migrations as the lists showed it. */
  novaLimit(host: string): number | undefined {
    return this.#limits.get(host);
  }

  /** {@linkcode novaLimit} as an observation's field. */
  limitOf(host: string): { novaLimit?: number } {
    const limit = this.#limits.get(host);
    return limit === undefined ? {} : { novaLimit: limit };
  }

  #learn(host: string, migrations: readonly ObservedMigration[]): void {
    const next = nextNovaLimit(this.#limits.get(host), migrations, host);
    if (next === undefined) this.#limits.delete(host);
    else this.#limits.set(host, next);
  }
}

/**
 * Nova's `max_concurrent_live_migrations` for `host` after a list: one queued
 * while others copy shows it; more copying than known says it was raised.
 *
 * @example
 * ```ts
 * import { nextNovaLimit } from "./lister.ts";
 * const rec = (id: number, status: string) => ({ id, instanceUuid: `vm${id}`,
 *   migrationType: "live-migration", status, sourceCompute: "h", createdAt: "" });
 * console.assert(nextNovaLimit(undefined, [rec(1, "running"), rec(2, "queued")], "h") === 1);
 * console.assert(nextNovaLimit(1, [], "h") === 1);
 * console.assert(nextNovaLimit(1, [rec(1, "running"), rec(2, "running")], "h") === undefined);
 * ```
 */
export function nextNovaLimit(
  known: number | undefined,
  migrations: readonly ObservedMigration[],
  host: string,
): number | undefined {
  let copying = 0;
  let queued = 0;
  for (const m of migrations) {
    if (m.sourceCompute !== host) continue;
    if (m.migrationType.toLowerCase() !== "live-migration") continue;
    if (migrationPhase(m.status) !== "in_progress") continue;
    if (m.status.toLowerCase() === "queued") queued++;
    else if (!waitingInNova(m.status)) copying++;
  }
  if (queued > 0 && copying > 0) return Math.max(copying, known ?? 0);
  return copying > (known ?? Infinity) ? undefined : known;
}

/**
 * The recent records, plus those of `all` in progress the recent lack.
 *
 * @example
 * ```ts
 * import { withInProgress } from "./lister.ts";
 * const r = (id: number, status: string) => ({ id, instanceUuid: "a",
 *   migrationType: "live-migration", status, sourceCompute: "x",
 *   destCompute: "h", createdAt: "2026-01-01T00:00:00" });
 * const merged = withInProgress([r(2, "completed")], [r(1, "queued"), r(2, "completed"), r(3, "error")]);
 * console.assert(merged.map((m) => m.id).join() === "2,1");
 * ```
 */
export function withInProgress<
  T extends { id?: number | string; status: string },
>(recent: readonly T[], all: readonly T[]): T[] {
  const known = new Set(recent.map((m) => String(m.id)));
  return [
    ...recent,
    ...all.filter((m) =>
      !known.has(String(m.id)) && migrationPhase(m.status) === "in_progress"
    ),
  ];
}
