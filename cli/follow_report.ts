/**
 * What following a drain prints (`drain --wait`, `wait`): the progress
 * line of an Eviction, the report when its drain ended and the exit code
 * that goes with it, and the note when `drain --wait` follows an
 * Eviction that existed already. Pure: the watch lives in cli/follow.ts.
 *
 * @module
 */
import {
  REASON_FAILED,
  REASON_NOT_IN_NOVA,
  REASON_PENDING,
  REASON_SUCCEEDED,
  REASON_WAITING_FOR_PERSON,
} from "../controllers/conditions.ts";
import type { Eviction, EvictionSpec } from "../models/mod.ts";
import { EvictionResource } from "../models/mod.ts";
import {
  countsOf,
  drainOutcome,
  seenEmptySeconds,
  stateOf,
  stateText,
} from "./eviction_state.ts";
import { renderProgressLine } from "./progress.ts";
import { formatDuration } from "./duration.ts";

const BAR_WIDTH = 30;

/**
 * The progress line of one Eviction: its bar and counts, then its state.
 * A drain the controller has not looked at yet (Pending) and one of a
 * host Nova does not know (NotInNova) draw an empty bar: nothing is
 * known to be drained.
 *
 * @example
 * ```ts
 * import { progressLine } from "./follow_report.ts";
 * const line = progressLine("n1", { spec: { hypervisor: "n1", reason: "r" } });
 * console.assert(line.includes("[" + " ".repeat(30) + "]") && line.endsWith("(Pending)"));
 * ```
 */
export function progressLine(name: string, e: Eviction): string {
  const state = stateOf(e);
  if (state === REASON_PENDING || state === REASON_NOT_IN_NOVA) {
    const why = state === REASON_PENDING
      ? "waiting for the controller's first look at the host"
      : `nothing to drain: Nova has no compute service named ${e.spec.hypervisor}`;
    return `${name.padEnd(14)} [${" ".repeat(BAR_WIDTH)}] ${why} (${state})`;
  }
  return `${renderProgressLine(name, countsOf(e), BAR_WIDTH)} (${
    stateText(e)
  })`;
}

/** How following one drain ended: the lines for stdout and the exit code. */
export interface FollowEnd {
  /** 0 drained; 1 not drained. */
  code: 0 | 1;
  /** What to print on stdout. */
  lines: string[];
}

/**
 * The report of a drain that ended, or undefined while it runs (or
 * settles): drained (0); nothing drained because Nova has no such compute
 * service (1); stopped with VMs a person must see to (1).
 *
 * @example
 * ```ts
 * import { endReport } from "./follow_report.ts";
 * console.assert(endReport("n1", { spec: { hypervisor: "n1", reason: "r" } }, 0) === undefined);
 * ```
 */
export function endReport(
  name: string,
  e: Eviction,
  nowMs: number,
): FollowEnd | undefined {
  const end = drainOutcome(e);
  const s = e.status ?? {};
  if (end === REASON_SUCCEEDED) {
    return {
      code: 0,
      lines: [
        `${name}: drained, ${
          s.migratedCount ?? 0
        } VMs migrated; the host has been seen empty for ${
          seenEmptySeconds(s, nowMs) ?? 0
        } s (since ${s.emptySince ?? s.finishedAt})`,
      ],
    };
  }
  if (end === REASON_NOT_IN_NOVA) {
    // Not a drained host: the name may be a typo of one that has VMs.
    return {
      code: 1,
      lines: [
        `${name}: nothing drained: Nova has no compute service named ${e.spec.hypervisor}; no VM was moved and no host was disabled (check the name: openstack compute service list --service nova-compute)`,
      ],
    };
  }
  if (end === REASON_FAILED) {
    return {
      code: 1,
      lines: [
        stateOf(e) === REASON_WAITING_FOR_PERSON
          ? `${name}: the drain waits for a person (no VM failed) for these VMs:`
          : `${name}: drain stopped with VMs left that need a person:`,
        ...(s.failed ?? []).map((f) =>
          `  ${f.id}: ${f.reason} (${f.attempts} attempts)`
        ),
        ...(s.skipped ?? []).map((k) => `  ${k.id}: ${k.reason}`),
      ],
    };
  }
  return undefined;
}

/**
 * The `error:` line of a drain still running when the deadline passed,
 * in kubectl wait's words.
 *
 * @example
 * ```ts
 * import { timeoutLine } from "./follow_report.ts";
 * console.log(timeoutLine("n1", undefined, 300_000));
 * // error: timed out waiting for eviction.kvm.cloud.sap/n1 after 5m: Pending (the drain goes on)
 * ```
 */
export function timeoutLine(
  name: string,
  e: Eviction | undefined,
  timeoutMs: number,
): string {
  return `error: timed out waiting for eviction.${EvictionResource.group}/${name} after ${
    formatDuration(timeoutMs)
  }: ${e === undefined ? REASON_PENDING : stateOf(e)} (the drain goes on)`;
}

/**
 * How an existing Eviction's spec differs from what `drain` was asked
 * for, in words (empty when it does not).
 *
 * @example
 * ```ts
 * import { specDifferences } from "./follow_report.ts";
 * console.log(specDifferences({ hypervisor: "n1", reason: "old" }, { hypervisor: "n1", reason: "new" }));
 * // [ 'reason "old" (not "new")' ]
 * ```
 */
export function specDifferences(
  existing: EvictionSpec,
  wanted: EvictionSpec,
): string[] {
  const out: string[] = [];
  if (existing.reason !== wanted.reason) {
    out.push(`reason "${existing.reason}" (not "${wanted.reason}")`);
  }
  if (existing.maxConcurrentMigrations !== wanted.maxConcurrentMigrations) {
    const show = (n: number | undefined) =>
      n === undefined ? "none" : String(n);
    out.push(
      `maxConcurrentMigrations ${show(existing.maxConcurrentMigrations)} (not ${
        show(wanted.maxConcurrentMigrations)
      })`,
    );
  }
  return out;
}
