/**
 * Convergence: what the plan does with a live copy past its bound, and with a person's request.
 * The legacy flat timeout is the same rule with a flat bound, no progress timeout, reason `stuck`.
 * @module
 */

import type { EvictionStatus } from "../../models/mod.ts";
import { parseNovaTime } from "../../openstack/nova_time.ts";
import {
  beforeCopy,
  isAbortable,
  waitingInNova,
} from "../../openstack/informer/nova_states.ts";
import {
  CONVERGENCE_DEFAULTS,
  copyTimeoutSeconds,
  type OnTimeout,
} from "../../limits/convergence.ts";
import type { CopyProgress } from "../../openstack/informer/progress_types.ts";
import {
  type ClassifyInput,
  classifyServer,
  type VmVerdict,
} from "./classify.ts";
import { byId } from "./next_status.ts";
import { maySendAgain } from "./once.ts";
import type { PlanOptions } from "./plan_options.ts";
import type {
  AbortAction,
  AbortedItem,
  ConvergenceRequest,
  ForceCompleteAction,
  InFlightItem,
  NotConvergingReport,
  PlanInput,
  RequestOutcome,
  StuckReport,
} from "./plan_types.ts";
import type { HostView, Records } from "./plan_types.ts";

/** The one rule for copies past their bound, from the options. */
export interface Rule {
  /** Seconds a copy of `ramMb` may take; undefined: no bound. */
  boundSeconds: (ramMb: number) => number | undefined;
  /** How long the remaining bytes may go without a new low (ms). */
  progressMs: number | undefined;
  onTimeout: OnTimeout;
  forceCompleteTimeoutMs: number;
  legacy: boolean;
}

/**
 * The drain's rule for copies past their bound; undefined: no bound.
 *
 * @example
 * ```ts
 * import { ruleOf } from "./plan_converge.ts";
 * import { DEFAULT_PLAN_OPTIONS } from "./plan_options.ts";
 * console.assert(ruleOf(DEFAULT_PLAN_OPTIONS) === undefined);
 * console.assert(ruleOf({ ...DEFAULT_PLAN_OPTIONS, migrationTimeoutSeconds: 60, abortStuckMigrations: true })?.onTimeout === "Abort");
 * ```
 */
export function ruleOf(options: PlanOptions): Rule | undefined {
  const c = options.convergence;
  if (c !== undefined) {
    return {
      boundSeconds: (ramMb) => copyTimeoutSeconds(c, ramMb),
      progressMs: c.progressTimeoutSeconds * 1000,
      onTimeout: c.onTimeout,
      forceCompleteTimeoutMs: c.forceCompleteTimeoutSeconds * 1000,
      legacy: false,
    };
  }
  const flat = options.migrationTimeoutSeconds;
  if (flat === undefined) return undefined;
  return {
    boundSeconds: () => flat,
    progressMs: undefined,
    onTimeout: options.abortStuckMigrations ? "Abort" : "Report",
    forceCompleteTimeoutMs: Infinity,
    legacy: true,
  };
}

/**
 * The previous `status.aborted[]` by id.
 *
 * @example
 * ```ts
 * import { abortedOf } from "./plan_converge.ts";
 * const s = { aborted: [{ id: "a", tries: 1, lastAbortedAt: "2026-01-01T00:00:00Z", reason: "timeout" }] };
 * console.assert(abortedOf(s).get("a")?.tries === 1);
 * ```
 */
export function abortedOf(
  status: EvictionStatus | undefined,
): Map<string, AbortedItem> {
  return new Map((status?.aborted ?? []).map((a) => [a.id, a]));
}

/**
 * The status with `aborted[]` set (the one place that writes it); omitted while nobody had any.
 *
 * @example
 * ```ts
 * import { withAborted } from "./plan_converge.ts";
 * console.assert(!("aborted" in withAborted({}, [])));
 * ```
 */
