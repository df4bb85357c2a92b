/**
 * Counters of every call the simulator served, for tests and benchmarks.
 *
 * @module
 */

/** A snapshot of the simulator's counters. */
export interface CountersSnapshot {
  /** Calls per `METHOD /path/{template}` (every call, including failed ones). */
  calls: Record<string, number>;
  /** All calls. */
  total: number;
  /** Migration actions received per server id (accepted or not). */
  migrationRequests: Record<string, number>;
  /** Migrations Nova accepted per server id. */
  migrationsAccepted: Record<string, number>;
  /** Injected HTTP faults applied. */
  faultsInjected: number;
}

/**
 * Mutable counters.
 *
 * @example
 * ```ts
 * import { Counters } from "./counters.ts";
 * const c = new Counters();
 * c.call("GET /compute/v2.1/servers/detail");
 * console.log(c.snapshot(new Map()).total); // 1
 * ```
 */
export class Counters {
  readonly #calls = new Map<string, number>();
  readonly #migrationRequests = new Map<string, number>();
  #total = 0;
  #faults = 0;

  /** Counts one call. */
  call(key: string): void {
    this.#calls.set(key, (this.#calls.get(key) ?? 0) + 1);
    this.#total++;
  }

  /** Counts one migration action for a server. */
  migrationRequest(serverId: string): void {
    this.#migrationRequests.set(
      serverId,
      (this.#migrationRequests.get(serverId) ?? 0) + 1,
    );
  }

  /** Counts one injected fault. */
  fault(): void {
    this.#faults++;
  }

  /** A copy of the counters. */
  snapshot(accepted: ReadonlyMap<string, number>): CountersSnapshot {
    return {
      calls: Object.fromEntries(this.#calls),
      total: this.#total,
      migrationRequests: Object.fromEntries(this.#migrationRequests),
      migrationsAccepted: Object.fromEntries(accepted),
      faultsInjected: this.#faults,
    };
  }

  /** Clears the call counters (not the world's accepted migrations). */
  reset(): void {
    this.#calls.clear();
    this.#migrationRequests.clear();
    this.#total = 0;
    this.#faults = 0;
  }
}
