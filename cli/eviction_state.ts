/**
 * How an Eviction stands, read from its status the way the plugin shows
 * it: counts, state, whether `--wait` is over and how.
 *
 * @module
 */
import {
  CONDITION_EVICTING,
  REASON_FAILED,
  REASON_NOT_IN_NOVA,
  REASON_PENDING,
  REASON_SUCCEEDED,
  stoppedForPerson,
} from "../controllers/conditions.ts";
import type { Eviction } from "../models/mod.ts";
import type { DrainCounts } from "./progress.ts";

/**
 * Counts of a drain from an Eviction's status.
 *
 * @example
 * ```ts
 * import { countsOf } from "./eviction_state.ts";
 * const c = countsOf({ spec: { hypervisor: "n", reason: "r" }, status: { migratedCount: 2 } });
 * console.assert(c.migrated === 2 && c.outstanding === 0);
 * ```
 */
export function countsOf(e: Eviction): DrainCounts {
  const s = e.status ?? {};
  return {
    migrated: s.migratedCount ?? 0,
    inFlight: s.inFlightCount ?? s.inFlight?.length ?? 0,
    outstanding: s.outstandingCount ?? 0,
    failed: s.failed?.length ?? 0,
    skipped: s.skipped?.length ?? 0,
  };
}

/**
 * The Evicting condition's reason, or "Pending" before the first pass.
 *
 * @example
 * ```ts
 * import { stateOf } from "./eviction_state.ts";
 * console.assert(stateOf({ spec: { hypervisor: "n", reason: "r" } }) === "Pending");
 * ```
 */
export function stateOf(e: Eviction): string {
  return evictingOf(e)?.reason ?? REASON_PENDING;
}

/**
 * The state for people: the Evicting reason, and when the drain stopped
 * for a person (Failed, WaitingForPerson) the condition's message too,
 * which says what waits for whom and names the VMs.
 *
 * @example
 * ```ts
 * import { stateText } from "./eviction_state.ts";
 * console.log(stateText({ spec: { hypervisor: "n1", reason: "r" }, status: { conditions: [{
 *   type: "Evicting", status: "False", reason: "WaitingForPerson", lastTransitionTime: "2026-01-01T00:00:00Z",
 *   message: "waiting for a person: 1 VMs left on the host, none failed: vm-a (SUSPENDED needs a person)" }] } }));
 * // WaitingForPerson: waiting for a person: 1 VMs left on the host, none failed: vm-a (SUSPENDED needs a person)
 * ```
 */
export function stateText(e: Eviction): string {
  const c = evictingOf(e);
  if (c === undefined) return REASON_PENDING;
  return stoppedForPerson(c.reason) && c.message !== ""
    ? `${c.reason}: ${c.message}`
    : c.reason;
}

/**
 * The Evicting condition's message, or "" before the first pass.
 *
 * @example
 * ```ts
 * import { messageOf } from "./eviction_state.ts";
 * console.assert(messageOf({ spec: { hypervisor: "n", reason: "r" } }) === "");
 * ```
 */
export function messageOf(e: Eviction): string {
  return evictingOf(e)?.message ?? "";
}

function evictingOf(e: Eviction) {
  return e.status?.conditions?.find((c) => c.type === CONDITION_EVICTING);
}

/** How a drain ended, for `--wait`. */
export type DrainOutcome =
  | typeof REASON_SUCCEEDED
  | typeof REASON_FAILED
  | typeof REASON_NOT_IN_NOVA;

/**
 * How a drain stands for `--wait`: `Succeeded` only when the Evicting
 * condition says so for the current generation with nothing outstanding or
 * in flight and `finishedAt` set (the controller sets these together, once
 * looks a settle interval apart found the host empty); `NotInNova` when it
 * ended with nothing drained because Nova has no compute service of that
 * name (a typo, or a host that never registered: never a drained host);
 * `Failed` when it stopped otherwise; undefined while it runs (or settles).
 *
 * @example
 * ```ts
 * import { drainOutcome } from "./eviction_state.ts";
 * console.log(drainOutcome({ spec: { hypervisor: "n", reason: "r" } })); // undefined
 * ```
 */
export function drainOutcome(e: Eviction): DrainOutcome | undefined {
  const c = evictingOf(e);
  if (c?.status !== "False") return undefined;
  if (c.reason === REASON_NOT_IN_NOVA) return REASON_NOT_IN_NOVA;
  if (c.reason !== REASON_SUCCEEDED) return REASON_FAILED;
  const s = e.status ?? {};
  const current = e.metadata?.generation !== undefined &&
    s.observedGeneration === e.metadata.generation;
  return current && s.outstandingCount === 0 && s.inFlightCount === 0 &&
      s.finishedAt !== undefined
    ? REASON_SUCCEEDED
    : undefined;
}

/**
 * How long the controller's looks have found the host empty, as of
 * `nowMs`: from status.emptySince (else finishedAt), in whole seconds.
 *
 * @example
 * ```ts
 * import { seenEmptySeconds } from "./eviction_state.ts";
 * const s = { emptySince: "2026-01-01T00:00:00Z" };
 * console.assert(seenEmptySeconds(s, Date.parse("2026-01-01T00:00:07.5Z")) === 7);
 * ```
 */
export function seenEmptySeconds(
  status: { emptySince?: string | undefined; finishedAt?: string | undefined },
  nowMs: number,
): number | undefined {
  const since = Date.parse(status.emptySince ?? status.finishedAt ?? "");
  if (Number.isNaN(since)) return undefined;
  return Math.max(0, Math.floor((nowMs - since) / 1000));
}
