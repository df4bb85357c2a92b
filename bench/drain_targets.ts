/**
 * The drain benchmark's targets (issue 38) and their verdicts, from the
 * runs' figures and the report they replace (its calls per VM are the
 * notification mode's ceiling). Pure: bench/drain.ts measures, this judges.
 *
 * @module
 */

import type { Mode } from "./modes.ts";

/** The hosts drained: 200 VMs of 1-16 GiB, or 40 of 2-64 GiB. */
export type HostKind = "uniform" | "mixed";

/** What the targets look at of one run. */
export interface RunFigures {
  mode: Mode;
  host: HostKind;
  limit: number;
  novaLimit: number;
  /** Simulated seconds one start's answer was late (0: none). */
  delayS: number;
  vms: number;
  ratio: number;
  callsPerVm: number;
  /** VMs Nova migrated more than once. */
  twice: number;
  /** Mean time a freed slot idled, simulated s. */
  meanIdleS: number;
}

/** One row of the target table. */
export interface Verdict {
  target: string;
  result: string;
  met: boolean;
}

/** The ceilings (issue 38's "what it must show"). */
export const TARGETS = {
  pollingRatio: 1.15,
  pollingCallsPerVm: 4.5,
  notifiedRatio: 1.03,
  notifiedCallsPerVm: 1.5,
  notifiedIdleS: 0.3,
  mixedRatio: 1.03,
} as const;

/** Calls per VM are reported to 3 decimals: equal within this. */
const CALLS_EPSILON = 0.005;

/**
 * A configuration's name, as `--configs` spells it, with its mode:
 * `polling 4x8`, `notifications 4x8+delay30`, `polling 4x1:mixed`.
 *
 * @example
 * ```ts
 * import { configName } from "./drain_targets.ts";
 * console.assert(configName({ mode: "polling", host: "mixed", limit: 4, novaLimit: 1, delayS: 0 }) === "polling 4x1:mixed");
 * ```
 */
export function configName(
  r: Pick<RunFigures, "mode" | "host" | "limit" | "novaLimit" | "delayS">,
): string {
  return `${r.mode} ${r.limit}x${r.novaLimit}${
    r.delayS > 0 ? `+delay${r.delayS}` : ""
  }${r.host === "mixed" ? ":mixed" : ""}`;
}

/**
 * Calls per VM and VMs of each configuration of a drain report
 * (bench/reports/drain.json, older ones without `host` included), by
 * {@linkcode configName}; entries that do not parse, and runs with
 * non-converging VMs, are left out.
 *
 * @example
 * ```ts
 * import { baselineOf } from "./drain_targets.ts";
 * const b = baselineOf({ configurations: [{ mode: "notifications", limit: 4,
 *   novaHostLimit: 8, vms: 200, novaCallsPerVm: 1.13 }] });
 * console.assert(b.get("notifications 4x8")?.callsPerVm === 1.13);
 * ```
 */
export function baselineOf(
  report: unknown,
): Map<string, { callsPerVm: number; vms: number }> {
  const out = new Map<string, { callsPerVm: number; vms: number }>();
  const list = (report as { configurations?: unknown })?.configurations;
  if (!Array.isArray(list)) return out;
  for (const c of list) {
    const mode = c?.mode;
    const [limit, novaLimit, calls, vms] = [
      c?.limit,
      c?.novaHostLimit,
      c?.novaCallsPerVm,
      c?.vms,
    ];
    if (mode !== "polling" && mode !== "notifications") continue;
    // runs with non-converging VMs are no baseline of the plain ones
    if (c?.nonConverging !== undefined) continue;
    if (![limit, novaLimit, calls, vms].every((x) => typeof x === "number")) {
      continue;
    }
    const delayS = typeof c?.delayedStart?.delayS === "number"
      ? c.delayedStart.delayS
      : 0;
    const host: HostKind = c?.host === "mixed" ? "mixed" : "uniform";
    out.set(configName({ mode, host, limit, novaLimit, delayS }), {
      callsPerVm: calls,
      vms,
    });
  }
  return out;
}

