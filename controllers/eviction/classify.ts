/**
 * What one VM still on the host is, this pass.
 * @module
 */

import { parseNovaTime } from "../../openstack/nova_time.ts";
import type {
  EvictionStatusFailedItem,
  EvictionStatusInFlightItem,
  EvictionStatusSkippedItem,
} from "../../models/mod.ts";
import {
  conflictKind,
  inFlightKindOfServer,
  isBeingDeleted,
  isOurKind,
  kindOfMigrationType,
  type MigrationKind,
  migrationPhase,
  needsPerson,
  startKindOfStatus,
} from "../../openstack/informer/nova_states.ts";
import { type PlanOptions, retryDelayMs } from "./plan_options.ts";
import { type StartNote, startReleasableFromMs } from "./once.ts";
import type {
  ObservedMigration,
  ObservedServer,
} from "../../openstack/informer/snapshot.ts";
import { recordName } from "../../openstack/informer/nova_records.ts";
import type { FailureReport } from "./plan_types.ts";
import { stalledReason } from "./stalled.ts";

/** What a VM on the host is this pass. */
export type VmClass =
  /** Nova says a migration runs, or our start is in its grace period. */
  | { class: "in_flight"; entry: EvictionStatusInFlightItem }
  | { class: "ready"; kind: MigrationKind }
  | { class: "backoff"; retryAtMs: number }
  /** Out of attempts; reported, never retried. */
  | { class: "exhausted" }
  /** Status ERROR; reported, never blocks the others. */
  | { class: "error"; reason: string }
  /** Being deleted, or needs a person. */
  | { class: "skipped"; reason: string }
  /** Transient state (BUILD, rebooting, a task running): look again next pass. */
  | { class: "busy"; reason: string };

/** The verdict on one VM. */
export interface VmVerdict {
  vm: VmClass;
  /** Its `status.failed` entry from now on. */
  failed: EvictionStatusFailedItem | undefined;
  /** Set when a failure was seen this pass. */
  failure: FailureReport | undefined;
}

/** What {@linkcode classifyServer} looks at for one VM. */
export interface ClassifyInput {
  server: ObservedServer;
  /** Its most recent migration record leaving this host. */
  latest: ObservedMigration | undefined;
  /** Its most recent record still in progress (an old stuck one counts too). */
  inProgress: ObservedMigration | undefined;
  /** Its migration towards this host still in progress. */
  arriving?: ObservedMigration | undefined;
  /** The previous pass's status entries. */
  inFlight: EvictionStatusInFlightItem | undefined;
  failed: EvictionStatusFailedItem | undefined;
  skipped?: EvictionStatusSkippedItem | undefined;
  /** What this process knows of the answer to its last start. */
  note?: StartNote | undefined;
  /** When the look this pass rests on began (default `nowMs`; once.ts). */
  lookedAtMs?: number | undefined;
  nowMs: number;
  options: PlanOptions;
}

/** The start of a `status.skipped` reason for a VM Nova cannot move live. */
export const UNSUPPORTED_PREFIX = "cannot be live-migrated: ";

/**
 * Whether the record is the start in `entry`'s: its migration id, or created no earlier less the skew.
 *
 * @example
 * ```ts
 * import { recordMatchesEntry } from "./classify.ts";
 * const entry = { id: "a", kind: "live" as const, startedAt: "2026-01-01T00:01:00Z" };
 * const record = {
 *   id: 7, instanceUuid: "a", migrationType: "live-migration", status: "error",
 *   sourceCompute: "h", createdAt: "2026-01-01T00:01:02.000000",
 * };
 * console.assert(recordMatchesEntry(record, entry, 0));
 * ```
 */
export function recordMatchesEntry(
  record: ObservedMigration,
  entry: EvictionStatusInFlightItem,
  clockSkewMs: number,
  novaOffsetMs = 0,
): boolean {
  if (
    entry.migrationId !== undefined && entry.migrationId === String(record.id)
  ) {
    return true;
  }
  const created = parseNovaTime(record.createdAt);
  const started = parseNovaTime(entry.startedAt);
  if (created === undefined || started === undefined) return false;
  return created - novaOffsetMs >= started - clockSkewMs;
}

/**
 * The `status.inFlight` entry: the previous one's startedAt and kind, the record's id and progress.
 *
 * @example
 * ```ts
 * import { inFlightEntry } from "./classify.ts";
 * const entry = inFlightEntry("a", undefined, "live", undefined, Date.parse("2026-01-01T00:00:00Z"));
 * console.assert(entry.startedAt === "2026-01-01T00:00:00.000Z");
 * ```
 */
