/**
 * Shares one capacity report between the drains of a wave: the Evictions
 * created together each run the check before their host is disabled, and
 * without sharing a wave of N hosts would list N hosts' servers N times.
 * A report (or a check in progress) is reused for the same set of hosts
 * for a short time; a failed check is not kept.
 *
 * @module
 */

/** How long a wave's report is reused, in clock milliseconds. */
export const CAPACITY_REPORT_TTL_MS = 5_000;

/**
 * A memo of recent results per key, sharing calls in progress.
 *
 * @example
 * ```ts
 * import { RecentMemo } from "./memo.ts";
 * const memo = new RecentMemo<number>(1000);
 * let calls = 0;
 * const f = () => Promise.resolve(++calls);
 * await memo.get("a", 0, f);
 * console.log(await memo.get("a", 500, f), calls); // 1 1
 * ```
 */
export class RecentMemo<T> {
  readonly #ttlMs: number;
  readonly #entries = new Map<string, { at: number; value: Promise<T> }>();

  /** Reuses results for `ttlMs` clock milliseconds. */
  constructor(ttlMs: number) {
    if (!(ttlMs >= 0) || !Number.isFinite(ttlMs)) {
      throw new RangeError(`ttlMs must be a number >= 0, got ${ttlMs}`);
    }
    this.#ttlMs = ttlMs;
  }

  /** The result for `key` computed at most `ttlMs` before `nowMs`, else a new one. */
  get(key: string, nowMs: number, compute: () => Promise<T>): Promise<T> {
    for (const [k, e] of this.#entries) {
      if (nowMs - e.at > this.#ttlMs) this.#entries.delete(k);
    }
    const hit = this.#entries.get(key);
    if (hit !== undefined) return hit.value;
    const value = compute();
    this.#entries.set(key, { at: nowMs, value });
    value.catch(() => {
      if (this.#entries.get(key)?.value === value) this.#entries.delete(key);
    });
    return value;
  }
}
