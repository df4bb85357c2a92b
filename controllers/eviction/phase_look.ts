/**
 * Look: what the drain needs of its host for this pass (the informer's view, else a fresh list).
 * @module
 */

import { errText, TemporaryError } from "../../framework/errors.ts";
import type { EvictionStatusInFlightItem } from "../../models/mod.ts";
import { recordMatchesEntry } from "./classify.ts";
import {
  type LookNeed,
  untimedCopies,
} from "../../openstack/informer/informer.ts";
import type {
  Observation,
  ObservedMigration,
} from "../../openstack/informer/snapshot.ts";
import { emit, type Pass } from "./pass.ts";
import type { Plan, Planned } from "./plan_types.ts";
import type { PlanOptions } from "./plan_options.ts";
import { copyStartsSeen } from "./memory.ts";
import { copyTimeoutSeconds } from "../../limits/convergence.ts";
import { latestRecords } from "../../openstack/informer/nova_records.ts";
import {
  type CopyToWatch,
  nextLookEstimate,
} from "../../openstack/informer/progress.ts";

/** What the look found; `planned` when the pass plans from the snapshot, to be used as it is. */
export interface Looked {
  seen: Observation;
  planned?: Planned;
}

/**
 * Whether a plan from a snapshot may be acted on: it only starts, counts completions and waits.
 *
 * @example
 * ```ts
 * import { plansFromSnapshot } from "./phase_look.ts";
 * const plan = { finished: false, settleAtMs: undefined, confirmResize: [], abort: [], failed: [], stuck: [] };
 * console.assert(plansFromSnapshot(plan));
 * console.assert(!plansFromSnapshot({ ...plan, settleAtMs: 5 }));
 * ```
 */
export function plansFromSnapshot(
  plan:
    & Pick<
      Plan,
      "finished" | "settleAtMs" | "confirmResize" | "abort" | "failed" | "stuck"
    >
    & Partial<Pick<Plan, "forceComplete">>,
): boolean {
  return !plan.finished && plan.settleAtMs === undefined &&
    plan.confirmResize.length === 0 && plan.abort.length === 0 &&
    (plan.forceComplete ?? []).length === 0 &&
    plan.failed.length === 0 && plan.stuck.length === 0;
}

/**
 * Whether a plan from a snapshot releases only slots freed by a live migration of ours
 * seen `completed`: a cache that missed a change must never free a slot (one start too many).
 *
 * @example
 * ```ts
 * import { releasesOnlyCompleted } from "./phase_look.ts";
 * const entry = { id: "a", kind: "live" as const, startedAt: "2026-01-01T00:00:00Z" };
 * const done = { id: -1, instanceUuid: "a", migrationType: "live-migration", status: "completed",
 *   sourceCompute: "h", createdAt: "2026-01-01T00:00:01" };
 * console.assert(releasesOnlyCompleted([entry], [], [done], "h", 10_000));
 * console.assert(!releasesOnlyCompleted([entry], [], [], "h", 10_000));
 * console.assert(releasesOnlyCompleted([entry], [entry], [], "h", 10_000));
 * ```
 */
export function releasesOnlyCompleted(
  before: readonly EvictionStatusInFlightItem[],
  after: readonly EvictionStatusInFlightItem[],
  migrations: readonly ObservedMigration[],
  host: string,
  clockSkewMs: number,
  novaOffsetMs = 0,
): boolean {
  const kept = new Set(after.map((e) => e.id));
  return before.every((e) =>
    kept.has(e.id) || e.adopted === true ||
    (e.kind === "live" && migrations.some((m) =>
      m.instanceUuid === e.id && m.sourceCompute === host &&
      m.migrationType.toLowerCase() === "live-migration" &&
      m.status.toLowerCase() === "completed" &&
      recordMatchesEntry(m, e, clockSkewMs, novaOffsetMs)
    ))
  );
}

