/**
 * The cluster budget across processes: what every Eviction in the cluster
 * has in flight (whatever this process's `--label-selector` partition),
 * and the drains of this process that wait for budget, woken when it
 * frees instead of polling Nova.
 *
 * An Eviction that is deleted mid-drain keeps its finalizer (finalize.ts)
 * until Nova shows its migrations settled, its `status.inFlightCount`
 * refreshed meanwhile: so its migrations stay counted by every process
 * that watches Evictions, with no other record to create or clean up.
 *
 * @module
 */

import type { Eviction } from "../../models/mod.ts";

/** A drain that competes for the cluster budget, and how many migrations it would run at once. */
export interface BudgetDemand {
  /** The Eviction's name. */
  key: string;
  /** Migrations it would run at once without the budget (its limit, or fewer VMs). */
  demand: number;
}

/**
 * Max-min fair shares of the cluster budget among the drains that compete
 * for it: no drain gets more than it would run, and the rest is spread
 * evenly (water-filling), so a drain that already runs many migrations
 * cannot keep every freed slot while another waits with none. A budget
 * smaller than the number of drains gives one slot each to the first
 * drains by name (the same answer in every process).
 *
 * @throws {RangeError} when the budget or a demand is not an integer >= 0.
 *
 * @example
 * ```ts
 * import { fairShares } from "./budget.ts";
 * const s = fairShares(5, [{ key: "big", demand: 4 }, { key: "hana-a", demand: 1 }, { key: "hana-b", demand: 1 }]);
 * console.assert(s.get("big") === 3 && s.get("hana-a") === 1);
 * ```
 */
export function fairShares(
  budget: number,
  demands: readonly BudgetDemand[],
): Map<string, number> {
  if (!Number.isSafeInteger(budget) || budget < 0) {
    throw new RangeError(`budget must be an integer >= 0, got ${budget}`);
  }
  for (const d of demands) {
    if (!Number.isSafeInteger(d.demand) || d.demand < 0) {
      throw new RangeError(
        `the demand of ${d.key} must be an integer >= 0, got ${d.demand}`,
      );
    }
  }
  const out = new Map<string, number>(demands.map((d) => [d.key, 0]));
  let left = budget;
  let open = demands.filter((d) => d.demand > 0)
    .sort((a, b) => (a.key < b.key ? -1 : 1));
  while (left > 0 && open.length > 0) {
    const even = Math.floor(left / open.length);
    if (even === 0) {
      for (const d of open.slice(0, left)) {
        out.set(d.key, (out.get(d.key) ?? 0) + 1);
      }
      break;
    }
    const next: BudgetDemand[] = [];
    for (const d of open) {
      const got = out.get(d.key) ?? 0;
      const give = Math.min(even, d.demand - got);
      out.set(d.key, got + give);
      left -= give;
      if (got + give < d.demand) next.push(d);
    }
    open = next;
  }
  return out;
}

/**
 * The other drains that compete for the cluster budget, from the cluster's
 * Evictions: unfinished ones with migrations in flight, and those that
 * `waiting(name)` says wait for budget (this process's waiters: another
 * process's are not told apart from drains waiting for a retry). Each
 * would run up to its limit in force (`status.effectiveLimit`), or fewer
 * when fewer VMs are left (`status.outstandingCount`).
 *
 * @example
 * ```ts
 * import { budgetCompetitors } from "./budget.ts";
 * const e = (name: string, inFlightCount: number) => ({
 *   metadata: { name }, spec: { hypervisor: name, reason: "r" },
 *   status: { inFlightCount, effectiveLimit: 4, outstandingCount: 10 },
 * });
 * console.log(budgetCompetitors("a", [e("a", 1), e("b", 2), e("c", 0)], () => false));
 * // [ { key: "b", demand: 4 } ]
 * ```
 */
export function budgetCompetitors(
  self: string,
  evictions: readonly Eviction[],
  waiting: (name: string) => boolean,
): BudgetDemand[] {
  const out: BudgetDemand[] = [];
  for (const e of evictions) {
    const name = e.metadata?.name;
    const s = e.status;
    if (name === undefined || name === self || s?.finishedAt !== undefined) {
      continue;
    }
    const inFlight = s?.inFlightCount ?? 0;
    if (inFlight === 0 && !waiting(name)) continue;
    const room = Math.min(s?.effectiveLimit ?? 1, s?.outstandingCount ?? 1);
    out.push({ key: name, demand: Math.max(1, inFlight, room) });
  }
  return out;
}

