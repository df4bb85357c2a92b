/**
 * The informer's reads of its drains' live copies: progress.ts's schedule
 * applied, each copy's last progress kept until it ends.
 * @module
 */

import type { ServerMigration } from "../nova_types.ts";
import {
  type CopyToWatch,
  type KeptProgress,
  nextProgress,
  pendingReadAtMs,
  type ReadMarks,
  readsDue,
} from "./progress.ts";
import type { CopyProgress } from "./progress_types.ts";

/** One read of a copy's record: undefined when Nova no longer shows it in progress. */
export type ProgressReader = (
  serverId: string,
  migrationId: string,
  signal?: AbortSignal,
) => Promise<{ atMs: number; migration: ServerMigration | undefined }>;

/** What a pass needs of its copies' progress. */
export interface ProgressNeed {
  copies: readonly CopyToWatch[];
  nowMs: number;
  /** No copy is read twice within it; 0: no reads at all. */
  intervalMs: number;
  /** progress.ts `nextLookEstimate`. */
  nextLookAtMs: number;
  signal?: AbortSignal | undefined;
}

interface Tracked extends ReadMarks {
  kept?: KeptProgress | undefined;
  /** Nova answered 404: the copy is over, it is not read again. */
  ended?: boolean;
}

interface Drain {
  copies: Map<string, Tracked>;
  pendingAtMs: number | undefined;
}

/**
 * Progress reads of each drain's copies, by drain key.
 *
 * @example
 * ```ts
 * import { ProgressReads } from "./progress_reads.ts";
 * const reads = new ProgressReads(() => Promise.resolve({ atMs: 0, migration: undefined }));
 * const seen = await reads.read("ev", { copies: [], nowMs: 0, intervalMs: 30_000, nextLookAtMs: 2000 });
 * console.assert(seen.size === 0 && reads.pendingReadAtMs("ev") === undefined);
 * ```
 */
export class ProgressReads {
  readonly #read: ProgressReader;
  readonly #warn: (fields: Record<string, unknown>, message: string) => void;
  readonly #drains = new Map<string, Drain>();

  constructor(
    read: ProgressReader,
    warn: (fields: Record<string, unknown>, message: string) => void = () => {},
  ) {
    this.#read = read;
    this.#warn = warn;
  }

  /** Reads the copies due; gives each copy's last progress by server id (a failed read never fails the look). */
  async read(
    key: string,
    need: ProgressNeed,
  ): Promise<ReadonlyMap<string, CopyProgress>> {
    if (!(need.intervalMs > 0)) return new Map();
    const drain = this.#drains.get(key) ?? {
      copies: new Map(),
      pendingAtMs: undefined,
    };
    this.#drains.set(key, drain);
    const live = new Set(need.copies.map((c) => c.migrationId));
    for (const id of drain.copies.keys()) {
      if (!live.has(id)) drain.copies.delete(id);
    }
    const marks = (id: string) => drain.copies.get(id) ?? {};
    const unended = (c: CopyToWatch) =>
      drain.copies.get(c.migrationId)?.ended !== true;
    const copies = need.copies.filter(unended);
    const due = readsDue({ ...need, copies, marks });
    await Promise.all(due.map(async (c) => {
      const t: Tracked = drain.copies.get(c.migrationId) ?? {};
      drain.copies.set(c.migrationId, t);
      t.triedAtMs = need.nowMs;
      try {
        const { atMs, migration } = await this.#read(
          c.serverId,
          c.migrationId,
          need.signal,
        );
        if (migration === undefined) {
          t.ended = true;
          t.kept = undefined;
          return;
        }
        t.kept = nextProgress(t.kept, migration, atMs, c.sinceMs);
        t.lowestAtMs = t.kept?.progress.lowestAtMs;
      } catch (err) {
        this.#warn(
          {
            serverId: c.serverId,
            migrationId: c.migrationId,
            err: String(err),
          },
          "progress read failed; the last one stands",
        );
      }
    }));
    drain.pendingAtMs = pendingReadAtMs(
      need.copies.filter(unended),
      marks,
      need.intervalMs,
      need.nowMs,
    );
    const out = new Map<string, CopyProgress>();
    for (const c of need.copies) {
      const p = drain.copies.get(c.migrationId)?.kept?.progress;
      if (p !== undefined) out.set(c.serverId, p);
    }
    return out;
  }

  /** When the next read is due of a copy with a decision pending, as of the last `read`. */
  pendingReadAtMs(key: string): number | undefined {
    return this.#drains.get(key)?.pendingAtMs;
  }

  forget(key: string): void {
    this.#drains.delete(key);
  }
}
