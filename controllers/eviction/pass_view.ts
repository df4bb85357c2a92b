/**
 * Observe with Nova's notifications (`deps.memory.watches`, issue 23): a pass
 * that only starts migrations plans from the host's list-and-watch view
 * when it is trustworthy, without a Nova call (Nova's own 409 on a VM
 * already migrating stays the guard against a double start). A pass that
 * could finish, settle, confirm, abort or charge a failure reads Nova
 * afresh, as does every pass while the feed is not trustworthy (polling,
 * exactly as without notifications) and one at the relist interval;
 * each fresh look rebuilds the view (subscribe first, then list), and the
 * VMs on which the old view differed from it are counted
 * (`evictor_notification_view_diffs_total`). Whether the view is
 * trustworthy is the informer's to say (host_watches.ts, feed_trust.ts):
 * this phase hands it the drain's starts as probes and reports the
 * demotions it decided (an Event and
 * `evictor_nova_notifications_demotions_total`). A plan from the view
 * never starts a VM twice: only a direct look begun after a start's
 * answer may release it (once.ts).
 *
 * @module
 */

import type { EvictionStatusInFlightItem } from "../../models/mod.ts";
import { recordMatchesEntry } from "./classify.ts";
import type { Demotion } from "./feed_trust.ts";
import type { ObservedMigration } from "./observation.ts";
import { emit, type Pass } from "./pass.ts";
import type { Plan, PlanInput } from "./plan.ts";
import type { Observation } from "./observation.ts";

/** A plan and the input it was made from. */
export interface Planned {
  /** The plan. */
  plan: Plan;
  /** Its input. */
  input: PlanInput;
}

/** What the look found; `planned` when the pass plans from the view. */
export interface Looked {
  /** The observation. */
  seen: Observation;
  /** The plan made from the view, to be used as it is. */
  planned?: Planned;
}

/**
 * Whether a pass may act on a plan made from the view: it only starts
 * migrations, counts completions and waits. Finishing (or settling),
 * confirming, aborting and charging a failure need a fresh look.
 *
 * @example
 * ```ts
 * import { plansFromView } from "./pass_view.ts";
 * const plan = { finished: false, settleAtMs: undefined, confirmResize: [], abort: [], failed: [], stuck: [] };
 * console.assert(plansFromView(plan));
 * console.assert(!plansFromView({ ...plan, settleAtMs: 5 }));
 * ```
 */
export function plansFromView(
  plan: Pick<
    Plan,
    "finished" | "settleAtMs" | "confirmResize" | "abort" | "failed" | "stuck"
  >,
): boolean {
  return !plan.finished && plan.settleAtMs === undefined &&
    plan.confirmResize.length === 0 && plan.abort.length === 0 &&
    plan.failed.length === 0 && plan.stuck.length === 0;
}

/**
 * Whether a plan from the view releases only slots the view saw freed by
 * a live migration of ours completing (its record, matched to the start,
 * `completed`): anything else a plan would release from the status's
 * in-flight set (a cold move, a deletion, a VM the view lost track of)
 * needs a fresh look, so that a view that missed events never frees a
 * slot it should not (and never starts one too many).
 *
 * @example
 * ```ts
 * import { releasesOnlyCompleted } from "./pass_view.ts";
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

/**
 * The default relist interval in poll intervals (60 s at the default 2 s):
 * a relist costs 2 Nova calls per draining host, so a drain at limit L
 * whose migrations take t_mig each pays 1 + 2 x (t_mig / L) / T_relist
 * calls per migrated VM; <= 1.5 needs T_relist >= 4 x t_mig / L (37 s for
 * the benchmark's ~9.2 s migrations at limit 1; 60 s gives 1.31).
 */
export const RELIST_POLLS = 30;

