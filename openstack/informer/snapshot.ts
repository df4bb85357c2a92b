/**
 * What a look at one host shows of Nova, as the planner takes it (the
 * client's `Server` and `Migration` fit structurally).
 *
 * @module
 */

import type { Server } from "../mod.ts";

/**
 * A VM as `GET /servers/detail?all_tenants=1&host=` (2.90) or
 * `GET /servers/{id}` shows it.
 */
export interface ObservedServer {
  /** Server UUID. */
  id: string;
  /** Display name, for messages only. */
  name?: string;
  /** ACTIVE, PAUSED, SHUTOFF, MIGRATING, RESIZE, VERIFY_RESIZE, ERROR, ... */
  status: string;
  /** Compute service host (`OS-EXT-SRV-ATTR:host`); null when offloaded. */
  host: string | null;
  /** `OS-EXT-STS:task_state`: null, migrating, resize_prep, deleting, ... */
  taskState?: string | null;
  /** Embedded flavor (2.47+): only its RAM matters here. */
  flavor: { ramMb: number };
  /** Present on ERROR servers. */
  fault?: { message: string };
}

/** A record of `GET /os-migrations?host=&changes-since=` (2.59+). */
export interface ObservedMigration {
  /**
   * Nova's integer migration id (the one abort takes); absent on a record
   * the informer knows only from Nova's notifications, not yet listed.
   */
  id?: number | string;
  /** The server it moves. */
  instanceUuid: string;
  /** live-migration, migration, resize, evacuation. */
  migrationType: string;
  /** queued, preparing, running, post-migrating, completed, error, ... */
  status: string;
  /** The host the VM leaves; records of other sources are ignored. */
  sourceCompute: string | null;
  /** The host it goes to, once known (tells where a completed one went). */
  destCompute?: string | null;
  /** Nova time, usually without a zone (UTC). */
  createdAt: string;
  /** Nova time of the last change. */
  updatedAt?: string | null;
  /** Live migration progress, when the reconciler has it. */
  memoryProcessedBytes?: number | null;
  /** Live migration total, when the reconciler has it. */
  memoryTotalBytes?: number | null;
}

/**
 * The answer of `GET /servers/{id}` for a VM that left the host list:
 * `server` is null on 404 (deleted). A VM whose GET failed for another
 * reason is simply not listed; the planner then keeps what it knew.
 */
export interface DepartedServer {
  /** The id that was looked up. */
  id: string;
  /** The server now, or null when Nova answered 404. */
  server: ObservedServer | null;
}

/** One pass's view of Nova. */
export interface Observation {
  /** The VMs on the host. */
  servers: Server[];
  /** Migrations from or to the host since the drain started. */
  migrations: ObservedMigration[];
  /** Where the VMs that left the list are (null: deleted). */
  departed: DepartedServer[];
  /**
   * Drain clock when the list this rests on began (a view's: its list's);
   * what may release an action of ours (once.ts).
   */
  listedAtMs: number;
  /** Nova's limit on the host's live migrations, as its lists showed it. */
  novaLimit?: number;
  /** The informer's view (a list and the events since), not a list made for this look. */
  fromView?: boolean;
}
