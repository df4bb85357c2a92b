/**
 * An open-loop load generator: requests are sent on a fixed schedule, not
 * after the previous reply, and each latency is measured from the time the
 * request was due, so a slow reply (or a late scheduler) shows up in the
 * figures instead of silently lowering the rate (coordinated omission).
 *
 * @module
 */

/** The outcome of one request. */
export type Outcome = { ok: true } | { ok: false; error: string };

/** What {@linkcode runOpenLoop} measured. */
export interface OpenLoopResult {
  /** Latencies in ms from the due time to the full reply, successful or not, sorted. */
  readonly latenciesMs: readonly number[];
  /** Latency in ms of request `i` (from its due time) at index `i`. */
  readonly latencyByRequest: readonly number[];
  /** Requests sent. */
  readonly sent: number;
  /** Error descriptions with their counts. */
  readonly errors: ReadonlyMap<string, number>;
  /**
   * Latencies in ms from the actual sending to the full reply, sorted: the
   * service time, without the load generator's own lateness.
   */
  readonly serviceMs: readonly number[];
  /** The largest delay between a request's due time and its sending, ms. */
  readonly maxSendLagMs: number;
  /** Wall time from the first due time to the last reply, ms. */
  readonly elapsedMs: number;
}

/** Options of {@linkcode runOpenLoop}. */
export interface OpenLoopOptions {
  /** Requests per second. */
  readonly rate: number;
  /** How long to send, ms. */
  readonly durationMs: number;
  /** Sends request number `i`; resolves once its reply is read. */
  readonly send: (i: number) => Promise<Outcome>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Sends `rate * durationMs / 1000` requests, request `i` due at
 * `start + i / rate`, never early; waits for every reply.
 *
 * @example
 * ```ts
 * import { runOpenLoop } from "./open_loop.ts";
 * const r = await runOpenLoop({ rate: 1000, durationMs: 10, send: () => Promise.resolve({ ok: true }) });
 * console.assert(r.sent === 10 && r.latenciesMs.length === 10);
 * ```
 */
export async function runOpenLoop(
  options: OpenLoopOptions,
): Promise<OpenLoopResult> {
  const { rate, durationMs, send } = options;
  if (!(rate > 0) || !(durationMs > 0)) {
    throw new RangeError(
      `rate and durationMs must be > 0, got ${rate} and ${durationMs}`,
    );
  }
  const total = Math.round(rate * durationMs / 1000);
  const intervalMs = 1000 / rate;
  const latencies: number[] = [];
  const service: number[] = [];
  const byRequest: number[] = new Array(total).fill(NaN);
  const errors = new Map<string, number>();
  const pending: Promise<void>[] = [];
  let maxSendLagMs = 0;
  const start = performance.now() + 20;
  for (let i = 0; i < total; i++) {
    const due = start + i * intervalMs;
    const wait = due - performance.now();
    // setTimeout never fires early; rounding up keeps every send on or after its due time
    if (wait > 0) await sleep(Math.ceil(wait));
    const sentAt = performance.now();
    maxSendLagMs = Math.max(maxSendLagMs, sentAt - due);
    pending.push((async () => {
      let outcome: Outcome;
      try {
        outcome = await send(i);
      } catch (err) {
        outcome = {
          ok: false,
          error: err instanceof Error ? `${err.name}: ${err.message}` : String(
            err,
          ),
        };
      }
      const now = performance.now();
      latencies.push(now - due);
      byRequest[i] = now - due;
      service.push(now - sentAt);
      if (!outcome.ok) {
        errors.set(outcome.error, (errors.get(outcome.error) ?? 0) + 1);
      }
    })());
  }
  await Promise.all(pending);
  return {
    latenciesMs: latencies.sort((a, b) => a - b),
    serviceMs: service.sort((a, b) => a - b),
    latencyByRequest: byRequest,
    sent: total,
    errors,
    maxSendLagMs,
    elapsedMs: performance.now() - start,
  };
}

/**
 * The nearest-rank percentile `p` (0..100) of sorted values; NaN when empty.
 *
 * @example
 * ```ts
 * import { percentile } from "./open_loop.ts";
 * console.assert(percentile([1, 2, 3, 4], 50) === 2);
 * console.assert(percentile([1, 2, 3, 4], 100) === 4);
 * ```
 */
export function percentile(sorted: readonly number[], p: number): number {
  if (!(p >= 0 && p <= 100)) {
    throw new RangeError(`percentile must be in 0..100, got ${p}`);
  }
  if (sorted.length === 0) return NaN;
  const rank = Math.max(1, Math.ceil(p / 100 * sorted.length));
  return sorted[rank - 1] ?? NaN;
}
