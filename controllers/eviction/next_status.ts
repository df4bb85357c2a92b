/**
 * The next status of an Eviction, assembled from the parts a pass computed.
 * @module
 */

import type {
  EvictionStatus,
  EvictionStatusActionsItem,
  EvictionStatusFailedItem,
  EvictionStatusInFlightItem,
  EvictionStatusSkippedItem,
} from "../../models/mod.ts";
import {
  CONDITION_NOT_CONVERGING,
  drainConditions,
  type DrainSummary,
  notConvergingCondition,
  setCondition,
} from "./conditions.ts";
import type {
  LimitSource,
  NotConvergingReport,
  RequestOutcome,
} from "./plan_types.ts";

/**
 * Orders by id, the order of every status list (so equal content compares equal).
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
  /** Ids of the VMs still on the host. */
  outstanding: readonly string[];
  outstandingRamMb: number;
  /** VMs migrated this pass. */
  migratedDelta: number;
  limit: number;
  limitSource: LimitSource;
  generation: number | undefined;
  now: Date;
  summary: DrainSummary;
  /** Starts of ours without an answer: the host is not seen empty meanwhile. */
  unanswered?: number;
  /** How long consecutive looks must find the host empty (default 0). */
  settleMs?: number;
}

/**
 * The next status: emptySince the first look that found the host empty, finishedAt `settleMs` on.
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

function settledSince(prev: string | undefined, nowIso: string): string {
  return prev !== undefined && !Number.isNaN(Date.parse(prev)) ? prev : nowIso;
}

/** As many as spec.actions may hold: an outcome dropped while its request is listed makes it pending again. */
export const MAX_ACTIONS = 128;

/** A person's request Nova refused (ActionNote.refused), to report on status.actions. */
export interface Refusal {
  server: string;
  action: "ForceComplete" | "Abort";
  /** The status.actions entry's `at`. */
  sentAtMs: number;
  message: string;
}

/** What a pass adds to the status for copies that do (not) converge. */
export interface ConvergenceParts {
  notConverging: readonly NotConvergingReport[];
  requestOutcomes: readonly RequestOutcome[];
  refusals: readonly Refusal[];
  now: Date;
  generation: number | undefined;
}

/**
 * `next` with the pass's request outcomes and refusals on status.actions, and NotConverging.
 *
 * @example
 * ```ts
 * import { withConvergence } from "./next_status.ts";
 * const next = withConvergence({}, {
 *   notConverging: [], refusals: [],
 *   requestOutcomes: [{ server: "vm", action: "Abort", requestedBy: "alice",
 *     requestedAt: "2026-01-01T00:59:00Z", outcome: "NotInFlight", message: "not in flight" }],
 *   now: new Date("2026-01-01T01:00:00Z"), generation: 1,
 * });
 * console.assert(next.actions?.[0]?.outcome === "NotInFlight");
 * ```
 */
export function withConvergence(
  next: EvictionStatus,
  parts: ConvergenceParts,
): EvictionStatus {
  const nowIso = parts.now.toISOString();
  const actions = actionsAfter(next.actions ?? [], parts, nowIso);
  const status: EvictionStatus = {
    ...next,
    ...(actions.length === 0 ? {} : { actions }),
  };
  const exists = (next.conditions ?? []).some((c) =>
    c.type === CONDITION_NOT_CONVERGING
  );
  if (parts.notConverging.length === 0 && !exists) return status;
  return {
    ...status,
    conditions: setCondition(
      status.conditions ?? [],
      notConvergingCondition(parts.notConverging),
      parts.now,
      parts.generation,
    ),
  };
}

function actionsAfter(
  kept: readonly EvictionStatusActionsItem[],
  parts: ConvergenceParts,
  nowIso: string,
): EvictionStatusActionsItem[] {
  const refused = kept.map((a) => {
    const r = a.outcome === "Sent"
      ? parts.refusals.find((x) =>
        x.server === a.server && x.action === a.action &&
        x.sentAtMs === Date.parse(a.at)
      )
      : undefined;
    return r === undefined
      ? a
      : { ...a, outcome: "Refused" as const, message: r.message };
  });
  const added = parts.requestOutcomes.map((o) => ({ ...o, at: nowIso }));
  return [...refused, ...added].slice(-MAX_ACTIONS);
}
