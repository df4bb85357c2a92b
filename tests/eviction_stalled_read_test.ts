/**
 * One stalled read does not blind a drain: the real program (`main.ts
 * run`, as deployed, as a process) drains a host while one list of its
 * servers stalls past Nova's client timeout (the simulator answers it after
 * 35 s; the timeout is 30 s). Reads are idempotent, so the Nova client
 * sends a stalled one again beside it after a poll interval (2 s at the
 * least, app/run.ts): the drain goes on, and the slots its migrations free
 * meanwhile are refilled within seconds, not after the timeout.
 */
import assert from "node:assert/strict";
import { KubeClient } from "../framework/client.ts";
import { sharedEnvtest } from "./harness/envtest.ts";
import {
  migratedTwice,
  serversOn,
  uniqueSuffix,
  waitFor,
} from "./harness/eviction_env.ts";
import { startNovaSim } from "./harness/nova_sim/mod.ts";
import {
  operatorLogTail,
  startOperatorProcess,
} from "./harness/operator_process.ts";
import {
  createEviction,
  drainFinished,
  drainProcessArgs,
  registerHypervisor,
} from "./harness/process_drain.ts";

const STALL_MS = 35_000;

Deno.test({
  name:
    "eviction: a server list stalled past the client timeout holds no freed slot; the drain goes on",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const env = await sharedEnvtest();
    const s = uniqueSuffix();
    const src = `stall-${s}`;
    const sim = await startNovaSim({
      seed: 41,
      timeScale: 1,
      hosts: [
        {
          name: src,
          ramMb: 2_000_000,
          vcpus: 2048,
          maxConcurrentLiveMigrations: 4,
        },
        { name: `dst1-${s}`, ramMb: 8_000_000, vcpus: 8192 },
        { name: `dst2-${s}`, ramMb: 8_000_000, vcpus: 8192 },
      ],
      serverGroups: [{ host: src, count: 8, namePrefix: "vm", ramMb: [2048] }],
    });
    const labels = { "evictor-test": s };
    const client = await KubeClient.fromKubeConfig(env.kubeConfig());
    const op = await startOperatorProcess({
      kubeconfigPath: env.kubeconfigPath,
      cloudsYaml: sim.cloudsYaml({ cloud: "stall" }),
      cloud: "stall",
      args: drainProcessArgs(`evictor-test=${s}`, "1s", [
        "--eviction-concurrency=2",
      ]),
    });
    const fail = async (err: unknown): Promise<never> => {
      throw new Error(`${err}\n${await operatorLogTail(op, 60)}`);
    };
    try {
      await registerHypervisor(client, sim, src, labels);
      await createEviction(client, src, labels);
      const migrations = () =>
        sim.state().migrations.filter((m) => m.source === src);
      await waitFor(
        "the first migrations",
        () => migrations().length >= 2 ? true : undefined,
        60_000,
      ).catch(fail);
      // the drain's next list of the host's servers stalls past the timeout
      sim.injectHttpFault({
        method: "GET",
        path: "/servers/detail",
        latencyMs: STALL_MS,
        count: 1,
      });
      const stalledAt = sim.world.now();
      await drainFinished(client, src, 120_000).catch(fail);
      assert.deepEqual(serversOn(sim, src), []);
      assert.deepEqual(migratedTwice(sim, [src]), []);
      // Each migration that completed while VMs waited: how long its slot
      // idled until the next start (simulator clock, at real time here).
      const all = migrations().sort((a, b) => a.createdAt - b.createdAt);
      const idle = all.filter((m) => m.status === "completed").flatMap((m) => {
        const next = all.find((n) => n.createdAt >= m.updatedAt);
        return next === undefined ? [] : [next.createdAt - m.updatedAt];
      });
      const drainMs = Math.max(...all.map((m) => m.updatedAt)) - stalledAt;
      console.log(
        `stalled read at ${stalledAt}: drain done ${drainMs} ms later; slots idled ${
          idle.join(", ")
        } ms`,
      );
      // Without the second read the stall held the drain 30 s (the client
      // timeout); bounded generously for a loaded machine.
      assert.ok(
        Math.max(...idle) < 15_000,
        `a freed slot idled ${Math.max(...idle)} ms`,
      );
      assert.ok(
        drainMs < STALL_MS,
        `the drain finished ${drainMs} ms after the stall began, after the stalled read`,
      );
    } finally {
      await op.stop();
      client.close();
      await sim.close();
    }
  },
});