export function inFlightEntry(
  id: string,
  previous: EvictionStatusInFlightItem | undefined,
  kind: MigrationKind,
  record: ObservedMigration | undefined,
  nowMs: number,
  novaOffsetMs = 0,
): EvictionStatusInFlightItem {
  const created = record === undefined
    ? undefined
    : parseNovaTime(record.createdAt);
  const startedAt = previous?.startedAt ??
    new Date(
      created === undefined ? nowMs : Math.min(created - novaOffsetMs, nowMs),
    ).toISOString();
  const migrationId = record?.id === undefined
    ? previous?.migrationId
    : String(record.id);
  const percent = progressPercent(record) ?? previous?.memoryProcessedPercent;
  return {
    id,
    kind: previous?.kind ?? kind,
    startedAt,
    ...(migrationId === undefined ? {} : { migrationId }),
    ...(percent === undefined ? {} : { memoryProcessedPercent: percent }),
  };
}

function progressPercent(
  record: ObservedMigration | undefined,
): number | undefined {
  const done = record?.memoryProcessedBytes;
  const total = record?.memoryTotalBytes;
  if (typeof done !== "number" || typeof total !== "number" || total <= 0) {
    return undefined;
  }
  return Math.max(0, Math.min(100, Math.floor((done * 100) / total)));
}

/**
 * Whether a failed VM is out of retries: `maxAttempts` used and, if transient, the retry window over.
 *
 * @example
 * ```ts
 * import { isExhausted } from "./classify.ts";
 * import { DEFAULT_PLAN_OPTIONS } from "./plan_options.ts";
 * const f = { id: "a", reason: "r", attempts: 5, lastAttemptAt: "2026-01-01T00:00:00Z",
 *   transient: true, firstFailedAt: "2026-01-01T00:00:00Z" };
 * console.assert(!isExhausted(f, Date.parse("2026-01-01T00:30:00Z"), DEFAULT_PLAN_OPTIONS));
 * console.assert(isExhausted(f, Date.parse("2026-01-01T01:00:00Z"), DEFAULT_PLAN_OPTIONS));
 * ```
 */
export function isExhausted(
  failed: EvictionStatusFailedItem,
  nowMs: number,
  options: PlanOptions,
): boolean {
  if (failed.attempts < options.maxAttempts) return false;
  if (failed.transient !== true) return true;
  const first = parseNovaTime(failed.firstFailedAt) ??
    parseNovaTime(failed.lastAttemptAt) ?? nowMs;
  return nowMs >= first + options.retryWindowMs;
}

/**
 * Classifies one VM on the host. The order of the checks is the policy:
 * deletion, arrival, a stalled task, a running migration (never start
 * twice), the fate of our last start, then the VM's own state.
 *
 * @example
 * ```ts
 * import { classifyServer } from "./classify.ts";
 * import { DEFAULT_PLAN_OPTIONS } from "./plan_options.ts";
 * const verdict = classifyServer({
 *   server: { id: "a", status: "ACTIVE", host: "h", taskState: null, flavor: { ramMb: 1024 } },
 *   latest: undefined, inProgress: undefined, inFlight: undefined, failed: undefined,
 *   nowMs: 0, options: DEFAULT_PLAN_OPTIONS,
 * });
 * console.assert(verdict.vm.class === "ready");
 * ```
 */
export function classifyServer(input: ClassifyInput): VmVerdict {
  const facts = factsOf(input);
  const keep = (vm: VmClass): VmVerdict => ({
    vm,
    failed: input.failed,
    failure: undefined,
  });
  const early = waitingClass(facts, input) ?? stalledClass(input) ??
    runningClass(facts, input) ?? attemptClass(facts, input);
  if (early !== undefined) return keep(early);
  const attempt = attemptOutcome(facts, input);
  if (facts.status === "ERROR") return errorVerdict(facts, input, attempt);
  return stateVerdict(facts, input, attempt);
}

interface VmFacts {
  id: string;
  status: string;
  taskState: string | null;
  /** A start of ours (not adopted). */
  ours: boolean;
  /** Of the latest record from the host. */
  phase: ReturnType<typeof migrationPhase> | undefined;
  /** The latest record is the one our entry started (and not charged yet). */
  matched: boolean;
  /** The record in progress, when it is our entry's. */
  ownInProgress: ObservedMigration | undefined;
  /** Nova refused our start (409 or another 4xx). */
  refused: boolean;
}

