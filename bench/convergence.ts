/**
 * The drain benchmark's worlds where some VMs do not converge (issue 39):
 * which VMs dirty memory faster than the host copies, the EvictionPolicy
 * `convergence` a run applies, each such VM's bound under it, the lower
 * bound of the makespan counting that bound as the VM's time, when a run
 * can make no more progress, the slot time such copies held, and the
 * targets. Pure: bench/drain.ts measures, this computes.
 *
 * @module
 */

import {
  type ConvergenceSpec,
  copyTimeoutSeconds,
  ON_TIMEOUT_BY_RISK,
  type OnTimeout,
  resolveConvergence,
} from "../limits/convergence.ts";
import { Prng } from "../tests/harness/nova_sim/prng.ts";

/**
 * The `convergence` the benchmark's EvictionPolicy carries, `onTimeout`
 * chosen per run. A plain copy takes about 1 s per GiB (1000 MB/s), so 5 s
 * per GiB is a generous completion bound; a copy whose remaining bytes
 * never fall meets the 30 s progress bound first. A paused copy of the
 * largest VM (64 GiB) takes some 66 s: the fallback abort waits 120 s.
 */
export function benchConvergence(
  onTimeout: OnTimeout,
): { [K in keyof ConvergenceSpec]-?: NonNullable<ConvergenceSpec[K]> } {
  return {
    completionTimeoutPerGiB: 5,
    progressTimeoutSeconds: 30,
    onTimeout,
    maxAbortedTries: 2,
    forceCompleteTimeoutSeconds: 120,
  };
}

/** Dirty rate of a non-converging VM: 1.5 times the copy rate. */
export const NON_CONVERGING_DIRTY_FACTOR = 1.5;

/**
 * `--on-timeout`: a comma-separated list of Report, Abort, ForceComplete;
 * one line naming the bad entry otherwise.
 *
 * @example
 * ```ts
 * import { parseOnTimeouts } from "./convergence.ts";
 * console.assert(parseOnTimeouts("Abort, ForceComplete").length === 2);
 * ```
 */
export function parseOnTimeouts(text: string): OnTimeout[] {
  const out: OnTimeout[] = [];
  for (const raw of text.split(",")) {
    const x = raw.trim();
    const known = ON_TIMEOUT_BY_RISK.find((a) => a === x);
    if (known === undefined) {
      throw new RangeError(
        `--on-timeout entries are ${ON_TIMEOUT_BY_RISK.join(", ")}, got "${x}"`,
      );
    }
    if (!out.includes(known)) out.push(known);
  }
  return out;
}

/**
 * The indices (0-based, of `n` VMs) that do not converge: `percent` % of
 * them, rounded, drawn with a seeded PRNG so their sizes vary.
 *
 * @example
 * ```ts
 * import { nonConvergingIndices } from "./convergence.ts";
 * console.assert(nonConvergingIndices(200, 10, 11).size === 20);
 * ```
 */
export function nonConvergingIndices(
  n: number,
  percent: number,
  seed: number,
): Set<number> {
  const want = Math.round((n * percent) / 100);
  const order = Array.from({ length: n }, (_, i) => i);
  const prng = new Prng(seed);
  // Fisher-Yates, the first `want` taken
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(prng.next() * (i + 1));
    [order[i], order[j]] = [order[j] ?? j, order[i] ?? i];
  }
  return new Set(order.slice(0, want));
}

/**
 * Seconds after its copy starts that the policy acts on a VM of `ramMb`
 * whose remaining bytes never fall: the sooner of the completion bound
 * and the progress bound.
 *
 * @example
 * ```ts
 * import { benchConvergence, policyBoundSeconds } from "./convergence.ts";
 * console.assert(policyBoundSeconds(benchConvergence("Abort"), 4096) === 20);
 * ```
 */
export function policyBoundSeconds(
  spec: ConvergenceSpec,
  ramMb: number,
): number {
  const p = resolveConvergence({ abortStuckMigrations: false, defaults: spec });
  return Math.min(
    copyTimeoutSeconds(p, ramMb) ?? Infinity,
    p.progressTimeoutSeconds,
  );
}

/** What one VM costs in the lower bound, simulated ms. */
export interface VmTime {
  /** From the start call to leaving when nothing waits (its first try). */
  fullMs: number;
  /** Of it, what holds one of Nova's per-host slots (its first try). */
  slotMs: number;
  /** Slot time of its later tries, each alone after the others. */
  aloneMs: number;
}

