/**
 * The planner's steps (plan.ts runs them in order), each adding to one {@linkcode PlanAcc}.
 * @module
 */

import { parseNovaTime } from "../../openstack/nova_time.ts";
import type {
  EvictionStatus,
  EvictionStatusFailedItem,
  EvictionStatusInFlightItem,
  EvictionStatusSkippedItem,
} from "../../models/mod.ts";
import { inFlightEntry, type VmClass } from "./classify.ts";
import type { DrainSummary } from "./conditions.ts";
import { byId } from "./next_status.ts";
import {
  inFlightKindOfServer,
  isOurKind,
  kindOfMigrationType,
} from "../../openstack/informer/nova_states.ts";
import { maySendAgain, type StartNote } from "./once.ts";
import type {
  ObservedMigration,
  ObservedServer,
} from "../../openstack/informer/snapshot.ts";
import type {
  AbortedItem,
  FailureReport,
  Plan,
  PlanInput,
  StartAction,
  WaitingVm,
} from "./plan_types.ts";
import type { HostView, Records } from "./plan_types.ts";
export type { HostView, Records };
import { classifyAborted, type ReadyVm, retryAlone } from "./plan_converge.ts";
import { stalledReason } from "./stalled.ts";
import {
  recordName,
  unfinishedElsewhere,
} from "../../openstack/informer/nova_records.ts";

/** Unknown answers in a row after which Nova counts as not taking starts. */
export const UNANSWERED_REPORT_AFTER = 3;

/** The previous status as the steps read it, with the start notes folded in. */
export interface PrevView {
  /** The previous status ({} on the first pass). */
  status: EvictionStatus;
  /** Its in-flight entries, plus the starts this process issued. */
  inFlight: Map<string, EvictionStatusInFlightItem>;
  failed: Map<string, EvictionStatusFailedItem>;
  skipped: Map<string, EvictionStatusSkippedItem>;
  /** Its outstanding ids, plus the starts this process issued. */
  outstanding: Set<string>;
  notes: ReadonlyMap<string, StartNote>;
}

/** What the steps build up. */
export interface PlanAcc {
  inFlight: EvictionStatusInFlightItem[];
  failed: EvictionStatusFailedItem[];
  skipped: EvictionStatusSkippedItem[];
  /** Failures seen this pass (plan.failed). */
  failures: FailureReport[];
  waiting: WaitingVm[];
  /** VMs that may start now, before the limit is applied. */
  ready: ReadyVm[];
  /** The previous `status.aborted[]`. */
  aborted: ReadonlyMap<string, AbortedItem>;
  /** Ids still on (or heading to) the host. */
  outstanding: string[];
  outstandingRamMb: number;
  summary: DrainSummary;
  nextRetryAtMs: number | undefined;
}

/** An empty accumulator. */
export function newAcc(
  holdStarts: string | undefined,
  aborted: ReadonlyMap<string, AbortedItem> = new Map(),
): PlanAcc {
  return {
    inFlight: [],
    failed: [],
    skipped: [],
    failures: [],
    waiting: [],
    ready: [],
    aborted,
    outstanding: [],
    outstandingRamMb: 0,
    summary: {
      ready: 0,
      busy: 0,
      backoff: 0,
      needsPerson: 0,
      held: holdStarts,
    },
    nextRetryAtMs: undefined,
  };
}

/** Fold notes: a start we issued is ours even if its status write failed. */
export function foldNotes(input: PlanInput): PrevView {
  const prev: EvictionStatus = input.status ?? {};
  const inFlight = new Map((prev.inFlight ?? []).map((e) => [e.id, e]));
  const outstanding = new Set(prev.outstandingInstances ?? []);
  const notes = input.starts ?? new Map<string, StartNote>();
  for (const n of notes.values()) {
    if (n.kind === undefined || n.issuedAtMs === undefined) continue;
    const known = inFlight.get(n.id);
    if (
      known !== undefined && known.kind === n.kind &&
      (parseNovaTime(known.startedAt) ?? 0) >= n.issuedAtMs
    ) continue;
    inFlight.set(n.id, {
      id: n.id,
      kind: n.kind,
      startedAt: new Date(n.issuedAtMs).toISOString(),
    });
    outstanding.add(n.id);
  }
  return {
    status: prev,
    inFlight,
    failed: new Map((prev.failed ?? []).map((f) => [f.id, f])),
    skipped: new Map((prev.skipped ?? []).map((f) => [f.id, f])),
    outstanding,
    notes,
  };
}

/** On-host view: the list (duplicates ignored) and the lookups. */
export function onHostView(input: PlanInput): HostView {
  const departedById = new Map<string, ObservedServer | null>();
  for (const d of input.departed) {
    if (!departedById.has(d.id)) departedById.set(d.id, d.server);
  }
  const onHost = new Map<string, ObservedServer>();
  for (const server of input.servers) {
    if (!onHost.has(server.id)) onHost.set(server.id, server);
  }
  for (const [id, server] of departedById) {
    if (server !== null && server.host === input.host && !onHost.has(id)) {
      onHost.set(id, server);
    }
  }
  return { departedById, onHost };
}