function factsOf(input: ClassifyInput): VmFacts {
  const { server, latest, inProgress, inFlight, failed, note, options } = input;
  // a record older than the last charged attempt is that one's (the skew must not charge it twice)
  const chargedAt = parseNovaTime(failed?.lastAttemptAt);
  const offset = options.novaClockOffsetMs ?? 0;
  const matched = inFlight !== undefined && latest !== undefined &&
    recordMatchesEntry(latest, inFlight, options.clockSkewMs, offset) &&
    (chargedAt === undefined ||
      (parseNovaTime(latest.createdAt) ?? -Infinity) - offset > chargedAt);
  // A record older than our start must not lend the entry its id and progress.
  const ownInProgress = inProgress !== undefined &&
      (inFlight === undefined ||
        recordMatchesEntry(inProgress, inFlight, options.clockSkewMs, offset))
    ? inProgress
    : undefined;
  return {
    id: server.id,
    status: server.status.toUpperCase(),
    taskState: server.taskState ?? null,
    ours: inFlight !== undefined && inFlight.adopted !== true,
    phase: latest === undefined ? undefined : migrationPhase(latest.status),
    matched,
    ownInProgress,
    refused: note?.state === "conflict" || note?.state === "refused",
  };
}

/** Deletion first (nothing to move), an arrival next (wait for it to land). */
function waitingClass(f: VmFacts, input: ClassifyInput): VmClass | undefined {
  if (isBeingDeleted(f.status, f.taskState)) {
    return {
      class: "skipped",
      reason: `being deleted (status ${f.status}, task_state ${
        f.taskState ?? "none"
      })`,
    };
  }
  const arriving = input.arriving;
  if (arriving === undefined) return undefined;
  return {
    class: "busy",
    reason: `arriving (${recordName(arriving)} from ${
      arriving.sourceCompute ?? "unknown"
    } is ${arriving.status})`,
  };
}

/** A migration task that outlived its record (stalled.ts): skipped, slot freed. */
function stalledClass(input: ClassifyInput): VmClass | undefined {
  const { server, latest, inProgress, inFlight, nowMs, options } = input;
  const reason = stalledReason(
    server,
    latest,
    inProgress,
    nowMs,
    options,
    inFlight,
  );
  return reason === undefined ? undefined : { class: "skipped", reason };
}

/** Anything that says a migration runs: in flight (never start twice). */
function runningClass(f: VmFacts, input: ClassifyInput): VmClass | undefined {
  const { inProgress, inFlight, nowMs } = input;
  const runningKind = inFlightKindOfServer(f.status, f.taskState) ??
    (inProgress === undefined
      ? undefined
      : kindOfMigrationType(inProgress.migrationType));
  if (runningKind === undefined) return undefined;
  const entry = inFlightEntry(
    f.id,
    inFlight,
    runningKind,
    f.ownInProgress,
    nowMs,
    input.options.novaClockOffsetMs,
  );
  // not ours: no start of ours, refused, or not the kind we started (a user's resize)
  const adopted = !f.ours || f.refused ||
    (f.ownInProgress !== undefined &&
      !isOurKind(f.ownInProgress.migrationType, inFlight?.kind));
  return {
    class: "in_flight",
    entry: adopted ? { ...entry, adopted: true } : entry,
  };
}

/** Our last start's class: in flight until a later look shows it unprocessed (once.ts); skipped if not live-movable. */
function attemptClass(f: VmFacts, input: ClassifyInput): VmClass | undefined {
  const { inFlight, note, nowMs, options } = input;
  if (!f.ours || inFlight === undefined) return undefined;
  const state = note?.state ?? "accepted";
  if (state === "pending") return { class: "in_flight", entry: inFlight };
  if (state === "refused" && /not supported/i.test(note?.message ?? "")) {
    // Nova cannot move it live (vTPM, SEV): a person decides.
    return {
      class: "skipped",
      reason: UNSUPPORTED_PREFIX + (note?.message ?? ""),
    };
  }
  if (state === "conflict") {
    const message = note?.message ?? "409 Conflict";
    if (conflictKind(message) === "unsupported") {
      return { class: "skipped", reason: UNSUPPORTED_PREFIX + message };
    }
    return undefined;
  }
  if (state !== "accepted" && state !== "unknown") return undefined;
  const { latest, server } = input;
  if (f.matched && f.phase === "failed" && latest !== undefined) {
    return undefined;
  }
  if (server.status.toUpperCase() === "ERROR") return undefined;
  // Only a look begun after its answer may show Nova never processed it.
  const startedMs = parseNovaTime(inFlight.startedAt) ?? nowMs;
  const releasable = startReleasableFromMs(
    startedMs,
    note,
    options.gracePeriodMs,
  );
  if (releasable === undefined || (input.lookedAtMs ?? nowMs) < releasable) {
    return { class: "in_flight", entry: inFlight };
  }
  return undefined;
}

interface AttemptOutcome {
  /** Why it failed (undefined: no attempt ended, nothing is charged). */
  reason: string | undefined;
  /** Whether its cause may go away by itself. */
  transient: boolean;
}

