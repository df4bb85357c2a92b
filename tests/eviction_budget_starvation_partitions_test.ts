/**
 * No starvation under the cluster budget across processes: two drains at
 * limit 2 in one partition (one operator process) fill a budget of 3; a
 * drain at limit 1 (its Eviction's own cap) in another partition, drained
 * by a second process, then waits for budget. Its Evicting condition says
 * so (WaitingForBudget), and the first process leaves it the first slot
 * that frees, instead of refilling it until its own hosts run out of VMs.
 * The EvictionPolicy is a cluster singleton, so this file has its own API
 * server.
 */
import assert from "node:assert/strict";
import { EvictionKind } from "../controllers/kinds.ts";
import { KubeClient } from "../framework/client.ts";
import type { Eviction } from "../models/mod.ts";
import { startEnvtest } from "./harness/envtest.ts";
import { uniqueSuffix, waitFor } from "./harness/eviction_env.ts";
import { startNovaSim } from "./harness/nova_sim/mod.ts";
import {
  operatorLogTail,
  type OperatorProcess,
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
const IN_PROGRESS = ["queued", "accepted", "preparing", "running"];

Deno.test({
  name:
    "eviction: a drain of another partition waiting for the cluster budget gets the first freed slot (WaitingForBudget), not the slots left once the others run out of VMs",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const env = await startEnvtest();
    const s = uniqueSuffix();
    const [big1, big2, small] = [`pa-${s}`, `pb-${s}`, `ps-${s}`];
    const sim = await startNovaSim({
      seed: 7,
      timeScale: 3,
      hosts: [
        // Nova runs them all at once (its default of 1 would queue the
        // large drains' second migrations: the drains would then learn
        // Nova's limit, run fewer, and leave a slot free without help)
        ...[big1, big2, small].map((name) => ({
          name,
          ramMb: 400_000,
          vcpus: 512,
          maxConcurrentLiveMigrations: 4,
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
    const labelsOf = (p: "a" | "b") => ({ "evictor-test": s, part: p });
    const ops: OperatorProcess[] = [];
    const fail = async (err: unknown): Promise<never> => {
      const logs = await Promise.all(ops.map((o) => operatorLogTail(o, 30)));
      throw new Error(`${err}\n${logs.join("\n---\n")}`);
    };
    const evict = (host: string, p: "a" | "b", cap?: number) =>
      client.create<Eviction>(EvictionKind, {
        metadata: { name: host, labels: labelsOf(p) },
        spec: {
          hypervisor: host,
          reason: "test",
          ...(cap === undefined ? {} : { maxConcurrentMigrations: cap }),
        },
      });
    const running = (hosts: string[]) =>
      sim.state().migrations.filter((m) =>
        hosts.includes(m.source) && IN_PROGRESS.includes(m.status)
      ).length;
    try {
      await createPolicy(client, 2, BUDGET);
      await registerHypervisor(client, sim, big1, labelsOf("a"));
      await registerHypervisor(client, sim, big2, labelsOf("a"));
      await registerHypervisor(client, sim, small, labelsOf("b"));
      for (const p of ["a", "b"] as const) {
        ops.push(
          await startOperatorProcess({
            kubeconfigPath: env.kubeconfigPath,
            cloudsYaml: sim.cloudsYaml({ cloud: "parts" }),
            cloud: "parts",
            args: drainProcessArgs(`evictor-test=${s},part=${p}`, "300ms"),
          }),
        );
      }
      for (const op of ops) await cachesSynced(op).catch(fail);

      // The large drains fill the budget first.
      await evict(big1, "a");
      await evict(big2, "a");
      await waitFor(
        "the budget filled by the large drains",
        () => running([big1, big2]) === BUDGET || undefined,
        30_000,
      ).catch(fail);
      await evict(small, "b", 1);
      const waiting = await waitFor("WaitingForBudget", async () => {
        const e = await client.get<Eviction>(EvictionKind, small);
        const c = e.status?.conditions?.find((x) => x.type === "Evicting");
        return c?.reason === "WaitingForBudget" ? c : undefined;
      }, 30_000).catch(fail);
      assert.match(waiting.message, /clusterMaxConcurrentMigrations 3/);
      // simulated time: the small drain waits for budget from here on
      const waitingAt = sim.world.now();

      for (const h of [big1, big2, small]) {
        await drainFinished(client, h).catch(fail);
      }
      const migrations = sim.state().migrations;
      const firstSmall = Math.min(
        ...migrations.filter((m) => m.source === small).map((m) => m.createdAt),
      );
      const bigEnds = migrations
        .filter((m) => m.source !== small && m.status === "completed")
        .map((m) => m.updatedAt).sort((a, b) => a - b);
      assert.equal(bigEnds.length, 2 * VMS);
      const before = bigEnds.filter((t) => t < firstSmall).length;
      const whileWaiting = bigEnds.filter((t) =>
        t >= waitingAt && t < firstSmall
      ).length;
      // the other partition's starts while the small drain waited: a slot
      // it freed went to one of its own drains instead
      const taken = migrations.filter((m) =>
        m.source !== small && m.createdAt >= waitingAt &&
        m.createdAt < firstSmall
      ).length;
      console.log(
        `no starvation across partitions: the limit-1 drain's first start came after ${before} of the other partition's ${bigEnds.length} migrations had ended, ${whileWaiting} of them while it waited for budget; the other partition started ${taken} meanwhile`,
      );
      assert.ok(firstSmall > waitingAt, "it waited for budget first");
      // A freed slot is left to the waiting drain: the other partition
      // starts one only when two are free at once (its passes may see two
      // ends together; the waiting drain's own pass takes a moment).
      assert.ok(
        taken <= 2,
        `the other partition started ${taken} migrations while the limit-1 drain waited (${whileWaiting} ended)`,
      );
    } finally {
      for (const op of ops) await op.stop();
      await sim.close();
      await env.stop();
    }
  },
});
