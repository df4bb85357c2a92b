/**
 * What a drain learned outlives its Eviction: on the real API server with
 * the Nova simulator, `kubectl evictor plan` (the plugin as kubectl runs
 * it) first predicts with the documented defaults and says how uncertain
 * that is; a drain of another host then ends, its Eviction is deleted, and
 * the plan predicts from what that drain left in its Hypervisor's
 * `status.lastDrain`: its observed rate and its time per drain. The policy
 * is a cluster singleton and the history cluster-wide, so this file has
 * its own API server.
 */
import assert from "node:assert/strict";
import { DEFAULT_COST } from "../capacity/history.ts";
import type { HostPlan } from "../cli/plan.ts";
import { HypervisorKind } from "../controllers/kinds.ts";
import type { Hypervisor } from "../models/mod.ts";
import { startEnvtest } from "./harness/envtest.ts";
import { drained, startDrainEnv, waitFor } from "./harness/eviction_env.ts";
import { runPlugin } from "./harness/plugin.ts";

const SIZES = [2048, 4096, 8192];

Deno.test({
  name:
    "plan: after a drain ended and its Eviction was deleted, the next host's plan uses the rate and time per drain it learned",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const api = await startEnvtest();
    const e = await startDrainEnv({
      env: api,
      concurrency: "1",
      pollIntervalMs: 50,
      capacityCheck: true,
      scenario: {
        seed: 7,
        timeScale: 10,
        timing: { liveMbPerSecond: 100, jitter: 0.05 },
        hosts: [
          { name: "teach" },
          { name: "next" },
          { name: "dst", ramMb: 1_048_576 },
        ],
        servers: ["teach", "next"].flatMap((host) =>
          SIZES.map((ramMb, i) => ({ name: `${host}-${i}`, host, ramMb }))
        ),
      },
    });
    try {
      for (const h of ["teach", "next", "dst"]) await e.hypervisor(h);
      const plan = async (host: string): Promise<HostPlan> => {
        const run = await runPlugin(["plan", host, "--output", "json"], {
          ...e.sim.env(),
          KUBECONFIG: api.kubeconfigPath,
        });
        assert.equal(run.code, 0, run.stderr);
        const p = (JSON.parse(run.stdout) as { hosts: HostPlan[] }).hosts[0];
        assert.ok(p !== undefined, run.stdout);
        return p;
      };

      // No history: the documented defaults, said so, with a range.
      const before = await plan("next");
      assert.match(
        before.makespan.rateSource,
        /^documented defaults assumed: no ended drain to learn from$/,
      );
      assert.ok(
        before.makespan.rangeSeconds.high > before.makespan.rangeSeconds.low,
        JSON.stringify(before.makespan),
      );
      // headlined at the slow end: the documented defaults are the fast one
      assert.equal(
        before.makespan.rangeSeconds.high,
        before.makespan.predictedSeconds,
      );
      assert.match(before.makespan.uncertainty ?? "", /slow end is 50 MB\/s/);

      await e.evict("teach", "teach");
      await drained(e, "teach", 120_000);
      const learned = await waitFor("teach's lesson", async () => {
        const hv = await e.client.get<Hypervisor>(HypervisorKind, "teach");
        const d = hv.status?.lastDrain;
        return d?.eviction === "teach" && d.migrationRate !== undefined
          ? d
          : undefined;
      });
      assert.equal(learned.migrated, 3);
      assert.ok(learned.fixedMs !== undefined, JSON.stringify(learned));
      const rate = learned.migrationRate;
      assert.ok(rate !== undefined);
      // the simulator's 100 MB/s, not the default's 1000 (the passes'
      // delays under load only make it look slower)
      assert.ok(
        rate.mbPerSecond < DEFAULT_COST.mbPerSecond / 2,
        JSON.stringify(learned),
      );

      await api.kubectl(["delete", "eviction", "teach", "--timeout=120s"]);
      await waitFor(
        "teach gone",
        async () =>
          (await api.kubectl(["get", "eviction", "teach"])).code !== 0
            ? true
            : undefined,
        120_000,
      );

      const after = await plan("next");
      const m = after.makespan;
      assert.equal(
        m.rateSource,
        "observed by the latest 1 ended drain (teach); time per drain measured",
      );
      assert.equal(m.mbPerSecond, rate.mbPerSecond);
      assert.equal(m.overheadSeconds, rate.overheadMs / 1000);
      assert.equal(m.fixedSeconds, learned.fixedMs / 1000);
      // limit 1: the migrations one after another, plus the time per drain
      const expected = m.fixedSeconds +
        SIZES.reduce((t, r) => t + r / m.mbPerSecond + m.overheadSeconds, 0);
      assert.equal(m.predictedSeconds, Math.ceil(expected));
      assert.deepEqual(m.rangeSeconds, {
        low: m.predictedSeconds,
        high: m.predictedSeconds,
      });
      assert.equal(m.uncertainty, undefined);
    } finally {
      await e.stop();
      await api.stop();
    }
  },
});