/**
 * How old (real ms) a drain's notified view may be before its next pass
 * lists the host afresh: `relistMs`, and for a drain that holds no
 * migration (finished, or waiting for budget: only events can change its
 * host, and an arrival wakes it) no less than the slow finished check.
 *
 * @example
 * ```ts
 * import { relistAgeMs } from "./pass_view.ts";
 * console.assert(relistAgeMs({ relistMs: 60_000, finishedCheckMs: 120_000, holding: 2 }) === 60_000);
 * console.assert(relistAgeMs({ relistMs: 60_000, finishedCheckMs: 120_000, holding: 0 }) === 120_000);
 * ```
 */
export function relistAgeMs(
  input: { relistMs: number; finishedCheckMs: number; holding: number },
): number {
  const { relistMs, finishedCheckMs, holding } = input;
  return holding > 0 ? relistMs : Math.max(relistMs, finishedCheckMs);
}

/**
 * Observe: the host's view when it is trustworthy, recent (listed within
 * the relist interval, {@linkcode relistAgeMs}) and the plan it gives (`plan`) only starts or
 * waits (that plan is then the pass's); else `fresh()` (Nova), which
 * becomes the host's new view. Without notifications, always `fresh()`.
 */
export async function lookAtHost(
  pass: Pass,
  plan: (seen: Observation) => Planned,
  fresh: () => Promise<Observation>,
): Promise<Looked> {
  const { ctx, deps, host, state } = pass;
  const watches = deps.memory.watches;
  if (watches === undefined) return { seen: await fresh() };
  watches.takeWake(ctx.key);
  watches.probeStarts(ctx.key, state.starts);
  const maxAgeMs = relistAgeMs({
    relistMs: deps.relistMs,
    finishedCheckMs: deps.finishedCheckMs,
    holding: Math.max(pass.claimedFrom ?? 0, pass.status.inFlightCount ?? 0),
  });
  const view = watches.trustworthyView(ctx.key, maxAgeMs * pass.rate);
  reportDemotions(pass, watches.takeDemotions(ctx.key));
  if (view !== undefined) {
    const seen = view.observation(pass.status, (id) => state.ram.get(id));
    const planned = plan(seen);
    const { options } = planned.input;
    if (
      plansFromView(planned.plan) &&
      releasesOnlyCompleted(
        pass.status.inFlight ?? [],
        planned.plan.next.inFlight ?? [],
        seen.migrations,
        host,
        options.clockSkewMs,
        options.novaClockOffsetMs,
      )
    ) {
      for (const s of seen.servers) state.ram.set(s.id, s.flavor.ramMb);
      deps.metrics.looks.inc({ source: "view" });
      return { seen, planned };
    }
  }
  const stamp = watches.beginList(ctx.key, host);
  let seen: Observation;
  try {
    seen = await fresh();
  } catch (err) {
    watches.abortList(ctx.key, stamp);
    throw err;
  }
  deps.metrics.looks.inc({ source: "nova" });
  const relisted = watches.endList(ctx.key, stamp, seen);
  if (relisted.diffs.length > 0) {
    deps.metrics.viewDiffs.inc({ hypervisor: host }, relisted.diffs.length);
    pass.log.warn(
      { servers: relisted.diffs },
      "the relist found the notified view of the host differing (a missed event)",
    );
  }
  reportDemotions(pass, watches.takeDemotions(ctx.key));
  return { seen };
}

/** Says why the informer stopped trusting the host's view (or the feed). */
function reportDemotions(pass: Pass, demotions: readonly Demotion[]): void {
  for (const d of demotions) {
    pass.deps.metrics.demotions.inc({ scope: d.scope, reason: d.reason });
    const what = d.scope === "feed"
      ? "Nova's notification feed demoted for every host"
      : `the notified view of ${pass.host} demoted to polling`;
    pass.log.warn({ scope: d.scope, reason: d.reason }, `${what}: ${d.detail}`);
    emit(pass, {
      type: "Warning",
      reason: d.scope === "feed"
        ? "NotificationFeedDemoted"
        : "NotificationViewDemoted",
      message: `${what} (${d.reason}): ${d.detail}`,
    });
  }
}
