/**
 * Cheap passes: while migrations run and nothing else changed, one
 * migration list tells whether a full pass can do anything. A full pass
 * (server list, migration list, GETs, starts, status) runs when a record
 * of this host appeared or reached a final state, when the Eviction, its
 * Hypervisor or the policy changed, or when the last full pass is older
 * than the longest poll wait; otherwise the pass ends after that one call.
 *
 * @module
 */

import type { ObservedMigration } from "./observation.ts";

/** Statuses after which a migration holds nothing any more (or awaits a confirm). */
const SETTLED = new Set([
  "completed",
  "error",
  "failed",
  "cancelled",
  "aborted",
  "done",
  "finished",
  "confirmed",
  "reverted",
]);

interface LastFull {
  /** resourceVersions of the Eviction, Hypervisor and policy. */
  fingerprint: string;
  /** Record ids of this host, each with "settled" or "open". */
  records: Map<string, boolean>;
  /** When it ran (clock ms). */
  atMs: number;
}

function recordsOf(
  migrations: readonly ObservedMigration[],
  host: string,
): Map<string, boolean> {
  const out = new Map<string, boolean>();
  for (const m of migrations) {
    if (m.sourceCompute !== null && m.sourceCompute !== host) continue;
    out.set(String(m.id), SETTLED.has(m.status.toLowerCase()));
  }
  return out;
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
  ): void {
    this.#last.set(key, {
      fingerprint,
      records: recordsOf(migrations, host),
      atMs: nowMs,
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
    for (const [id, settled] of recordsOf(migrations, host)) {
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