/** The fixed parts of a live migration, simulated seconds. */
export interface Overheads {
  recordDelayS: number;
  scheduleS: number;
  prepareS: number;
  liveCompleteS: number;
}

/**
 * A non-converging VM's time under `onTimeout`, its bound counted as its
 * copy: Report as if it left at its bound; Abort as `maxAbortedTries`
 * tries of its bound, the later ones alone (then it is left for a
 * person); ForceComplete its bound, then the paused copy of its RAM at
 * `copyS` (what remains when it hovers).
 *
 * @example
 * ```ts
 * import { nonConvergingTime } from "./convergence.ts";
 * const o = { recordDelayS: 0, scheduleS: 0, prepareS: 2, liveCompleteS: 0 };
 * const t = nonConvergingTime("Abort", 30, 4, 2, o);
 * console.assert(t.slotMs === 32_000 && t.aloneMs === 32_000);
 * ```
 */
export function nonConvergingTime(
  onTimeout: OnTimeout,
  boundS: number,
  copyS: number,
  maxAbortedTries: number,
  o: Overheads,
): VmTime {
  const toSlot = (copy: number) => (o.prepareS + copy + o.liveCompleteS) * 1000;
  const slotMs = onTimeout === "ForceComplete"
    ? toSlot(boundS + copyS)
    : onTimeout === "Abort"
    ? (o.prepareS + boundS) * 1000
    : toSlot(boundS);
  const tries = onTimeout === "Abort" ? maxAbortedTries : 1;
  return {
    slotMs,
    fullMs: slotMs + (o.recordDelayS + o.scheduleS) * 1000,
    aloneMs: (tries - 1) * (slotMs + (o.recordDelayS + o.scheduleS) * 1000),
  };
}

/**
 * The makespan's lower bound (ms): max(max t_i, sum t_i / our limit,
 * sum s_i / Nova's limit), plus the tries that run alone after the others.
 *
 * @example
 * ```ts
 * import { lowerBoundMs } from "./convergence.ts";
 * const vm = { fullMs: 10, slotMs: 8, aloneMs: 0 };
 * console.assert(lowerBoundMs([vm, vm, vm, vm], 2, 1) === 32);
 * ```
 */
export function lowerBoundMs(
  vms: readonly VmTime[],
  limit: number,
  novaLimit: number,
): number {
  const sum = (f: (v: VmTime) => number) => vms.reduce((a, v) => a + f(v), 0);
  return Math.max(
    Math.max(0, ...vms.map((v) => v.fullMs)),
    sum((v) => v.fullMs) / limit,
    sum((v) => v.slotMs) / novaLimit,
  ) + sum((v) => v.aloneMs);
}

/** A migration record, as `sim.state()` gives it (virtual ms). */
export interface SlotRecord {
  serverId: string;
  status: string;
  /** When it took a slot; undefined if it never did. */
  slotAt: number | undefined;
  /** Its last change (its end, once ended). */
  updatedAt: number;
  /** force_complete paused it or switched it to post-copy: it converges. */
  switchedTo?: "paused" | "post-copy" | undefined;
}

/** Statuses of a record that no longer holds a slot. */
const ENDED = ["completed", "error", "cancelled", "failed", "done"];

/** The slot time non-converging copies held, and the worst past its bound. */
export interface HeldSlots {
  /** Sum over their copies of the time each held a slot, simulated s. */
  heldS: number;
  /** The longest any held past the policy's bound (copy start + bound), s; 0 if none did. */
  worstPastBoundS: number;
  /** That copy's server, if any held past it. */
  worstServer: string | undefined;
}

/**
 * What the non-converging VMs' copies held of the host's slots by `nowMs`
 * (a copy still holding counts until then): each from `slotAt` to its end;
 * past its bound when it held longer than preparing plus `slotBoundS(id)`.
 *
 * @example
 * ```ts
 * import { heldSlots } from "./convergence.ts";
 * const h = heldSlots([{ serverId: "a", status: "cancelled", slotAt: 0, updatedAt: 40_000 }],
 *   new Set(["a"]), () => 30, 2, 50_000);
 * console.assert(h.heldS === 40 && h.worstPastBoundS === 8);
 * ```
 */
