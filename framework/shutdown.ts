/**
 * How a graceful stop spends its time: running handlers get most of the
 * shutdown timeout, a reserve at its end is kept for giving the Lease up
 * and closing the rest, and no step may outlast the deadline (a step that
 * has not ended by then is left behind: the process exits).
 *
 * @module
 */

/** The reserve at the end of a stop: a fifth of the timeout, at most 5 s. */
export const MAX_SHUTDOWN_RESERVE_MS = 5_000;

/** How a stop of `timeoutMs` is divided. */
export interface ShutdownBudget {
  /** How long running handlers may go on before their signal aborts. */
  handlerGraceMs: number;
  /** How long handlers may take to end after their signal aborted. */
  handlerEndMs: number;
  /** The whole stop: after this, nothing more is waited for. */
  totalMs: number;
}

/**
 * Divides a shutdown timeout: handlers get it less a reserve (a fifth, at
 * most {@linkcode MAX_SHUTDOWN_RESERVE_MS}); half the reserve is their last
 * chance to end once aborted, the other half gives the Lease up and closes
 * the servers. 0 (leadership lost) aborts at once.
 *
 * @example
 * ```ts
 * import { shutdownBudget } from "./shutdown.ts";
 * const b = shutdownBudget(25_000);
 * console.assert(b.handlerGraceMs === 20_000 && b.handlerEndMs === 2_500 && b.totalMs === 25_000);
 * ```
 */
export function shutdownBudget(timeoutMs: number): ShutdownBudget {
  if (!Number.isFinite(timeoutMs) || timeoutMs < 0) {
    throw new RangeError(
      `shutdown timeout must be a number of ms >= 0, got ${timeoutMs}`,
    );
  }
  const reserve = Math.min(MAX_SHUTDOWN_RESERVE_MS, timeoutMs / 5);
  return {
    handlerGraceMs: Math.floor(timeoutMs - reserve),
    handlerEndMs: Math.floor(reserve / 2),
    totalMs: timeoutMs,
  };
}

/**
 * Waits for `work` until `deadline` (ms since the epoch on `now`'s clock);
 * true when it ended in time. A rejection counts as ended (the caller logs
 * its steps' failures itself).
 *
 * @example
 * ```ts
 * import { until } from "./shutdown.ts";
 * const ended = await until(new Promise(() => {}), Date.now() + 10);
 * console.assert(ended === false);
 * ```
 */
export async function until(
  work: Promise<unknown>,
  deadline: number,
  now: () => number = Date.now,
): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, deadline - now()));
  });
  try {
    return await Promise.race([work.then(() => true, () => true), late]);
  } finally {
    clearTimeout(timer);
  }
}
