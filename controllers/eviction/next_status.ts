/**
 * The next status of an Eviction, assembled from the parts a pass computed.
 *
 * @module
 */

import type {
  EvictionStatus,
  EvictionStatusAbortedItem,
  EvictionStatusActionsItem,
  EvictionStatusFailedItem,
  EvictionStatusInFlightItem,
  EvictionStatusSkippedItem,
} from "../../models/mod.ts";
import type { CopyProgress } from "../../openstack/informer/progress_types.ts";
import {
  CONDITION_NOT_CONVERGING,
  drainConditions,
  type DrainSummary,
  notConvergingCondition,
  setCondition,
} from "./conditions.ts";
import type {
  AbortAction,
  ForceCompleteAction,
  LimitSource,
  NotConvergingReport,
  RequestOutcome,
} from "./plan_types.ts";

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

/**
 * The latest status.actions kept, as many as spec.actions may hold: an
 * outcome dropped while its request is listed would make it pending again.
 */
export const MAX_ACTIONS = 128;

/** A person's request Nova refused (ActionNote.refused), to report on status.actions. */
export interface Refusal {
  server: string;
  action: "ForceComplete" | "Abort";
  /** When it was sent (the status.actions entry's `at`). */
  sentAtMs: number;
  /** Nova's message. */
  message: string;
}

/** What a pass adds to the status for copies that do (not) converge. */
export interface ConvergenceParts {
  /** The informer's reads of the live copies, by server id. */
  progress: ReadonlyMap<string, CopyProgress> | undefined;
  notConverging: readonly NotConvergingReport[];
  forceComplete: readonly ForceCompleteAction[];
  abort: readonly AbortAction[];
  requestOutcomes: readonly RequestOutcome[];
  refusals: readonly Refusal[];
  now: Date;
  generation: number | undefined;
}

/**
 * `next` with each live copy's progress (the latest read; the previous
 * one kept between reads), its not-converging mark and deadline, when its
 * force_complete was sent (kept once set: it is never sent again),
 * status.aborted counting this pass's aborts, status.actions with this
 * pass's request outcomes (Nova's refusals of earlier ones marked, the
 * latest {@linkcode MAX_ACTIONS} kept) and the NotConverging condition.
 *
 * @example
 * ```ts
 * import { withConvergence } from "./next_status.ts";
 * const e = { id: "vm", kind: "live" as const, startedAt: "2026-01-01T00:00:00Z", migrationId: "7" };
 * const next = withConvergence({}, { inFlight: [e] }, {
 *   progress: new Map(), notConverging: [], abort: [], requestOutcomes: [], refusals: [],
 *   forceComplete: [{ id: "vm", migrationId: "7", reason: "timeout" }],
 *   now: new Date("2026-01-01T01:00:00Z"), generation: 1,
 * });
 * console.assert(next.inFlight?.[0]?.forceCompleteSentAt === "2026-01-01T01:00:00.000Z");
 * ```
 */
export function withConvergence(
  prev: EvictionStatus,
  next: EvictionStatus,
  parts: ConvergenceParts,
): EvictionStatus {
  const nowIso = parts.now.toISOString();
  const before = new Map((prev.inFlight ?? []).map((e) => [e.id, e]));
  const reports = new Map(parts.notConverging.map((r) => [r.id, r]));
  const forced = new Set(
    parts.forceComplete.map((f) => `${f.id}/${f.migrationId}`),
  );
  // what the planner set of these fields wins; the rest is filled in
  const inFlight = (next.inFlight ?? []).map((e) => {
    const old = before.get(e.id);
    const same = old !== undefined && old.migrationId === e.migrationId;
    const p = parts.progress?.get(e.id);
    const read = p !== undefined && p.migrationId === e.migrationId
      ? progressFields(p)
      : same
      ? progressFields(old)
      : {};
    const report = reports.get(e.id);
    const sentAt = (same ? old.forceCompleteSentAt : undefined) ??
      (forced.has(`${e.id}/${e.migrationId}`) ? nowIso : undefined);
    return {
      ...read,
      ...(report === undefined ? {} : { notConverging: true }),
      ...(report?.actAt === undefined ? {} : { deadlineAt: report.actAt }),
      ...(sentAt === undefined ? {} : { forceCompleteSentAt: sentAt }),
      ...e,
    };
  });
  const aborted = abortedAfter(next.aborted ?? [], parts.abort, nowIso, [
    ...(prev.inFlight ?? []),
    ...inFlight,
  ]);
  const actions = actionsAfter(next.actions ?? [], parts, nowIso);
  const status: EvictionStatus = {
    ...next,
    inFlight,
    ...(aborted.length === 0 ? {} : { aborted }),
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

/** The progress fields of a read (or of the status entry that kept one). */
function progressFields(
  p: CopyProgress | EvictionStatusInFlightItem,
): Partial<EvictionStatusInFlightItem> {
  const whole = (n: number | undefined) =>
    n === undefined || !Number.isFinite(n)
      ? undefined
      : Math.max(0, Math.round(n));
  const fields = "totalBytes" in p
    ? {
      memoryTotalBytes: whole(p.totalBytes),
      memoryRemainingBytes: whole(p.remainingBytes),
      bytesPerSecond: whole(p.bytesPerSecond),
      etaSeconds: whole(p.etaSeconds),
    }
    : {
      memoryTotalBytes: p.memoryTotalBytes,
      memoryRemainingBytes: p.memoryRemainingBytes,
      bytesPerSecond: p.bytesPerSecond,
      etaSeconds: p.etaSeconds,
    };
  return Object.fromEntries(
    Object.entries(fields).filter(([, v]) => v !== undefined),
  );
}

/**
 * status.aborted with this pass's aborts for not converging (or asked for)
 * counted: one try per copy, however often its abort is sent, so a count
 * the planner made already stands.
 */
function abortedAfter(
  kept: readonly EvictionStatusAbortedItem[],
  aborts: readonly AbortAction[],
  nowIso: string,
  inFlight: readonly EvictionStatusInFlightItem[],
): EvictionStatusAbortedItem[] {
  const entries = new Map(kept.map((a) => [a.id, a]));
  for (const a of aborts) {
    if (a.reason === "stuck") continue;
    const prior = entries.get(a.id);
    const copyStart = Date.parse(
      inFlight.find((e) => e.id === a.id)?.startedAt ?? "",
    );
    if (
      prior !== undefined && Date.parse(prior.lastAbortedAt) >= copyStart
    ) continue;
    entries.set(a.id, {
      id: a.id,
      tries: (prior?.tries ?? 0) + 1,
      lastAbortedAt: nowIso,
      reason: a.reason === "requested"
        ? `aborted as ${a.requestedBy ?? "a person"} asked`
        : "did not converge within its policy's bound",
    });
  }
  return [...entries.values()].sort(byId);
}

/** status.actions with this pass's outcomes and refusals, the latest kept. */
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
