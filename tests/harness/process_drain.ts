/**
 * Helpers for drains run by `main.ts` processes (outage and failover
 * tests): the cluster objects a drain needs, the operator flags, and a
 * recorder of when Nova was called.
 *
 * @module
 */

import type { KubeClient } from "../../framework/client.ts";
import {
  EvictionKind,
  EvictionPolicyKind,
  HypervisorKind,
} from "../../controllers/kinds.ts";
import type { Eviction, Hypervisor } from "../../models/mod.ts";
import { waitFor } from "./eviction_env.ts";
import type { NovaSim } from "./nova_sim/mod.ts";
import type { OperatorProcess } from "./operator_process.ts";

/**
 * Creates the Hypervisor of a simulator host with what the hypervisor
 * agents would have written: ids, traits and TraitsUpdated=True.
 */
export async function registerHypervisor(
  client: KubeClient,
  sim: NovaSim,
  host: string,
  labels: Record<string, string>,
): Promise<void> {
  const h = sim.state().hosts.find((x) => x.name === host);
  if (h === undefined) {
    throw new Error(`the simulator has no host "${host}"`);
  }
  await client.create<Hypervisor>(HypervisorKind, {
    metadata: { name: host, labels },
    spec: {},
  });
  await client.patch(
    HypervisorKind,
    host,
    {
      status: {
        hypervisorId: h.hypervisorId,
        serviceId: h.serviceId,
        traits: h.traits,
        conditions: [{
          type: "TraitsUpdated",
          status: "True",
          reason: "Updated",
          message: "",
          lastTransitionTime: new Date().toISOString().replace(
            /\.\d+Z$/,
            "Z",
          ),
        }],
      },
    },
    "merge",
    "status",
  );
}

/** Creates the Eviction of `host` (named after it). */
export async function createEviction(
  client: KubeClient,
  host: string,
  labels: Record<string, string>,
): Promise<void> {
  await client.create<Eviction>(EvictionKind, {
    metadata: { name: host, labels },
    spec: { hypervisor: host, reason: "test" },
  });
}

/** Creates the EvictionPolicy `default` with these two limits. */
export async function createPolicy(
  client: KubeClient,
  maxConcurrentMigrations: number,
  clusterMaxConcurrentMigrations: number,
): Promise<void> {
  await client.create(EvictionPolicyKind, {
    metadata: { name: "default" },
    spec: { maxConcurrentMigrations, clusterMaxConcurrentMigrations },
  });
}

/** The flags of an eviction-only operator process for one test. */
export function drainProcessArgs(
  labelSelector: string,
  pollInterval: string,
  more: string[] = [],
): string[] {
  return [
    "--controllers=eviction",
    `--label-selector=${labelSelector}`,
    `--poll-interval=${pollInterval}`,
    "--webhook-bind-address=0",
    "--metrics-bind-address=0",
    ...more,
  ];
}

/** Compute API calls the simulator served so far (Keystone not counted). */
export function novaCalls(sim: NovaSim): number {
  let n = 0;
  for (const [key, count] of Object.entries(sim.counters().calls)) {
    if (key.includes(" /compute/")) n += count;
  }
  return n;
}

/**
 * Samples {@linkcode novaCalls} every `everyMs` and keeps the wall-clock
 * times at which it grew: when Nova was called, to within `everyMs`.
 */
export function recordNovaCalls(
  sim: NovaSim,
  everyMs = 20,
): {
  times: number[];
  stop(): void;
  firstAfter(t: number): number | undefined;
} {
  const times: number[] = [];
  let last = novaCalls(sim);
  const timer = setInterval(() => {
    const n = novaCalls(sim);
    if (n > last) times.push(Date.now());
    last = n;
  }, everyMs);
  return {
    times,
    stop: () => clearInterval(timer),
    firstAfter: (t) => times.find((x) => x > t),
  };
}

/** Waits until the Eviction of `host` is finished (4 minutes at most); returns it. */
export function drainFinished(
  client: KubeClient,
  host: string,
  timeoutMs = 240_000,
): Promise<Eviction> {
  return waitFor(
    `the drain of ${host} to finish`,
    async () => {
      const e = await client.get<Eviction>(EvictionKind, host);
      return e.status?.finishedAt === undefined ? undefined : e;
    },
    timeoutMs,
    250,
  );
}

/** Waits until an operator process logs that its caches synced. */
export function cachesSynced(op: OperatorProcess): Promise<true> {
  return waitFor(
    "the process's caches",
    async () => /caches synced/.test(await op.log()) ? true : undefined,
    60_000,
    100,
  );
}