/**
 * Migrations in flight per Eviction name, as the cluster's Evictions
 * report them: a finished drain has none; one being deleted still counts.
 *
 * @example
 * ```ts
 * import { inFlightByEviction } from "./budget.ts";
 * const e = (name: string, n: number, finished = false) => ({
 *   metadata: { name }, spec: { hypervisor: name, reason: "r" },
 *   status: { inFlightCount: n, ...(finished ? { finishedAt: "2026-01-01T00:00:00Z" } : {}) },
 * });
 * console.assert(inFlightByEviction([e("a", 2), e("b", 3, true)]).get("a") === 2);
 * console.assert(!inFlightByEviction([e("a", 2), e("b", 3, true)]).has("b"));
 * ```
 */
export function inFlightByEviction(
  evictions: readonly Eviction[],
): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of evictions) {
    const name = e.metadata?.name;
    if (name === undefined || e.status?.finishedAt !== undefined) continue;
    const n = e.status?.inFlightCount ?? 0;
    if (n > 0) out.set(name, n);
  }
  return out;
}

/**
 * Whether a change of one Eviction frees budget: its count in flight
 * dropped, or it is gone (`after` undefined) with some in flight.
 *
 * @example
 * ```ts
 * import { freesBudget } from "./budget.ts";
 * console.assert(freesBudget(3, 2));
 * console.assert(freesBudget(1, undefined));
 * console.assert(!freesBudget(2, 2));
 * ```
 */
export function freesBudget(
  before: number | undefined,
  after: number | undefined,
): boolean {
  return (before ?? 0) > (after ?? 0);
}

/**
 * The drains of this process that wait for budget: with nothing in flight
 * (they wait without a Nova call), or with starts the budget held back
 * (paced by their own migrations meanwhile). A waiting drain is enqueued
 * when budget frees (any Eviction's count in flight drops, here or in
 * another process); it stays in line, marked woken, until its pass either
 * runs in full (then {@linkcode BudgetWaiters.delete}) or finds the budget
 * spent again and goes back to waiting, in its old place.
 *
 * @example
 * ```ts
 * import { BudgetWaiters } from "./budget.ts";
 * const w = new BudgetWaiters();
 * w.add("a");
 * const woken: string[] = [];
 * w.wake((k) => woken.push(k));
 * console.assert(woken.join() === "a" && w.size === 0);
 * console.assert(w.standing("a") === "woken");
 * ```
 */
export class BudgetWaiters {
  /** In line, the longest-waiting first (a Map keeps insertion order). */
  readonly #keys = new Map<string, "waiting" | "woken">();
  readonly #seen = new Map<string, number>();

  /**
   * Records that `key` waits for budget; a drain already in line (woken
   * or not) keeps its place.
   */
  add(key: string): void {
    this.#keys.set(key, "waiting");
  }

  /** `key` no longer waits (it ran a full pass, or is gone). */
  delete(key: string): void {
    this.#keys.delete(key);
  }

  /** Whether `key` waits, was woken since it last waited, or neither. */
  standing(key: string): "waiting" | "woken" | undefined {
    return this.#keys.get(key);
  }

  /** How many drains wait (not counting those woken). */
  get size(): number {
    let n = 0;
    for (const s of this.#keys.values()) if (s === "waiting") n++;
    return n;
  }

  /**
   * Enqueues the `count` longest-waiting drains (default all), marking
   * them woken. Waking only as many as slots freed spares the others a
   * pass that would find none.
   */
  wake(enqueue: (key: string) => void, count = Infinity): void {
    for (const [k, s] of this.#keys) {
      if (count <= 0) break;
      if (s !== "waiting") continue;
      count--;
      this.#keys.set(k, "woken");
      enqueue(k);
    }
  }

  /**
   * Feeds one Eviction's change (`after` undefined: deleted); wakes as
   * many waiters as it frees slots.
   */
  observe(
    key: string,
    after: Eviction | undefined,
    enqueue: (key: string) => void,
  ): void {
    const before = this.#seen.get(key);
    const n = after === undefined || after.status?.finishedAt !== undefined
      ? 0
      : after.status?.inFlightCount ?? 0;
    if (after === undefined) this.#seen.delete(key);
    else this.#seen.set(key, n);
    if (freesBudget(before, n)) this.wake(enqueue, (before ?? 0) - n);
  }
}
