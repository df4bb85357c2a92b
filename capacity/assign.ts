/**
 * The capacity check's decision: given each VM's resource request, the
 * resource providers Placement offers it (its allocation candidates), and
 * those providers' inventories and usages, place the VMs greedily, largest
 * first, into the capacity left, so that two VMs (or two drained hosts of
 * one wave) never count the same free capacity twice.
 *
 * First fit decreasing over providers in a fixed order (by UUID): a VM
 * takes the first provider, in that order, where every resource class it
 * asks for has room and obeys the provider's min_unit, max_unit and
 * step_size. With a fixed order the packing is monotone: adding a provider
 * (after the others in the order) never loses a placement.
 *
 * This is Placement's view, a necessary condition: the scheduler's filters,
 * server groups and NUMA topology can still refuse a host that fits here.
 *
 * @module
 */

import type { Inventory } from "../openstack/mod.ts";

/** Amounts per resource class, e.g. `{ VCPU: 4, MEMORY_MB: 8192 }`. */
export type Resources = Readonly<Record<string, number>>;

/** One inventory record of a resource provider (openstack/placement_capacity.ts). */
export type { Inventory };

/** A resource provider (a compute host) with what is used of it. */
export interface ProviderCapacity {
  /** Resource provider UUID (the hypervisor's id). */
  uuid: string;
  /** Inventories per resource class. */
  inventories: Readonly<Record<string, Inventory>>;
  /** Usages per resource class. */
  usages: Resources;
}

/** A VM to place. */
export interface VmDemand {
  /** Server UUID. */
  id: string;
  /** Display name. */
  name: string;
  /** The drained host it is on. */
  host: string;
  /** What it asks Placement for. */
  resources: Resources;
  /** Required traits. */
  required: readonly string[];
  /** Forbidden traits. */
  forbidden: readonly string[];
}

/** Input of {@linkcode assignCapacity}. */
export interface AssignInput {
  /** The VMs of every drained host of the wave. */
  vms: readonly VmDemand[];
  /** Allocation candidates (provider UUIDs) per VM id. */
  candidates: ReadonlyMap<string, readonly string[]>;
  /** Inventories and usages of the candidate providers, by UUID. */
  providers: ReadonlyMap<string, ProviderCapacity>;
  /** Providers of the hosts being drained: never a target. */
  excluded: ReadonlySet<string>;
}

/** Why a VM has no target. */
export type NoTargetCause = "no_candidate" | "no_room";

/** A VM the check could not place. */
export interface Unplaced {
  /** The VM. */
  vm: VmDemand;
  /** `no_candidate`: Placement offers no host outside the drain; `no_room`: its candidates are full. */
  cause: NoTargetCause;
  /** Candidates outside the drain that were considered. */
  candidates: number;
  /** Resource classes short on every considered candidate (for `no_room`). */
  short: string[];
  /** One line for an operator. */
  why: string;
}

/** Result of {@linkcode assignCapacity}. */
export interface Assignment {
  /** Every VM has a target. */
  fits: boolean;
  /** Target provider UUID per placed VM id. */
  placed: Map<string, string>;
  /** VMs without a target, largest first. */
  unplaced: Unplaced[];
  /** Capacity left per provider after the placements. */
  remaining: Map<string, Record<string, number>>;
}

/**
 * The capacity Placement can still allocate of one inventory:
 * `(total - reserved) * allocation_ratio - used`; negative when the
 * provider is already overcommitted, so it never looks free.
 *
 * @example
 * ```ts
 * import { freeCapacity } from "./assign.ts";
 * const inv = { total: 64, reserved: 0, allocationRatio: 4, minUnit: 1, maxUnit: 64, stepSize: 1 };
 * console.log(freeCapacity(inv, 200)); // 56
 * ```
 */
export function freeCapacity(inv: Inventory, used: number): number {
  return Math.floor((inv.total - inv.reserved) * inv.allocationRatio) - used;
}