export function heldSlots(
  records: readonly SlotRecord[],
  nonConverging: ReadonlySet<string>,
  slotBoundS: (serverId: string) => number,
  prepareS: number,
  nowMs: number,
): HeldSlots {
  let heldMs = 0;
  let worst = 0;
  let worstServer: string | undefined;
  for (const r of records) {
    if (!nonConverging.has(r.serverId) || r.slotAt === undefined) continue;
    const end = ENDED.includes(r.status) ? r.updatedAt : nowMs;
    const held = Math.max(0, end - r.slotAt);
    heldMs += held;
    const past = held - (prepareS + slotBoundS(r.serverId)) * 1000;
    if (past > worst) {
      worst = past;
      worstServer = r.serverId;
    }
  }
  return { heldS: heldMs / 1000, worstPastBoundS: worst / 1000, worstServer };
}

/** What {@linkcode stalled} looks at. */
export interface StallInput {
  /** Virtual now (ms). */
  nowMs: number;
  /** The host's records that hold a slot now. */
  holding: readonly SlotRecord[];
  nonConverging: ReadonlySet<string>;
  /** The policy's bound of a VM (s from its copy's start). */
  boundS: (serverId: string) => number;
  prepareS: number;
  /** How long past its bound the operator may take to act (ms). */
  graceMs: number;
  /** Slots the host can hold at once: min(our limit, Nova's). */
  slots: number;
  /** Converging VMs still on the host. */
  convergingLeft: number;
}

/**
 * A run that can make no more progress: every slot-holding copy is a
 * non-converging one, not force-completed (a paused or post-copy one
 * converges), held past its bound plus the grace, and either the slots are
 * full or only non-converging VMs are left. (With Report that is where a
 * drain ends up; with Abort or ForceComplete the operator should have
 * acted.)
 *
 * @example
 * ```ts
 * import { stalled } from "./convergence.ts";
 * const r = { serverId: "a", status: "running", slotAt: 0, updatedAt: 0 };
 * console.assert(stalled({ nowMs: 40_000, holding: [r], nonConverging: new Set(["a"]),
 *   boundS: () => 30, prepareS: 2, graceMs: 4000, slots: 1, convergingLeft: 5 }));
 * ```
 */
export function stalled(x: StallInput): boolean {
  if (x.holding.length === 0) return false;
  const pastBound = x.holding.every((r) =>
    x.nonConverging.has(r.serverId) && r.slotAt !== undefined &&
    r.switchedTo === undefined &&
    x.nowMs >= r.slotAt + (x.prepareS + x.boundS(r.serverId)) * 1000 +
        x.graceMs
  );
  return pastBound && (x.holding.length >= x.slots || x.convergingLeft === 0);
}

/** What the convergence targets look at of one run. */
export interface ConvergenceFigures {
  name: string;
  onTimeout: OnTimeout;
  worstPastBoundS: number;
  /** The run ended without a drain outcome (no more progress possible). */
  stalled: boolean;
}

/** One row of the target table. */
export interface ConvergenceVerdict {
  target: string;
  result: string;
  met: boolean;
}

/**
 * Issue 39's targets for runs with non-converging VMs: with Abort or
 * ForceComplete no slot is held past its policy's bound plus one progress
 * interval, and no such run stalls. Report runs have none (they show
 * what holding costs).
 *
 * @example
 * ```ts
 * import { convergenceTargets } from "./convergence.ts";
 * const v = convergenceTargets([{ name: "polling 4x8:nc10", onTimeout: "Abort",
 *   worstPastBoundS: 3, stalled: false }], 30);
 * console.assert(v.every((x) => x.met));
 * ```
 */
export function convergenceTargets(
  runs: readonly ConvergenceFigures[],
  progressIntervalS: number,
): ConvergenceVerdict[] {
  const acting = runs.filter((r) => r.onTimeout !== "Report");
  if (acting.length === 0) return [];
  const worst = acting.reduce((a, r) =>
    r.worstPastBoundS > a.worstPastBoundS ? r : a
  );
  const stalls = acting.filter((r) => r.stalled);
  return [
    {
      target:
        `Abort / ForceComplete: no slot held past its bound + one progress interval (${progressIntervalS} s) (worst)`,
      result: `${
        worst.worstPastBoundS.toFixed(1)
      } s (${worst.name} ${worst.onTimeout})`,
      met: worst.worstPastBoundS <= progressIntervalS,
    },
    {
      target: "Abort / ForceComplete: every drain ends (none stalled)",
      result: stalls.length === 0
        ? "none stalled"
        : stalls.map((r) => `${r.name} ${r.onTimeout}`).join(", "),
      met: stalls.length === 0,
    },
  ];
}
