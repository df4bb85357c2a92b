/**
 * Waves: Evictions that exist together are preflighted together. A drain
 * starts migrations only while the compute service of every other pending
 * Eviction is disabled, so Nova cannot place a VM on a host that is about
 * to be drained (which would move that VM twice). This holds for every
 * start, not only the first: an Eviction created while a drain runs stops
 * that drain's new starts (its migrations in flight go on) until its own
 * host is disabled. The wait is bounded per member: one whose preflight
 * cannot finish (a capacity hold, Nova down, another partition's process
 * gone) holds the others for at most the settle bound, and is then named
 * in the report as still enabled.
 *
 * @module
 */

import {
  CONDITION_CAPACITY_CHECKED,
  CONDITION_PREFLIGHT,
  CONDITION_WAVE_SETTLED,
  REASON_ALL_DISABLED,
  REASON_SETTLE_BOUND_PASSED,
  REASON_WAITING_FOR_WAVE,
} from "../conditions.ts";
import { isDeleting } from "../../framework/kind.ts";
import type { Eviction } from "../../models/mod.ts";
import type { ConditionUpdate } from "./conditions.ts";
import { drainingAhead } from "./host_holds.ts";

/** Condition type: this drain's wave is settled; it may migrate. */
export { CONDITION_WAVE_SETTLED } from "../conditions.ts";

/** What {@linkcode waveGate} decides. */
export type WaveDecision =
  /**
   * No member holds this drain: every other one is disabled (`AllDisabled`)
   * or has been seen enabled for the whole bound (`SettleBoundPassed`;
   * `overdue` names them, so the report can say which hosts Nova may still
   * place VMs on).
   */
  | {
    go: true;
    reason: typeof REASON_ALL_DISABLED | typeof REASON_SETTLE_BOUND_PASSED;
    overdue: string[];
  }
  /** `pending` members hold it: wait at most `waitMs` more. */
  | { go: false; pending: string[]; overdue: string[]; waitMs: number };

/**
 * The other members of `self`'s wave that are not yet disabled: every
 * other Eviction that is not finished, not being deleted, not waiting
 * behind another Eviction of its hypervisor, whose preflight has not
 * failed and whose compute service is not yet recorded as disabled.
 * Members already disabled (running drains included) never hold anyone.
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
    c.type === CONDITION_PREFLIGHT && c.status === "False"
  );
}

/**
 * May `self` (whose own compute service is disabled) start migrations?
 * Not while a member of its wave is enabled, for at most `settleMs` per
 * member: a member's wait runs from when this drain began waiting
 * (`waitingSinceMs`) or from when it first saw that member
 * (`firstSeenMs`), whichever is later. So an Eviction created while this
 * drain runs stops its new starts until its host is disabled, bounded the
 * same way, and a member that never disables (a `capacityCheck: Hold`, a
 * process gone) holds nobody past the bound.
 *
 * @example
 * ```ts
 * import { waveGate } from "./wave.ts";
 * const a = { metadata: { name: "a" }, spec: { hypervisor: "a", reason: "r" },
 *   status: { hypervisorServiceId: "1" } };
 * const b = { metadata: { name: "b" }, spec: { hypervisor: "b", reason: "r" } };
 * const seen = () => 0;
 * console.assert(!waveGate({ self: a, evictions: [a, b], waitingSinceMs: 0, firstSeenMs: seen, nowMs: 10, settleMs: 100 }).go);
 * console.assert(waveGate({ self: a, evictions: [a, b], waitingSinceMs: 0, firstSeenMs: seen, nowMs: 100, settleMs: 100 }).go);
 * ```
 */
export function waveGate(input: {
  self: Eviction;
  evictions: readonly Eviction[];
  /** When this drain began waiting for its wave (clock ms). */
  waitingSinceMs: number;
  /** When this drain first saw a member pending (clock ms); else now. */
  firstSeenMs: (name: string) => number | undefined;
  nowMs: number;
  /** The bound on the wait for one member (clock ms). */
  settleMs: number;
}): WaveDecision {
  const { self, evictions, waitingSinceMs, firstSeenMs, nowMs, settleMs } =
    input;
  if (!Number.isFinite(settleMs) || settleMs < 0) {
    throw new RangeError(
      `settleMs must be a finite number >= 0, got ${String(settleMs)}`,
    );
  }
  const pending: string[] = [];
  const overdue: string[] = [];
  let waitMs = Number.POSITIVE_INFINITY;
  for (const name of pendingMembers(self, evictions)) {
    const since = Math.max(waitingSinceMs, firstSeenMs(name) ?? nowMs);
    const left = settleMs - Math.max(0, nowMs - since);
    if (left <= 0) overdue.push(name);
    else {
      pending.push(name);
      waitMs = Math.min(waitMs, left);
    }
  }
  if (pending.length > 0) return { go: false, pending, overdue, waitMs };
  return {
    go: true,
    reason: overdue.length === 0
      ? REASON_ALL_DISABLED
      : REASON_SETTLE_BOUND_PASSED,
    overdue,
  };
}

/**
 * The WaveSettled condition for a decision, naming the hosts concerned
 * (a member held by its capacity check marked so).
 *
 * @example
 * ```ts
 * import { waveCondition } from "./wave.ts";
 * const c = waveCondition("a", { go: true, reason: "SettleBoundPassed", overdue: ["b"] }, []);
 * console.log(c.message); // waited the settle bound; still enabled, so Nova may place VMs there: b
 * ```
 */
export function waveCondition(
  host: string,
  decision: WaveDecision,
  evictions: readonly Eviction[],
): ConditionUpdate {
  if (!decision.go) {
    return {
      type: CONDITION_WAVE_SETTLED,
      status: "False",
      reason: REASON_WAITING_FOR_WAVE,
      message:
        `host ${host} is disabled; migrations start once these are disabled too: ${
          describeMembers(decision.pending, evictions)
        }${
          decision.overdue.length === 0
            ? ""
            : `; past the settle bound, still enabled: ${
              describeMembers(decision.overdue, evictions)
            }`
        }`,
    };
  }
  return {
    type: CONDITION_WAVE_SETTLED,
    status: "True",
    reason: decision.reason,
    message: decision.reason === REASON_ALL_DISABLED
      ? "every other pending Eviction's compute service is disabled"
      : `waited the settle bound; still enabled, so Nova may place VMs there: ${
        describeMembers(decision.overdue, evictions)
      }`,
  };
}

/** At most five member names, each marked when its capacity check holds it. */
function describeMembers(
  names: readonly string[],
  evictions: readonly Eviction[],
): string {
  const held = (name: string) =>
    evictions.find((e) => e.metadata?.name === name)?.status?.conditions
      ?.some((c) =>
        c.type === CONDITION_CAPACITY_CHECKED && c.status === "False"
      ) === true;
  const shown = names.slice(0, 5).map((n) =>
    held(n) ? `${n} (held by its capacity check)` : n
  );
  return shown.join(", ") +
    (names.length > 5 ? `, ... (${names.length})` : "");
}
