/**
 * The `CapacityChecked` condition of one drained host, from a capacity
 * report of its wave.
 *
 * @module
 */

import type { Unplaced } from "./assign.ts";

/** Eviction condition type: the wave's VMs fit elsewhere. */
export const CONDITION_CAPACITY_CHECKED = "CapacityChecked";
/** CapacityChecked: the wave's VMs fit elsewhere. */
export const REASON_FITS = "Fits";
/** CapacityChecked: some VM has no target. */
export const REASON_NO_TARGET = "NoTarget";
/** CapacityChecked: the check could not be made. */
export const REASON_CHECK_FAILED = "CheckFailed";

/** Said with every verdict: what the check can and cannot know. */
export const PLACEMENT_CAVEAT =
  "Placement's view, a necessary condition: the scheduler's filters, server groups and NUMA can still refuse";

/** Most VMs named in one message. */
const MAX_NAMED = 10;

/** A condition's status, reason and message. */
export interface CapacityVerdict {
  /** True when every VM of the wave has a target. */
  status: "True" | "False";
  /** `Fits` or `NoTarget`. */
  reason: typeof REASON_FITS | typeof REASON_NO_TARGET;
  /** For an operator. */
  message: string;
  /** The wave's VMs without a target, this host's first. */
  unplaced: Unplaced[];
}

/** Input of {@linkcode capacityVerdict}. */
export interface VerdictInput {
  /** The host of the Eviction. */
  host: string;
  /** VMs of each host of the wave that need a target. */
  vmsPerHost: ReadonlyMap<string, number>;
  /** Every VM of the wave without a target. */
  unplaced: readonly Unplaced[];
}

/**
 * The verdict for one host. A wave is judged as a whole: its drains
 * compete for the same room, so a VM of another host of the wave without a
 * target makes this host's verdict False too (its own VMs named first).
 *
 * @example
 * ```ts
 * import { capacityVerdict } from "./verdict.ts";
 * const v = capacityVerdict({ host: "a", vmsPerHost: new Map([["a", 38]]), unplaced: [] });
 * console.log(v.message.startsWith("all 38 VMs fit")); // true
 * ```
 */
export function capacityVerdict(input: VerdictInput): CapacityVerdict {
  const n = input.vmsPerHost.get(input.host) ?? 0;
  const hosts = [...input.vmsPerHost.keys()];
  const waveSize = [...input.vmsPerHost.values()].reduce((a, b) => a + b, 0);
  const inWave = hosts.length > 1;
  if (input.unplaced.length === 0) {
    const others = hosts.filter((h) => h !== input.host);
    return {
      status: "True",
      reason: REASON_FITS,
      message: `all ${n} VM${n === 1 ? "" : "s"} fit on other hosts${
        inWave
          ? ` together with the ${waveSize - n} VMs of ${
            others.join(", ")
          } (one wave)`
          : ""
      } (${PLACEMENT_CAVEAT})`,
      unplaced: [],
    };
  }
  const ordered = [
    ...input.unplaced.filter((u) => u.vm.host === input.host),
    ...input.unplaced.filter((u) => u.vm.host !== input.host),
  ];
  const named = ordered.slice(0, MAX_NAMED).map((u) =>
    `${u.vm.name} (${u.vm.id})${inWave ? ` on ${u.vm.host}` : ""}: ${u.why}`
  );
  const more = ordered.length > MAX_NAMED
    ? `; and ${ordered.length - MAX_NAMED} more`
    : "";
  const of = inWave
    ? `${ordered.length} of ${waveSize} VMs of the wave (hosts ${
      hosts.join(", ")
    })`
    : `${ordered.length} of ${n} VMs`;
  return {
    status: "False",
    reason: REASON_NO_TARGET,
    message: `${of} have no target: ${
      named.join("; ")
    }${more} (${PLACEMENT_CAVEAT})`,
    unplaced: ordered,
  };
}