/** The run with the largest `f`, and that value. */
function worst<R extends RunFigures>(
  rows: readonly R[],
  f: (r: R) => number,
): { row: R; value: number } | undefined {
  let best: { row: R; value: number } | undefined;
  for (const row of rows) {
    const value = f(row);
    if (best === undefined || value > best.value) best = { row, value };
  }
  return best;
}

/** A "worst run at most `limit`" verdict, or none without runs. */
function atMost(
  target: string,
  rows: readonly RunFigures[],
  f: (r: RunFigures) => number,
  limit: number,
  digits: number,
  unit = "",
): Verdict[] {
  const w = worst(rows, f);
  if (w === undefined) return [];
  return [{
    target,
    result: `${w.value.toFixed(digits)}${unit} (${configName(w.row)})`,
    met: w.value <= limit,
  }];
}

/**
 * The target table's rows for `rows` (a mode or host not run has none),
 * notification mode's calls per VM compared with `baseline` (configurations
 * it has with as many VMs).
 *
 * @example
 * ```ts
 * import { drainTargets } from "./drain_targets.ts";
 * const run = { mode: "polling" as const, host: "uniform" as const, limit: 4,
 *   novaLimit: 8, delayS: 0, vms: 200, ratio: 1.1, callsPerVm: 2.7, twice: 0, meanIdleS: 1 };
 * console.assert(drainTargets([run], new Map()).every((v) => v.met));
 * ```
 */
export function drainTargets(
  rows: readonly RunFigures[],
  baseline: ReadonlyMap<string, { callsPerVm: number; vms: number }>,
): Verdict[] {
  const polled = rows.filter((r) => r.mode === "polling");
  const notified = rows.filter((r) => r.mode === "notifications");
  const undelayed = (xs: readonly RunFigures[]) =>
    xs.filter((r) => r.delayS === 0);
  const mixed = rows.filter((r) => r.host === "mixed" && r.delayS === 0);
  const compared = notified.flatMap((r) => {
    const b = baseline.get(configName(r));
    return b === undefined || b.vms !== r.vms
      ? []
      : [{ ...r, before: b.callsPerVm }];
  });
  const T = TARGETS;
  const verdicts: Verdict[] = [
    ...atMost(
      `polling: ratio <= ${T.pollingRatio} in every configuration (worst)`,
      undelayed(polled),
      (r) => r.ratio,
      T.pollingRatio,
      3,
    ),
    ...atMost(
      `polling: <= ${T.pollingCallsPerVm} Nova calls per migrated VM (worst run)`,
      polled,
      (r) => r.callsPerVm,
      T.pollingCallsPerVm,
      2,
    ),
    ...atMost(
      `notifications: ratio <= ${T.notifiedRatio} in every configuration (worst)`,
      undelayed(notified),
      (r) => r.ratio,
      T.notifiedRatio,
      3,
    ),
    ...atMost(
      `notifications: <= ${T.notifiedCallsPerVm} Nova calls per migrated VM (worst run)`,
      notified,
      (r) => r.callsPerVm,
      T.notifiedCallsPerVm,
      2,
    ),
  ];
  const w = worst(compared, (r) => r.callsPerVm - r.before);
  if (w !== undefined) {
    const d = w.value;
    verdicts.push({
      target:
        "notifications: no more Nova calls per VM than the report replaced (worst change)",
      result: `${d >= 0 ? "+" : ""}${d.toFixed(2)} (${configName(w.row)}: ${
        w.row.before.toFixed(2)
      } -> ${w.row.callsPerVm.toFixed(2)})`,
      met: d <= CALLS_EPSILON,
    });
  }
  verdicts.push(
    ...atMost(
      `notifications: mean idle slot <= ${T.notifiedIdleS} s (worst run)`,
      undelayed(notified),
      (r) => r.meanIdleS,
      T.notifiedIdleS,
      2,
      " s",
    ),
    ...atMost(
      `mixed host (2-64 GiB): ratio <= ${T.mixedRatio}, both modes (worst)`,
      mixed,
      (r) => r.ratio,
      T.mixedRatio,
      3,
    ),
  );
  if (rows.length > 0) {
    const twice = rows.reduce((a, r) => a + r.twice, 0);
    verdicts.push({
      target: "VMs migrated twice (all runs)",
      result: String(twice),
      met: twice === 0,
    });
  }
  return verdicts;
}
