/**
 * Nova's limit outlives the drain that learned it: a host whose Nova runs
 * one live migration at a time (`max_concurrent_live_migrations` 1) is
 * drained at evictor's limit 4; the drain learns Nova's limit, keeps it
 * in its Hypervisor's `lastDrain`, and after its Eviction is deleted, VMs
 * land on the host again: `kubectl evictor plan` of the host, before any
 * new drain, predicts at Nova's limit 1, not the policy's 4 (real Zed:
 * predictions at evictor's limit came out about 1.5x short). The policy
 * is a cluster singleton, so this file has its own API server.
 */
import assert from "node:assert/strict";
import type { HostPlan } from "../cli/plan.ts";
import { HypervisorKind } from "../controllers/kinds.ts";
import type { Hypervisor } from "../models/mod.ts";
import { startEnvtest } from "./harness/envtest.ts";
import { drained, startDrainEnv, waitFor } from "./harness/eviction_env.ts";
import { runPlugin } from "./harness/plugin.ts";

Deno.test({
  name:
    "plan: after a drain learned Nova's limit and its Eviction was deleted, the host's next plan predicts at that limit",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const api = await startEnvtest();
    const host = "kept";
    const e = await startDrainEnv({
      env: api,
      concurrency: "4",
      pollIntervalMs: 100,
      scenario: {
        seed: 9,
        timeScale: 20,
        hosts: [
          { name: host, maxConcurrentLiveMigrations: 1 },
          { name: "dst", ramMb: 1_048_576 },
        ],
        serverGroups: [{ host, count: 6, namePrefix: "vm", ramMb: [4096] }],
      },
    });
    try {
      await e.hypervisor(host);
      await e.hypervisor("dst");
      await e.policy({ maxConcurrentMigrations: 4 });
      await e.evict(host, host);
      const ev = await drained(e, host, 120_000);
      assert.equal(ev.status?.novaLiveMigrationLimit, 1, "learned");
      const kept = await waitFor("the kept lesson", async () => {
        const hv = await e.client.get<Hypervisor>(HypervisorKind, host);
        const d = hv.status?.lastDrain;
        return d?.eviction === host ? d : undefined;
      });
      assert.equal(kept.novaLiveMigrationLimit, 1);
      await api.kubectl(["delete", "eviction", host, "--timeout=120s"]);
      for (let i = 0; i < 3; i++) {
        e.sim.addServer({ host, name: `back-${i}`, ramMb: 4096 });
      }
      const run = await runPlugin(["plan", host, "--output", "json"], {
        ...e.sim.env(),
        KUBECONFIG: api.kubeconfigPath,
      });
      assert.equal(run.code, 0, run.stderr);
      const plan = (JSON.parse(run.stdout) as { hosts: HostPlan[] }).hosts[0];
      assert.equal(plan?.limit.value, 1, JSON.stringify(plan?.limit));
      assert.match(
        plan?.limit.text ?? "",
        /max_concurrent_live_migrations/,
        JSON.stringify(plan?.limit),
      );
    } finally {
      await e.stop();
      await api.stop();
    }
  },
});
