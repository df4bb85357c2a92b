/**
 * A migration's time, its copy apart from its wait in Nova's queue. Nova
 * runs at most `max_concurrent_live_migrations` live migrations from a
 * host at once and holds the rest `queued`: a migration's time from its
 * start (our start, or the record's `created_at`) to its end is then its
 * wait plus its copy. The duration model learns from the copy alone, so a
 * drain behind Nova's queue does not learn a rate several times too slow
 * (what real Zed showed: predictions 2.1-2.6x off).
 *
 * @module
 */

/** A migration's time split in two (ms, on one clock). */
export interface CopySpan {
  /** From the copy's start (past Nova's queue) to the end. */
  copyMs: number;
  /** Waiting in Nova's queue before the copy (0 when it never waited). */
  queuedMs: number;
}

/**
 * Splits the time from `startMs` (our start or the record's creation) to
 * `endMs` at `copyFromMs`, when the migration was first seen past Nova's
 * queue. `queued`: it was seen waiting in Nova's queue; then its copy
 * runs from `copyFromMs` (clamped into the span), and without it the copy
 * start is unknown (undefined: it went from the queue to its end between
 * two looks). Never seen queued: all of it is copy. Undefined also for a
 * span that is not positive or a time that is not finite.
 *
 * @example
 * ```ts
 * import { copySpan } from "./copy_span.ts";
 * console.log(copySpan(0, 30_000, true, 40_000)); // { copyMs: 10000, queuedMs: 30000 }
 * console.log(copySpan(0, undefined, false, 40_000)); // { copyMs: 40000, queuedMs: 0 }
 * console.log(copySpan(0, undefined, true, 40_000)); // undefined
 * ```
 */
export function copySpan(
  startMs: number,
  copyFromMs: number | undefined,
  queued: boolean,
  endMs: number,
): CopySpan | undefined {
  if (!Number.isFinite(startMs) || !Number.isFinite(endMs)) return undefined;
  if (!(endMs > startMs)) return undefined;
  if (!queued) return { copyMs: endMs - startMs, queuedMs: 0 };
  if (copyFromMs === undefined || !Number.isFinite(copyFromMs)) {
    return undefined;
  }
  const from = Math.min(endMs, Math.max(startMs, copyFromMs));
  if (!(endMs > from)) return undefined;
  return { copyMs: endMs - from, queuedMs: from - startMs };
}
