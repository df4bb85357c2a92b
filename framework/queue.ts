/**
 * A work queue with controller-runtime's semantics: a key is never handed
 * to two workers at once, adds of a queued key collapse into one, a key
 * added while it is processed is queued again when it is done, delayed adds
 * keep the earliest deadline, and failures back off per key. Its metrics
 * hooks are client-go's (`workqueue_metrics.ts` implements them), called at
 * the same points, so that the series mean what they mean for every other
 * controller.
 *
 * @module
 */

import { type CancelTimer, type Clock, systemClock } from "./clock.ts";
import {
  type BackoffOptions,
  DEFAULT_OUTAGE_BASE_MS,
  DEFAULT_OUTAGE_MAX_MS,
  KeyBackoff,
  outageRetryDelay,
} from "./backoff.ts";

/** Options of {@linkcode WorkQueue}. */
export interface WorkQueueOptions {
  /** Time source for delayed adds (default: the wall clock). */
  clock?: Clock;
  /** Per-key backoff bounds for {@linkcode WorkQueue.addRateLimited}. */
  backoff?: BackoffOptions;
  /**
   * Per-key backoff bounds for {@linkcode WorkQueue.addOutageLimited}
   * (default 200 ms .. 2 s).
   */
  outageBackoff?: BackoffOptions;
  /** What the queue reports as it works (default: nothing). */
  metrics?: QueueMetrics;
}

/**
 * The points at which a queue reports, as client-go's work queue does:
 * {@linkcode WorkQueue} calls them, an implementation measures (see
 * `workqueue_metrics.ts`).
 */
export interface QueueMetrics {
  /** `key` became due (it was not already waiting): one add, depth + 1. */
  add(key: string): void;
  /** `key` was handed to a worker: depth - 1, its wait is over. */
  get(key: string): void;
  /** The worker finished `key`: its work is over. */
  done(key: string): void;
  /**
   * A delayed add was asked for ({@linkcode WorkQueue.addAfter} and the
   * backoffs built on it): client-go counts these as retries.
   */
  retry(): void;
}

const NO_METRICS: QueueMetrics = {
  add() {},
  get() {},
  done() {},
  retry() {},
};

/**
 * The work queue. Workers call {@linkcode get} (or {@linkcode tryGet}) and
 * must call {@linkcode done} with the key when finished.
 *
 * @example
 * ```ts
 * import { WorkQueue } from "./queue.ts";
 * const q = new WorkQueue();
 * q.add("a"); q.add("a");
 * console.assert(q.length === 1);
 * const key = q.tryGet();
 * q.add("a"); // while processing: deferred until done
 * console.assert(q.length === 0);
 * if (key !== undefined) q.done(key);
 * console.assert(q.length === 1);
 * q.shutdown();
 * ```
 */
export class WorkQueue {
  readonly #clock: Clock;
  readonly #backoff: KeyBackoff;
  readonly #outage: KeyBackoff;
  readonly #metrics: QueueMetrics;
  readonly #queue: string[] = [];
  readonly #dirty = new Set<string>();
  readonly #processing = new Set<string>();
  readonly #delayed = new Map<string, { at: number; cancel: CancelTimer }>();
  #waiters: Array<(key: string | undefined) => void> = [];
  #shuttingDown = false;

