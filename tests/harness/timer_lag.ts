/**
 * How late this machine runs timers: a probe that asks for a tick every
 * `everyMs` and keeps how much later than asked each came. A bound a test
 * asserts in wall time on something the operator does with its own timers
 * (a lease's retry, a poll) is only as good as the machine's scheduling:
 * on a loaded machine every timer fires late, with no defect anywhere. The
 * probe states that load instead of guessing it: a bound is widened by the
 * lateness measured over the same window, and stays as strict as it was on
 * a quiet machine.
 *
 * @module
 */

/** A running probe. */
export interface TimerLagProbe {
  /** The largest lateness of one tick so far (ms). */
  maxLateMs(): number;
  /** Stops ticking; returns the largest lateness seen (ms). */
  stop(): number;
}

/**
 * Starts ticking every `everyMs` (default 50 ms).
 *
 * @example
 * ```ts
 * import { startTimerLagProbe } from "./timer_lag.ts";
 * const probe = startTimerLagProbe();
 * await new Promise((r) => setTimeout(r, 200));
 * console.log(probe.stop() >= 0); // true
 * ```
 */
export function startTimerLagProbe(everyMs = 50): TimerLagProbe {
  if (!(everyMs > 0)) {
    throw new RangeError(`everyMs: got ${everyMs}; expected a positive number`);
  }
  let maxLate = 0;
  let expected = performance.now() + everyMs;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tick = () => {
    const now = performance.now();
    maxLate = Math.max(maxLate, now - expected);
    expected = now + everyMs;
    timer = setTimeout(tick, everyMs);
  };
  timer = setTimeout(tick, everyMs);
  return {
    maxLateMs: () => maxLate,
    stop: () => {
      clearTimeout(timer);
      return maxLate;
    },
  };
}
