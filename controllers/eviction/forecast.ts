/**
 * The drain's live forecast of its end (status.predictedFinishAt), moving with the copies' progress.
 * @module
 */

import type {
  EvictionStatusAbortedItem,
  EvictionStatusInFlightItem,
} from "../../models/mod.ts";
import type { OnTimeout } from "../../limits/convergence.ts";
import { predictWave } from "../../capacity/makespan.ts";
import { isRetry } from "./plan_converge.ts";

/** Nova's flavor MB are MiB. */
const MIB = 1024 * 1024;

/** A VM still to start. */
export interface QueuedVm {
  id: string;
  kind: "live" | "cold";
  ramMb: number;
}

/** Input of {@linkcode forecastFinishMs}; times in controller clock ms. */
export interface ForecastInput {
  nowMs: number;
  /** Copies the drain runs at once for the VMs still to start. */
  limit: number;
  /** status.inFlight after this pass. */
  inFlight: readonly EvictionStatusInFlightItem[];
  /** The pacing model's expected end of each running copy; undefined: untimed. */
  expectedEnds: ReadonlyMap<string, number | undefined>;
  /** Those to retry after an abort among them. */
  toStart: readonly QueuedVm[];
  /** status.aborted: its VMs are retried alone and last. */
  aborted: readonly EvictionStatusAbortedItem[];
  ramOf: (id: string) => number | undefined;
  /** A copy's learned duration. */
  durationMs: (kind: "live" | "cold", ramMb: number) => number;
  /** What the convergence policy does with a copy past its bound. */
  onTimeout: OnTimeout | undefined;
  /** Aborted copies after which a VM is left for a person (default: no limit). */
  maxAbortedTries?: number;
  /** VMs on the host left for a person. */
  needsPerson?: number;
}

/**
 * When the drain is predicted to end; undefined when it cannot be told. A copy not converging
 * ends when its policy acts; the VMs to start fill the limit (capacity/makespan.ts `predictWave`);
 * retries after an abort follow one at a time, alone (plan_converge.ts `retryAlone`).
 *
 * @example
 * ```ts
 * import { forecastFinishMs } from "./forecast.ts";
 * const t = forecastFinishMs({
 *   nowMs: 0, limit: 1, expectedEnds: new Map(), aborted: [],
 *   inFlight: [{ id: "a", kind: "live", startedAt: "1970-01-01T00:00:00Z", etaSeconds: 10 }],
 *   toStart: [{ id: "b", kind: "live", ramMb: 4096 }],
 *   ramOf: () => 4096, durationMs: (_kind, ramMb) => ramMb * 5, onTimeout: "Abort",
 * });
 * console.assert(t === 10_000 + 4096 * 5); // b starts when a's copy ends
 * ```
 */
export function forecastFinishMs(given: ForecastInput): number | undefined {
  // a fitted line may give a small VM a time below 0: none, then
  const input: ForecastInput = {
    ...given,
    durationMs: (kind, ramMb) => {
      const ms = given.durationMs(kind, ramMb);
      return Number.isFinite(ms) && ms > 0 ? ms : 0;
    },
  };
  const { nowMs } = input;
  const abortedById = new Map(input.aborted.map((a) => [a.id, a]));
  const retries: number[] = [];
  const ends: { end: number; retry: boolean }[] = [];
  for (const e of input.inFlight) {
    const end = endOf(e, input, retries);
    if (end === undefined) return undefined;
    ends.push({ end: Math.max(nowMs, end), retry: isRetry(e, abortedById) });
  }
  // only VMs for a person left: the drain ends when they act
  if (
    ends.length === 0 && input.toStart.length === 0 &&
    (input.needsPerson ?? 0) > 0
  ) return undefined;
  const queue: number[] = [];
  for (const vm of input.toStart) {
    const s = input.durationMs(vm.kind, vm.ramMb);
    if (abortedById.has(vm.id)) retries.push(s);
    else queue.push(s);
  }
  // a retry in flight runs alone: the others start once it ends
  const startMs = Math.max(
    nowMs,
    ...ends.filter((x) => x.retry).map((x) => x.end),
  );
  const busy = ends.filter((x) => !x.retry).map((x) =>
    Math.max(0, x.end - startMs) / 1000
  );
  let waveSeconds: number;
  if (input.limit < 1) {
    if (queue.length > 0 || retries.length > 0) return undefined;
    waveSeconds = Math.max(0, ...busy);
  } else {
    waveSeconds = predictWave({
      hosts: [{
        host: "",
        ramMb: [],
        migrationSeconds: queue.map((ms) => ms / 1000),
        busySeconds: busy,
        limit: input.limit,
      }],
      mbPerSecond: 1,
      overheadSeconds: 0,
    }).get("")?.predictedSeconds ?? 0;
  }
  return startMs + waveSeconds * 1000 + retries.reduce((a, b) => a + b, 0);
}

/** When a copy in flight ends (maybe past); pushes its retry when it is to be aborted. */
function endOf(
  e: EvictionStatusInFlightItem,
  input: ForecastInput,
  retries: number[],
): number | undefined {
  const { nowMs } = input;
  const ramMb = input.ramOf(e.id) ??
    (e.memoryTotalBytes === undefined ? undefined : e.memoryTotalBytes / MIB);
  if (e.notConverging === true) {
    const deadline = msOf(e.deadlineAt) ?? nowMs;
    if (input.onTimeout === "Abort") {
      if (ramMb === undefined) return undefined;
      // retried after this abort unless it is the last allowed
      const tries = (input.aborted.find((a) => a.id === e.id)?.tries ?? 0) + 1;
      if (tries < (input.maxAbortedTries ?? Infinity)) {
        retries.push(input.durationMs(e.kind, ramMb));
      }
      return deadline;
    }
    if (input.onTimeout === "ForceComplete") {
      const actMs = msOf(e.forceCompleteSentAt) ?? deadline;
      const rate = e.bytesPerSecond;
      // the paused VM dirties no page: what is left goes at the measured rate
      if (
        e.memoryRemainingBytes !== undefined && rate !== undefined && rate > 0
      ) {
        return Math.max(nowMs, actMs) + (e.memoryRemainingBytes / rate) * 1000;
      }
      return ramMb === undefined
        ? undefined
        : actMs + input.durationMs(e.kind, ramMb);
    }
    return undefined;
  }
  if (e.etaSeconds !== undefined) return nowMs + e.etaSeconds * 1000;
  const expected = input.expectedEnds.get(e.id);
  if (expected !== undefined) return expected;
  const since = msOf(e.copyStartedAt) ?? msOf(e.startedAt);
  if (ramMb === undefined || since === undefined) return undefined;
  return since + input.durationMs(e.kind, ramMb);
}

function msOf(iso: string | undefined): number | undefined {
  const ms = iso === undefined ? Number.NaN : Date.parse(iso);
  return Number.isNaN(ms) ? undefined : ms;
}
