/**
 * The one in-process memory of each drain, forgotten in one call when its
 * Eviction is gone: the status this process last wrote (with the
 * resourceVersion the API server gave that write), the starts it issued
 * and what Nova answered, the confirms it has under way, the duration model
 * that paces the passes, and when the next pass is due. A restart loses it
 * all on purpose: the status and a fresh look at Nova are enough to go on.
 *
 * @module
 */

import type { Eviction, EvictionStatus } from "../../models/mod.ts";
import type { ObservedMigration, StartNote } from "./observation.ts";
import type { NovaLimitMemo } from "./nova_limit.ts";
import {
  type MigrationKind,
  migrationPhase,
  waitingInNova,
} from "./nova_states.ts";
import type { StartBackoff } from "./plan.ts";
import { Durations, Pace } from "./pacing.ts";

/** A start this process issued, and Nova's answer so far. */
export interface IssuedStart extends StartNote {
  /** live or cold. */
  kind: MigrationKind;
  /** Controller clock when it was issued. */
  issuedAtMs: number;
  /** Nova's request id of an accepted start (its instance action). */
  requestId?: string;
}

/** What one drain remembers. */
export interface DrainState {
  /** Starts by server id (the last one per VM). */
  readonly starts: Map<string, IssuedStart>;
  /** Servers whose confirmResize is under way. */
  readonly confirming: Set<string>;
  /** Flavor RAM of the VMs seen on the host. */
  readonly ram: Map<string, number>;
  /** The duration model (its first samples shared by every drain of the process). */
  readonly pace: Pace;
  /**
   * Controller clock before which a pass need not look at Nova, and the
   * inputs it was computed from: a pass woken earlier by an unrelated
   * change (a Hypervisor status sync) returns at once.
   */
  due: { atMs: number; fingerprint: string } | undefined;
  /** A start answer came in that the next pass must act on. */
  woken: boolean;
  /** Controller clock of the last look at Nova of a finished drain. */
  lastFinishedCheckMs: number | undefined;
  /** VMs whose starts went unanswered, backing off (act.ts). */
  readonly startBackoff: Map<string, StartBackoff>;
  /**
   * Controller clock when this drain first saw each member of its wave
   * still enabled: the start of that member's bounded wait (wave.ts).
   */
  readonly waveSeen: Map<string, number>;
  /**
   * Controller clock when each VM's migration record was first seen past
   * Nova's queue (its copy under way): where the migration timeout runs
   * from ({@linkcode noteCopyStarts}).
   */
  readonly copyStarted: Map<string, number>;
  /** Nova's limit on the host's live migrations, once seen (nova_limit.ts). */
  novaLimit: NovaLimitMemo | undefined;
  /** Controller clock of this process's first pass of the drain. */
  firstSeenMs?: number;
}

interface Written {
  resourceVersion: string;
  status: EvictionStatus;
}

function newer(a: string, b: string): boolean | undefined {
  if (!/^\d+$/.test(a) || !/^\d+$/.test(b)) return undefined;
  return BigInt(a) > BigInt(b);
}

/**
 * Per-drain memory by Eviction key.
 *
 * @example
 * ```ts
 * import { DrainMemory } from "./memory.ts";
 * const memory = new DrainMemory();
 * const cached = { metadata: { name: "a", resourceVersion: "1" }, spec: { hypervisor: "h", reason: "r" } };
 * memory.remember("a", "5", { migratedCount: 1 });
 * console.assert(memory.freshest("a", cached).status?.migratedCount === 1);
 * memory.forget("a");
 * console.assert(memory.freshest("a", cached).status === undefined);
 * ```
 */
export class DrainMemory {
  readonly #states = new Map<string, DrainState>();
  /** Migration durations every drain learns from (one Nova, one clock). */
  readonly #cloud = new Durations();
  readonly #written = new Map<string, Written>();

  /** The state of a drain (created empty). */
  of(key: string): DrainState {
    let s = this.#states.get(key);
    if (s === undefined) {
      s = {
        starts: new Map(),
        confirming: new Set(),
        ram: new Map(),
        pace: new Pace(this.#cloud),
        due: undefined,
        woken: false,
        lastFinishedCheckMs: undefined,
        startBackoff: new Map(),
        waveSeen: new Map(),
        copyStarted: new Map(),
        novaLimit: undefined,
      };
      this.#states.set(key, s);
    }
    return s;
  }

  /** Forgets everything about a drain. */
  forget(key: string): void {
    this.#states.delete(key);
    this.#written.delete(key);
  }

  /** Records a status write: `resourceVersion` is the one of the written object. */
  remember(key: string, resourceVersion: string, status: EvictionStatus): void {
    this.#written.set(key, { resourceVersion, status });
  }

  /**
   * The cached object, or, while the cache still holds an object older than
   * this process's last write, that object with the written status and
   * resourceVersion. A cached object at or past the written version wins
   * (it includes the write, or someone else's later one). Versions that are
   * not numbers cannot be ordered: the write wins until the cache shows its
   * exact version; a write based on it then meets a 409 and re-reads.
   */
  freshest(key: string, cached: Eviction): Eviction {
    const w = this.#written.get(key);
    if (w === undefined) return cached;
    const rv = cached.metadata?.resourceVersion;
    if (
      rv !== undefined &&
      (rv === w.resourceVersion || newer(rv, w.resourceVersion) === true)
    ) {
      this.#written.delete(key);
      return cached;
    }
    return {
      ...cached,
      metadata: { ...cached.metadata, resourceVersion: w.resourceVersion },
      status: w.status,
    };
  }
}

/**
 * Notes in `copyStarted` the VMs whose record leaving `host` is in
 * progress past Nova's queue, first seen now; forgets those with no such
 * record any more. Returns the map.
 *
 * @example
 * ```ts
 * import { noteCopyStarts } from "./memory.ts";
 * const copies = new Map<string, number>();
 * const rec = (status: string) => ({ id: 1, instanceUuid: "vm", migrationType: "live-migration", status, sourceCompute: "h", createdAt: "" });
 * noteCopyStarts(copies, [rec("queued")], "h", 5);
 * console.assert(!copies.has("vm"));
 * noteCopyStarts(copies, [rec("running")], "h", 9);
 * noteCopyStarts(copies, [rec("running")], "h", 12);
 * console.assert(copies.get("vm") === 9);
 * ```
 */
export function noteCopyStarts(
  copyStarted: Map<string, number>,
  migrations: readonly ObservedMigration[],
  host: string,
  nowMs: number,
): Map<string, number> {
  const copying = new Set<string>();
  for (const m of migrations) {
    if (m.sourceCompute !== host) continue;
    if (migrationPhase(m.status) !== "in_progress") continue;
    if (waitingInNova(m.status)) continue;
    copying.add(m.instanceUuid);
    if (!copyStarted.has(m.instanceUuid)) {
      copyStarted.set(m.instanceUuid, nowMs);
    }
  }
  for (const id of [...copyStarted.keys()]) {
    if (!copying.has(id)) copyStarted.delete(id);
  }
  return copyStarted;
}
