/**
 * The Nova calls of the eviction controller, each counted in
 * `evictor_nova_calls_total{call,outcome}`.
 *
 * @module
 */

import {
  type ActionResult,
  type ComputeService,
  ConflictError,
  type InstanceAction,
  type Migration,
  type MigrationFilter,
  NotFoundError,
  type NovaClient,
  OpenStackError,
  type Server,
} from "../../openstack/mod.ts";
import type { EvictionMetrics } from "./metrics.ts";
import { NovaClock } from "../../openstack/informer/nova_clock.ts";

function outcomeOf(err: unknown): string {
  if (err instanceof NotFoundError) return "not_found";
  if (err instanceof ConflictError) return "conflict";
  if (err instanceof OpenStackError) {
    return err.status === undefined ? "no_response" : String(err.status);
  }
  return "error";
}

/**
 * The subset of {@linkcode NovaClient} a drain uses, with every call counted.
 *
 * @example
 * ```ts ignore
 * const nova = new CountedNova(client, metrics);
 * const servers = await nova.listServersOnHost("node042");
 * ```
 */
export class CountedNova {
  readonly #nova: NovaClient;
  readonly #metrics: EvictionMetrics;
  readonly #clock: NovaClock;

  /**
   * Wraps `nova`, counting into `metrics`; with `clock` (the controller's),
   * Nova's clock (`novaClock`) is learned from its answers.
   */
  constructor(
    nova: NovaClient,
    metrics: EvictionMetrics,
    clock?: { now(): number },
    novaClock: NovaClock = new NovaClock(),
  ) {
    this.#nova = nova;
    this.#metrics = metrics;
    this.#clock = novaClock;
    if (clock !== undefined && typeof nova.onServerDate === "function") {
      nova.onServerDate((ms) => this.#clock.sample(ms, clock.now()));
    }
  }

  /**
   * Nova's clock minus the controller's (ms), once learned and steady
   * (nova_clock.ts); 0 otherwise.
   */
  novaClockOffsetMs(): number {
    return this.#clock.offsetMs();
  }

  async #count<T>(call: string, fn: () => Promise<T>): Promise<T> {
    try {
      const result = await fn();
      this.#metrics.novaCalls.inc({ call, outcome: "ok" });
      return result;
    } catch (err) {
      this.#metrics.novaCalls.inc({ call, outcome: outcomeOf(err) });
      throw err;
    }
  }

  /**
   * Settles the compute microversion (`GET` of Nova's version document,
   * once per process; not counted: it is no call of a drain's).
   */
  negotiate(signal?: AbortSignal): Promise<string> {
    return this.#nova.negotiate(signal);
  }

  /** `GET /servers/detail?all_tenants=1&host=` (all pages). */
  listServersOnHost(host: string, signal?: AbortSignal): Promise<Server[]> {
    return this.#count(
      "listServersOnHost",
      () => this.#nova.listServersOnHost(host, signal),
    );
  }

  /** `GET /os-migrations` (all pages). */
  listMigrations(
    filter: MigrationFilter,
    signal?: AbortSignal,
  ): Promise<Migration[]> {
    return this.#count(
      "listMigrations",
      () => this.#nova.listMigrations(filter, signal),
    );
  }

  /** `GET /servers/{id}/os-instance-actions/{requestId}`. */
  getInstanceAction(
    id: string,
    requestId: string,
    signal?: AbortSignal,
  ): Promise<InstanceAction> {
    return this.#count(
      "getInstanceAction",
      () => this.#nova.getInstanceAction(id, requestId, signal),
    );
  }

  /** `GET /servers/{id}`; throws NotFoundError when deleted. */
  getServer(id: string, signal?: AbortSignal): Promise<Server> {
    return this.#count("getServer", () => this.#nova.getServer(id, signal));
  }

  /** `os-migrateLive` with host null and block migration auto. */
  liveMigrate(id: string, signal?: AbortSignal): Promise<ActionResult> {
    return this.#count(
      "liveMigrate",
      () =>
        this.#nova.liveMigrate(
          id,
          { host: null, blockMigration: "auto" },
          signal,
        ),
    );
  }

  /** `migrate` (cold), the scheduler picks the host. */
  coldMigrate(id: string, signal?: AbortSignal): Promise<ActionResult> {
    return this.#count(
      "coldMigrate",
      () => this.#nova.coldMigrate(id, {}, signal),
    );
  }

  /** `confirmResize`. */
  confirmResize(id: string, signal?: AbortSignal): Promise<ActionResult> {
    return this.#count(
      "confirmResize",
      () => this.#nova.confirmResize(id, signal),
    );
  }

  /** `DELETE /servers/{id}/migrations/{migrationId}`. */
  abortLiveMigration(
    id: string,
    migrationId: number,
    signal?: AbortSignal,
  ): Promise<ActionResult> {
    return this.#count(
      "abortLiveMigration",
      () => this.#nova.abortLiveMigration(id, migrationId, signal),
    );
  }

  /** The nova-compute service of a host, or undefined. */
  findComputeService(
    host: string,
    signal?: AbortSignal,
  ): Promise<ComputeService | undefined> {
    return this.#count(
      "findComputeService",
      () => this.#nova.findComputeService(host, signal),
    );
  }

  /** `PUT /os-services/{id}`. */
  setComputeServiceStatus(
    id: string,
    enabled: boolean,
    reason?: string,
    signal?: AbortSignal,
  ): Promise<ComputeService> {
    return this.#count(
      "setComputeServiceStatus",
      () => this.#nova.setComputeServiceStatus(id, enabled, reason, signal),
    );
  }
}
