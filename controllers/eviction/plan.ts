/**
 * The pure planner of a drain: from one pass's observation of Nova, the
 * Eviction's status, the resolved limit, the cluster budget and the current
 * time, it decides what to start, confirm and abort, and computes the next
 * status. No I/O, no clock, no randomness.
 *
 * @module
 */

import type {
  EvictionStatus,
  EvictionStatusFailedItem,
  EvictionStatusInFlightItem,
  EvictionStatusSkippedItem,
} from "../../models/mod.ts";
import {
  arrivingRecords,
  classifyServer,
  type FailureReport,
  inFlightEntry,
  isOurKind,
  latestRecords,
  type VmClass,
  type VmRecords,
} from "./classify.ts";
import type { DrainSummary } from "./conditions.ts";
import { assembleStatus, byId, type LimitSource } from "./next_status.ts";
import {
  inFlightKindOfServer,
  isAbortable,
  kindOfMigrationType,
  type MigrationKind,
  parseNovaTime,
  waitingInNova,
} from "./nova_states.ts";
import {
  type DepartedServer,
  type ObservedMigration,
  type ObservedServer,
  type PlanOptions,
  type StartNote,
  validatePlanOptions,
} from "./observation.ts";

export type { FailureReport } from "./classify.ts";
export type { DrainSummary } from "./conditions.ts";
export type { MigrationKind } from "./nova_states.ts";
export type { LimitSource } from "./next_status.ts";

/** Everything one pass of the planner looks at. */
export interface PlanInput {
  /** The compute service host being drained (`OS-EXT-SRV-ATTR:host`). */
  host: string;
  /** The VMs listed on the host this pass. Duplicates (pagination) are ignored. */
  servers: readonly ObservedServer[];
  /**
   * Migration records of the host since the drain started, with the host
   * as source or as destination (`os-migrations?host=` matches both).
   */
  migrations: readonly ObservedMigration[];
  /** `GET /servers/{id}` answers for the ids of {@linkcode departedIds}. */
  departed: readonly DepartedServer[];
  /** The Eviction's current status (undefined on the first pass). */
  status: EvictionStatus | undefined;
  /** Resolved per-host limit: an integer >= 0. */
  limit: number;
  /** Where the limit came from. */
  limitSource: LimitSource;
  /**
   * How many new migrations may start cluster-wide right now: the cluster
   * maximum minus everything in flight in all Evictions (this one's
   * included); Infinity when unbounded.
   */
  clusterBudgetLeft: number;
  /** The current time. */
  now: Date;
  /** Planner options. */
  options: PlanOptions;
  /** metadata.generation of the Eviction, copied to observedGeneration. */
  generation?: number;
  /**
   * Set to say why no migration may start this pass (e.g. the Hypervisor's
   * TraitsUpdated condition is not True, so the limit may be stale).
   * Everything else (failures, confirmations, aborts, status) still happens.
   */
  holdStarts?: string;
  /**
   * Controller clock when this process first saw each in-flight VM's copy
   * under way (its record past `queued`): the migration timeout runs from
   * there, else (after a restart) from the start in status.
   */
  copyStartedAtMs?: ReadonlyMap<string, number>;
  /**
   * Live migrations Nova runs at once from this host, when the drain has
   * seen it queue (nova_limit.ts): no more live migrations are started
   * than that, so no slot and no cluster budget is spent on Nova's queue.
   */
  novaLiveLimit?: number;
  /** What this process knows of the answers to its starts, by server id. */
  starts?: ReadonlyMap<string, StartNote>;
}

/** A migration to start. */
export interface StartAction {
  /** Server id. */
  id: string;
  /** live: `os-migrateLive` with host null, block_migration auto; cold: `migrate`. */
  kind: MigrationKind;
  /** Flavor RAM, for logs and the order. */
  ramMb: number;
  /** 1 for the first attempt, n for the n-th. */
  attempt: number;
}