/** Classify: every VM on the host, by id, into the accumulator. */
export function classifyOnHost(
  input: PlanInput,
  prev: PrevView,
  view: HostView,
  records: Records,
  acc: PlanAcc,
): void {
  const nowMs = input.now.getTime();
  for (const server of [...view.onHost.values()].sort(byId)) {
    const verdict = classifyAborted({
      server,
      latest: records.latest.get(server.id)?.latest,
      inProgress: records.latest.get(server.id)?.inProgress,
      arriving: records.incoming.get(server.id),
      inFlight: prev.inFlight.get(server.id),
      failed: prev.failed.get(server.id),
      skipped: prev.skipped.get(server.id),
      note: prev.notes.get(server.id),
      lookedAtMs: input.lookedAtMs,
      nowMs,
      options: input.options,
    }, acc.aborted.get(server.id));
    acc.outstanding.push(server.id);
    acc.outstandingRamMb += server.flavor.ramMb;
    if (verdict.failed !== undefined) acc.failed.push(verdict.failed);
    if (verdict.failure !== undefined) acc.failures.push(verdict.failure);
    account(input, acc, server, verdict.vm, verdict.failed);
  }
}

function account(
  input: PlanInput,
  acc: PlanAcc,
  server: ObservedServer,
  vm: VmClass,
  failedEntry: EvictionStatusFailedItem | undefined,
): void {
  const { summary, waiting } = acc;
  switch (vm.class) {
    case "in_flight":
      acc.inFlight.push(vm.entry);
      return;
    case "ready": {
      if (startBackoff(input, acc, server.id)) return;
      const aborted = acc.aborted.get(server.id);
      acc.ready.push({
        id: server.id,
        kind: vm.kind,
        ramMb: server.flavor.ramMb,
        attempt: (failedEntry?.attempts ?? 0) + 1,
        ...(aborted === undefined
          ? {}
          : { abortedAtMs: parseNovaTime(aborted.lastAbortedAt) ?? 0 }),
      });
      return;
    }
    case "backoff":
      summary.backoff++;
      acc.nextRetryAtMs = Math.min(acc.nextRetryAtMs ?? Infinity, vm.retryAtMs);
      waiting.push({
        id: server.id,
        why: "backoff",
        detail: `retry after ${new Date(vm.retryAtMs).toISOString()}`,
      });
      return;
    case "busy":
      summary.busy++;
      waiting.push({ id: server.id, why: "busy", detail: vm.reason });
      return;
    case "skipped":
      summary.needsPerson++;
      acc.skipped.push({ id: server.id, reason: vm.reason });
      return;
    case "error":
    case "exhausted":
      summary.needsPerson++;
      return;
  }
}

/** A ready VM whose starts went unanswered waits, uncharged; true when it does. */
function startBackoff(input: PlanInput, acc: PlanAcc, id: string): boolean {
  const held = input.startBackoff?.get(id);
  if (held === undefined || held.retryAtMs <= input.now.getTime()) {
    return false;
  }
  acc.summary.backoff++;
  if (held.count >= UNANSWERED_REPORT_AFTER) {
    acc.summary.unanswered = (acc.summary.unanswered ?? 0) + 1;
  }
  acc.nextRetryAtMs = Math.min(acc.nextRetryAtMs ?? Infinity, held.retryAtMs);
  acc.waiting.push({
    id,
    why: "backoff",
    detail: `${held.count} starts unanswered; next after ${
      new Date(held.retryAtMs).toISOString()
    }`,
  });
  return true;
}

/** Arrivals: VMs heading here are outstanding until they land; returns them all. */
export function arrivals(
  prev: PrevView,
  view: HostView,
  records: Records,
  acc: PlanAcc,
): string[] {
  const arriving: string[] = [];
  const sorted = [...records.incoming].sort(([a], [b]) => a < b ? -1 : 1);
  for (const [id, record] of sorted) {
    arriving.push(id);
    if (view.onHost.has(id)) continue;
    acc.outstanding.push(id);
    acc.summary.busy++;
    acc.waiting.push({
      id,
      why: "busy",
      detail: `arriving (${recordName(record)} from ${
        record.sourceCompute ?? "unknown"
      } is ${record.status})`,
    });
    const failedEntry = prev.failed.get(id);
    if (failedEntry !== undefined) acc.failed.push(failedEntry);
  }
  return arriving;
}

/** What the departures step found. */
export type Departures = Pick<
  Plan,
  "done" | "movedByOthers" | "gone" | "confirmResize"
>;

