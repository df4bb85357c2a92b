/**
 * Time source for the OpenStack client, injectable so that tests control
 * token expiry and retry back-off without waiting.
 *
 * @module
 */

/**
 * A clock: wall-clock milliseconds and a cancellable sleep.
 *
 * @example
 * ```ts
 * import { systemClock } from "./clock.ts";
 * const started = systemClock.now();
 * await systemClock.sleep(1);
 * console.log(systemClock.now() - started >= 0);
 * ```
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Resolves after `ms` milliseconds, or rejects when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/**
 * The real clock: `Date.now()` and `setTimeout`.
 *
 * @example
 * ```ts
 * import { systemClock } from "./clock.ts";
 * console.log(typeof systemClock.now());
 * ```
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms: number, signal?: AbortSignal): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, Math.max(0, ms));
      signal?.addEventListener("abort", onAbort, { once: true });
    }),
};