/** The informer's view of the host and its plan when that only starts or waits; else a look on a list begun after it. */
export async function lookAtHost(
  pass: Pass,
  plan: (seen: Observation) => Planned,
  since: Date,
  options?: PlanOptions,
): Promise<Looked> {
  const { ctx, deps, host, state } = pass;
  const need: LookNeed = {
    host,
    since,
    status: pass.status,
    ram: (id) => state.ram.get(id),
    starts: state.starts.values(),
    endsBy: state.pace.endsBy(),
    untimed: untimedCopies(state.pace.expectedEnds(), pass.status.inFlight),
    signal: ctx.signal,
  };
  let seen = await withProgress(pass, await look(pass, need), options);
  if (seen.fromView === true) {
    const planned = plan(seen);
    const { options } = planned.input;
    if (
      plansFromSnapshot(planned.plan) &&
      releasesOnlyCompleted(
        pass.status.inFlight ?? [],
        planned.plan.next.inFlight ?? [],
        seen.migrations,
        host,
        options.clockSkewMs,
        options.novaClockOffsetMs,
      )
    ) {
      deps.metrics.looks.inc({ source: "view" });
      return { seen, planned };
    }
    const { progress } = seen;
    seen = await look(pass, { ...need, freshSince: seen.listedAtMs });
    if (progress !== undefined) seen = { ...seen, progress };
  }
  deps.metrics.looks.inc({ source: "nova" });
  return { seen };
}

/**
 * Our live copies in flight that a look shows copying, with their ends and bounds, for the progress schedule.
 *
 * @example
 * ```ts ignore
 * const copies = copiesToWatch(pass, seen, options);
 * ```
 */
export function copiesToWatch(
  pass: Pass,
  seen: Observation,
  options: PlanOptions | undefined,
): CopyToWatch[] {
  const { host, state } = pass;
  const nowMs = pass.deps.clock.now();
  const latest = latestRecords(seen.migrations, host);
  const since = copyStartsSeen(
    state.copyStarted,
    seen.migrations,
    host,
    nowMs,
    pass.deps.novaClockOffsetMs(),
    pass.status.inFlight,
  );
  const ends = state.pace.expectedEnds();
  const overdue = state.pace.endsBy();
  const policy = options?.convergence;
  const out: CopyToWatch[] = [];
  for (const e of pass.status.inFlight ?? []) {
    const rec = latest.get(e.id)?.inProgress;
    const sinceMs = since.get(e.id);
    if (e.kind !== "live" || rec?.id === undefined || sinceMs === undefined) {
      continue;
    }
    const ram = state.ram.get(e.id) ??
      seen.servers.find((s) => s.id === e.id)?.flavor.ramMb ?? 0;
    const boundS = policy === undefined
      ? options?.migrationTimeoutSeconds
      : copyTimeoutSeconds(policy, ram);
    const endAtMs = ends.get(e.id);
    out.push({
      serverId: e.id,
      migrationId: String(rec.id),
      sinceMs,
      ...(endAtMs === undefined
        ? {}
        : { endAtMs, overdueAtMs: overdue.get(e.id) ?? endAtMs }),
      ...(boundS === undefined ? {} : { decideAtMs: sinceMs + boundS * 1000 }),
      ...(policy === undefined ? {} : {
        stallMs: policy.progressTimeoutSeconds * 1000,
        acts: policy.onTimeout !== "Report",
      }),
    });
  }
  return out;
}

/** The look with its copies' progress (the informer reads those due; a failed read never fails the look). */
async function withProgress(
  pass: Pass,
  seen: Observation,
  options: PlanOptions | undefined,
): Promise<Observation> {
  const { ctx, deps, times } = pass;
  const copies = copiesToWatch(pass, seen, options);
  const nowMs = deps.clock.now();
  const progress = await deps.memory.informer.progress(ctx.key, {
    copies,
    nowMs,
    intervalMs: times.progressMs,
    nextLookAtMs: nextLookEstimate(
      nowMs,
      copies,
      times.pollMs,
      times.maxPollMs,
    ),
    signal: ctx.signal,
  });
  return progress.size === 0 ? seen : { ...seen, progress };
}

/** The informer's look; what it found wrong with itself is said on the Eviction. */
async function look(pass: Pass, need: LookNeed): Promise<Observation> {
  const { ctx, deps } = pass;
  try {
    return await deps.memory.informer.look(ctx.key, need);
  } catch (err) {
    throw new TemporaryError(
      `observing host ${pass.host} failed: ${errText(err)}`,
      { delayMs: deps.pollIntervalMs },
    );
  } finally {
    for (const w of deps.memory.informer.takeWarnings(ctx.key)) {
      pass.log.warn({ reason: w.reason }, w.message);
      emit(pass, { type: "Warning", ...w });
    }
  }
}