/** Departures: VMs tracked, or migrating from here, that are no longer listed. */
export function departures(
  input: PlanInput,
  prev: PrevView,
  view: HostView,
  records: Records,
  acc: PlanAcc,
): Departures {
  const out: Departures = {
    done: [],
    movedByOthers: [],
    gone: [],
    confirmResize: [],
  };
  const unfinished = unfinishedElsewhere(records.latest, view.onHost);
  const tracked = new Set([
    ...prev.outstanding,
    ...prev.inFlight.keys(),
    ...view.departedById.keys(),
    ...unfinished.keys(),
  ]);
  for (const id of [...tracked].sort()) {
    if (view.onHost.has(id) || records.incoming.has(id)) continue;
    if (!view.departedById.has(id)) {
      lookupFailed(input, prev, unfinished.get(id), id, acc);
      continue;
    }
    departed(input, prev, view, records, unfinished.get(id), id, acc, out);
  }
  return out;
}

/** A departed VM whose GET failed: kept as known (its slot held), looked at again. */
function lookupFailed(
  input: PlanInput,
  prev: PrevView,
  record: ObservedMigration | undefined,
  id: string,
  acc: PlanAcc,
): void {
  const entry = prev.inFlight.get(id);
  if (entry !== undefined) {
    acc.inFlight.push(entry);
  } else if (record !== undefined) {
    acc.inFlight.push({
      ...inFlightEntry(
        id,
        undefined,
        kindOfMigrationType(record.migrationType),
        record,
        input.now.getTime(),
      ),
      adopted: true,
    });
  }
  if (!prev.outstanding.has(id)) return;
  const failedEntry = prev.failed.get(id);
  if (failedEntry !== undefined) acc.failed.push(failedEntry);
  acc.outstanding.push(id);
  acc.summary.busy++;
  acc.waiting.push({
    id,
    why: "unknown",
    detail: "its lookup failed this pass",
  });
}

/**
 * Whether our cold migration of `id`, at VERIFY_RESIZE, needs a confirm
 * now: its record still `finished` and no confirm unseen by a later look.
 *
 * @example
 * ```ts
 * import { confirmNeeded } from "./plan_steps.ts";
 * const input = { now: new Date(100), lookedAtMs: 50, confirms: new Map([["a", { sentAtMs: 10, answeredAtMs: 20 }]]) };
 * console.assert(confirmNeeded(input, "a", "finished"));
 * console.assert(!confirmNeeded(input, "a", "confirming"));
 * console.assert(!confirmNeeded({ ...input, lookedAtMs: 15 }, "a", "finished"));
 * ```
 */
export function confirmNeeded(
  input: Pick<PlanInput, "now" | "lookedAtMs" | "confirms">,
  id: string,
  recordStatus: string | undefined,
): boolean {
  if (recordStatus !== undefined && recordStatus.toLowerCase() !== "finished") {
    return false;
  }
  const lookedAtMs = input.lookedAtMs ?? input.now.getTime();
  return maySendAgain(input.confirms?.get(id), lookedAtMs);
}

/** A departed VM that Nova answered for: gone, awaiting confirm, finishing, or done. */
function departed(
  input: PlanInput,
  prev: PrevView,
  view: HostView,
  records: Records,
  record: ObservedMigration | undefined,
  id: string,
  acc: PlanAcc,
  out: Departures,
): void {
  const nowMs = input.now.getTime();
  const entry = prev.inFlight.get(id);
  const tracked = prev.outstanding.has(id) || entry !== undefined;
  const server = view.departedById.get(id) ?? null;
  if (server === null) {
    if (tracked) out.gone.push(id);
    return;
  }
  const status = server.status.toUpperCase();
  if (status === "VERIFY_RESIZE") {
    const latest = records.latest.get(id)?.latest;
    const type = latest?.migrationType;
    if (
      entry !== undefined && entry.adopted !== true &&
      (type === undefined || isOurKind(type, "cold"))
    ) {
      // The source still holds the VM's resources: in flight until confirmed.
      if (confirmNeeded(input, id, latest?.status)) out.confirmResize.push(id);
      acc.inFlight.push(inFlightEntry(id, entry, "cold", record, nowMs));
      return;
    }
    // Someone else's resize: only its owner confirms or reverts it (a revert brings it back).
    acc.outstanding.push(id);
    acc.summary.needsPerson++;
    acc.skipped.push({
      id,
      reason:
        "resized by someone else: awaits its owner's confirm or revert (a revert brings it back)",
    });
    return;
  }
  if (stillFinishing(input, records, server, entry, record, acc)) return;
  const running = records.latest.get(id)?.inProgress;
  if (running !== undefined) {
    // Real Nova shows the server ACTIVE on its destination about 0.3 s
    // before the record completes; until then the migration holds Nova's
    // slot on this host, so it holds ours too (else one start too many).
    const e = inFlightEntry(
      id,
      entry,
      kindOfMigrationType(running.migrationType),
      running,
      nowMs,
    );
    acc.inFlight.push(
      entry === undefined || entry.adopted === true
        ? { ...e, adopted: true }
        : e,
    );
    return;
  }
  // Only VMs we tracked (a stale record of an untracked one would count
  // every pass), and only after a start of ours: others' moves are theirs.
  if (!tracked) return;
  if (entry !== undefined && entry.adopted !== true) out.done.push(id);
  else out.movedByOthers.push(id);
}

