/**
 * Look: what the drain knows of its host for this pass. A pass that only
 * starts migrations plans from the informer's snapshot of the host when
 * the informer vouches for it (openstack/informer/), without a Nova call;
 * a pass that could finish, settle, confirm, abort or charge a failure,
 * one whose plan would release a slot the snapshot cannot prove freed,
 * and one past the relist age asks the informer for a direct look at Nova
 * (observe.ts), which becomes the host's cache. Nova's own 409 on a VM
 * already migrating stays the guard against a double start, and only a
 * direct look begun after a start's answer may release it (once.ts).
 *
 * @module
 */

import type { EvictionStatusInFlightItem } from "../../models/mod.ts";
import { recordMatchesEntry } from "./classify.ts";
import type { ObservedMigration } from "../../openstack/informer/snapshot.ts";
import { emit, knownNovaLimit, type Pass } from "./pass.ts";
import type { Plan, PlanInput } from "./plan_types.ts";
import type { Observation } from "../../openstack/informer/snapshot.ts";

/** A plan and the input it was made from. */
export interface Planned {
  /** The plan. */
  plan: Plan;
  /** Its input. */
  input: PlanInput;
}

/** What the look found; `planned` when the pass plans from the snapshot. */
export interface Looked {
  /** The observation. */
  seen: Observation;
  /** The plan made from the snapshot, to be used as it is. */
  planned?: Planned;
}

/**
 * Whether a pass may act on a plan made from a snapshot: it only starts
 * migrations, counts completions and waits. Finishing (or settling),
 * confirming, aborting and charging a failure need a fresh look.
 *
 * @example
 * ```ts
 * import { plansFromSnapshot } from "./pass_look.ts";
 * const plan = { finished: false, settleAtMs: undefined, confirmResize: [], abort: [], failed: [], stuck: [] };
 * console.assert(plansFromSnapshot(plan));
 * console.assert(!plansFromSnapshot({ ...plan, settleAtMs: 5 }));
 * ```
 */
export function plansFromSnapshot(
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
 * Whether a plan from a snapshot releases only slots it saw freed by
 * a live migration of ours completing (its record, matched to the start,
 * `completed`): anything else a plan would release from the status's
 * in-flight set (a cold move, a deletion, a VM the cache lost track of)
 * needs a fresh look, so that a cache that missed a change never frees a
 * slot it should not (and never starts one too many).
 *
 * @example
 * ```ts
 * import { releasesOnlyCompleted } from "./pass_look.ts";
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
 * the oldest snapshot a pass plans from; a relist costs 2 Nova calls per
 * draining host, so a drain at limit L
 * whose migrations take t_mig each pays 1 + 2 x (t_mig / L) / T_relist
 * calls per migrated VM; <= 1.5 needs T_relist >= 4 x t_mig / L (37 s for
 * the benchmark's ~9.2 s migrations at limit 1; 60 s gives 1.31).
 */
export const RELIST_POLLS = 30;

/**
 * How old (real ms) the snapshot a drain plans from may be before its
 * next pass looks at the host afresh: `relistMs`, and for a drain that holds no
 * migration (finished, or waiting for budget: an arrival on its host wakes
 * it) no less than the slow finished check.
 *
 * @example
 * ```ts
 * import { relistAgeMs } from "./pass_look.ts";
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
 * Look: the informer's snapshot of the host when it is recent (within
 * {@linkcode relistAgeMs}) and the plan it gives (`plan`) only starts or
 * waits (that plan is then the pass's); else a direct look (`fresh`,
 * Nova), which becomes the host's cache. What the informer found wrong
 * with itself is reported on the Eviction.
 */
export async function lookAtHost(
  pass: Pass,
  plan: (seen: Observation) => Planned,
  fresh: () => Promise<Observation>,
): Promise<Looked> {
  const { ctx, deps, host, state } = pass;
  const informer = deps.memory.informer;
  const maxAgeMs = relistAgeMs({
    relistMs: pass.times.relistMs,
    finishedCheckMs: pass.times.finishedCheckMs,
    holding: Math.max(pass.claimedFrom ?? 0, pass.status.inFlightCount ?? 0),
  });
  const snapshot = informer.snapshot(ctx.key, {
    maxAgeMs,
    status: pass.status,
    ram: (id) => state.ram.get(id),
    starts: state.starts.values(),
    novaLimit: knownNovaLimit(pass),
    endsBy: state.pace.endsBy(),
  });
  reportWarnings(pass);
  if (snapshot !== undefined) {
    const planned = plan(snapshot);
    const { options } = planned.input;
    if (
      plansFromSnapshot(planned.plan) &&
      releasesOnlyCompleted(
        pass.status.inFlight ?? [],
        planned.plan.next.inFlight ?? [],
        snapshot.migrations,
        host,
        options.clockSkewMs,
        options.novaClockOffsetMs,
      )
    ) {
      for (const s of snapshot.servers) state.ram.set(s.id, s.flavor.ramMb);
      deps.metrics.looks.inc({ source: "view" });
      return { seen: snapshot, planned };
    }
  }
  const seen = await informer.look(ctx.key, host, fresh);
  deps.metrics.looks.inc({ source: "nova" });
  reportWarnings(pass);
  return { seen };
}

/** Says on the Eviction what the informer found wrong with itself. */
function reportWarnings(pass: Pass): void {
  for (const w of pass.deps.memory.informer.takeWarnings(pass.ctx.key)) {
    pass.log.warn({ reason: w.reason }, w.message);
    emit(pass, { type: "Warning", ...w });
  }
}