/** A stuck live migration to abort (`DELETE /servers/{id}/migrations/{migrationId}`). */
export interface AbortAction {
  /** Server id. */
  id: string;
  /** The migration record id. */
  migrationId: string;
}

/** A migration in flight for longer than migrationTimeoutSeconds. */
export interface StuckReport {
  /** Server id. */
  id: string;
  /** live or cold. */
  kind: MigrationKind;
  /** The record, when Nova showed one. */
  migrationId?: string;
  /** When it started (status.inFlight[].startedAt). */
  startedAt: string;
  /** Seconds since then. */
  elapsedSeconds: number;
}

/** A VM that stays on the host for now, and why. */
export interface WaitingVm {
  /** Server id. */
  id: string;
  /** ready (no slot), busy, backoff, or unknown (its GET failed). */
  why: "ready" | "busy" | "backoff" | "unknown";
  /** Human-readable detail. */
  detail: string;
}

/** What the reconciler does this pass, and the status to write. */
export interface Plan {
  /** Migrations to start, largest flavor RAM first, then by id. */
  start: StartAction[];
  /**
   * Servers in VERIFY_RESIZE on their destination after a cold migration
   * this drain started: confirm the resize. Nobody else's is ever confirmed.
   */
  confirmResize: string[];
  /** Stuck live migrations to abort (only with abortStuckMigrations). */
  abort: AbortAction[];
  /** Migrations in flight past the timeout (aborted or not). */
  stuck: StuckReport[];
  /** VMs that left the host this pass (migrated). */
  done: string[];
  /** VMs deleted this pass (404). */
  gone: string[];
  /** Failures seen this pass: an attempt that failed, or a VM newly in ERROR. */
  failed: FailureReport[];
  /** Every VM left alone now (being deleted, or needing a person). */
  skipped: EvictionStatusSkippedItem[];
  /** VMs on the host that the previous pass did not know (they join the queue). */
  newlyFound: string[];
  /** VMs that stay on the host for now, by id. */
  waiting: WaitingVm[];
  /** Migrations in flight once the starts are made. */
  inFlightCount: number;
  /** The host is empty and nothing is in flight. */
  finished: boolean;
  /** Nothing is in flight and nothing can move without a person. */
  blocked: boolean;
  /**
   * VMs with a migration towards the host in progress: they are waited for
   * (counted outstanding) and drained once they land.
   */
  arriving: string[];
  /** The earliest time a VM in backoff may be retried (epoch ms), if any. */
  nextRetryAtMs: number | undefined;
  /**
   * The complete next status, with an entry in inFlight for every start:
   * written before the starts are issued, so that a restart never loses
   * one (the answers come in on later passes, as {@linkcode StartNote}s).
   */
  next: EvictionStatus;
  /** How the VMs not in flight stand. */
  summary: DrainSummary;
}

/**
 * The ids to look up with `GET /servers/{id}`: those the previous status
 * tracked (outstanding or in flight), and those whose migration record
 * from this host is still in progress or `finished` (a cold migration
 * awaiting confirmation: found even when the status write that tracked it
 * was lost), that are no longer listed on the host. Sorted, for
 * deterministic requests.
 *
 * @example
 * ```ts
 * import { departedIds } from "./plan.ts";
 * const ids = departedIds(
 *   { outstandingInstances: ["a", "b"], inFlight: [{ id: "c", kind: "live", startedAt: "2026-01-01T00:00:00Z" }] },
 *   [{ id: "a" }],
 *   [{ id: 1, instanceUuid: "d", migrationType: "migration", status: "finished", sourceCompute: "h", createdAt: "2026-01-01T00:00:00" }],
 *   "h",
 * );
 * console.assert(ids.join() === "b,c,d");
 * ```
 */
export function departedIds(
  status: EvictionStatus | undefined,
  servers: readonly { id: string }[],
  migrations: readonly ObservedMigration[],
  host: string,
): string[] {
  const listed = new Set(servers.map((s) => s.id));
  // An arriving VM is not on the host yet: its record says where it is.
  for (const id of arrivingRecords(migrations, host).keys()) listed.add(id);
  const tracked = new Set([
    ...(status?.outstandingInstances ?? []),
    ...(status?.inFlight ?? []).map((e) => e.id),
    ...unfinishedElsewhere(latestRecords(migrations, host), listed).keys(),
  ]);
  return [...tracked].filter((id) => !listed.has(id)).sort();
}

