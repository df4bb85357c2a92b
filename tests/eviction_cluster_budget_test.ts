/**
 * The cluster budget and waves with the real program: two `main.ts`
 * processes with disjoint `--label-selector` partitions share one
 * `clusterMaxConcurrentMigrations`; an Eviction deleted mid-drain keeps
 * its migrations counted until Nova shows them settled; Evictions created
 * together are disabled before any of them migrates (no VM moved twice).
 * The EvictionPolicy is a cluster singleton, so this file has its own API
 * server.
 */
import assert from "node:assert/strict";
import { KubeClient } from "../framework/client.ts";
import { EvictionKind } from "../controllers/kinds.ts";
import type { Eviction } from "../models/mod.ts";
import { startEnvtest } from "./harness/envtest.ts";
import {
  inFlightNow,
  maxOverlap,
  migratedTwice,
  sampleInFlight,
  serversOn,
  uniqueSuffix,
  waitFor,
} from "./harness/eviction_env.ts";
import { startNovaSim } from "./harness/nova_sim/mod.ts";
import {
  operatorLogTail,
  type OperatorProcess,
  startOperatorProcess,
} from "./harness/operator_process.ts";
import {
  cachesSynced,
  createEviction,
  createPolicy,
  drainFinished,
  drainProcessArgs,
  registerHypervisor,
} from "./harness/process_drain.ts";

const BUDGET = 3;
const PER_HOST = 2;
const VMS = 8;

