/**
 * Time as an injectable dependency, so that queue backoff and leader
 * election timing are tested without sleeping.
 *
 * @module
 */

/** Cancels a timer created by {@linkcode Clock.setTimer}. */
export type CancelTimer = () => void;

/** A source of time and one-shot timers. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs `fn` once after `ms` milliseconds; returns a canceller. */
  setTimer(fn: () => void, ms: number): CancelTimer;
}

/**
 * The wall clock, backed by `Date.now` and `setTimeout`.
 *
 * @example
 * ```ts
 * import { systemClock } from "./clock.ts";
 * const cancel = systemClock.setTimer(() => {}, 10);
 * cancel();
 * ```
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(fn, ms) {
    const id = setTimeout(fn, Math.max(0, ms));
    return () => clearTimeout(id);
  },
};

interface PendingTimer {
  at: number;
  seq: number;
  fn: () => void;
}

/**
 * A clock that moves only when told to; timers fire in due order during
 * {@linkcode ManualClock.advance}.
 *
 * @example
 * ```ts
 * import { ManualClock } from "./clock.ts";
 * const clock = new ManualClock(0);
 * let fired = false;
 * clock.setTimer(() => fired = true, 100);
 * clock.advance(99);
 * console.assert(!fired);
 * clock.advance(1);
 * console.assert(fired);
 * ```
 */
export class ManualClock implements Clock {
  #now: number;
  #seq = 0;
  #timers: PendingTimer[] = [];

  /** Starts the clock at `start` milliseconds. */
  constructor(start = 0) {
    this.#now = start;
  }

  /** The current manual time. */
  now(): number {
    return this.#now;
  }

  /** Schedules `fn` at now + `ms`. */
  setTimer(fn: () => void, ms: number): CancelTimer {
    const timer = { at: this.#now + Math.max(0, ms), seq: this.#seq++, fn };
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer);
    };
  }

  /** Number of timers not yet fired. */
  get pending(): number {
    return this.#timers.length;
  }

  /** Moves time forward by `ms`, firing due timers in order. */
  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) {
      throw new RangeError(`ManualClock.advance needs ms >= 0, got ${ms}`);
    }
    const target = this.#now + ms;
    for (;;) {
      let next: PendingTimer | undefined;
      for (const t of this.#timers) {
        if (
          t.at <= target &&
          (next === undefined || t.at < next.at ||
            (t.at === next.at && t.seq < next.seq))
        ) {
          next = t;
        }
      }
      if (next === undefined) break;
      const due = next;
      this.#timers = this.#timers.filter((t) => t !== due);
      this.#now = Math.max(this.#now, due.at);
      due.fn();
    }
    this.#now = target;
  }
}
