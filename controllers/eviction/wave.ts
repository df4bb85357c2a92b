/**
 * Waves: Evictions that exist together are preflighted together. A drain
 * starts migrating only once the compute service of every other pending
 * Eviction is disabled, so Nova cannot place a VM on a host that is about
 * to be drained (which would move that VM twice). The wait is bounded: a
 * member whose preflight cannot finish (capacity hold, Nova down, another
 * partition's process gone) delays the others by at most the settle bound.
 *
 * @module
 */

import { isDeleting } from "../../framework/kind.ts";
import type { Eviction } from "../../models/mod.ts";
import { drainingAhead } from "./gates.ts";

/** Condition type: this drain's wave is settled; it may migrate. */
export const CONDITION_WAVE_SETTLED = "WaveSettled";

/** What {@linkcode waveGate} decides. */
export type WaveDecision =
  /** Every other member is disabled, or the bound passed: migrate. */
  | { go: true; reason: "AllDisabled" | "SettleBoundPassed"; pending: string[] }
  /** Some members are not yet disabled: wait at most `waitMs` more. */
  | { go: false; pending: string[]; waitMs: number };

/**
 * The other members of `self`'s wave that are not yet disabled: every
 * other Eviction that is not finished, not being deleted, not waiting
 * behind another Eviction of its hypervisor, whose preflight has not
 * failed and whose compute service is not yet recorded as disabled.
 * Members already disabled (running drains included) never hold anyone;
 * so an Eviction created while others run waits for no one but those
 * created with it.
 *
 * @example
 * ```ts
 * import { pendingMembers } from "./wave.ts";
 * const e = (name: string, id?: string) => ({
 *   metadata: { name, creationTimestamp: "2026-01-01T00:00:00Z" },
 *   spec: { hypervisor: name, reason: "r" },
 *   ...(id === undefined ? {} : { status: { hypervisorServiceId: id } }),
 * });
 * console.assert(pendingMembers(e("a", "1"), [e("a", "1"), e("b"), e("c", "3")]).join() === "b");
 * ```
 */
export function pendingMembers(
  self: Eviction,
  evictions: readonly Eviction[],
): string[] {
  const selfName = self.metadata?.name;
  const out: string[] = [];
  for (const e of evictions) {
    const name = e.metadata?.name;
    if (name === undefined || name === selfName) continue;
    if (e.spec.hypervisor === self.spec.hypervisor) continue;
    if (isDeleting(e) || e.status?.finishedAt !== undefined) continue;
    if (e.status?.hypervisorServiceId !== undefined) continue;
    if (preflightFailed(e)) continue;
    if (drainingAhead(e, evictions) !== undefined) continue;
    out.push(name);
  }
  return out.sort();
}

function preflightFailed(e: Eviction): boolean {
  return (e.status?.conditions ?? []).some((c) =>
    c.type === "PreflightChecksSucceeded" && c.status === "False"
  );
}

/**
 * May `self` (whose own compute service is disabled) start migrating?
 * Yes when no other member of its wave is pending, or when it has waited
 * `settleMs` since `waitingSinceMs` (the bound); otherwise it waits.
 *
 * @example
 * ```ts
 * import { waveGate } from "./wave.ts";
 * const a = { metadata: { name: "a" }, spec: { hypervisor: "a", reason: "r" },
 *   status: { hypervisorServiceId: "1" } };
 * const b = { metadata: { name: "b" }, spec: { hypervisor: "b", reason: "r" } };
 * console.assert(!waveGate({ self: a, evictions: [a, b], waitingSinceMs: 0, nowMs: 10, settleMs: 100 }).go);
 * console.assert(waveGate({ self: a, evictions: [a, b], waitingSinceMs: 0, nowMs: 100, settleMs: 100 }).go);
 * ```
 */
export function waveGate(input: {
  self: Eviction;
  evictions: readonly Eviction[];
  /** When this drain began waiting for its wave (clock ms). */
  waitingSinceMs: number;
  nowMs: number;
  /** The bound on the wait (clock ms). */
  settleMs: number;
}): WaveDecision {
  const { self, evictions, waitingSinceMs, nowMs, settleMs } = input;
  if (!Number.isFinite(settleMs) || settleMs < 0) {
    throw new RangeError(
      `settleMs must be a finite number >= 0, got ${String(settleMs)}`,
    );
  }
  const pending = pendingMembers(self, evictions);
  if (pending.length === 0) return { go: true, reason: "AllDisabled", pending };
  const waited = nowMs - waitingSinceMs;
  if (waited >= settleMs) {
    return { go: true, reason: "SettleBoundPassed", pending };
  }
  return { go: false, pending, waitMs: settleMs - Math.max(0, waited) };
}
