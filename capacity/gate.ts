/**
 * The capacity phase of a drain, before the compute service is disabled:
 * check the wave's VMs against Placement, say so in a `CapacityChecked`
 * condition, predict the drain's makespan, and tell the pass whether to
 * hold (policy `capacityCheck: Hold` and not everything fits).
 *
 * Independent of the pass's internals: the pass passes the wave, the mode
 * and the hosts' limits, and applies the condition it gets back.
 *
 * @module
 */

import type {
  Eviction,
  EvictionStatus,
  EvictionStatusConditionsItem,
  Hypervisor,
} from "../models/mod.ts";
import {
  type CapacityNova,
  type CapacityPlacement,
  type CapacityReport,
  checkCapacity,
  type DrainedHost,
} from "./check.ts";
import type { RecentMemo } from "./memo.ts";
import type { MigrationRate } from "./makespan.ts";
import {
  DEFAULT_COST,
  type DrainCost,
  drainLessons,
  learnedCost,
} from "./history.ts";
import { predictDrains } from "./prediction.ts";
import {
  capacityVerdict,
  CONDITION_CAPACITY_CHECKED,
  REASON_CHECK_FAILED,
  type REASON_FITS,
  type REASON_NO_TARGET,
} from "./verdict.ts";

/** What a drain does when not everything fits. */
export type CapacityMode = "Warn" | "Hold";

/** Input of {@linkcode capacityGate}. */
export interface CapacityGateInput {
  /** The host of this drain. */
  host: string;
  /** Every Eviction in the cache: the wave, and the history the rate is calibrated on. */
  evictions: readonly Eviction[];
  /** The Hypervisor of a host (for its provider UUID), if cached. */
  hypervisor: (name: string) => Hypervisor | undefined;
  /** Every cached Hypervisor: their status.lastDrain is history the rate is learned from. */
  hypervisors?: readonly Hypervisor[];
  /**
   * When an Eviction's drain ended (epoch ms), undefined while it runs: the
   * controller reads it from the Eviction's conditions.
   */
  endOf: (eviction: Eviction) => number | undefined;
  /** The policy's capacityCheck (absent: Warn). */
  mode: CapacityMode | undefined;
  /** The migration limit in force for a host of the wave (this one included). */
  limitOf: (host: string) => number;
  /** The cluster budget (policy clusterMaxConcurrentMigrations), if any. */
  budget?: number | undefined;
  /**
   * The cost predictions assume before any drain has ended (default
   * {@linkcode DEFAULT_COST}; without `fixedSeconds`, its time per drain).
   */
  defaultRate?: MigrationRate | DrainCost;
  /** Cancels the calls. */
  signal?: AbortSignal;
  /** Shares one report among the drains of a wave. */
  memo?: { memo: RecentMemo<CapacityReport>; nowMs: number };
}

/** The condition the pass sets, and what it does next. */
export interface CapacityGateResult {
  /** The `CapacityChecked` condition. */
  condition: {
    type: typeof CONDITION_CAPACITY_CHECKED;
    status: "True" | "False" | "Unknown";
    reason:
      | typeof REASON_FITS
      | typeof REASON_NO_TARGET
      | typeof REASON_CHECK_FAILED;
    message: string;
  };
  /** Do not disable the host or start migrations yet. */
  hold: boolean;
  /** Predicted makespan of this host's drain, whole seconds (when checked). */
  predictedMakespanSeconds?: number;
}

/**
 * The hosts of a wave: every unfinished Eviction that is not being deleted
 * drains its host together with this one, so their VMs are placed in one
 * assignment and their providers are no target. Provider UUIDs come from
 * the Hypervisors' status.hypervisorId when known.
 *
 * @example
 * ```ts
 * import { waveOf } from "./gate.ts";
 * const wave = waveOf("a", [{ metadata: { name: "b" }, spec: { hypervisor: "b", reason: "r" } }], () => undefined);
 * console.log(wave.map((h) => h.name)); // [ "a", "b" ]
 * ```
 */
export function waveOf(
  host: string,
  evictions: readonly Eviction[],
  hypervisor: (name: string) => Hypervisor | undefined,
): DrainedHost[] {
  const names = new Set([host]);
  for (const e of evictions) {
    const deleting = (e.metadata?.deletionTimestamp ?? "") !== "";
    if (e.status?.finishedAt === undefined && !deleting) {
      names.add(e.spec.hypervisor);
    }
  }
  return [...names].sort().map((name) => {
    const uuid = hypervisor(name)?.status?.hypervisorId;
    return uuid === undefined || uuid === ""
      ? { name }
      : { name, providerUuid: uuid };
  });
}

/**
 * Runs the capacity check for one drain. Never throws for a failed check:
 * the condition becomes Unknown (and Hold holds, since nothing says the
 * VMs fit).
 *
 * @example
 * ```ts ignore
 * const gate = await capacityGate(nova, placement, {
 *   host, evictions, hypervisor: (n) => hypervisors.get(n), mode: "Hold", limitOf: () => 4,
 * });
 * if (gate.hold) return { requeueAfterMs: slowPollMs };
 * ```
 */
