/**
 * The capacity check's I/O: for the VMs of the drained hosts (one host or
 * a wave), read their flavors from Nova's server list, ask Placement for
 * allocation candidates (one call per distinct request), read the
 * candidates' inventories and usages, and hand it all to the pure
 * {@linkcode assignCapacity}.
 *
 * Every query forbids `COMPUTE_STATUS_DISABLED`, as Nova's scheduler does
 * since Train: a disabled host is no target. The drained hosts' own
 * providers are excluded by UUID.
 *
 * @module
 */

import pLimit from "p-limit";
import type { CandidateQuery, Inventory, Server } from "../openstack/mod.ts";
import {
  assignCapacity,
  type Assignment,
  type ProviderCapacity,
  type VmDemand,
} from "./assign.ts";
import { requestOfFlavor } from "./request.ts";

/** The Nova calls the check makes (a NovaClient or the controller's counted wrapper). */
export interface CapacityNova {
  /** Every server on a compute host. */
  listServersOnHost(host: string, signal?: AbortSignal): Promise<Server[]>;
}

/** The Placement calls the check makes. */
export interface CapacityPlacement {
  /** Provider UUID by name. */
  findResourceProvider(
    name: string,
    signal?: AbortSignal,
  ): Promise<string | undefined>;
  /** Allocation candidates of one request. */
  allocationCandidates(
    query: CandidateQuery,
    signal?: AbortSignal,
  ): Promise<{ allocationRequests: Record<string, unknown>[] }>;
  /** Inventories of a provider. */
  getInventories(
    uuid: string,
    signal?: AbortSignal,
  ): Promise<Record<string, Inventory>>;
  /** Usages of a provider. */
  getUsages(
    uuid: string,
    signal?: AbortSignal,
  ): Promise<Record<string, number>>;
}

/** A host being drained. */
export interface DrainedHost {
  /** Compute service host (Nova's `host` filter). */
  name: string;
  /** Its resource provider UUID (the hypervisor id); looked up by name when absent. */
  providerUuid?: string;
}

/** Options of {@linkcode checkCapacity}. */
export interface CheckOptions {
  /** Placement calls at once (default 8). */
  concurrency?: number;
  /** Aggregate requirements of a VM (`member_of`), e.g. from its availability zone. */
  memberOf?: (server: Server) => readonly (readonly string[])[];
  /** Cancels the calls. */
  signal?: AbortSignal;
}

/** The answer of {@linkcode checkCapacity}. */
export interface CapacityReport {
  /** The hosts checked together. */
  hosts: string[];
  /** The VMs that need a target, per host. */
  vmsByHost: Map<string, VmDemand[]>;
  /** The assignment. */
  assignment: Assignment;
}

/** Statuses of VMs whose target is already claimed (they are moving). */
const MOVING = new Set(["MIGRATING", "RESIZE", "VERIFY_RESIZE"]);

/**
 * The VM demands of one host's servers: VMs being deleted or already
 * moving are left out.
 */
export function demandsOf(
  host: string,
  servers: readonly Server[],
  memberOf?: (server: Server) => readonly (readonly string[])[],
): (VmDemand & { memberOf: readonly (readonly string[])[] })[] {
  return servers
    .filter((s) => s.taskState !== "deleting" && !MOVING.has(s.status))
    .map((s) => ({
      id: s.id,
      name: s.name,
      host,
      ...requestOfFlavor(s.flavor),
      memberOf: memberOf?.(s) ?? [],
    }));
}

/**
 * Checks whether the VMs of `hosts` fit on the rest of the cloud, in
 * Placement's view.
 *
 * @example
 * ```ts ignore
 * const report = await checkCapacity(nova, placement, [{ name: "node042" }]);
 * console.log(report.assignment.fits);
 * ```
 */
export async function checkCapacity(
  nova: CapacityNova,
  placement: CapacityPlacement,
  hosts: readonly DrainedHost[],
  options: CheckOptions = {},
): Promise<CapacityReport> {
  const { signal } = options;
  const limit = pLimit(options.concurrency ?? 8);
  const names = [...new Set(hosts.map((h) => h.name))];
  const [serverLists, uuids] = await Promise.all([
    Promise.all(
      names.map((h) => limit(() => nova.listServersOnHost(h, signal))),
    ),
    Promise.all(
      hosts.map((h) =>
        h.providerUuid !== undefined
          ? h.providerUuid
          : limit(() => placement.findResourceProvider(h.name, signal))
      ),
    ),
  ]);
  const excluded = new Set(uuids.filter((u): u is string => u !== undefined));
  const vmsByHost = new Map<string, VmDemand[]>();
  const all: (VmDemand & { memberOf: readonly (readonly string[])[] })[] = [];
  names.forEach((h, i) => {
    const demands = demandsOf(h, serverLists[i] ?? [], options.memberOf);
    vmsByHost.set(h, demands);
    all.push(...demands);
  });

  // One candidates call per distinct request.
  const byKey = new Map<string, CandidateQuery>();
  const keyOf = new Map<string, string>();
  for (const vm of all) {
    const query: CandidateQuery = {
      resources: vm.resources,
      required: vm.required,
      forbidden: [...new Set([...vm.forbidden, "COMPUTE_STATUS_DISABLED"])]
        .sort(),
      memberOf: vm.memberOf,
    };
    const key = JSON.stringify([
      Object.entries(vm.resources).sort(),
      query.required,
      query.forbidden,
      query.memberOf,
    ]);
    byKey.set(key, query);
    keyOf.set(vm.id, key);
  }
  const answers = new Map<string, string[]>();
  await Promise.all(
    [...byKey].map(([key, query]) =>
      limit(async () => {
        const got = await placement.allocationCandidates(query, signal);
        answers.set(key, [
          ...new Set(got.allocationRequests.flatMap((r) => Object.keys(r))),
        ]);
      })
    ),
  );
  const candidates = new Map<string, string[]>();
  for (const vm of all) {
    candidates.set(vm.id, answers.get(keyOf.get(vm.id) ?? "") ?? []);
  }

  const wanted = [...new Set([...answers.values()].flat())]
    .filter((u) => !excluded.has(u)).sort();
  const providers = new Map<string, ProviderCapacity>();
  await Promise.all(wanted.map((uuid) =>
    limit(async () => {
      const [inventories, usages] = await Promise.all([
        placement.getInventories(uuid, signal),
        placement.getUsages(uuid, signal),
      ]);
      providers.set(uuid, { uuid, inventories, usages });
    })
  ));

  return {
    hosts: names,
    vmsByHost,
    assignment: assignCapacity({ vms: all, candidates, providers, excluded }),
  };
}
