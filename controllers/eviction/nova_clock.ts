/**
 * Nova's clock against ours. Nova stamps its migration records with its own
 * clock, and filters `changes-since` by it; a drain compares those stamps
 * with its own starts. When Nova's clock is behind ours by more than the
 * planner's skew allowance, a failed record of our start looks older than
 * the start and is never charged (the VM is retried uncharged forever), and
 * `changes-since` hides the records of the drain's first minutes. So the
 * offset is learned from the `Date` header of Nova's responses and applied
 * where Nova's times meet ours.
 *
 * It is applied only when it is steady: a simulator whose clock runs
 * faster than ours (a time scale) drifts, and a drifting offset would
 * move every record by a growing amount; there the comparisons keep their
 * skew allowance alone, as before.
 *
 * @module
 */

/** The `Date` header has whole seconds: samples are accurate to about this. */
export const DATE_RESOLUTION_MS = 1_000;

/**
 * An offset below this is taken as none: the header's resolution and the
 * round trip (a scaled simulator's too) make up a few seconds, and the
 * planner's skew allowance (10 s) covers it.
 */
export const MIN_OFFSET_MS = 5_000;

/** The shortest span of our clock over which the offset must have held still. */
export const STEADY_SPAN_MS = 10_000;

/** The most drift (Nova ms per our ms, minus 1) of an offset taken as steady. */
export const MAX_DRIFT = 0.05;

/** Samples kept (one per second of our clock at most). */
const MAX_SAMPLES = 32;

/** One reading: our clock when a response came, and Nova's `Date` on it. */
interface Sample {
  localMs: number;
  /** Nova's clock minus ours, with the header's truncation halved. */
  offsetMs: number;
}

/**
 * Nova's clock minus ours, learned from the `Date` headers of its
 * responses (one sample per second of our clock).
 *
 * @example
 * ```ts
 * import { NovaClock } from "./nova_clock.ts";
 * const clock = new NovaClock();
 * // Nova 30 s behind, read over 12 s of our clock
 * for (let t = 0; t <= 12_000; t += 1_000) clock.sample(t - 30_000, t);
 * console.assert(clock.offsetMs() === -29_500);
 * ```
 */
export class NovaClock {
  readonly #samples: Sample[] = [];

  /**
   * Records Nova's `Date` (ms, whole seconds) on a response received at
   * `localMs` (our clock).
   */
  sample(novaDateMs: number, localMs: number): void {
    if (!Number.isFinite(novaDateMs) || !Number.isFinite(localMs)) return;
    const last = this.#samples.at(-1);
    if (last !== undefined && localMs - last.localMs < DATE_RESOLUTION_MS) {
      return;
    }
    this.#samples.push({
      localMs,
      offsetMs: novaDateMs + DATE_RESOLUTION_MS / 2 - localMs,
    });
    if (this.#samples.length > MAX_SAMPLES) this.#samples.shift();
  }

  /**
   * Nova's clock minus ours (ms): the median of the samples once they span
   * {@linkcode STEADY_SPAN_MS} of our clock without drifting; 0 while that
   * is not known, while it drifts (a scaled simulator), or when it is
   * under {@linkcode MIN_OFFSET_MS}.
   */
  offsetMs(): number {
    return steadyOffset(this.#samples);
  }
}

/**
 * The steady offset of `samples` (see {@linkcode NovaClock.offsetMs}).
 *
 * @example
 * ```ts
 * import { steadyOffset } from "./nova_clock.ts";
 * const behind = [0, 5_000, 11_000].map((t) => ({ localMs: t, offsetMs: -300_000 }));
 * console.assert(steadyOffset(behind) === -300_000);
 * const scaled = [0, 5_000, 11_000].map((t) => ({ localMs: t, offsetMs: 9 * t }));
 * console.assert(steadyOffset(scaled) === 0);
 * ```
 */
export function steadyOffset(
  samples: readonly { localMs: number; offsetMs: number }[],
): number {
  const first = samples[0];
  const last = samples.at(-1);
  if (first === undefined || last === undefined) return 0;
  const span = last.localMs - first.localMs;
  if (span < STEADY_SPAN_MS) return 0;
  // drift over the span, allowing the header's truncation at both ends
  const drift = Math.abs(last.offsetMs - first.offsetMs) - DATE_RESOLUTION_MS;
  if (drift > MAX_DRIFT * span) return 0;
  const sorted = samples.map((s) => s.offsetMs).sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
  return Math.abs(median) < MIN_OFFSET_MS ? 0 : Math.round(median);
}
