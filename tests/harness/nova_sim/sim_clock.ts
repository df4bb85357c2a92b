/**
 * The simulator's own clock: virtual time that runs `timeScale` times faster
 * than real time, or a manual clock that tests move by hand.
 *
 * @module
 */

/** Virtual time source of the simulator (milliseconds since the epoch). */
export interface SimClock {
  /** Current virtual time. */
  now(): number;
}

/**
 * Virtual time starting at `startMs` and running `timeScale` times faster
 * than real time.
 *
 * @example
 * ```ts
 * import { scaledClock } from "./sim_clock.ts";
 * const clock = scaledClock(60); // one real second = one virtual minute
 * console.log(clock.now() > 0);
 * ```
 */
export function scaledClock(timeScale: number, startMs = Date.now()): SimClock {
  if (!(timeScale > 0)) {
    throw new RangeError(`timeScale must be > 0, got ${timeScale}`);
  }
  const t0 = performance.now();
  return { now: () => startMs + (performance.now() - t0) * timeScale };
}

/**
 * A clock that only moves when told to.
 *
 * @example
 * ```ts
 * import { ManualClock } from "./sim_clock.ts";
 * const clock = new ManualClock(0);
 * clock.advance(1_000);
 * console.log(clock.now()); // 1000
 * ```
 */
export class ManualClock implements SimClock {
  #now: number;

  /** Creates a clock at `startMs`. */
  constructor(startMs = Date.now()) {
    this.#now = startMs;
  }

  /** Current virtual time. */
  now(): number {
    return this.#now;
  }

  /** Moves time forward by `ms`. */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`ms must be >= 0, got ${ms}`);
    this.#now += ms;
  }
}
