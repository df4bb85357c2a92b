/**
 * Where a drain's time goes beyond its lower bound: how long each of our
 * slots stood idle between a migration's completion and the start that
 * refilled it, split into the wait for the pass that saw the completion
 * (pacing) and that pass's own latency (observe, plan, start); and how many
 * looks at the host found nothing to start (early wakes). Computed from the
 * simulator's migration records and the times of the calls it served.
 *
 * @module
 */

/** A migration record, as the simulator keeps it (virtual ms). */
export interface GapRecord {
  /** When Nova accepted the start. */
  createdAt: number;
  /** When it completed (its last change). */
  updatedAt: number;
}

/** Where the idle slot time went, in virtual ms (means per refill). */
export interface SlotGaps {
  /** Starts that refilled a slot freed by a completion. */
  refills: number;
  /** Mean time from the completion to the start that refilled its slot. */
  meanIdleMs: number;
  /** Of it: from the completion to the first look at the host after it. */
  meanWaitMs: number;
  /** Of it: from that look to the start (the pass's latency, or later looks). */
  meanPassMs: number;
  /** Looks at the host (server lists). */
  looks: number;
  /** Looks after which no start came before the next look (the last one excluded). */
  emptyLooks: number;
}

/**
 * The slot gaps of one drain at our limit `limit`: start k (in the order
 * Nova accepted them) beyond the first `limit` refilled the slot of
 * completion k - limit (in completion order): before that one completed,
 * `limit` were in flight. `looks` are the virtual times of the server
 * lists of the host. An empty look is an early wake, or, at the end, a
 * pass that saw a completion with nothing left to start.
 *
 * @example
 * ```ts
 * import { slotGaps } from "./slot_gaps.ts";
 * const g = slotGaps(
 *   [{ createdAt: 0, updatedAt: 10 }, { createdAt: 12, updatedAt: 20 }],
 *   1,
 *   [0, 11, 21],
 * );
 * console.assert(g.meanIdleMs === 2 && g.meanWaitMs === 1 && g.meanPassMs === 1);
 * ```
 */
export function slotGaps(
  records: readonly GapRecord[],
  limit: number,
  looks: readonly number[],
): SlotGaps {
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new RangeError(`limit must be an integer >= 1, got ${limit}`);
  }
  const starts = records.map((r) => r.createdAt).sort((a, b) => a - b);
  const completions = records.map((r) => r.updatedAt).sort((a, b) => a - b);
  const sortedLooks = [...looks].sort((a, b) => a - b);
  let idle = 0;
  let wait = 0;
  let refills = 0;
  for (let k = limit; k < starts.length; k++) {
    const freed = completions[k - limit];
    const start = starts[k];
    if (freed === undefined || start === undefined || start < freed) continue;
    const look = sortedLooks.find((t) => t >= freed) ?? start;
    const seen = Math.min(look, start);
    idle += start - freed;
    wait += seen - freed;
    refills++;
  }
  let emptyLooks = 0;
  for (let i = 0; i + 1 < sortedLooks.length; i++) {
    const from = sortedLooks[i] ?? 0;
    const to = sortedLooks[i + 1] ?? 0;
    if (!starts.some((s) => s >= from && s < to)) emptyLooks++;
  }
  const mean = (x: number) => refills === 0 ? 0 : x / refills;
  return {
    refills,
    meanIdleMs: mean(idle),
    meanWaitMs: mean(wait),
    meanPassMs: mean(idle - wait),
    looks: sortedLooks.length,
    emptyLooks,
  };
}