/**
 * Ids of VMs not on the host whose record from it is in progress or
 * `finished` (awaiting confirmation): their migration still holds the
 * source's resources, whether or not a status ever tracked them.
 */
function unfinishedElsewhere(
  records: ReadonlyMap<string, VmRecords>,
  onHost: { has(id: string): boolean },
): Map<string, ObservedMigration> {
  const found = new Map<string, ObservedMigration>();
  for (const [id, r] of records) {
    if (onHost.has(id)) continue;
    if (r.inProgress !== undefined) found.set(id, r.inProgress);
    else if (r.latest.status.toLowerCase() === "finished") {
      found.set(id, r.latest);
    }
  }
  return found;
}

function validateInput(input: PlanInput): void {
  if (typeof input.host !== "string" || input.host === "") {
    throw new RangeError(
      `host must be a non-empty string, got ${JSON.stringify(input.host)}`,
    );
  }
  if (!Number.isInteger(input.limit) || input.limit < 0) {
    throw new RangeError(`limit must be an integer >= 0, got ${input.limit}`);
  }
  const budget = input.clusterBudgetLeft;
  if (
    Number.isNaN(budget) || budget < 0 ||
    (Number.isFinite(budget) && !Number.isInteger(budget))
  ) {
    throw new RangeError(
      `clusterBudgetLeft must be an integer >= 0 or Infinity, got ${budget}`,
    );
  }
  if (!(input.now instanceof Date) || Number.isNaN(input.now.getTime())) {
    throw new RangeError(`now must be a valid Date, got ${String(input.now)}`);
  }
  validatePlanOptions(input.options);
}

/**
 * Plans one pass of a drain.
 *
 * In flight: status MIGRATING/RESIZE, task_state migrating/resize_*, a
 * migration record in progress (queued ones included), or a trigger in
 * status.inFlight within the grace period. Starts: at most
 * `min(limit - inFlight, clusterBudgetLeft)`, largest flavor RAM first,
 * ACTIVE/PAUSED live, SHUTOFF cold; none while `holdStarts` is set. A VM
 * that anything shows in flight is never started.
 *
 * @example
 * ```ts
 * import { planPass } from "./plan.ts";
 * import { DEFAULT_PLAN_OPTIONS } from "./observation.ts";
 * const vm = (id: string, ramMb: number) => ({
 *   id, status: "ACTIVE", host: "node042", taskState: null, flavor: { ramMb },
 * });
 * const plan = planPass({
 *   host: "node042",
 *   servers: [vm("a", 2048), vm("b", 8192), vm("c", 4096)],
 *   migrations: [],
 *   departed: [],
 *   status: undefined,
 *   limit: 2,
 *   limitSource: "policy",
 *   clusterBudgetLeft: Infinity,
 *   now: new Date("2026-01-01T00:00:00Z"),
 *   options: DEFAULT_PLAN_OPTIONS,
 * });
 * console.assert(plan.start.map((s) => s.id).join() === "b,c");
 * console.assert(plan.next.inFlightCount === 2);
 * ```
 */
