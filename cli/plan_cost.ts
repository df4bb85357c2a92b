/**
 * The cost `kubectl evictor plan` predicts with, and how it says where it
 * comes from and how uncertain it is: learned from ended drains
 * (capacity/history.ts), or the documented defaults with the range up to a
 * slow network, with the command line's `--mb-per-second`,
 * `--overhead-seconds` and `--fixed-seconds` replacing their parts.
 *
 * @module
 */

import type { DrainCost, LearnedCost } from "../capacity/history.ts";
import type { PlanCost } from "./plan.ts";

/** The parts of the cost given on the command line. */
export interface CostFlags {
  /** `--mb-per-second`. */
  mbPerSecond?: number | undefined;
  /** `--overhead-seconds`. */
  overheadSeconds?: number | undefined;
  /** `--fixed-seconds`. */
  fixedSeconds?: number | undefined;
}

/**
 * A cost as one phrase.
 *
 * @example
 * ```ts
 * import { costText } from "./plan_cost.ts";
 * console.log(costText({ mbPerSecond: 63, overheadSeconds: 11, fixedSeconds: 14 }));
 * // 63 MB/s + 11 s per migration + 14 s per drain
 * ```
 */
export function costText(c: DrainCost): string {
  const n = (x: number) => String(Math.round(x * 10) / 10);
  return `${n(c.mbPerSecond)} MB/s + ${
    n(c.overheadSeconds)
  } s per migration + ${n(c.fixedSeconds)} s per drain`;
}

function plural(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? "" : "s"}`;
}

/**
 * The plan's cost: the learned one with the command line's parts put in
 * (in the range's costs too), its source, and its uncertainty.
 *
 * @example
 * ```ts
 * import { planCost } from "./plan_cost.ts";
 * import { learnedCost } from "../capacity/history.ts";
 * const c = planCost(learnedCost([]), {});
 * console.log(c.source);
 * // documented defaults assumed: no ended drain to learn from
 * ```
 */
export function planCost(learned: LearnedCost, flags: CostFlags): PlanCost {
  const put = (c: DrainCost): DrainCost => ({
    mbPerSecond: flags.mbPerSecond ?? c.mbPerSecond,
    overheadSeconds: flags.overheadSeconds ?? c.overheadSeconds,
    fixedSeconds: flags.fixedSeconds ?? c.fixedSeconds,
  });
  const cost = put(learned);
  const spread = learned.spread.map(put);
  const given = [
    flags.mbPerSecond === undefined ? [] : ["rate"],
    flags.overheadSeconds === undefined ? [] : ["time per migration"],
    flags.fixedSeconds === undefined ? [] : ["time per drain"],
  ].flat();
  const hosts = learned.hosts.join(", ");
  const fixed = learned.fixedMeasured
    ? "time per drain measured"
    : "time per drain assumed (no drain measured one)";
  const learnedText = learned.source === "observed"
    ? `observed by the latest ${
      plural(learned.drains, "ended drain")
    } (${hosts}); ${fixed}`
    : learned.source === "calibrated"
    ? `documented defaults calibrated on the makespans of ${
      plural(learned.drains, "ended drain")
    } (${hosts}), which observed no rate`
    : "documented defaults assumed: no ended drain to learn from";
  const source = given.length === 0
    ? learnedText
    : given.length === 3
    ? "from the command line"
    : `${given.join(" and ")} from the command line, the rest ${learnedText}`;
  const distinct = new Set(spread.map(costText));
  distinct.add(costText(cost));
  const uncertainty = distinct.size < 2
    ? undefined
    : learned.source === "default"
    ? `without history the defaults are the fast end (${
      costText(spread[0] ?? cost)
    }) and the slow end is ${
      costText(spread[spread.length - 1] ?? cost)
    } (a slow or shared network: a real Zed cloud measured 63 MB/s + 11 s per migration); drain one host to learn the real rate`
    : `over the costs of the latest ${plural(learned.drains, "ended drain")}`;
  return {
    ...cost,
    source,
    spread,
    ...(uncertainty === undefined ? {} : { uncertainty }),
  };
}
