/**
 * Restart safety with the real program: `main.ts run` as a process,
 * killed with SIGKILL ten times while it drains 60 VMs, then left to
 * finish. Nova (the simulator) must have accepted exactly one migration of
 * every VM, and none may be left on the host.
 */
import assert from "node:assert/strict";
import { KubeClient } from "../framework/client.ts";
import { EvictionKind } from "../controllers/kinds.ts";
import type { Eviction } from "../models/mod.ts";
import { sharedEnvtest } from "./harness/envtest.ts";
import {
  migratedTwice,
  serversOn,
  uniqueSuffix,
  waitFor,
} from "./harness/eviction_env.ts";
import { startNovaSim } from "./harness/nova_sim/mod.ts";
import { registerHypervisor } from "./harness/process_drain.ts";
import {
  operatorLogTail,
  type OperatorProcess,
  startOperatorProcess,
} from "./harness/operator_process.ts";

const KILLS = 10;
const VMS = 60;

Deno.test({
  name: "eviction: SIGKILL and restart 10 times during a 60-VM drain",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const env = await sharedEnvtest();
    const s = uniqueSuffix();
    const src = `restart-${s}`;
    const sim = await startNovaSim({
      seed: 3,
      timeScale: 20,
      hosts: [
        {
          name: src,
          ramMb: 2_000_000,
          vcpus: 2048,
          maxConcurrentLiveMigrations: 2,
        },
        { name: `dst1-${s}`, ramMb: 8_000_000, vcpus: 8192 },
        { name: `dst2-${s}`, ramMb: 8_000_000, vcpus: 8192 },
      ],
      serverGroups: [{
        host: src,
        count: VMS,
        namePrefix: "vm",
        ramMb: [8192, 16384],
      }],
    });
    const client = await KubeClient.fromKubeConfig(env.kubeConfig());
    const labels = { "evictor-test": s };
    const start = () =>
      startOperatorProcess({
        kubeconfigPath: env.kubeconfigPath,
        cloudsYaml: sim.cloudsYaml({ cloud: "restart" }),
        cloud: "restart",
        args: [
          "--controllers=eviction",
          `--label-selector=evictor-test=${s}`,
          "--poll-interval=100ms",
          "--eviction-concurrency=4",
          "--webhook-bind-address=0",
          "--metrics-bind-address=0",
        ],
      });
    const accepted = () =>
      sim.state().migrations.filter((m) => m.source === src).length;
    let op: OperatorProcess | undefined;
    try {
      await registerHypervisor(client, sim, src, labels);
      await client.create<Eviction>(EvictionKind, {
        metadata: { name: src, labels },
        spec: { hypervisor: src, reason: "restart safety" },
      });

      for (let i = 0; i < KILLS; i++) {
        const before = accepted();
        op = await start();
        const running = op;
        // Kill it mid-drain: once it has started something, after a
        // random moment (often between a start and its status write).
        await waitFor(
          `progress of operator run ${i + 1}`,
          () => accepted() > before ? true : undefined,
          60_000,
          5,
        ).catch(async (err) => {
          throw new Error(
            `${err}\n${await operatorLogTail(running)}`,
          );
        });
        await new Promise((r) => setTimeout(r, Math.random() * 400));
        await running.kill();
        op = undefined;
        assert.ok(
          serversOn(sim, src).length > 0,
          `the drain finished before kill ${i + 1}: not a mid-drain kill`,
        );
      }

      op = await start();
      const running = op;
      const ev = await waitFor(
        "the drain to finish",
        async () => {
          const e = await client.get<Eviction>(EvictionKind, src);
          return e.status?.finishedAt === undefined ? undefined : e;
        },
        180_000,
        200,
      ).catch(async (err) => {
        throw new Error(`${err}\n${await operatorLogTail(running)}`);
      });
      assert.deepEqual(migratedTwice(sim, [src]), [], "migrated twice");
      assert.deepEqual(serversOn(sim, src), [], "left behind");
      assert.equal(accepted(), VMS);
      assert.equal(
        ev.status?.conditions?.find((c) => c.type === "Evicting")?.reason,
        "Succeeded",
      );
      assert.equal(ev.status?.migratedCount, VMS);
    } finally {
      await op?.stop();
      client.close();
      await sim.close();
    }
  },
});
