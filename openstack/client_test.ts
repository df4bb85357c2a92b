import assert from "node:assert/strict";
import { createOpenStackClients } from "./client.ts";
import { loadCloudConfig } from "./config.ts";
import { startNovaSim } from "../tests/harness/nova_sim/mod.ts";
import { BASIC_SCENARIO } from "../tests/harness/openstack_util.ts";

Deno.test("client: a clouds.yaml written by the simulator drives Nova and Placement", async () => {
  const sim = await startNovaSim(BASIC_SCENARIO);
  try {
    for (const auth of ["password", "application_credential"] as const) {
      const config = loadCloudConfig({
        sources: {
          env: { OS_CLOUD: "sim", OS_CLIENT_CONFIG_FILE: "/sim/clouds.yaml" },
          readTextFile: (p) =>
            p === "/sim/clouds.yaml"
              ? sim.cloudsYaml({ cloud: "sim", auth })
              : undefined,
          homeDir: "/nonexistent",
          cwd: "/nonexistent",
        },
      });
      const clients = createOpenStackClients(config);
      try {
        assert.equal(
          (await clients.nova.listServersOnHost("node001")).length,
          3,
        );
        const hv = await clients.nova.findHypervisorByHostname("node001");
        assert.ok(hv);
        assert.deepEqual((await clients.placement.getTraits(hv.id)).traits, [
          "CUSTOM_GPU",
        ]);
      } finally {
        clients.close();
      }
    }
  } finally {
    await sim.close();
  }
});

Deno.test("client: OS_* variables from the simulator work the same", async () => {
  const sim = await startNovaSim(BASIC_SCENARIO);
  try {
    const config = loadCloudConfig({
      sources: { env: sim.env(), readTextFile: () => undefined },
    });
    const clients = createOpenStackClients(config);
    const svc = await clients.nova.findComputeService("node003");
    assert.equal(svc?.status, "disabled");
    assert.equal(svc?.disabledReason, "broken");
    clients.close();
  } finally {
    await sim.close();
  }
});