Deno.test({
  name:
    "eviction: two partitioned processes keep one cluster budget; a deleted Eviction's migrations count until they settle; a wave is disabled before it migrates",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const env = await startEnvtest();
    const s = uniqueSuffix();
    const part = (p: string, n: number) =>
      Array.from({ length: n }, (_, i) => `cb${p}${i}-${s}`);
    // wave: 3 hosts per partition; then three for the deletion step
    const waveA = part("a", 3);
    const waveB = part("b", 3);
    const [delX, delY, delZ] = [`cbx-${s}`, `cby-${s}`, `cbz-${s}`];
    const sources = [...waveA, ...waveB, delX, delY, delZ];
    const sim = await startNovaSim({
      seed: 11,
      timeScale: 3,
      // the wave's hosts are the largest: Nova would place VMs on any of
      // them still enabled. The deletion step's are small (Nova prefers
      // the destination), so only the budget is under test there.
      hosts: [
        ...[...waveA, ...waveB].map((name) => ({
          name,
          ramMb: 4_000_000,
          vcpus: 4096,
        })),
        ...[delX, delY, delZ].map((name) => ({
          name,
          ramMb: 200_000,
          vcpus: 256,
        })),
        { name: `dst-${s}`, ramMb: 3_000_000, vcpus: 4096 },
      ],
      serverGroups: sources.map((host) => ({
        host,
        count: VMS,
        namePrefix: `vm-${host}`,
        ramMb: [8192, 16384],
      })),
    });
    const client = await KubeClient.fromKubeConfig(env.kubeConfig());
    const labelsOf = (p: "a" | "b") => ({ "evictor-test": s, part: p });
    const ops: OperatorProcess[] = [];
    const start = (p: "a" | "b") =>
      startOperatorProcess({
        kubeconfigPath: env.kubeconfigPath,
        cloudsYaml: sim.cloudsYaml({ cloud: "budget" }),
        cloud: "budget",
        args: drainProcessArgs(`evictor-test=${s},part=${p}`, "300ms"),
      });
    const fail = async (err: unknown): Promise<never> => {
      const logs = await Promise.all(ops.map((o) => operatorLogTail(o, 30)));
      throw new Error(`${err}\n${logs.join("\n---\n")}`);
    };
    const finished = (host: string) => drainFinished(client, host).catch(fail);
    try {
      await createPolicy(client, PER_HOST, BUDGET);
      for (const h of [...waveA, delX, delZ]) {
        await registerHypervisor(client, sim, h, labelsOf("a"));
      }
      for (const h of [...waveB, delY]) {
        await registerHypervisor(client, sim, h, labelsOf("b"));
      }
      ops.push(await start("a"), await start("b"));
      for (const op of ops) {
        await cachesSynced(op).catch(fail);
      }

      await t.step("a wave over two partitions under one budget", async () => {
        const wave = [...waveA, ...waveB];
        const sampler = sampleInFlight(sim, sources, 10);
        await Promise.all(
          wave.map((h) =>
            createEviction(client, h, labelsOf(waveA.includes(h) ? "a" : "b"))
          ),
        );
        const done = [];
        for (const h of wave) done.push(await finished(h));
        const sampled = sampler.stop();
        const overlap = maxOverlap(sim, wave);
        console.log(
          `cluster budget: two partitions, in flight at most ${sampled.max} sampled / ${overlap} from Nova's records (budget ${BUDGET})`,
        );
        assert.ok(sampled.max <= BUDGET, `sampled in flight ${sampled.max}`);
        assert.ok(overlap <= BUDGET, `in flight at once ${overlap}`);
        // both partitions migrated at once at some point: the test shares
        assert.ok(overlap >= PER_HOST + 1, `overlap ${overlap}: no sharing`);
        assert.deepEqual(migratedTwice(sim, wave), [], "migrated twice");
        for (const h of wave) assert.deepEqual(serversOn(sim, h), []);
        for (const e of done) {
          const c = e.status?.conditions?.find((x) => x.type === "WaveSettled");
          assert.equal(c?.status, "True", JSON.stringify(c));
        }
      });

      await t.step(
        "a deleted Eviction's migrations count until they settle",
        async () => {
          await createEviction(client, delX, labelsOf("a"));
          await waitFor(
            `${PER_HOST} migrations from ${delX}`,
            () => inFlightNow(sim, [delX]) >= PER_HOST ? true : undefined,
            60_000,
            5,
          ).catch(fail);
          await client.delete(EvictionKind, delX);
          const deletedAt = Date.now();
          const runningAtDelete = inFlightNow(sim, [delX]);
          const sampler = sampleInFlight(sim, [delX, delY, delZ], 5);
          await createEviction(client, delY, labelsOf("b"));
          await createEviction(client, delZ, labelsOf("a"));
          // kept while Nova shows its migrations running
          const kept = await client.get<Eviction>(EvictionKind, delX);
          if (inFlightNow(sim, [delX]) > 0) {
            assert.ok(kept.metadata?.deletionTimestamp !== undefined);
          }
          await waitFor(
            `${delX} to be gone`,
            async () => {
              try {
                await client.get<Eviction>(EvictionKind, delX);
                return undefined;
              } catch {
                return true;
              }
            },
            120_000,
            100,
          ).catch(fail);
          assert.equal(inFlightNow(sim, [delX]), 0, "gone before settled");
          await finished(delY);
          await finished(delZ);
          const sampled = sampler.stop();
          const overlap = maxOverlap(sim, [delX, delY, delZ]);
          console.log(
            `deleted mid-drain with ${runningAtDelete} in flight (gone after ${
              Date.now() - deletedAt
            } ms at most): in flight at most ${sampled.max} sampled / ${overlap} from Nova's records (budget ${BUDGET})`,
          );
          assert.ok(sampled.max <= BUDGET, `sampled in flight ${sampled.max}`);
          assert.ok(overlap <= BUDGET, `in flight at once ${overlap}`);
          assert.ok(
            serversOn(sim, delX).length > 0,
            "X drained: not mid-drain",
          );
          assert.deepEqual(migratedTwice(sim, sources), [], "migrated twice");
        },
      );
    } finally {
      for (const op of ops) await op.stop();
      client.close();
      await sim.close();
      await env.stop();
    }
  },
});