export function withAborted(
  status: EvictionStatus,
  aborted: readonly AbortedItem[],
): EvictionStatus {
  const had = abortedOf(status).size > 0;
  const { aborted: _old, ...rest } = status;
  if (aborted.length === 0 && !had) return rest;
  return { ...rest, aborted: [...aborted].sort(byId) };
}

/**
 * The tries after which an aborted VM is left for a person.
 *
 * @example
 * ```ts
 * import { maxTries } from "./plan_converge.ts";
 * import { DEFAULT_PLAN_OPTIONS } from "./plan_options.ts";
 * console.assert(maxTries(DEFAULT_PLAN_OPTIONS) === 2);
 * ```
 */
export function maxTries(options: PlanOptions): number {
  return options.convergence?.maxAbortedTries ??
    CONVERGENCE_DEFAULTS.maxAbortedTries;
}

/** The start of a `status.failed` reason for a VM left after its aborted tries. */
export const ABORTED_PREFIX = "aborted for not converging";

/**
 * Classifies a VM whose copies were aborted: the copy our abort ended is no failed
 * attempt; at `maxAbortedTries` the VM is left for a person (exhausted).
 *
 * @example
 * ```ts
 * import { classifyAborted } from "./plan_converge.ts";
 * import { DEFAULT_PLAN_OPTIONS } from "./plan_options.ts";
 * const v = classifyAborted({
 *   server: { id: "a", status: "ACTIVE", host: "h", taskState: null, flavor: { ramMb: 1 } },
 *   latest: undefined, inProgress: undefined, inFlight: undefined, failed: undefined,
 *   nowMs: 0, options: DEFAULT_PLAN_OPTIONS,
 * }, { id: "a", tries: 2, lastAbortedAt: "1970-01-01T00:00:00Z", reason: "timeout" });
 * console.assert(v.vm.class === "exhausted" && v.failure?.exhausted === true);
 * ```
 */
export function classifyAborted(
  args: ClassifyInput,
  aborted: AbortedItem | undefined,
): VmVerdict {
  let verdict = classifyServer(args);
  if (aborted === undefined) return verdict;
  const entry = args.inFlight;
  const abortedMs = parseNovaTime(aborted.lastAbortedAt) ?? -Infinity;
  if (
    verdict.failure !== undefined && verdict.vm.class !== "error" &&
    entry !== undefined && entry.adopted !== true &&
    abortedMs >= (parseNovaTime(entry.startedAt) ?? Infinity)
  ) {
    verdict = classifyServer({ ...args, inFlight: undefined, note: undefined });
  }
  const max = maxTries(args.options);
  if (
    aborted.tries < max ||
    (verdict.vm.class !== "ready" && verdict.vm.class !== "backoff")
  ) return verdict;
  const reason = `${ABORTED_PREFIX}: ${aborted.tries} copies aborted ` +
    `(maxAbortedTries ${max}), the last at ${aborted.lastAbortedAt}; left ` +
    `for a person (kubectl evictor retry re-arms it)`;
  const prior = verdict.failed;
  const failed = {
    id: aborted.id,
    reason,
    attempts: Math.max(prior?.attempts ?? 0, aborted.tries),
    lastAttemptAt: aborted.lastAbortedAt,
    ...(prior?.firstFailedAt === undefined
      ? {}
      : { firstFailedAt: prior.firstFailedAt }),
  };
  return {
    vm: { class: "exhausted" },
    failed,
    failure: prior?.reason === reason ? undefined : {
      id: aborted.id,
      reason,
      attempts: failed.attempts,
      exhausted: true,
      transient: false,
    },
  };
}

/** A ready VM as pickStarts sees it; `abortedAtMs` when it is a retry after an abort. */
export interface ReadyVm {
  id: string;
  kind: "live" | "cold";
  ramMb: number;
  attempt: number;
  abortedAtMs?: number;
}

