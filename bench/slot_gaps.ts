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
 * The slot gaps of one drain (or of a budget's slots): each start that
 * came after a completion whose slot no start had refilled yet refilled
 * the slot of the latest such completion; a start with none pending filled
 * a slot that was not in use (the first fill, or more in flight). The
 * latest, not the oldest: where the drain holds fewer in flight than
 * before (it learned that Nova's own limit binds, and Nova queues the
 * rest), the completions it did not refill stay unpaired, instead of
 * pairing every later start with a completion migrations ago. Where the
 * level in flight stays the same, this is start k refilling completion
 * k - level, as a fixed limit pairs them. `looks` are the virtual times of
 * the server lists of the host. An empty look is an early wake, or, at the
 * end, a pass that saw a completion with nothing left to start.
 *
 * @example
 * ```ts
 * import { slotGaps } from "./slot_gaps.ts";
 * const g = slotGaps(
 *   [{ createdAt: 0, updatedAt: 10 }, { createdAt: 12, updatedAt: 20 }],
 *   [0, 11, 21],
 * );
 * console.assert(g.meanIdleMs === 2 && g.meanWaitMs === 1 && g.meanPassMs === 1);
 * ```
 */
export function slotGaps(
  records: readonly GapRecord[],
  looks: readonly number[],
): SlotGaps {
  const starts = records.map((r) => r.createdAt).sort((a, b) => a - b);
  const completions = records.map((r) => r.updatedAt).sort((a, b) => a - b);
  const sortedLooks = [...looks].sort((a, b) => a - b);
  let idle = 0;
  let wait = 0;
  let refills = 0;
  const freed: number[] = [];
  let c = 0;
  for (const start of starts) {
    // a completion at the same instant frees its slot before the start
    while (c < completions.length && (completions[c] ?? 0) <= start) {
      freed.push(completions[c++] ?? 0);
    }
    const slot = freed.pop();
    if (slot === undefined) continue;
    const look = sortedLooks.find((t) => t >= slot) ?? start;
    idle += start - slot;
    wait += Math.min(look, start) - slot;
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
