/**
 * The `CapacityChecked` condition of one drained host, from a capacity
 * report of its wave.
 *
 * @module
 */

import type { Unplaced } from "./assign.ts";

/** The condition type. */
export const CONDITION_CAPACITY_CHECKED = "CapacityChecked";

/** Said with every verdict: what the check can and cannot know. */
export const PLACEMENT_CAVEAT =
  "Placement's view, a necessary condition: the scheduler's filters, server groups and NUMA can still refuse";

/** Most VMs named in one message. */
const MAX_NAMED = 10;

/** A condition's status, reason and message. */
export interface CapacityVerdict {
  /** True when every VM of the host has a target. */
  status: "True" | "False";
  /** `Fits` or `NoTarget`. */
  reason: "Fits" | "NoTarget";
  /** For an operator. */
  message: string;
  /** The host's VMs without a target. */
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
 * The verdict for one host.
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
  const others = [...input.vmsPerHost].filter(([h]) => h !== input.host);
  const wave = others.length === 0
    ? ""
    : ` together with the ${others.reduce((s, [, k]) => s + k, 0)} VMs of ${
      others.map(([h]) => h).join(", ")
    } (one wave)`;
  const mine = input.unplaced.filter((u) => u.vm.host === input.host);
  if (mine.length === 0) {
    return {
      status: "True",
      reason: "Fits",
      message: `all ${n} VM${
        n === 1 ? "" : "s"
      } fit on other hosts${wave} (${PLACEMENT_CAVEAT})`,
      unplaced: [],
    };
  }
  const named = mine.slice(0, MAX_NAMED).map((u) =>
    `${u.vm.name} (${u.vm.id}): ${u.why}`
  );
  const more = mine.length > MAX_NAMED
    ? `; and ${mine.length - MAX_NAMED} more`
    : "";
  return {
    status: "False",
    reason: "NoTarget",
    message: `${mine.length} of ${n} VMs have no target${wave}: ${
      named.join("; ")
    }${more} (${PLACEMENT_CAVEAT})`,
    unplaced: mine,
  };
}