/**
 * A VM whose copy was aborted starts again only alone and last, one at a time,
 * and nothing starts beside it while it runs.
 *
 * @example
 * ```ts
 * import { retryAlone } from "./plan_converge.ts";
 * const r = retryAlone(
 *   [{ id: "a", kind: "live", ramMb: 1, attempt: 1, abortedAtMs: 0 }, { id: "b", kind: "live", ramMb: 1, attempt: 1 }],
 *   [], new Map(),
 * );
 * console.assert(r.ready.map((x) => x.id).join() === "b" && r.held[0]?.id === "a");
 * ```
 */
export function retryAlone(
  ready: readonly ReadyVm[],
  inFlight: readonly { id: string; startedAt: string }[],
  aborted: ReadonlyMap<string, AbortedItem>,
): { ready: ReadyVm[]; held: { id: string; detail: string }[] } {
  const alone = inFlight.find((e) => isRetry(e, aborted));
  if (alone !== undefined) {
    return {
      ready: [],
      held: ready.map((r) => ({
        id: r.id,
        detail: `${alone.id} is retried alone after an aborted copy`,
      })),
    };
  }
  const fresh = ready.filter((r) => r.abortedAtMs === undefined);
  const retried = ready.filter((r) => r.abortedAtMs !== undefined)
    .sort((a, b) => (a.abortedAtMs ?? 0) - (b.abortedAtMs ?? 0) || byId(a, b));
  const first = fresh.length === 0 && inFlight.length === 0
    ? retried[0]
    : undefined;
  return {
    ready: first === undefined ? fresh : [first],
    held: retried.filter((r) => r !== first).map((r) => ({
      id: r.id,
      detail: `copy aborted ${
        aborted.get(r.id)?.tries ?? 1
      } time(s) for not converging: retried alone once the host's other VMs are done`,
    })),
  };
}

/**
 * Whether an in-flight copy started after its VM's last abort (a retry: it runs alone).
 *
 * @example
 * ```ts
 * import { isRetry } from "./plan_converge.ts";
 * const aborted = new Map([["a", { id: "a", tries: 1, lastAbortedAt: "2026-01-01T00:00:00Z", reason: "timeout" }]]);
 * console.assert(isRetry({ id: "a", startedAt: "2026-01-01T00:01:00Z" }, aborted));
 * console.assert(!isRetry({ id: "a", startedAt: "2025-12-31T23:59:00Z" }, aborted));
 * ```
 */
export function isRetry(
  entry: { id: string; startedAt: string },
  aborted: ReadonlyMap<string, AbortedItem>,
): boolean {
  const a = aborted.get(entry.id);
  return a !== undefined &&
    (parseNovaTime(entry.startedAt) ?? -Infinity) >
      (parseNovaTime(a.lastAbortedAt) ?? Infinity);
}

/** What {@linkcode converge} decided. */
export interface Converged {
  stuck: StuckReport[];
  abort: AbortAction[];
  forceComplete: ForceCompleteAction[];
  notConverging: NotConvergingReport[];
  requestOutcomes: RequestOutcome[];
  inFlight: InFlightItem[];
  /** The next `status.aborted[]`. */
  aborted: AbortedItem[];
  lookByMs?: number;
}

/** A live copy of ours that Nova runs and could act on. */
interface Copy {
  entry: InFlightItem;
  migrationId: string;
  recordStatus: string;
  /** Not ours: only a person acts on it. */
  adopted: boolean;
}

/** What converge reads besides the input. */
export interface ConvergeContext {
  view: HostView;
  records: Records;
  inFlight: readonly InFlightItem[];
  prevInFlight: ReadonlyMap<string, InFlightItem>;
  /** The previous `status.aborted[]`. */
  aborted: ReadonlyMap<string, AbortedItem>;
  /** Ids still on or heading to the host. */
  outstanding: readonly string[];
}

