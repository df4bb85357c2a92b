/**
 * What a look at one host shows of Nova, as the planner takes it.
 * @module
 */

import type { CopyProgress } from "./progress_types.ts";
import type { Server } from "../mod.ts";

/** A VM as `GET /servers/detail` (2.90) or `GET /servers/{id}` shows it. */
export interface ObservedServer {
  id: string;
  /** For messages only. */
  name?: string;
  /** ACTIVE, PAUSED, SHUTOFF, MIGRATING, RESIZE, VERIFY_RESIZE, ERROR, ... */
  status: string;
  /** Compute service host (`OS-EXT-SRV-ATTR:host`); null when offloaded. */
  host: string | null;
  /** `OS-EXT-STS:task_state`: null, migrating, resize_prep, deleting, ... */
  taskState?: string | null;
  flavor: { ramMb: number };
  fault?: { message: string };
}

/** A record of `GET /os-migrations?host=&changes-since=` (2.59+). */
export interface ObservedMigration {
  /** Nova's id (the one abort takes); absent on a record known only from events. */
  id?: number | string;
  instanceUuid: string;
  /** live-migration, migration, resize, evacuation. */
  migrationType: string;
  /** queued, preparing, running, post-migrating, completed, error, ... */
  status: string;
  sourceCompute: string | null;
  destCompute?: string | null;
  /** Nova time, usually without a zone. */
  createdAt: string;
  updatedAt?: string | null;
  memoryProcessedBytes?: number | null;
  memoryTotalBytes?: number | null;
}

/** Where a VM that left the host list is. */
export interface DepartedServer {
  id: string;
  /** Null when Nova answered 404 (deleted). */
  server: ObservedServer | null;
}

/** One pass's view of Nova. */
export interface Observation {
  servers: Server[];
  /** Migrations from or to the host since the drain started. */
  migrations: ObservedMigration[];
  departed: DepartedServer[];
  /** When the list this rests on began (what may release an action: once.ts). */
  listedAtMs: number;
  /** Nova's limit on the host's live migrations, as its lists showed it. */
  novaLimit?: number;
  /** From the informer's view, not a list made for this look. */
  fromView?: boolean;
  /** By server id. */
  progress?: ReadonlyMap<string, CopyProgress>;
}