/** Orders VMs largest first: RAM, then vCPUs, then disk, then id. */
export function largestFirst(a: VmDemand, b: VmDemand): number {
  for (const rc of ["MEMORY_MB", "VCPU", "DISK_GB"]) {
    const d = (b.resources[rc] ?? 0) - (a.resources[rc] ?? 0);
    if (d !== 0) return d;
  }
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/**
 * Renders a request as `VCPU=4, MEMORY_MB=8192` (zero amounts left out).
 *
 * @example
 * ```ts
 * import { formatResources } from "./assign.ts";
 * console.log(formatResources({ VCPU: 2, MEMORY_MB: 4096, DISK_GB: 0 })); // VCPU=2, MEMORY_MB=4096
 * ```
 */
export function formatResources(r: Resources): string {
  return Object.entries(r).filter(([, n]) => n > 0)
    .map(([rc, n]) => `${rc}=${n}`).join(", ");
}

/** The resource classes of `want` that do not fit `left` under `inv`'s unit rules. */
function shortOf(
  want: Resources,
  left: Readonly<Record<string, number>>,
  inventories: Readonly<Record<string, Inventory>>,
): string[] {
  const short: string[] = [];
  for (const [rc, amount] of Object.entries(want)) {
    if (amount <= 0) continue;
    const inv = inventories[rc];
    if (
      inv === undefined || amount < inv.minUnit || amount > inv.maxUnit ||
      amount % Math.max(1, inv.stepSize) !== 0 || (left[rc] ?? 0) < amount
    ) short.push(rc);
  }
  return short;
}

function describeNoCandidate(vm: VmDemand): string {
  const traits = [
    ...vm.required,
    ...vm.forbidden.map((t) => `!${t}`),
  ];
  return `Placement offers no host outside the drain for ${
    formatResources(vm.resources)
  }${traits.length === 0 ? "" : ` with traits ${traits.join(",")}`}`;
}

/**
 * Places every VM greedily, largest first, into its candidates' remaining
 * capacity. Pure: the input is not changed.
 *
 * @example
 * ```ts
 * import { assignCapacity } from "./assign.ts";
 * const inv = (total: number) => ({ total, reserved: 0, allocationRatio: 1, minUnit: 1, maxUnit: total, stepSize: 1 });
 * const out = assignCapacity({
 *   vms: [
 *     { id: "a", name: "a", host: "h1", resources: { MEMORY_MB: 6 }, required: [], forbidden: [] },
 *     { id: "b", name: "b", host: "h1", resources: { MEMORY_MB: 6 }, required: [], forbidden: [] },
 *   ],
 *   candidates: new Map([["a", ["p"]], ["b", ["p"]]]),
 *   providers: new Map([["p", { uuid: "p", inventories: { MEMORY_MB: inv(10) }, usages: {} }]]),
 *   excluded: new Set(),
 * });
 * console.log(out.fits, out.unplaced[0]?.vm.id); // false b
 * ```
 */
export function assignCapacity(input: AssignInput): Assignment {
  const remaining = new Map<string, Record<string, number>>();
  const order = [...input.providers.keys()].sort();
  const rank = new Map(order.map((uuid, i) => [uuid, i]));
  for (const uuid of order) {
    const p = input.providers.get(uuid);
    if (p === undefined) continue;
    const left: Record<string, number> = {};
    for (const [rc, inv] of Object.entries(p.inventories)) {
      left[rc] = freeCapacity(inv, p.usages[rc] ?? 0);
    }
    remaining.set(uuid, left);
  }
  const placed = new Map<string, string>();
  const unplaced: Unplaced[] = [];
  for (const vm of [...input.vms].sort(largestFirst)) {
    const considered = [
      ...new Set(input.candidates.get(vm.id) ?? []),
    ].filter((uuid) => !input.excluded.has(uuid) && remaining.has(uuid))
      .sort((a, b) => (rank.get(a) ?? 0) - (rank.get(b) ?? 0));
    if (considered.length === 0) {
      unplaced.push({
        vm,
        cause: "no_candidate",
        candidates: 0,
        short: [],
        why: describeNoCandidate(vm),
      });
      continue;
    }
    let target: string | undefined;
    const shortEverywhere = new Set(Object.keys(vm.resources));
    for (const uuid of considered) {
      const left = remaining.get(uuid) ?? {};
      const inventories = input.providers.get(uuid)?.inventories ?? {};
      const short = shortOf(vm.resources, left, inventories);
      if (short.length === 0) {
        target = uuid;
        break;
      }
      for (const rc of [...shortEverywhere]) {
        if (!short.includes(rc)) shortEverywhere.delete(rc);
      }
    }
    if (target === undefined) {
      const short = [...shortEverywhere].sort();
      unplaced.push({
        vm,
        cause: "no_room",
        candidates: considered.length,
        short,
        why: `its ${considered.length} candidate host${
          considered.length === 1 ? "" : "s"
        } lack room for ${
          formatResources(vm.resources)
        } once the larger VMs of the drain are placed${
          short.length === 0 ? "" : ` (short of ${short.join(", ")})`
        }`,
      });
      continue;
    }
    const left = remaining.get(target) ?? {};
    for (const [rc, amount] of Object.entries(vm.resources)) {
      left[rc] = (left[rc] ?? 0) - amount;
    }
    placed.set(vm.id, target);
  }
  return { fits: unplaced.length === 0, placed, unplaced, remaining };
}