  /** Creates an empty queue. */
  constructor(options: WorkQueueOptions = {}) {
    this.#clock = options.clock ?? systemClock;
    this.#backoff = new KeyBackoff(options.backoff ?? {});
    this.#outage = new KeyBackoff({
      baseMs: DEFAULT_OUTAGE_BASE_MS,
      maxMs: DEFAULT_OUTAGE_MAX_MS,
      ...options.outageBackoff,
    });
    this.#metrics = options.metrics ?? NO_METRICS;
  }

  /** Keys waiting to be processed (the queue depth). */
  get length(): number {
    return this.#queue.length;
  }

  /** Keys currently handed to workers. */
  get processing(): ReadonlySet<string> {
    return this.#processing;
  }

  /** Keys waiting for a delayed add. */
  get delayedCount(): number {
    return this.#delayed.size;
  }

  /** Whether {@linkcode shutdown} was called. */
  get isShuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /** Queues `key` now; a no-op if it is already queued. */
  add(key: string): void {
    if (this.#shuttingDown || this.#dirty.has(key)) return;
    this.#metrics.add(key);
    this.#dirty.add(key);
    if (this.#processing.has(key)) return;
    this.#hand(key);
  }

  /** Gives a due key that no worker holds to a waiting worker, or queues it. */
  #hand(key: string): void {
    const waiter = this.#waiters.shift();
    if (waiter !== undefined) {
      this.#dirty.delete(key);
      this.#processing.add(key);
      this.#metrics.get(key);
      waiter(key);
      return;
    }
    this.#queue.push(key);
  }

  /** Queues `key` after `delayMs`; an earlier pending deadline wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.#shuttingDown) return;
    if (!Number.isFinite(delayMs)) {
      throw new RangeError(`addAfter delayMs must be finite, got ${delayMs}`);
    }
    this.#metrics.retry();
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const at = this.#clock.now() + delayMs;
    const existing = this.#delayed.get(key);
    if (existing !== undefined) {
      if (existing.at <= at) return;
      existing.cancel();
    }
    const cancel = this.#clock.setTimer(() => {
      this.#delayed.delete(key);
      this.add(key);
    }, delayMs);
    this.#delayed.set(key, { at, cancel });
  }

  /**
   * Queues `key` after its next backoff delay, or after `atLeastMs` when
   * that is longer (a failure that said when to retry); returns the delay.
   */
  addRateLimited(key: string, atLeastMs = 0): number {
    const delay = Math.max(this.#backoff.next(key), atLeastMs);
    this.addAfter(key, delay);
    return delay;
  }

  /**
   * Queues `key` after its next outage delay (a service was unavailable):
   * the short capped backoff, or `pacingMs` (the handler's own last
   * requeue delay) when that is longer. Returns the delay.
   */
  addOutageLimited(key: string, pacingMs?: number): number {
    const delay = outageRetryDelay(this.#outage.next(key), pacingMs);
    this.addAfter(key, delay);
    return delay;
  }

  /** Resets both backoffs of `key` (after a success). */
  forget(key: string): void {
    this.#backoff.forget(key);
    this.#outage.forget(key);
  }

  /** Failures of `key` since its last {@linkcode forget}. */
  failures(key: string): number {
    return this.#backoff.failures(key);
  }

  /** Takes the next key if one is ready, without waiting. */
  tryGet(): string | undefined {
    const key = this.#queue.shift();
    if (key === undefined) return undefined;
    this.#dirty.delete(key);
    this.#processing.add(key);
    this.#metrics.get(key);
    return key;
  }

  /**
   * Waits for the next key; resolves undefined once shut down or when
   * `signal` aborts (then no key is taken).
   */
  get(signal?: AbortSignal): Promise<string | undefined> {
    const key = this.tryGet();
    if (key !== undefined) return Promise.resolve(key);
    if (this.#shuttingDown || signal?.aborted) {
      return Promise.resolve(undefined);
    }
    return new Promise((resolve) => {
      const waiter = (k: string | undefined) => {
        signal?.removeEventListener("abort", onAbort);
        resolve(k);
      };
      const onAbort = () => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        resolve(undefined);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  /** Marks `key` finished; re-queues it if it was added meanwhile. */
  done(key: string): void {
    if (!this.#processing.delete(key)) return;
    this.#metrics.done(key);
    if (!this.#dirty.has(key)) return;
    // Added while it was processed: already counted as an add then.
    if (this.#shuttingDown) this.#dirty.delete(key);
    else this.#hand(key);
  }

  /** Stops handing out keys; pending waiters get undefined. */
  shutdown(): void {
    this.#shuttingDown = true;
    for (const { cancel } of this.#delayed.values()) cancel();
    this.#delayed.clear();
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w(undefined);
  }
}
