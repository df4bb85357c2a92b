/**
 * Cheap passes: while migrations run and nothing else changed, one
 * migration list tells whether a full pass can do anything. A full pass
 * (server list, migration list, GETs, starts, status) runs when a record
 * of this host appeared or reached a final state, when the Eviction, its
 * Hypervisor or the policy changed, or when the last full pass is older
 * than the longest poll wait; otherwise the pass ends after that one call.
 * When the only news is migrations that completed away from the host, the
 * pass refills the freed slots from the last server view instead (see
 * `refill.ts`): one call plus the starts.
 *
 * @module
 */

import type { EvictionStatus } from "../../models/mod.ts";
import type { ObservedMigration, ObservedServer } from "./observation.ts";
import { type ProbeVerdict, probeVerdict, recordStates } from "./refill.ts";

interface LastFull {
  /** resourceVersions of the Eviction, Hypervisor and policy. */
  fingerprint: string;
  /** Record ids of this host, each with "settled" or "open". */
  records: Map<string, boolean>;
  /** The server view: the last full pass's list, less VMs refills saw leave. */
  servers: readonly ObservedServer[];
  /** When the last full pass ran (clock ms); refills do not renew it. */
  atMs: number;
}

/**
 * What the last full pass of each drain saw.
 *
 * @example
 * ```ts
 * import { Prober } from "./probe.ts";
 * const p = new Prober();
 * const rec = { id: 1, instanceUuid: "a", migrationType: "live-migration",
 *   status: "running", sourceCompute: "h", createdAt: "2026-01-01T00:00:00" };
 * p.fullPass("e", "rv1", [rec], "h", 0);
 * console.assert(!p.needsFullPass("e", "rv1", [rec], "h", 1000, 30_000));
 * console.assert(p.needsFullPass("e", "rv1", [{ ...rec, status: "completed" }], "h", 1000, 30_000));
 * ```
 */
export class Prober {
  readonly #last = new Map<string, LastFull>();

  /** Records a full pass. */
  fullPass(
    key: string,
    fingerprint: string,
    migrations: readonly ObservedMigration[],
    host: string,
    nowMs: number,
    servers: readonly ObservedServer[] = [],
  ): void {
    this.#last.set(key, {
      fingerprint,
      records: recordStates(migrations, host),
      servers,
      atMs: nowMs,
    });
  }

  /**
   * Records a refill: the records and server view it planned from become
   * the reference of the next probe; the age of the last full pass stays,
   * so a full pass still comes at least every `maxAgeMs`.
   */
  refilled(
    key: string,
    migrations: readonly ObservedMigration[],
    host: string,
    servers: readonly ObservedServer[],
  ): void {
    const last = this.#last.get(key);
    if (last === undefined) return;
    this.#last.set(key, {
      ...last,
      records: recordStates(migrations, host),
      servers,
    });
  }

  /**
   * What this migration list calls for (see {@linkcode probeVerdict}); a
   * full pass whenever probing is not allowed at all.
   */
  verdict(
    key: string,
    fingerprint: string,
    migrations: readonly ObservedMigration[],
    probe: {
      host: string;
      status: EvictionStatus;
      nowMs: number;
      maxAgeMs: number;
      gracePeriodMs: number;
    },
  ): ProbeVerdict {
    const last = this.#last.get(key);
    if (
      last === undefined ||
      !this.mayProbe(key, fingerprint, probe.nowMs, probe.maxAgeMs)
    ) return { kind: "full", why: "no recent full pass" };
    return probeVerdict({
      host: probe.host,
      servers: last.servers,
      records: last.records,
      migrations,
      status: probe.status,
      nowMs: probe.nowMs,
      gracePeriodMs: probe.gracePeriodMs,
    });
  }

  /** Whether one may probe at all (a full pass ran and nothing changed in the cluster). */
  mayProbe(
    key: string,
    fingerprint: string,
    nowMs: number,
    maxAgeMs: number,
  ): boolean {
    const last = this.#last.get(key);
    return last !== undefined && last.fingerprint === fingerprint &&
      nowMs - last.atMs < maxAgeMs;
  }

  /**
   * Whether this migration list calls for a full pass: a record appeared
   * or settled since the last full pass, or that pass is too old or saw
   * other objects.
   */
  needsFullPass(
    key: string,
    fingerprint: string,
    migrations: readonly ObservedMigration[],
    host: string,
    nowMs: number,
    maxAgeMs: number,
  ): boolean {
    if (!this.mayProbe(key, fingerprint, nowMs, maxAgeMs)) return true;
    const last = this.#last.get(key);
    if (last === undefined) return true;
    for (const [id, settled] of recordStates(migrations, host)) {
      const before = last.records.get(id);
      if (before === undefined || before !== settled) return true;
    }
    return false;
  }

  /** Forgets a drain. */
  forget(key: string): void {
    this.#last.delete(key);
  }
}