export async function capacityGate(
  nova: CapacityNova,
  placement: CapacityPlacement,
  input: CapacityGateInput,
): Promise<CapacityGateResult> {
  const hold = input.mode === "Hold";
  let report;
  try {
    const wave = waveOf(input.host, input.evictions, input.hypervisor);
    const check = () =>
      checkCapacity(
        nova,
        placement,
        wave,
        input.signal === undefined ? {} : { signal: input.signal },
      );
    report = input.memo === undefined ? await check() : await input.memo.memo
      .get(JSON.stringify(wave), input.memo.nowMs, check);
  } catch (err) {
    return {
      condition: {
        type: CONDITION_CAPACITY_CHECKED,
        status: "Unknown",
        reason: REASON_CHECK_FAILED,
        message: `the capacity check failed: ${
          err instanceof Error ? err.message : String(err)
        }${hold ? "; capacityCheck is Hold, so the drain waits" : ""}`,
      },
      hold,
    };
  }
  const verdict = capacityVerdict({
    host: input.host,
    vmsPerHost: new Map(
      [...report.vmsByHost].map(([h, vms]) => [h, vms.length]),
    ),
    unplaced: report.assignment.unplaced,
  });
  // The cost the latest ended drains observed (else the default), and the
  // wave's hosts sharing the budget: under a budget a drain that runs
  // beside others takes longer than alone.
  const cost = learnedCost(
    drainLessons(input.evictions, input.hypervisors ?? [], input.endOf),
    { ...DEFAULT_COST, ...input.defaultRate },
  );
  const predicted = predictDrains(
    [...report.vmsByHost].map(([host, vms]) => ({
      host,
      ramMb: vms.map((v) => v.resources["MEMORY_MB"] ?? 0),
      limit: Math.max(1, input.limitOf(host)),
    })),
    input.budget,
    cost,
  ).get(input.host) ?? {
    predictedSeconds: cost.fixedSeconds,
    lowerBoundSeconds: cost.fixedSeconds,
  };
  const holding = hold && verdict.status === "False";
  return {
    condition: {
      type: CONDITION_CAPACITY_CHECKED,
      status: verdict.status,
      reason: verdict.reason,
      message: holding
        ? `${verdict.message}; capacityCheck is Hold: the compute service stays enabled and no migration starts until they fit`
        : verdict.message,
    },
    hold: holding,
    predictedMakespanSeconds: Math.ceil(predicted.predictedSeconds),
  };
}

/** A condition setter (the controllers' `setCondition`), passed in. */
export type SetCondition = (
  conditions: readonly EvictionStatusConditionsItem[],
  update: CapacityGateResult["condition"],
  now: Date,
  generation?: number,
) => EvictionStatusConditionsItem[];

/** What a pass does after the capacity phase. */
export interface CapacityPhase {
  /** The status with the condition and the prediction. */
  status: EvictionStatus;
  /** A Warning event to send (only when the verdict changed). */
  event?: { type: "Warning"; reason: string; message: string };
  /** Do not disable the host or start migrations yet. */
  hold: boolean;
}

/**
 * Applies a gate's result to an Eviction's status (pure): sets the
 * condition, records the prediction, and asks for a Warning event when a
 * verdict other than True is new or changed.
 *
 * @example
 * ```ts ignore
 * const phase = applyGate(status, gate, now, generation, setCondition);
 * ```
 */
export function applyGate(
  status: EvictionStatus,
  gate: CapacityGateResult,
  now: Date,
  generation: number | undefined,
  setCondition: SetCondition,
): CapacityPhase {
  const before = status.conditions?.find((c) => c.type === gate.condition.type);
  const next: EvictionStatus = {
    ...status,
    conditions: setCondition(
      status.conditions ?? [],
      gate.condition,
      now,
      generation,
    ),
    ...(gate.predictedMakespanSeconds === undefined
      ? {}
      : { predictedMakespanSeconds: gate.predictedMakespanSeconds }),
  };
  const changed = before?.message !== gate.condition.message;
  return {
    status: next,
    hold: gate.hold,
    ...(gate.condition.status !== "True" && changed
      ? {
        event: {
          type: "Warning" as const,
          reason: gate.hold ? "CapacityHold" : "CapacityInsufficient",
          message: gate.condition.message,
        },
      }
      : {}),
  };
}

/** What the capacity phase needs besides Nova: Placement, the wave's shared report, the default rate. */
export interface CapacityDeps {
  /** The Placement client. */
  placement: CapacityPlacement;
  /** Shares one report among the drains of a wave. */
  memo: RecentMemo<CapacityReport>;
  /** The cost predictions assume before any drain has ended (`--default-migration-rate`, `--default-drain-overhead`). */
  defaultRate?: MigrationRate | DrainCost | undefined;
}

/**
 * The capacity phase of a pass: {@linkcode capacityGate}, then
 * {@linkcode applyGate}.
 *
 * @example
 * ```ts ignore
 * const phase = await capacityPhase(nova, { placement, memo }, { ...gateInput, status, now, setCondition });
 * if (phase.hold) return { requeueAfterMs: slowPollMs };
 * ```
 */
export async function capacityPhase(
  nova: CapacityNova,
  capacity: CapacityDeps,
  input: Omit<CapacityGateInput, "memo" | "defaultRate"> & {
    status: EvictionStatus;
    now: Date;
    generation?: number | undefined;
    setCondition: SetCondition;
  },
): Promise<CapacityPhase> {
  const { status, now, generation, setCondition, ...gateInput } = input;
  const gate = await capacityGate(nova, capacity.placement, {
    ...gateInput,
    memo: { memo: capacity.memo, nowMs: now.getTime() },
    ...(capacity.defaultRate === undefined
      ? {}
      : { defaultRate: capacity.defaultRate }),
  });
  return applyGate(status, gate, now, generation, setCondition);
}
