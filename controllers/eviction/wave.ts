/**
 * Waves: a drain starts only while every other pending Eviction's service is disabled, so
 * Nova places no VM on a host about to be drained (moving it twice); bounded per member.
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

/** What {@linkcode waveGate} decides. */
export type WaveDecision =
  /** No member holds this drain; `overdue` were enabled for the whole bound. */
  | {
    go: true;
    reason: typeof REASON_ALL_DISABLED | typeof REASON_SETTLE_BOUND_PASSED;
    overdue: string[];
  }
  /** `pending` members hold it: wait at most `waitMs` more. */
  | { go: false; pending: string[]; overdue: string[]; waitMs: number };

/**
 * The other members of `self`'s wave not yet disabled.
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
 * May `self` start migrations? Not while a member is enabled, for at most `settleMs`
 * from when this drain began waiting or first saw that member, whichever is later.
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
 * The WaveSettled condition for a decision, naming the hosts concerned.
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
