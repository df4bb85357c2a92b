/**
 * A Nova action is sent at most once by the HTTP layer: when the keep-alive
 * connection to Nova closes after the action went out and before any answer,
 * the call reports an unknown outcome and nothing sends it again.
 *
 * @module
 */

import assert from "node:assert/strict";
import { UnavailableError } from "../openstack/errors.ts";
import { KeystoneSession } from "../openstack/keystone.ts";
import { NovaClient } from "../openstack/nova.ts";
import { startCuttingProxy } from "./harness/cutting_proxy.ts";
import { BASIC_SCENARIO } from "./harness/openstack_util.ts";
import { startNovaSim } from "./harness/nova_sim/mod.ts";

async function withProxiedNova(
  fn: (
    ctx: {
      nova: NovaClient;
      sim: Awaited<ReturnType<typeof startNovaSim>>;
      proxy: ReturnType<typeof startCuttingProxy>;
    },
  ) => Promise<void>,
): Promise<void> {
  const sim = await startNovaSim(BASIC_SCENARIO);
  const proxy = startCuttingProxy(sim.port);
  const c = sim.credentials;
  // Keystone's catalog names the host the token request was sent to, so every
  // call (Keystone, Nova) goes through the proxy.
  const session = new KeystoneSession({
    authUrl: `http://127.0.0.1:${proxy.port}/identity/v3`,
    auth: { type: "password", ...c.password },
    regionName: c.region,
    timeoutMs: 5_000,
    retry: { baseDelayMs: 1, maxDelayMs: 5 },
  });
  try {
    await fn({ nova: new NovaClient(session), sim, proxy });
  } finally {
    session.close();
    await proxy.close();
    await sim.close();
  }
}

const ACTIONS = [
  {
    marker: "os-migrateLive",
    call: (nova: NovaClient, id: string) => nova.liveMigrate(id),
  },
  {
    marker: '"migrate"',
    call: (nova: NovaClient, id: string) => nova.coldMigrate(id),
  },
] as const;

for (const action of ACTIONS) {
  Deno.test(`${action.marker} cut after sending on a pooled connection reaches Nova once and reports an unknown outcome`, async () => {
    await withProxiedNova(async ({ nova, sim, proxy }) => {
      // A read first, so the connection the action goes out on is a pooled
      // keep-alive one: the case in which Deno's fetch retried.
      const servers = await nova.listServersOnHost("node001");
      const vm = servers.find((s) => s.name === "vm-a");
      assert.ok(vm !== undefined, "vm-a on node001");
      proxy.cutNext(action.marker);
      await assert.rejects(action.call(nova, vm.id), UnavailableError);
      // Let a resend, if any, reach the simulator before counting.
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(proxy.seen(action.marker), 1, "sent through the proxy");
      assert.equal(
        sim.counters().migrationRequests[vm.id],
        1,
        "migration actions the simulator received",
      );
      // The action was carried out: the outcome was unknown, not a failure.
      assert.equal(sim.counters().migrationsAccepted[vm.id], 1);
    });
  });
}

Deno.test("a service disable (PUT) cut after sending reaches Nova once", async () => {
  await withProxiedNova(async ({ nova, sim, proxy }) => {
    const service = await nova.findComputeService("node002");
    assert.ok(service !== undefined);
    proxy.cutNext("evictor-test-disable");
    await assert.rejects(
      nova.setComputeServiceStatus(service.id, false, "evictor-test-disable"),
      UnavailableError,
    );
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(proxy.seen("evictor-test-disable"), 1);
    assert.equal(sim.counters().calls["PUT /compute/v2.1/os-services/{id}"], 1);
    const host = sim.state().hosts.find((h) => h.name === "node002");
    assert.equal(host?.enabled, false, "Nova carried it out");
  });
});

Deno.test("a cut read on a pooled connection is still retried (reads are idempotent)", async () => {
  await withProxiedNova(async ({ nova, proxy }) => {
    await nova.listServersOnHost("node001");
    proxy.cutNext("GET /compute/v2.1/servers/detail");
    const servers = await nova.listServersOnHost("node001");
    assert.ok(servers.length > 0);
    assert.ok(proxy.seen("GET /compute/v2.1/servers/detail") >= 3);
  });
});

Deno.test("a force_complete cut after sending on a pooled connection reaches Nova once", async () => {
  await withProxiedNova(async ({ nova, sim, proxy }) => {
    const id = sim.state().servers.find((s) => s.name === "vm-b")?.id ?? "";
    sim.injectMigrationFault(id, "stuck");
    await nova.liveMigrate(id);
    let migrationId = -1;
    for (let i = 0; i < 200 && migrationId < 0; i++) {
      // reads on the pooled connection until the copy runs
      const [m] = await nova.listServerMigrations(id);
      if (m?.status === "running") migrationId = m.id;
      else await new Promise((r) => setTimeout(r, 10));
    }
    assert.ok(migrationId >= 0, "the copy runs");
    proxy.cutNext('"force_complete"');
    await assert.rejects(
      nova.forceCompleteLiveMigration(id, migrationId),
      UnavailableError,
    );
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(proxy.seen('"force_complete"'), 1, "sent through the proxy");
    assert.equal(
      sim.counters().calls[
        "POST /compute/v2.1/servers/{id}/migrations/{mid}/action"
      ],
      1,
      "force_complete calls the simulator received",
    );
  });
});