export function planPass(input: PlanInput): Plan {
  validateInput(input);
  const { host, options, now } = input;
  const nowMs = now.getTime();
  const nowIso = now.toISOString();
  const prev: EvictionStatus = input.status ?? {};
  const prevInFlight = new Map((prev.inFlight ?? []).map((e) => [e.id, e]));
  const prevFailed = new Map((prev.failed ?? []).map((f) => [f.id, f]));
  const prevSkipped = new Map((prev.skipped ?? []).map((f) => [f.id, f]));
  const prevOutstanding = new Set(prev.outstandingInstances ?? []);
  const notes = input.starts ?? new Map<string, StartNote>();
  // A start this process issued is ours even when its entry did not reach
  // the status (the write runs alongside the starts and may have failed):
  // the note, newer than any entry, says what was started and when.
  for (const n of notes.values()) {
    if (n.kind === undefined || n.issuedAtMs === undefined) continue;
    const known = prevInFlight.get(n.id);
    if (
      known !== undefined && known.kind === n.kind &&
      (parseNovaTime(known.startedAt) ?? 0) >= n.issuedAtMs
    ) continue;
    prevInFlight.set(n.id, {
      id: n.id,
      kind: n.kind,
      startedAt: new Date(n.issuedAtMs).toISOString(),
    });
    prevOutstanding.add(n.id);
  }

  const departedById = new Map<string, ObservedServer | null>();
  for (const d of input.departed) {
    if (!departedById.has(d.id)) departedById.set(d.id, d.server);
  }

  // The VMs on the host: the list, plus any looked-up VM that is in fact
  // still here (the list and the GET raced).
  const onHost = new Map<string, ObservedServer>();
  for (const server of input.servers) {
    if (!onHost.has(server.id)) onHost.set(server.id, server);
  }
  for (const [id, server] of departedById) {
    if (server !== null && server.host === host && !onHost.has(id)) {
      onHost.set(id, server);
    }
  }

  const latest = latestRecords(input.migrations, host);
  const incoming = arrivingRecords(input.migrations, host);
  const inFlight: EvictionStatusInFlightItem[] = [];
  const failed: EvictionStatusFailedItem[] = [];
  const skipped: EvictionStatusSkippedItem[] = [];
  const failures: FailureReport[] = [];
  const waiting: WaitingVm[] = [];
  const ready: Array<
    { id: string; kind: MigrationKind; ramMb: number; attempt: number }
  > = [];
  const outstanding: string[] = [];
  const summary: DrainSummary = {
    ready: 0,
    busy: 0,
    backoff: 0,
    needsPerson: 0,
    held: input.holdStarts,
  };
  let outstandingRamMb = 0;
  let nextRetryAtMs: number | undefined;

  for (const server of [...onHost.values()].sort(byId)) {
    const verdict = classifyServer({
      server,
      latest: latest.get(server.id)?.latest,
      inProgress: latest.get(server.id)?.inProgress,
      arriving: incoming.get(server.id),
      inFlight: prevInFlight.get(server.id),
      failed: prevFailed.get(server.id),
      skipped: prevSkipped.get(server.id),
      note: notes.get(server.id),
      nowMs,
      options,
    });
    outstanding.push(server.id);
    outstandingRamMb += server.flavor.ramMb;
    if (verdict.failed !== undefined) failed.push(verdict.failed);
    if (verdict.failure !== undefined) failures.push(verdict.failure);
    account(server, verdict.vm, verdict.failed);
  }

  // VMs heading here, not listed yet: outstanding (the host is not empty
  // while they come), waited for, drained once they land.
  const arriving: string[] = [];
  for (const [id, record] of [...incoming].sort(([a], [b]) => a < b ? -1 : 1)) {
    if (onHost.has(id)) {
      arriving.push(id);
      continue;
    }
    arriving.push(id);
    outstanding.push(id);
    summary.busy++;
    waiting.push({
      id,
      why: "busy",
      detail: `arriving (${record.migrationType} ${record.id} from ${
        record.sourceCompute ?? "unknown"
      } is ${record.status})`,
    });
    const failedEntry = prevFailed.get(id);
    if (failedEntry !== undefined) failed.push(failedEntry);
  }

  function account(
    server: ObservedServer,
    vm: VmClass,
    failedEntry: EvictionStatusFailedItem | undefined,
  ): void {
    switch (vm.class) {
      case "in_flight":
        inFlight.push(vm.entry);
        return;
      case "ready":
        ready.push({
          id: server.id,
          kind: vm.kind,
          ramMb: server.flavor.ramMb,
          attempt: (failedEntry?.attempts ?? 0) + 1,
        });
        return;
      case "backoff":
        summary.backoff++;
        nextRetryAtMs = Math.min(nextRetryAtMs ?? Infinity, vm.retryAtMs);
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
        skipped.push({ id: server.id, reason: vm.reason });
        return;
      case "error":
      case "exhausted":
        summary.needsPerson++;
        return;
    }
  }

  // VMs tracked by the previous status, or whose migration from this host
  // is unfinished, that are no longer listed here.
  const done: string[] = [];
  const gone: string[] = [];
  const confirmResize: string[] = [];
  const unfinished = unfinishedElsewhere(latest, onHost);
  const departedTracked = new Set([
    ...prevOutstanding,
    ...prevInFlight.keys(),
    ...departedById.keys(),
    ...unfinished.keys(),
  ]);
  for (const id of [...departedTracked].sort()) {
    if (onHost.has(id) || incoming.has(id)) continue;
    const entry = prevInFlight.get(id);
    const tracked = prevOutstanding.has(id) || entry !== undefined;
    const record = unfinished.get(id);
    if (!departedById.has(id)) {
      // Its GET failed: keep what we knew, look again next pass. A kept or
      // adopted in-flight entry holds its slot, the safe side of the limit.
      if (entry !== undefined) {
        inFlight.push(entry);
      } else if (record !== undefined) {
        inFlight.push({
          ...inFlightEntry(
            id,
            undefined,
            kindOfMigrationType(record.migrationType),
            record,
            nowMs,
          ),
          adopted: true,
        });
      }
      if (!prevOutstanding.has(id)) continue;
      const failedEntry = prevFailed.get(id);
      if (failedEntry !== undefined) failed.push(failedEntry);
      outstanding.push(id);
      summary.busy++;
      waiting.push({
        id,
        why: "unknown",
        detail: "its lookup failed this pass",
      });
      continue;
    }
    const server = departedById.get(id) ?? null;
    if (server === null) {
      if (tracked) gone.push(id);
      continue;
    }
    const status = server.status.toUpperCase();
    if (status === "VERIFY_RESIZE") {
      const type = latest.get(id)?.latest.migrationType;
      if (
        entry !== undefined && entry.adopted !== true &&
        (type === undefined || isOurKind(type, "cold"))
      ) {
        // Our cold migration waits for confirmation on its destination; the
        // source still holds the VM's resources, so it stays in flight.
        confirmResize.push(id);
        inFlight.push(inFlightEntry(id, entry, "cold", record, nowMs));
        continue;
      }
      // Someone else's resize: only its owner may confirm or revert it, and
      // a revert brings the VM back here. The host is not empty until then.
      outstanding.push(id);
      summary.needsPerson++;
      skipped.push({
        id,
        reason:
          "resized by someone else: awaits its owner's confirm or revert (a revert brings it back)",
      });
      continue;
    }
    const kind = inFlightKindOfServer(status, server.taskState);
    if (kind !== undefined) {
      // Left the host but still finishing (post-migration on the destination).
      const e = inFlightEntry(id, entry, kind, record, nowMs);
      inFlight.push(
        entry === undefined || entry.adopted === true
          ? { ...e, adopted: true }
          : e,
      );
      continue;
    }
    const running = latest.get(id)?.inProgress;
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
      inFlight.push(
        entry === undefined || entry.adopted === true
          ? { ...e, adopted: true }
          : e,
      );
      continue;
    }
    // Only VMs we tracked count as migrated: a stale record of an untracked
    // VM would otherwise count it again on every pass.
    if (tracked) done.push(id);
  }

  // Stuck migrations, judged on what was in flight before this pass's starts.
  const stuck: StuckReport[] = [];
  const abort: AbortAction[] = [];
  const timeoutMs = options.migrationTimeoutSeconds === undefined
    ? undefined
    : options.migrationTimeoutSeconds * 1000;
  if (timeoutMs !== undefined) {
    for (const entry of [...inFlight].sort(byId)) {
      const record = latest.get(entry.id)?.inProgress;
      // Nova's queue is no copy: a queued record is never stuck.
      if (record !== undefined && waitingInNova(record.status)) continue;
      const startedMs = input.copyStartedAtMs?.get(entry.id) ??
        parseNovaTime(entry.startedAt);
      if (startedMs === undefined || nowMs - startedMs <= timeoutMs) continue;
      stuck.push({
        id: entry.id,
        kind: entry.kind,
        ...(entry.migrationId === undefined
          ? {}
          : { migrationId: entry.migrationId }),
        startedAt: entry.startedAt,
        elapsedSeconds: Math.floor((nowMs - startedMs) / 1000),
      });
      if (
        options.abortStuckMigrations && entry.kind === "live" &&
        onHost.has(entry.id) &&
        record !== undefined && entry.migrationId === String(record.id) &&
        isAbortable(record.status)
      ) {
        abort.push({ id: entry.id, migrationId: entry.migrationId });
      }
    }
  }

  // Starts: largest first (LPT shortens the whole drain), ties by id.
  ready.sort((a, b) =>
    b.ramMb - a.ramMb || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  );
  const inFlightBefore = inFlight.length;
  const slots = input.holdStarts !== undefined ? 0 : Math.max(
    0,
    Math.min(input.limit - inFlightBefore, input.clusterBudgetLeft),
  );
  const liveSlots = input.novaLiveLimit === undefined
    ? Number.POSITIVE_INFINITY
    : input.novaLiveLimit - inFlight.filter((e) => e.kind === "live").length;
  const picked = pickStarts(ready, slots, liveSlots);
  const start: StartAction[] = picked.start.map((r) => ({ ...r }));
  for (const s of start) {
    inFlight.push({ id: s.id, kind: s.kind, startedAt: nowIso });
  }
  for (const r of picked.left) {
    summary.ready++;
    const why = input.holdStarts !== undefined
      ? `starts held: ${input.holdStarts}`
      : picked.start.length < slots && r.kind === "live"
      ? `Nova runs ${input.novaLiveLimit} live migration(s) at a time from this host`
      : "no free slot";
    waiting.push({ id: r.id, why: "ready", detail: why });
  }

  const newlyFound = input.status?.outstandingInstances === undefined
    ? []
    : [...onHost.keys()].filter((id) =>
      !prevOutstanding.has(id) && !prevInFlight.has(id)
    )
      .sort();

  const next = assembleStatus(prev, {
    inFlight,
    failed,
    skipped,
    outstanding,
    outstandingRamMb,
    migratedDelta: done.length,
    limit: input.limit,
    limitSource: input.limitSource,
    generation: input.generation,
    now,
    summary,
  });
  const finished = (next.outstandingCount ?? 0) === 0 &&
    (next.inFlightCount ?? 0) === 0;
  return {
    start,
    confirmResize,
    abort,
    stuck,
    done,
    gone,
    failed: failures,
    skipped: next.skipped ?? [],
    newlyFound,
    waiting: waiting.sort(byId),
    inFlightCount: next.inFlightCount ?? 0,
    finished,
    blocked: isBlocked(next),
    arriving,
    nextRetryAtMs,
    next,
    summary,
  };
}

function isBlocked(status: EvictionStatus): boolean {
  const evicting = (status.conditions ?? []).find((c) => c.type === "Evicting");
  return evicting?.reason === "Failed";
}

/**
 * The starts of a pass, in the order given (largest first): at most
 * `slots` in all and at most `liveSlots` live ones; a cold migration may
 * take a slot a live one cannot (Nova's per-host limit is on live
 * migrations only).
 *
 * @example
 * ```ts
 * import { pickStarts } from "./plan.ts";
 * const r = (id: string, kind: "live" | "cold") => ({ id, kind });
 * const p = pickStarts([r("a", "live"), r("b", "live"), r("c", "cold")], 2, 1);
 * console.log(p.start.map((x) => x.id).join()); // a,c
 * ```
 */
export function pickStarts<T extends { kind: "live" | "cold" }>(
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