/** A departed VM still showing a migration task: in flight, or skipped once the task outlived its record. */
function stillFinishing(
  input: PlanInput,
  records: Records,
  server: ObservedServer,
  entry: EvictionStatusInFlightItem | undefined,
  record: ObservedMigration | undefined,
  acc: PlanAcc,
): boolean {
  const id = server.id;
  const kind = inFlightKindOfServer(server.status, server.taskState);
  if (kind === undefined) return false;
  const nowMs = input.now.getTime();
  const own = records.latest.get(id);
  const stalled = stalledReason(
    server,
    own?.latest,
    own?.inProgress,
    nowMs,
    input.options,
    entry,
  );
  if (stalled !== undefined) {
    acc.outstanding.push(id);
    acc.summary.needsPerson++;
    acc.skipped.push({ id, reason: stalled });
    return true;
  }
  const e = inFlightEntry(id, entry, kind, record, nowMs);
  acc.inFlight.push(
    entry === undefined || entry.adopted === true ? { ...e, adopted: true } : e,
  );
  return true;
}

/** Starts, largest first (LPT shortens the whole drain), as many as the limit, the budget and Nova's live limit leave. */
export function pickStarts(input: PlanInput, acc: PlanAcc): StartAction[] {
  const alone = retryAlone(acc.ready, acc.inFlight, acc.aborted);
  for (const h of alone.held) {
    acc.summary.ready++;
    acc.waiting.push({ id: h.id, why: "ready", detail: h.detail });
  }
  const ready = alone.ready.sort((a, b) =>
    b.ramMb - a.ramMb || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  );
  const slots = input.holdStarts !== undefined ? 0 : Math.max(
    0,
    Math.min(input.limit - acc.inFlight.length, input.clusterBudgetLeft),
  );
  const liveSlots = input.novaLiveLimit === undefined
    ? Number.POSITIVE_INFINITY
    : input.novaLiveLimit + (input.novaQueueAhead ?? 0) -
      acc.inFlight.filter((e) => e.kind === "live").length;
  const picked = splitStarts(ready, slots, liveSlots);
  const start: StartAction[] = picked.start.map((r) => ({
    id: r.id,
    kind: r.kind,
    ramMb: r.ramMb,
    attempt: r.attempt,
  }));
  const nowIso = input.now.toISOString();
  for (const s of start) {
    acc.inFlight.push({ id: s.id, kind: s.kind, startedAt: nowIso });
  }
  for (const r of picked.left) {
    acc.summary.ready++;
    const why = input.holdStarts !== undefined
      ? `starts held: ${input.holdStarts}`
      : start.length < slots && r.kind === "live"
      ? `Nova runs ${input.novaLiveLimit} live migration(s) at a time from this host`
      : "no free slot";
    acc.waiting.push({ id: r.id, why: "ready", detail: why });
  }
  return start;
}

/**
 * At most `slots` starts in order, at most `liveSlots` of them live (Nova limits live ones only).
 *
 * @example
 * ```ts
 * import { splitStarts } from "./plan_steps.ts";
 * const r = (id: string, kind: "live" | "cold") => ({ id, kind });
 * const p = splitStarts([r("a", "live"), r("b", "live"), r("c", "cold")], 2, 1);
 * console.log(p.start.map((x) => x.id).join()); // a,c
 * ```
 */
export function splitStarts<T extends { kind: "live" | "cold" }>(
  ready: readonly T[],
  slots: number,
  liveSlots: number,
): { start: T[]; left: T[] } {
  const start: T[] = [];
  const left: T[] = [];
  let live = Math.max(0, liveSlots);
  for (const r of ready) {
    if (start.length < slots && (r.kind !== "live" || live > 0)) {
      start.push(r);
      if (r.kind === "live") live--;
    } else left.push(r);
  }
  return { start, left };
}

/** Unanswered starts of VMs not otherwise counted: the host is not empty (busy). */
export function pendingStarts(prev: PrevView, acc: PlanAcc): number {
  const counted = new Set([
    ...acc.outstanding,
    ...acc.inFlight.map((e) => e.id),
  ]);
  const n =
    [...prev.notes.values()].filter((note) =>
      note.state === "pending" && !counted.has(note.id)
    ).length;
  acc.summary.busy += n;
  return n;
}