/** Per copy in flight: past its bound or not, and what the policy and requests send (nothing at limit 0). */
export function converge(input: PlanInput, ctx: ConvergeContext): Converged {
  const rule = ruleOf(input.options);
  const out: Converged = {
    stuck: [],
    abort: [],
    forceComplete: [],
    notConverging: [],
    requestOutcomes: [],
    inFlight: [],
    aborted: [],
  };
  const entries = [...ctx.inFlight].sort(byId).map((e) =>
    withCopyStart(
      withProgress(e, input.progress?.get(e.id)),
      input.copyStartedAtMs?.get(e.id),
    )
  );
  const copies = copiesOf(entries, ctx);
  const guard = guardsOf(input, ctx, out);
  for (const r of input.requests ?? []) {
    out.requestOutcomes.push(request(r, copies.get(r.server), guard, out));
  }
  for (const entry of entries) {
    out.inFlight.push(
      entryStep(input, ctx, rule, entry, copies.get(entry.id), guard, out),
    );
  }
  out.aborted = nextAborted(ctx, out.abort, input.now.toISOString());
  return out;
}

/** The live copies of ours Nova runs (past its queue) and could act on, by VM. */
function copiesOf(
  entries: readonly InFlightItem[],
  ctx: ConvergeContext,
): Map<string, Copy> {
  const copies = new Map<string, Copy>();
  for (const entry of entries) {
    const record = ctx.records.latest.get(entry.id)?.inProgress;
    if (
      entry.kind === "live" && entry.migrationId !== undefined &&
      ctx.view.onHost.has(entry.id) && record !== undefined &&
      String(record.id) === entry.migrationId && !waitingInNova(record.status)
    ) {
      copies.set(entry.id, {
        entry,
        migrationId: entry.migrationId,
        recordStatus: record.status,
        adopted: entry.adopted === true,
      });
    }
  }
  return copies;
}

/** The once rules a pass's actions go through. */
interface Guards {
  /** Whether this drain sends anything (not at limit 0: a deleted drain). */
  acting: boolean;
  /** When a force_complete of the copy was sent (status, note or this plan), if ever. */
  sentFc: (c: Copy) => number | undefined;
  /** Whether an abort of the copy may be sent now, `afterMs` after an answered one. */
  mayAbort: (c: Copy, afterMs: number) => boolean;
}

function guardsOf(
  input: PlanInput,
  ctx: ConvergeContext,
  out: Converged,
): Guards {
  const nowMs = input.now.getTime();
  const lookedAtMs = input.lookedAtMs ?? nowMs;
  const acting = input.limit > 0;
  return {
    acting,
    sentFc: (c) => {
      const prev = ctx.prevInFlight.get(c.entry.id);
      const fromStatus = prev?.migrationId === c.migrationId
        ? parseNovaTime(prev.forceCompleteSentAt)
        : undefined;
      const note = input.forceCompletes?.get(c.migrationId)?.sentAtMs;
      const planned =
        out.forceComplete.some((f) => f.migrationId === c.migrationId)
          ? nowMs
          : undefined;
      return minOf(fromStatus, note, planned);
    },
    mayAbort: (c, afterMs) =>
      acting && isAbortable(c.recordStatus) &&
      !out.abort.some((a) => a.migrationId === c.migrationId) &&
      maySendAgain(input.aborts?.get(c.migrationId), lookedAtMs, afterMs),
  };
}

