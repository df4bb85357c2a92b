/**
 * `kubectl evictor plan` against the real API server and the Nova
 * simulator: the plugin's wrapper (bin/kubectl-evictor, what kubectl runs)
 * reads the kubeconfig and the OS_* variables, changes nothing, and prints
 * the table and valid JSON.
 */
import assert from "node:assert/strict";
import { sharedEnvtest } from "./harness/envtest.ts";
import { waitFor } from "./harness/eviction_env.ts";
import { startNovaSim } from "./harness/nova_sim/mod.ts";
import { runPlugin } from "./harness/plugin.ts";

const plugin = runPlugin;

Deno.test({
  name:
    "kubectl evictor plan prints the table and valid JSON, changing nothing",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const api = await sharedEnvtest();
    // A fresh API server may still be setting up the CRDs' storage (plan
    // lists the Hypervisors too).
    await waitFor(
      "the Eviction and Hypervisor APIs",
      async () =>
        (await api.kubectl(["get", "evictions,evictionpolicies,hypervisors"]))
            .code === 0
          ? true
          : undefined,
    );
    const s = crypto.randomUUID().slice(0, 8);
    const src = `plan-src-${s}`;
    const sim = await startNovaSim({
      hosts: [
        { name: src, ramMb: 262144 },
        { name: `plan-dst-${s}`, ramMb: 65536 },
      ],
      servers: [
        { name: "small", host: src, ramMb: 2048 },
        { name: "large", host: src, ramMb: 16384 },
        { name: "off", host: src, ramMb: 4096, status: "SHUTOFF" },
        { name: "asleep", host: src, ramMb: 8192, status: "SUSPENDED" },
        { name: "huge", host: src, ramMb: 131072 },
      ],
    });
    try {
      const env = { ...sim.env(), KUBECONFIG: api.kubeconfigPath };
      const before = sim.counters();
      const json = await plugin(["plan", src, "--output", "json"], env);
      assert.equal(json.code, 0, json.stderr);
      const parsed = JSON.parse(json.stdout) as {
        hosts: {
          host: string;
          limit: { value: number; text: string };
          capacity: { status: string; message: string };
          makespan: { predictedSeconds: number; lowerBoundSeconds: number };
          vms: { name: string; order: number | null; class: string }[];
        }[];
      };
      const h = parsed.hosts[0];
      assert.equal(h?.host, src);
      assert.deepEqual(
        h?.vms.map((v) => [v.name, v.order, v.class]),
        [
          ["huge", 1, "live"],
          ["large", 2, "live"],
          ["off", 3, "cold"],
          ["small", 4, "live"],
          ["asleep", null, "needs a person"],
        ],
      );
      assert.equal(h?.capacity.status, "False");
      assert.match(h?.capacity.message ?? "", /no target: huge/);
      assert.ok((h?.limit.value ?? 0) >= 1);
      assert.ok(
        (h?.makespan.lowerBoundSeconds ?? 0) > 0 &&
          (h?.makespan.lowerBoundSeconds ?? 0) <=
            (h?.makespan.predictedSeconds ?? 0),
      );

      const table = await plugin(["plan", src], env);
      assert.equal(table.code, 0, table.stderr);
      assert.match(table.stdout, new RegExp(`^HOST ${src}$`, "m"));
      assert.match(
        table.stdout,
        /^ {2}makespan: .* predicted( \(range [^)]*\))?, lower bound /m,
      );
      assert.match(table.stdout, /^ {2}1 +huge +\S+ +ACTIVE +131072 +live/m);

      // Nothing changed: no action, no service update, no migration.
      const writes = Object.entries(sim.counters().calls).filter(([key, n]) =>
        n > (before.calls[key] ?? 0) && !/^(GET|HEAD) /.test(key) &&
        !key.includes("/auth/tokens")
      );
      assert.deepEqual(writes, []);
      assert.equal(sim.world.migrations.length, 0);
      assert.ok(sim.world.hosts.get(src)?.enabled);

      const bad = await plugin(["plan", src, "--output", "xml"], env);
      assert.equal(bad.code, 1); // kubectl's exit code for a usage mistake
      assert.match(
        bad.stderr,
        /^error: --output "xml" is not valid: expected table, json or yaml \(see "kubectl evictor plan --help"\)\n$/,
      );
    } finally {
      await sim.close();
    }
  },
});
