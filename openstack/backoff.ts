/**
 * The OpenStack client's one backoff: a wait doubling per failure up to a
 * cap ({@linkcode doublingDelayMs}), used by the retries of idempotent
 * calls, the notification feed's reconnects and the authentication
 * backoff. A failed Keystone authentication is remembered for such a wait
 * before the next attempt, exponential from seconds to minutes and the same
 * for every caller of a session, so that wrong credentials never become a
 * login storm (an identity provider may lock an account after a few failed
 * logins).
 *
 * @module
 */

/**
 * The wait after `failures` consecutive failures (>= 1):
 * `initialMs * 2^(failures - 1)`, at most `maxMs`.
 *
 * @example
 * ```ts
 * import { doublingDelayMs } from "./backoff.ts";
 * console.log([1, 2, 3, 10].map((n) => doublingDelayMs(n, 500, 4000))); // [500, 1000, 2000, 4000]
 * ```
 */
export function doublingDelayMs(
  failures: number,
  initialMs: number,
  maxMs: number,
): number {
  // 2^(failures-1) overflows to Infinity long after the cap: min() holds.
  return Math.min(
    maxMs,
    initialMs * 2 ** Math.min(Math.max(0, failures - 1), 64),
  );
}

/** Bounds of the authentication backoff. */
export interface AuthBackoffOptions {
  /** Wait after the first failure, in milliseconds (default 5 s). */
  initialMs?: number;
  /** Longest wait, in milliseconds (default 5 minutes). */
  maxMs?: number;
}

/** The default bounds: 5 s, doubling, at most 5 minutes. */
export const DEFAULT_AUTH_BACKOFF: Readonly<Required<AuthBackoffOptions>> =
  Object.freeze({ initialMs: 5_000, maxMs: 300_000 });

/**
 * The wait after `failures` consecutive failed authentications (>= 1):
 * `initialMs * 2^(failures - 1)`, at most `maxMs`.
 *
 * @example
 * ```ts
 * import { authRetryDelayMs } from "./backoff.ts";
 * console.assert(authRetryDelayMs(1) === 5_000);
 * console.assert(authRetryDelayMs(3) === 20_000);
 * console.assert(authRetryDelayMs(50) === 300_000);
 * ```
 */
export function authRetryDelayMs(
  failures: number,
  options: AuthBackoffOptions = {},
): number {
  const { initialMs, maxMs } = checkedAuthBackoff(options);
  if (!Number.isInteger(failures) || failures < 1) {
    throw new RangeError(
      `failures must be an integer >= 1, got ${failures}`,
    );
  }
  return doublingDelayMs(failures, initialMs, maxMs);
}

/**
 * The bounds with defaults filled in; a bad bound is a RangeError naming it.
 *
 * @example
 * ```ts
 * import { checkedAuthBackoff } from "./backoff.ts";
 * console.assert(checkedAuthBackoff({ initialMs: 100 }).maxMs === 300_000);
 * ```
 */
export function checkedAuthBackoff(
  options: AuthBackoffOptions,
): Required<AuthBackoffOptions> {
  const initialMs = options.initialMs ?? DEFAULT_AUTH_BACKOFF.initialMs;
  const maxMs = options.maxMs ?? DEFAULT_AUTH_BACKOFF.maxMs;
  if (!Number.isFinite(initialMs) || initialMs <= 0) {
    throw new RangeError(
      `authBackoff.initialMs must be a finite number > 0, got ${initialMs}`,
    );
  }
  if (!Number.isFinite(maxMs) || maxMs < initialMs) {
    throw new RangeError(
      `authBackoff.maxMs must be a finite number >= initialMs (${initialMs}), got ${maxMs}`,
    );
  }
  return { initialMs, maxMs };
}