/** One in-flight entry: its bound, its stuck report, and the rule's step on its copy. */
function entryStep(
  input: PlanInput,
  ctx: ConvergeContext,
  rule: Rule | undefined,
  entry: InFlightItem,
  copy: Copy | undefined,
  guard: Guards,
  out: Converged,
): InFlightItem {
  const nowMs = input.now.getTime();
  const record = ctx.records.latest.get(entry.id)?.inProgress;
  const boundS = rule?.boundSeconds(ramOf(ctx.view, entry.id, entry));
  const boundMs = boundS === undefined ? undefined : boundS * 1000;
  // A live start Nova shows no copy of yet (not queued): the pace knows no
  // bound, so the look comes by the bound from the start.
  if (
    entry.kind === "live" && entry.adopted !== true &&
    boundMs !== undefined && rule?.onTimeout !== "Report" &&
    (record === undefined ||
      (beforeCopy(record.status) &&
        record.status.toLowerCase() !== "queued"))
  ) {
    out.lookByMs = Math.min(
      out.lookByMs ?? Infinity,
      (parseNovaTime(entry.startedAt) ?? nowMs) + boundMs,
    );
  }
  // Nova's queue and preparation are no copy: never past its bound.
  if (record !== undefined && beforeCopy(record.status)) return entry;
  const startMs = input.copyStartedAtMs?.get(entry.id) ??
    parseNovaTime(entry.startedAt);
  const completionAtMs = startMs === undefined || boundMs === undefined
    ? undefined
    : startMs + boundMs;
  const pastCompletion = completionAtMs !== undefined &&
    nowMs > completionAtMs;
  if (pastCompletion && startMs !== undefined) {
    out.stuck.push({
      id: entry.id,
      kind: entry.kind,
      ...(entry.migrationId === undefined
        ? {}
        : { migrationId: entry.migrationId }),
      startedAt: entry.startedAt,
      elapsedSeconds: Math.floor((nowMs - startMs) / 1000),
    });
  }
  if (copy === undefined) return entry;
  if (rule !== undefined && !rule.legacy) {
    return policyStep(input, rule, copy, completionAtMs, guard, out);
  }
  if (
    rule?.onTimeout === "Abort" && pastCompletion &&
    guard.mayAbort(copy, boundMs ?? 0)
  ) {
    out.abort.push({
      id: entry.id,
      migrationId: copy.migrationId,
      reason: "stuck",
    });
  }
  // A person's force_complete is marked in any mode: never sent twice.
  const fcMs = guard.sentFc(copy);
  return fcMs === undefined
    ? entry
    : { ...entry, forceCompleteSentAt: new Date(fcMs).toISOString() };
}

/** The policy on one live copy of a convergence drain: its report, action and fields. */
function policyStep(
  input: PlanInput,
  rule: Rule,
  copy: Copy,
  completionAtMs: number | undefined,
  { sentFc, mayAbort }: Guards,
  out: Converged,
): InFlightItem {
  const nowMs = input.now.getTime();
  const { entry, migrationId } = copy;
  const p = matching(input.progress?.get(entry.id), migrationId);
  const { progressAtMs, passed } = boundsPassed(
    nowMs,
    rule,
    p,
    completionAtMs,
  );
  // an answered abort is sent again after a look this much later
  const resendMs = rule.progressMs ?? 0;
  // A person's action this pass stands for the policy's.
  const asked = out.abort.some((a) => a.migrationId === migrationId) ||
    out.forceComplete.some((f) => f.migrationId === migrationId);
  const policyActs = !copy.adopted && passed !== undefined && !asked;
  let fcMs = sentFc(copy);
  if (policyActs && rule.onTimeout === "Abort" && mayAbort(copy, resendMs)) {
    out.abort.push({ id: entry.id, migrationId, reason: "timeout" });
  }
  if (policyActs && rule.onTimeout === "ForceComplete") {
    if (
      fcMs === undefined && input.limit > 0 &&
      copy.recordStatus.toLowerCase() === "running"
    ) {
      out.forceComplete.push({ id: entry.id, migrationId, reason: "timeout" });
      fcMs = nowMs;
    }
  }
  const fallbackAtMs = rule.onTimeout === "ForceComplete" &&
      fcMs !== undefined && !copy.adopted
    ? fcMs + rule.forceCompleteTimeoutMs
    : undefined;
  if (
    fallbackAtMs !== undefined && nowMs >= fallbackAtMs &&
    mayAbort(copy, resendMs)
  ) {
    out.abort.push({ id: entry.id, migrationId, reason: "timeout" });
  }
  const deadlineMs = fallbackAtMs ?? minOf(completionAtMs, progressAtMs);
  if (passed !== undefined) {
    const abortSent = input.aborts?.has(migrationId) === true ||
      out.abort.some((a) => a.migrationId === migrationId);
    const actAtMs = input.limit === 0 || rule.onTimeout === "Report" ||
        abortSent || copy.adopted
      ? undefined
      : fallbackAtMs ?? passed[1];
    out.notConverging.push(
      notConvergingReport(copy, rule, p, passed, nowMs, actAtMs),
    );
  }
  return {
    ...entry,
    ...(passed === undefined ? {} : { notConverging: true }),
    ...(deadlineMs === undefined
      ? {}
      : { deadlineAt: new Date(deadlineMs).toISOString() }),
    ...(fcMs === undefined
      ? {}
      : { forceCompleteSentAt: new Date(fcMs).toISOString() }),
  };
}