/** An attempt of ours that ended: a refusal or a failed migration (no answer, a 5xx or a 409 is not one). */
function attemptOutcome(f: VmFacts, input: ClassifyInput): AttemptOutcome {
  const { inFlight, note, latest, server } = input;
  const none = { reason: undefined, transient: false };
  if (!f.ours || inFlight === undefined) return none;
  const state = note?.state ?? "accepted";
  if (state === "refused") {
    return {
      reason: `starting the ${inFlight.kind} migration was refused: ${
        note?.message ?? "no reason given"
      }`,
      transient: note?.transient === true,
    };
  }
  if (state !== "accepted") return none;
  if (f.matched && f.phase === "failed" && latest !== undefined) {
    return { reason: recordFailure(latest), transient: true };
  }
  if (f.status === "ERROR") {
    return { reason: faultOf(server), transient: false };
  }
  // past the grace period (attemptClass kept it in flight within it)
  if (f.matched && f.phase === "done" && latest !== undefined) {
    return {
      reason: `${recordName(latest)} is ${latest.status} ` +
        `but the VM is still on the host`,
      transient: true,
    };
  }
  return none; // nothing of it after the grace period: never processed
}

/** A VM in ERROR: failed with its fault, reported once per change. */
function errorVerdict(
  f: VmFacts,
  input: ClassifyInput,
  attempt: AttemptOutcome,
): VmVerdict {
  const { failed, server, nowMs } = input;
  const nowIso = new Date(nowMs).toISOString();
  const attempts = (failed?.attempts ?? 0) +
    (attempt.reason === undefined ? 0 : 1);
  const reason = faultOf(server);
  const next: EvictionStatusFailedItem = {
    id: f.id,
    reason,
    attempts,
    lastAttemptAt: attempt.reason === undefined
      ? failed?.lastAttemptAt ?? nowIso
      : nowIso,
    firstFailedAt: failed?.firstFailedAt ?? failed?.lastAttemptAt ?? nowIso,
  };
  const report = attempt.reason !== undefined || failed?.reason !== reason;
  return {
    vm: { class: "error", reason },
    failed: next,
    failure: report
      ? { id: f.id, reason, attempts, exhausted: true, transient: false }
      : undefined,
  };
}

/** The VM's own state, with the attempt that ended (if any) recorded. */
function stateVerdict(
  f: VmFacts,
  input: ClassifyInput,
  attempt: AttemptOutcome,
): VmVerdict {
  const { failed, nowMs, options } = input;
  const { id, status, taskState } = f;
  let nextFailed = failed;
  let failure: FailureReport | undefined;
  if (attempt.reason !== undefined) {
    const nowIso = new Date(nowMs).toISOString();
    const attempts = (failed?.attempts ?? 0) + 1;
    nextFailed = {
      id,
      reason: attempt.reason,
      attempts,
      lastAttemptAt: nowIso,
      ...(attempt.transient ? { transient: attempt.transient } : {}),
      firstFailedAt: failed?.firstFailedAt ?? failed?.lastAttemptAt ?? nowIso,
    };
    failure = {
      id,
      reason: attempt.reason,
      attempts,
      exhausted: isExhausted(nextFailed, nowMs, options),
      transient: attempt.transient,
    };
  }
  const verdict = (vm: VmClass): VmVerdict => ({
    vm,
    failed: nextFailed,
    failure,
  });
  if (needsPerson(status)) {
    return verdict({ class: "skipped", reason: `${status} needs a person` });
  }
  const kind = startKindOfStatus(status);
  if (kind === undefined || taskState !== null) {
    return verdict({
      class: "busy",
      reason: `status ${status}, task_state ${taskState ?? "none"}`,
    });
  }
  const skipped = input.skipped;
  if (
    kind === "live" && skipped?.reason.startsWith(UNSUPPORTED_PREFIX) === true
  ) {
    // Sticky while it could only move live; once SHUTOFF it moves cold.
    return verdict({ class: "skipped", reason: skipped.reason });
  }
  if (nextFailed !== undefined && nextFailed.attempts > 0) {
    if (isExhausted(nextFailed, nowMs, options)) {
      return verdict({ class: "exhausted" });
    }
    const last = parseNovaTime(nextFailed.lastAttemptAt) ?? nowMs;
    const retryAtMs = last +
      retryDelayMs(
        nextFailed.attempts,
        options.retryBaseMs,
        options.retryCapMs,
      );
    if (nowMs < retryAtMs) return verdict({ class: "backoff", retryAtMs });
  }
  return verdict({ class: "ready", kind });
}

function recordFailure(record: ObservedMigration): string {
  return `${recordName(record)} ended ${record.status}`;
}

function faultOf(server: ObservedServer): string {
  const message = server.fault?.message;
  return message === undefined || message === ""
    ? "status ERROR without a fault message"
    : `ERROR: ${message}`;
}
