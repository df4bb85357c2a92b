/**
 * No starvation under the cluster budget, with the real program: two
 * drains at limit 2 and one at limit 1 (its Eviction's own cap) created
 * together under a budget of 3. The limit-1 drain must not wait until the
 * others run out of VMs: once the first migration ends, the drain it
 * belonged to leaves the slot to the waiting drain of the lower limit.
 * The EvictionPolicy is a cluster singleton, so this file has its own API
 * server.
 */
import assert from "node:assert/strict";
import { EvictionKind } from "../controllers/kinds.ts";
import { KubeClient } from "../framework/client.ts";
import type { Eviction } from "../models/mod.ts";
import { startEnvtest } from "./harness/envtest.ts";
import { sampleInFlight, uniqueSuffix } from "./harness/eviction_env.ts";
import { startNovaSim } from "./harness/nova_sim/mod.ts";
import {
  operatorLogTail,
  startOperatorProcess,
} from "./harness/operator_process.ts";
import {
  cachesSynced,
  createPolicy,
  drainFinished,
  drainProcessArgs,
  registerHypervisor,
} from "./harness/process_drain.ts";

const BUDGET = 3;
const VMS = 8;

Deno.test({
  name:
    "eviction: under a cluster budget a waiting limit-1 drain gets a slot as soon as one frees, not after the limit-2 drains have run out of VMs",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const env = await startEnvtest();
    const s = uniqueSuffix();
    const [big1, big2, small] = [`fa-${s}`, `fb-${s}`, `fs-${s}`];
    const sim = await startNovaSim({
      seed: 5,
      timeScale: 3,
      hosts: [
        ...[big1, big2, small].map((name) => ({
          name,
          ramMb: 400_000,
          vcpus: 512,
        })),
        { name: `dst-${s}`, ramMb: 4_000_000, vcpus: 4096 },
      ],
      serverGroups: [big1, big2, small].map((host) => ({
        host,
        count: VMS,
        namePrefix: `vm-${host}`,
        ramMb: [8192, 16384],
      })),
    });
    const client = await KubeClient.fromKubeConfig(env.kubeConfig());
    const labels = { "evictor-test": s };
    const op = await startOperatorProcess({
      kubeconfigPath: env.kubeconfigPath,
      cloudsYaml: sim.cloudsYaml({ cloud: "fair" }),
      cloud: "fair",
      args: drainProcessArgs(`evictor-test=${s}`, "300ms"),
    });
    const fail = async (err: unknown): Promise<never> => {
      throw new Error(`${err}\n${await operatorLogTail(op, 40)}`);
    };
    try {
      await createPolicy(client, 2, BUDGET);
      for (const h of [big1, big2, small]) {
        await registerHypervisor(client, sim, h, labels);
      }
      await cachesSynced(op).catch(fail);
      const sampler = sampleInFlight(sim, [big1, big2, small], 10);
      await Promise.all(
        [big1, big2, small].map((h) =>
          client.create<Eviction>(EvictionKind, {
            metadata: { name: h, labels },
            spec: {
              hypervisor: h,
              reason: "test",
              ...(h === small ? { maxConcurrentMigrations: 1 } : {}),
            },
          })
        ),
      );
      for (const h of [big1, big2, small]) {
        await drainFinished(client, h).catch(fail);
      }
      const sampled = sampler.stop();
      assert.ok(sampled.max <= BUDGET, `in flight at once ${sampled.max}`);

      const migrations = sim.state().migrations;
      const firstSmall = Math.min(
        ...migrations.filter((m) => m.source === small).map((m) => m.createdAt),
      );
      const bigEnds = migrations
        .filter((m) => m.source !== small && m.status === "completed")
        .map((m) => m.updatedAt).sort((a, b) => a - b);
      assert.equal(bigEnds.length, 2 * VMS);
      const third = bigEnds[2] ?? Number.NaN;
      console.log(
        `no starvation: the limit-1 drain's first start came ${
          ((firstSmall - (bigEnds[0] ?? 0)) / 1000).toFixed(1)
        } s (simulated) after the first migration ended; ${
          bigEnds.filter((t) => t < firstSmall).length
        } of the others' ${bigEnds.length} had ended by then`,
      );
      assert.ok(
        firstSmall < third,
        `the limit-1 drain started only after ${
          bigEnds.filter((t) => t < firstSmall).length
        } of the other drains' migrations had ended`,
      );
    } finally {
      await op.stop();
      await sim.close();
      await env.stop();
    }
  },
});