/** Which of a copy's bounds it passed first (when), and when its progress timeout falls. */
function boundsPassed(
  nowMs: number,
  rule: Rule,
  p: CopyProgress | undefined,
  completionAtMs: number | undefined,
): {
  progressAtMs: number | undefined;
  passed: readonly ["completion" | "progress", number] | undefined;
} {
  const progressAtMs = p === undefined || rule.progressMs === undefined
    ? undefined
    : p.lowestAtMs + rule.progressMs;
  // Only a read shows the remaining bytes stopped falling: never assumed.
  const progressPassed = progressAtMs !== undefined && p !== undefined &&
    p.readAtMs >= progressAtMs;
  const completionPassed = completionAtMs !== undefined &&
    nowMs > completionAtMs;
  const passed = [
    ...(completionPassed ? [["completion", completionAtMs] as const] : []),
    ...(progressPassed ? [["progress", progressAtMs] as const] : []),
  ].sort((a, b) => a[1] - b[1])[0];
  return { progressAtMs, passed };
}

/** The report of a copy past its bound (`passed`: which, since when). */
function notConvergingReport(
  copy: Copy,
  rule: Rule,
  p: CopyProgress | undefined,
  passed: readonly ["completion" | "progress", number],
  nowMs: number,
  actAtMs: number | undefined,
): NotConvergingReport {
  return {
    id: copy.entry.id,
    migrationId: copy.migrationId,
    why: passed[0],
    ...(p === undefined
      ? {}
      : { remainingBytes: p.remainingBytes, totalBytes: p.totalBytes }),
    sinceSeconds: Math.max(0, Math.floor((nowMs - passed[1]) / 1000)),
    onTimeout: rule.onTimeout,
    ...(actAtMs === undefined
      ? {}
      : { actAt: new Date(actAtMs).toISOString() }),
  };
}

/** One person's request: planned, or why not. */
function request(
  r: ConvergenceRequest,
  copy: Copy | undefined,
  { acting, sentFc, mayAbort }: Guards,
  out: Converged,
): RequestOutcome {
  const answer = (outcome: RequestOutcome["outcome"], message: string) => ({
    ...r,
    outcome,
    message,
  });
  if (copy === undefined) {
    return answer(
      "NotInFlight",
      `${r.server} has no live migration in flight from this host with a ` +
        `migration id: nothing to ${
          r.action === "Abort" ? "abort" : "force-complete"
        }`,
    );
  }
  const mid = copy.migrationId;
  const by = { requestedBy: r.requestedBy };
  if (!acting) {
    return answer(
      "Refused",
      `the drain is being deleted: it sends nothing to migration ${mid}`,
    );
  }
  if (r.action === "ForceComplete") {
    const sent = sentFc(copy);
    if (sent !== undefined) {
      return answer(
        "Refused",
        `force_complete of migration ${mid} was already sent at ${
          new Date(sent).toISOString()
        }: Nova takes it once per migration`,
      );
    }
    if (copy.recordStatus.toLowerCase() !== "running") {
      return answer(
        "Refused",
        `migration ${mid} is ${copy.recordStatus}, not running: Nova ` +
          `force-completes only a running copy`,
      );
    }
    out.forceComplete.push({
      id: r.server,
      migrationId: mid,
      reason: "requested",
      ...by,
    });
    return answer("Sent", `force_complete of migration ${mid} sent`);
  }
  if (!mayAbort(copy, 0)) {
    return answer(
      "Refused",
      isAbortable(copy.recordStatus)
        ? `an abort of migration ${mid} is already sent and not yet seen through`
        : `migration ${mid} is ${copy.recordStatus}: Nova can no longer abort it`,
    );
  }
  out.abort.push({
    id: r.server,
    migrationId: mid,
    reason: "requested",
    ...by,
  });
  return answer("Sent", `abort of migration ${mid} sent`);
}

