/**
 * The planner's options and their defaults.
 * @module
 */

import { backoffDelay } from "../../framework/backoff.ts";
import type { ConvergencePolicy } from "../../limits/convergence.ts";

/** Tunables of the planner; see {@linkcode DEFAULT_PLAN_OPTIONS}. */
export interface PlanOptions {
  /** How long a start in status.inFlight counts while Nova shows nothing of it. */
  gracePeriodMs: number;
  /** First retry delay after a failed attempt. */
  retryBaseMs: number;
  /** Upper bound of the retry delay. */
  retryCapMs: number;
  /** Attempts after which a VM is no longer retried (>= 1); a transient failure is retried on within `retryWindowMs`. */
  maxAttempts: number;
  /** How long after its first failure a transient failure is retried (`--migration-retry-window`). */
  retryWindowMs: number;
  /** A migration in flight longer than this is reported as stuck. */
  migrationTimeoutSeconds?: number;
  /** Abort stuck live migrations (policy `abortStuckMigrations`). */
  abortStuckMigrations: boolean;
  /** The drain's convergence policy (limits/convergence.ts); absent: the legacy fields alone. */
  convergence?: ConvergencePolicy;
  /** How far Nova's clock may lag ours when matching a record to its start (below retryBaseMs, so a previous attempt's record is never taken for the new one). */
  clockSkewMs: number;
  /** Nova's clock minus ours (ms; nova_clock.ts), to read its record times on ours. */
  novaClockOffsetMs?: number;
  /** How long fresh looks must find the host empty before it is done (clock ms; default 0). */
  settleMs?: number;
}

/**
 * The planner's defaults.
 *
 * @example
 * ```ts
 * import { DEFAULT_PLAN_OPTIONS } from "./plan_options.ts";
 * const options = { ...DEFAULT_PLAN_OPTIONS, maxAttempts: 3 };
 * console.assert(options.gracePeriodMs === 60_000);
 * ```
 */
export const DEFAULT_PLAN_OPTIONS: Readonly<PlanOptions> = Object.freeze({
  gracePeriodMs: 60_000,
  retryBaseMs: 30_000,
  retryCapMs: 600_000,
  maxAttempts: 5,
  retryWindowMs: 3_600_000,
  abortStuckMigrations: false,
  clockSkewMs: 10_000,
});

/**
 * Throws a RangeError naming the first bad option.
 *
 * @example
 * ```ts
 * import { DEFAULT_PLAN_OPTIONS, validatePlanOptions } from "./plan_options.ts";
 * validatePlanOptions(DEFAULT_PLAN_OPTIONS);
 * ```
 */
export function validatePlanOptions(options: PlanOptions): void {
  const nonNegative: Array<keyof PlanOptions> = [
    "gracePeriodMs",
    "retryBaseMs",
    "retryCapMs",
    "clockSkewMs",
    "retryWindowMs",
    "settleMs",
  ];
  for (const key of nonNegative) {
    const value = options[key];
    if (key === "settleMs" && value === undefined) continue;
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
      throw new RangeError(
        `options.${key} must be a finite number >= 0, got ${String(value)}`,
      );
    }
  }
  if (!Number.isInteger(options.maxAttempts) || options.maxAttempts < 1) {
    throw new RangeError(
      `options.maxAttempts must be an integer >= 1, got ${options.maxAttempts}`,
    );
  }
  const timeout = options.migrationTimeoutSeconds;
  if (timeout !== undefined && (!Number.isFinite(timeout) || timeout <= 0)) {
    throw new RangeError(
      `options.migrationTimeoutSeconds must be a number > 0, got ${timeout}`,
    );
  }
}

/**
 * The retry delay after `attempts` failed attempts: `min(cap, base * 2^(attempts - 1))`.
 *
 * @example
 * ```ts
 * import { retryDelayMs } from "./plan_options.ts";
 * console.assert(retryDelayMs(1, 1000, 60_000) === 1000);
 * console.assert(retryDelayMs(3, 1000, 60_000) === 4000);
 * console.assert(retryDelayMs(30, 1000, 60_000) === 60_000);
 * ```
 */
export function retryDelayMs(
  attempts: number,
  baseMs: number,
  capMs: number,
): number {
  return attempts <= 0 ? 0 : backoffDelay(attempts - 1, baseMs, capMs);
}
