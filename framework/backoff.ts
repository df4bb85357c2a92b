/**
 * Per-key capped exponential backoff, as controller-runtime's default
 * item rate limiter (5 ms .. 1000 s), and the short capped backoff used
 * while a service is unavailable (200 ms .. 2 s), which never outlasts an
 * outage by more than its cap.
 *
 * @module
 */

/** Options of {@linkcode KeyBackoff}. */
export interface BackoffOptions {
  /** Delay after the first failure, in milliseconds (default 5). */
  baseMs?: number;
  /** Upper bound of any delay, in milliseconds (default 1,000,000). */
  maxMs?: number;
}

/** The default first delay: 5 ms. */
export const DEFAULT_BACKOFF_BASE_MS = 5;
/** The default delay cap: 1000 s. */
export const DEFAULT_BACKOFF_MAX_MS = 1_000_000;

/** The default first delay while a service is unavailable: 200 ms. */
export const DEFAULT_OUTAGE_BASE_MS = 200;
/** The default delay cap while a service is unavailable: 2 s. */
export const DEFAULT_OUTAGE_MAX_MS = 2_000;

/**
 * Delay after `failures` previous failures: `min(base * 2^failures, max)`.
 *
 * @example
 * ```ts
 * import { backoffDelay } from "./backoff.ts";
 * console.assert(backoffDelay(0) === 5);
 * console.assert(backoffDelay(3) === 40);
 * console.assert(backoffDelay(100) === 1_000_000);
 * ```
 */
export function backoffDelay(
  failures: number,
  baseMs: number = DEFAULT_BACKOFF_BASE_MS,
  maxMs: number = DEFAULT_BACKOFF_MAX_MS,
): number {
  if (!Number.isInteger(failures) || failures < 0) {
    throw new RangeError(`failures must be an integer >= 0, got ${failures}`);
  }
  if (failures > 60) return maxMs;
  return Math.min(baseMs * 2 ** failures, maxMs);
}

/**
 * Counts failures per key and hands out growing delays; {@linkcode forget}
 * resets a key after a success.
 *
 * @example
 * ```ts
 * import { KeyBackoff } from "./backoff.ts";
 * const b = new KeyBackoff();
 * console.assert(b.next("a") === 5);
 * console.assert(b.next("a") === 10);
 * b.forget("a");
 * console.assert(b.next("a") === 5);
 * ```
 */
export class KeyBackoff {
  readonly #baseMs: number;
  readonly #maxMs: number;
  readonly #failures = new Map<string, number>();

  /** Creates a backoff; base and max must satisfy 0 < base <= max. */
  constructor(options: BackoffOptions = {}) {
    const baseMs = options.baseMs ?? DEFAULT_BACKOFF_BASE_MS;
    const maxMs = options.maxMs ?? DEFAULT_BACKOFF_MAX_MS;
    if (!(baseMs > 0) || !(maxMs >= baseMs)) {
      throw new RangeError(
        `backoff needs 0 < baseMs <= maxMs, got baseMs=${baseMs} maxMs=${maxMs}`,
      );
    }
    this.#baseMs = baseMs;
    this.#maxMs = maxMs;
  }

  /** Records a failure of `key` and returns the delay before its retry. */
  next(key: string): number {
    const n = this.#failures.get(key) ?? 0;
    this.#failures.set(key, n + 1);
    return backoffDelay(n, this.#baseMs, this.#maxMs);
  }

  /** Number of failures recorded for `key` since the last success. */
  failures(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  /** Resets `key` after a success. */
  forget(key: string): void {
    this.#failures.delete(key);
  }
}

/**
 * The retry delay of a pass that failed only because a service was
 * unavailable: the outage backoff, but never shorter than the pacing the
 * handler itself asked for last time (its requeue delay), so an outage
 * neither speeds a handler up beyond its own pace nor slows it down beyond
 * `max(pacing, cap)`.
 *
 * @example
 * ```ts
 * import { outageRetryDelay } from "./backoff.ts";
 * console.assert(outageRetryDelay(400, undefined) === 400);
 * console.assert(outageRetryDelay(400, 5000) === 5000);
 * console.assert(outageRetryDelay(2000, 1000) === 2000);
 * ```
 */
export function outageRetryDelay(
  backoffMs: number,
  pacingMs: number | undefined,
): number {
  if (!(backoffMs >= 0) || !Number.isFinite(backoffMs)) {
    throw new RangeError(
      `backoffMs must be a finite number >= 0, got ${backoffMs}`,
    );
  }
  if (pacingMs === undefined || !(pacingMs > backoffMs)) return backoffMs;
  if (!Number.isFinite(pacingMs)) {
    throw new RangeError(`pacingMs must be finite, got ${pacingMs}`);
  }
  return pacingMs;
}
