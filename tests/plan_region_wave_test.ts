/**
 * `kubectl evictor plan` against the real API server and a cloud of two
 * regions (two Nova simulators, one Keystone catalog): `--os-region-name`
 * and `OS_REGION_NAME` choose the Nova the plan reads, an unknown region
 * is one line naming the catalog's; `plan HOST` checks the host alone and
 * `--with-wave` adds the hosts of pending Evictions and names them.
 */
import assert from "node:assert/strict";
import { sharedEnvtest } from "./harness/envtest.ts";
import { waitFor } from "./harness/eviction_env.ts";
import { startNovaSim } from "./harness/nova_sim/mod.ts";
import { runPlugin } from "./harness/plugin.ts";

interface PlanJson {
  hosts: {
    host: string;
    wave?: string[];
    capacity: { status: string; message: string };
    vms: { name: string }[];
  }[];
}

Deno.test({
  name:
    "kubectl evictor plan: --os-region-name over OS_REGION_NAME over region_name; --with-wave names the pending Evictions",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const api = await sharedEnvtest();
    await waitFor(
      "the Eviction and Hypervisor APIs",
      async () =>
        (await api.kubectl(["get", "evictions,evictionpolicies,hypervisors"]))
            .code === 0
          ? true
          : undefined,
    );
    const s = crypto.randomUUID().slice(0, 8);
    const one = `region-one-${s}`;
    const two = `region-two-${s}`;
    const pending = `region-pending-${s}`;
    const simOne = await startNovaSim({
      region: "RegionOne",
      hosts: [
        { name: one, ramMb: 65536 },
        { name: pending, ramMb: 65536 },
        { name: `region-dst-${s}`, ramMb: 65536 },
      ],
      servers: [
        { name: "in-one", host: one, ramMb: 2048 },
        { name: "on-pending", host: pending, ramMb: 4096 },
      ],
    });
    const simTwo = await startNovaSim({
      region: "RegionTwo",
      hosts: [{ name: two, ramMb: 65536 }, { name: `region-dst2-${s}` }],
      servers: [{ name: "in-two", host: two, ramMb: 2048 }],
    });
    simOne.addCatalogRegion("RegionTwo", simTwo);
    const created = await api.kubectl(["create", "-f", "-"], {
      stdin: JSON.stringify({
        apiVersion: "kvm.cloud.sap/v1",
        kind: "Eviction",
        metadata: { name: pending },
        spec: { hypervisor: pending, reason: "next in the wave" },
      }),
    });
    assert.equal(created.code, 0, created.stderr);
    try {
      // OS_* of the first simulator: OS_REGION_NAME=RegionOne
      const env: Record<string, string> = {
        ...simOne.env(),
        KUBECONFIG: api.kubeconfigPath,
      };
      const plan = async (args: string[], e = env) => {
        const r = await runPlugin(["plan", ...args, "-o", "json"], e);
        assert.equal(r.code, 0, r.stderr);
        return JSON.parse(r.stdout) as PlanJson;
      };
      const vmsOf = (p: PlanJson) => p.hosts[0]?.vms.map((v) => v.name);

      assert.deepEqual(vmsOf(await plan([one])), ["in-one"]);
      assert.deepEqual(
        vmsOf(await plan([two, "--os-region-name", "RegionTwo"])),
        ["in-two"],
        "the flag wins over OS_REGION_NAME",
      );
      assert.deepEqual(
        vmsOf(await plan([two], { ...env, OS_REGION_NAME: "RegionTwo" })),
        ["in-two"],
      );
      const wrong = await runPlugin(
        ["plan", one, "--os-region-name", "RegionThree"],
        env,
      );
      assert.equal(wrong.code, 1);
      assert.match(
        wrong.stderr,
        /region "RegionThree" in the service catalog; the catalog has it in regions "RegionOne", "RegionTwo"/,
      );

      // Alone: no wave, the capacity check names no other host.
      const alone = (await plan([one])).hosts[0];
      assert.equal(alone?.wave, undefined);
      assert.doesNotMatch(alone?.capacity.message ?? "", /one wave/);
      const aloneTable = await runPlugin(["plan", one], env);
      assert.equal(aloneTable.code, 0, aloneTable.stderr);
      assert.doesNotMatch(aloneTable.stdout, /^ {2}wave:/m);

      // --with-wave: the pending Eviction's host joins and is named (other
      // tests' pending Evictions may join too: the API server is shared).
      const inWave = (await plan([one, "--with-wave"])).hosts[0];
      assert.ok(inWave?.wave?.includes(pending), JSON.stringify(inWave));
      assert.ok(!inWave?.wave?.includes(one));
      assert.match(inWave?.capacity.message ?? "", /\(one wave\)/);
      assert.match(inWave?.capacity.message ?? "", new RegExp(pending));
      const waveTable = await runPlugin(["plan", one, "--with-wave"], env);
      assert.equal(waveTable.code, 0, waveTable.stderr);
      assert.match(
        waveTable.stdout,
        new RegExp(
          `^ {2}wave: +shared with the pending Evictions of .*${pending}`,
          "m",
        ),
      );
    } finally {
      await api.kubectl(["delete", "eviction", pending, "--wait=false"]);
      await simTwo.close();
      await simOne.close();
    }
  },
});