/** The next `status.aborted[]`: a try per copy aborted, kept while the VM is still here. */
function nextAborted(
  ctx: ConvergeContext,
  aborts: readonly AbortAction[],
  nowIso: string,
): AbortedItem[] {
  const next = new Map(ctx.aborted);
  for (const a of aborts) {
    if (a.reason === "stuck") continue;
    const prev = next.get(a.id);
    const entry = ctx.inFlight.find((e) => e.id === a.id);
    const copyStart = parseNovaTime(entry?.startedAt) ?? Infinity;
    // A copy counts once, however often its abort is sent.
    if (
      prev !== undefined &&
      (parseNovaTime(prev.lastAbortedAt) ?? -Infinity) >= copyStart
    ) continue;
    next.set(a.id, {
      id: a.id,
      tries: (prev?.tries ?? 0) + 1,
      lastAbortedAt: nowIso,
      reason: a.reason,
    });
  }
  const here = new Set([
    ...ctx.outstanding,
    ...ctx.inFlight.map((e) => e.id),
  ]);
  return [...next.values()].filter((a) => here.has(a.id)).sort(byId);
}

function matching(
  p: CopyProgress | undefined,
  migrationId: string | undefined,
): CopyProgress | undefined {
  return p !== undefined && p.migrationId === migrationId ? p : undefined;
}

/** The entry with the progress of its copy (Nova's per-migration record, as read). */
function withProgress(
  entry: InFlightItem,
  p: CopyProgress | undefined,
): InFlightItem {
  const m = matching(p, entry.migrationId);
  if (m === undefined) return entry;
  return {
    ...entry,
    memoryTotalBytes: m.totalBytes,
    memoryRemainingBytes: m.remainingBytes,
    // remaining bytes that rose (dirtied faster than copied) fall at 0/s
    ...(m.bytesPerSecond === undefined
      ? {}
      : { bytesPerSecond: Math.max(0, Math.round(m.bytesPerSecond)) }),
    ...(m.etaSeconds === undefined || !(m.etaSeconds >= 0)
      ? {}
      : { etaSeconds: Math.round(m.etaSeconds) }),
  };
}

/** The entry with its copy's start, written for a restarted process to time it from. */
function withCopyStart(
  entry: InFlightItem,
  startMs: number | undefined,
): InFlightItem {
  return startMs === undefined
    ? entry
    : { ...entry, copyStartedAt: new Date(startMs).toISOString() };
}

/** The VM's flavor RAM, else its copy's memory, else 0 (one GiB's bound). */
function ramOf(view: HostView, id: string, entry: InFlightItem): number {
  const server = view.onHost.get(id) ?? view.departedById.get(id);
  if (server) return server.flavor.ramMb;
  return entry.memoryTotalBytes === undefined
    ? 0
    : entry.memoryTotalBytes / 1048576;
}

function minOf(...values: (number | undefined)[]): number | undefined {
  const known = values.filter((v): v is number => v !== undefined);
  return known.length === 0 ? undefined : Math.min(...known);
}
