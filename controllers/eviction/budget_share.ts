/**
 * The cluster budget across processes (every Eviction's `status.inFlightCount`): who waits, who gets a slot.
 * @module
 */

import type { Eviction } from "../../models/mod.ts";
import {
  CONDITION_EVICTING,
  REASON_FAILED,
  REASON_WAITING_FOR_BUDGET,
  REASON_WAITING_FOR_PERSON,
} from "../conditions.ts";
import { isDeleting } from "../../framework/kind.ts";

/** A drain waiting for budget with nothing in flight. */
export interface BudgetWaiter {
  limit: number;
  /** Its VMs left to start. */
  remaining: number;
  /** A slot handed to it costs no extra look at Nova (snapshot, or first starts). */
  startsWithoutLook: boolean;
}

/**
 * How many of `want` starts a drain may take from `left` free slots, with
 * `mine` in flight and `remaining` to start. A slot is left to each waiter
 * whose limit is below what this drain would hold (a host at limit 1 is
 * never starved), and to each that starts without a look and has more work
 * left (so the wave's longest drain is not the last to run); a waiter that
 * must look first is not handed one: each hand-over would cost a look.
 *
 * @throws {RangeError} when a count is not an integer >= 0.
 *
 * @example
 * ```ts
 * import { startsByRemainingWork } from "./budget_share.ts";
 * const waiter = { limit: 4, remaining: 12, startsWithoutLook: true };
 * // a slot freed by a drain with 3 left, a drain with 12 left waits: it is left to it
 * console.assert(startsByRemainingWork(1, 3, 1, 3, [waiter]) === 0);
 * // the waiter has less left: the running drain keeps the slot
 * console.assert(startsByRemainingWork(1, 3, 1, 15, [waiter]) === 1);
 * // the waiter would have to look at Nova first: the running drain keeps it
 * console.assert(startsByRemainingWork(1, 3, 1, 3, [{ ...waiter, startsWithoutLook: false }]) === 1);
 * ```
 */
export function startsByRemainingWork(
  left: number,
  mine: number,
  want: number,
  remaining: number,
  waiting: readonly BudgetWaiter[],
): number {
  for (const [what, n] of Object.entries({ left, mine, want, remaining })) {
    if (!Number.isSafeInteger(n) || n < 0) {
      throw new RangeError(`${what} must be an integer >= 0, got ${n}`);
    }
  }
  let k = 0;
  while (k < want) {
    const holds = mine + k + 1;
    const leave = waiting.filter((w) =>
      w.limit < holds || (w.startsWithoutLook && w.remaining > remaining - k)
    ).length;
    if (k + 1 + leave > left) {
      break;
    }
    k++;
  }
  return k;
}

/**
 * The unfinished drains but `self` with nothing in flight that `waiting(e)` says wait for budget.
 *
 * @example
 * ```ts
 * import { idleWaiters } from "./budget_share.ts";
 * const e = (name: string, inFlightCount: number) => ({
 *   metadata: { name }, spec: { hypervisor: name, reason: "r" }, status: { inFlightCount },
 * });
 * console.log(idleWaiters("a", [e("a", 0), e("b", 2), e("c", 0)], () => true).map((x) => x.metadata?.name));
 * // [ "c" ]
 * ```
 */
export function idleWaiters(
  self: string,
  evictions: readonly Eviction[],
  waiting: (e: Eviction) => boolean,
): Eviction[] {
  return evictions.filter((e) => {
    const name = e.metadata?.name;
    return name !== undefined && name !== self &&
      e.status?.finishedAt === undefined &&
      (e.status?.inFlightCount ?? 0) === 0 && waiting(e);
  });
}

/**
 * Whether an Eviction says it waits for budget (Evicting WaitingForBudget), e.g. another process's.
 *
 * @example
 * ```ts
 * import { waitsForBudget } from "./budget_share.ts";
 * const c = { type: "Evicting", status: "True" as const, reason: "WaitingForBudget", message: "", lastTransitionTime: "2026-01-01T00:00:00Z" };
 * console.assert(waitsForBudget({ metadata: { name: "b" }, spec: { hypervisor: "b", reason: "r" }, status: { conditions: [c] } }));
 * ```
 */
export function waitsForBudget(e: Eviction): boolean {
  const evicting = e.status?.conditions?.find((c) =>
    c.type === CONDITION_EVICTING
  );
  return evicting?.status === "True" &&
    evicting.reason === REASON_WAITING_FOR_BUDGET;
}

/**
 * Whether an Eviction is about to start its first migrations. Counted as
 * waiting, a wave's member gets its share of the first slots, not finding
 * them spent by the first member (whose second start Nova may only queue).
 *
 * @example
 * ```ts
 * import { aboutToStart } from "./budget_share.ts";
 * const e = { metadata: { name: "b" }, spec: { hypervisor: "b", reason: "r" },
 *   status: { hypervisorServiceId: "s" } };
 * console.assert(aboutToStart(e));
 * console.assert(!aboutToStart({ ...e, status: { hypervisorServiceId: "s", migratedCount: 1 } }));
 * console.assert(!aboutToStart({ ...e, status: {} }));
 * ```
 */
export function aboutToStart(e: Eviction): boolean {
  const status = e.status;
  if (status?.hypervisorServiceId === undefined || isDeleting(e)) return false;
  if (status.finishedAt !== undefined) return false;
  if ((status.migratedCount ?? 0) > 0 || (status.inFlightCount ?? 0) > 0) {
    return false;
  }
  const reason = status.conditions?.find((c) => c.type === CONDITION_EVICTING)
    ?.reason;
  return reason !== REASON_WAITING_FOR_PERSON && reason !== REASON_FAILED;
}

/**
 * Migrations in flight per unfinished Eviction (one being deleted counts).
 *
 * @example
 * ```ts
 * import { inFlightByEviction } from "./budget_share.ts";
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
 * Whether a change of one Eviction's count in flight frees budget (`after` undefined: gone).
 *
 * @example
 * ```ts
 * import { freesBudget } from "./budget_share.ts";
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
 * This process's drains waiting for budget, in line; a woken one keeps its place until it runs in full.
 *
 * @example
 * ```ts
 * import { BudgetWaiters } from "./budget_share.ts";
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

  /** One already in line keeps its place. */
  add(key: string): void {
    this.#keys.set(key, "waiting");
  }

  /** `key` ran a full pass, or is gone. */
  delete(key: string): void {
    this.#keys.delete(key);
  }

  /** Whether `key` waits, was woken since it last waited, or neither. */
  standing(key: string): "waiting" | "woken" | undefined {
    return this.#keys.get(key);
  }

  /** How many drains wait (not those woken). */
  get size(): number {
    let n = 0;
    for (const s of this.#keys.values()) if (s === "waiting") n++;
    return n;
  }

  /** Enqueues and marks woken the `count` longest-waiting (by `rank` first): one per freed slot. */
  wake(
    enqueue: (key: string) => void,
    count = Infinity,
    rank?: (key: string) => number,
  ): void {
    const waiting = [...this.#keys].filter(([, s]) => s === "waiting")
      .map(([k]) => k);
    if (rank !== undefined) {
      const ranks = new Map(waiting.map((k) => [k, rank(k)]));
      // Array.prototype.sort is stable: equals keep their place in line
      waiting.sort((a, b) => (ranks.get(b) ?? 0) - (ranks.get(a) ?? 0));
    }
    for (const k of waiting.slice(0, Math.max(0, count))) {
      this.#keys.set(k, "woken");
      enqueue(k);
    }
  }

  /** Feeds one Eviction's change (`after` undefined: deleted); wakes one per slot freed. */
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
