/**
 * The next status of an Eviction, assembled from the parts a pass computed.
 *
 * @module
 */

import type {
  EvictionStatus,
  EvictionStatusFailedItem,
  EvictionStatusInFlightItem,
  EvictionStatusSkippedItem,
} from "../../models/mod.ts";
import { drainConditions, type DrainSummary } from "./conditions.ts";
import type { LimitSource } from "./plan_types.ts";

/**
 * Orders entries by id, the canonical order of every status list (so that
 * equal content compares equal).
 *
 * @example
 * ```ts
 * import { byId } from "./next_status.ts";
 * console.assert([{ id: "b" }, { id: "a" }].sort(byId)[0]?.id === "a");
 * ```
 */
export function byId<T extends { id: string }>(a: T, b: T): number {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** The parts of a status that a pass computes. */
export interface StatusParts {
  inFlight: readonly EvictionStatusInFlightItem[];
  failed: readonly EvictionStatusFailedItem[];
  skipped: readonly EvictionStatusSkippedItem[];
  /** Ids of the VMs still on the host (any order). */
  outstanding: readonly string[];
  outstandingRamMb: number;
  /** VMs migrated this pass. */
  migratedDelta: number;
  limit: number;
  limitSource: LimitSource;
  generation: number | undefined;
  now: Date;
  /** For the Evicting condition. */
  summary: DrainSummary;
  /** Starts of ours without an answer: the host is not seen empty meanwhile. */
  unanswered?: number;
  /** How long consecutive looks must find the host empty before done (default 0). */
  settleMs?: number;
}

/**
 * A complete status from the previous one and this pass's parts.
 * emptySince is the first of the consecutive looks that found the host
 * empty; finishedAt is set once a look finds it so `settleMs` later, and
 * kept while it stays empty. Fields the planner does not own are kept.
 *
 * @example
 * ```ts
 * import { assembleStatus } from "./next_status.ts";
 * const next = assembleStatus({}, {
 *   inFlight: [], failed: [], skipped: [], outstanding: [], outstandingRamMb: 0,
 *   migratedDelta: 2, limit: 1, limitSource: "flags", generation: 1,
 *   now: new Date("2026-01-01T00:00:00Z"),
 *   summary: { ready: 0, busy: 0, backoff: 0, needsPerson: 0, held: undefined },
 * });
 * console.assert(next.finishedAt === "2026-01-01T00:00:00.000Z");
 * ```
 */
export function assembleStatus(
  prev: EvictionStatus,
  parts: StatusParts,
): EvictionStatus {
  const nowIso = parts.now.toISOString();
  const inFlight = [...parts.inFlight].sort(byId);
  const outstandingInstances = [...parts.outstanding].sort();
  const empty = outstandingInstances.length === 0 && inFlight.length === 0 &&
    (parts.unanswered ?? 0) === 0;
  const emptySince = empty ? settledSince(prev.emptySince, nowIso) : undefined;
  const finished = emptySince !== undefined &&
    (prev.finishedAt !== undefined ||
      parts.now.getTime() - Date.parse(emptySince) >= (parts.settleMs ?? 0));
  const observedGeneration = parts.generation ?? prev.observedGeneration;
  const {
    finishedAt: _finishedAt,
    emptySince: _emptySince,
    observedGeneration: _generation,
    ...kept
  } = prev;
  const base: EvictionStatus = {
    ...kept,
    outstandingRamMb: parts.outstandingRamMb,
    outstandingInstances,
    inFlight,
    failed: [...parts.failed].sort(byId),
    skipped: [...parts.skipped].sort(byId),
    migratedCount: (prev.migratedCount ?? 0) + parts.migratedDelta,
    outstandingCount: outstandingInstances.length,
    inFlightCount: inFlight.length,
    effectiveLimit: parts.limit,
    limitSource: parts.limitSource,
    startedAt: prev.startedAt ?? nowIso,
    ...(emptySince === undefined ? {} : { emptySince }),
    ...(finished ? { finishedAt: prev.finishedAt ?? nowIso } : {}),
    ...(observedGeneration === undefined ? {} : { observedGeneration }),
  };
  return {
    ...base,
    conditions: drainConditions(
      base,
      parts.summary,
      parts.now,
      observedGeneration,
    ),
  };
}

/** The kept emptySince, or now when there is none (or it does not parse). */
function settledSince(prev: string | undefined, nowIso: string): string {
  return prev !== undefined && !Number.isNaN(Date.parse(prev)) ? prev : nowIso;
}
