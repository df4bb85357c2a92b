import assert from "node:assert/strict";
import {
  BASIC_SCENARIO,
  eventually,
  withSim,
} from "../tests/harness/openstack_util.ts";
import {
  BadRequestError,
  ConflictError,
  InvalidResponseError,
  NotFoundError,
} from "./errors.ts";
import { type NovaCall, NovaClient } from "./nova.ts";
import { MicroversionError } from "./microversion.ts";
import { failureReason } from "./instance_actions.ts";
import { ManualClock } from "../tests/harness/nova_sim/mod.ts";

Deno.test("nova: listServersOnHost returns every server of the host with flavor and states", async () => {
  await withSim(BASIC_SCENARIO, async ({ nova }) => {
    const servers = await nova.listServersOnHost("node001");
    assert.deepEqual(servers.map((s) => s.name).sort(), [
      "vm-a",
      "vm-b",
      "vm-c",
    ]);
    const b = servers.find((s) => s.name === "vm-b");
    assert.ok(b);
    assert.equal(b.status, "ACTIVE");
    assert.equal(b.host, "node001");
    assert.equal(b.hypervisorHostname, "node001");
    assert.equal(b.taskState, null);
    assert.equal(b.vmState, "active");
    assert.equal(b.powerState, 1);
    assert.deepEqual(b.flavor, {
      ramMb: 8192,
      vcpus: 4,
      originalName: "m1.ram8192",
      disk: 20,
      ephemeral: 0,
      swap: 0,
      extraSpecs: {},
    });
    const c = servers.find((s) => s.name === "vm-c");
    assert.equal(c?.status, "SHUTOFF");
    assert.equal(c?.powerState, 4);
  });
});

Deno.test("nova: listServersOnHost follows servers_links over every page", async () => {
  const scenario = {
    ...BASIC_SCENARIO,
    maxLimit: 2,
    serverGroups: [{ host: "node002", count: 7, ramMb: [512, 1024] }],
  };
  await withSim(scenario, async ({ nova, sim }) => {
    const servers = await nova.listServersOnHost("node002");
    assert.equal(servers.length, 8);
    assert.equal(new Set(servers.map((s) => s.id)).size, 8);
    // 8 servers at 2 per page: 4 full pages and one empty page.
    assert.equal(sim.counters().calls["GET /compute/v2.1/servers/detail"], 5);
  });
});

Deno.test("nova: client page size is sent as limit and pages are joined", async () => {
  await withSim(BASIC_SCENARIO, async ({ nova, sim }) => {
    const servers = await nova.listServersOnHost("node001");
    assert.equal(servers.length, 3);
    assert.equal(sim.counters().calls["GET /compute/v2.1/servers/detail"], 4);
  }, { novaPageSize: 1 });
});

Deno.test("nova: every call sends the microversion and the simulator echoes it", async () => {
  await withSim(BASIC_SCENARIO, async ({ sim, session }) => {
    const token = await session.token();
    const res = await fetch(`${sim.computeUrl}/servers/detail?all_tenants=1`, {
      headers: {
        "X-Auth-Token": token.value,
        "OpenStack-API-Version": "compute 2.90",
      },
    });
    await res.body?.cancel();
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("openstack-api-version"), "compute 2.90");
    assert.equal(res.headers.get("x-openstack-nova-api-version"), "2.90");
    assert.match(res.headers.get("x-openstack-request-id") ?? "", /^req-/);
    const tooNew = await fetch(`${sim.computeUrl}/servers/detail`, {
      headers: {
        "X-Auth-Token": token.value,
        "OpenStack-API-Version": "compute 2.999",
      },
    });
    assert.equal(tooNew.status, 406);
    const body = await tooNew.json();
    assert.match(
      body.computeFault.message,
      /Version 2.999 is not supported by the API/,
    );
  });
});

Deno.test("nova: a pinned microversion Nova does not support is refused naming both", async () => {
  await withSim(BASIC_SCENARIO, async ({ session, sim }) => {
    const nova = new NovaClient(session, { microversion: "2.200" });
    await assert.rejects(nova.listServersOnHost("node001"), (e: unknown) => {
      assert.ok(e instanceof MicroversionError);
      assert.match(
        e.message,
        /compute_api_version 2\.200 is not supported by Nova at http:\/\/127\.0\.0\.1:\d+\/compute\/v2\.1\/, which supports compute microversions 2\.1 to 2\.96/,
      );
      return true;
    });
    assert.equal(
      sim.counters().calls["GET /compute/v2.1/servers/detail"],
      undefined,
      "no call sent at a version Nova would answer with 406",
    );
  });
});

Deno.test("nova: negotiates the highest version both support, once", async () => {
  // Wallaby's maximum is 2.88: below evictor's 2.90.
  await withSim(
    { ...BASIC_SCENARIO, maxMicroversion: "2.88" },
    async ({ nova, sim }) => {
      assert.equal(nova.microversion, "2.90", "before the first call");
      const servers = await nova.listServersOnHost("node001");
      assert.equal(servers.length, 3);
      await nova.listMigrations({ host: "node001" });
      assert.equal(nova.microversion, "2.88");
      assert.equal(sim.counters().calls["GET /compute/v2.1/"], 1, "one look");
    },
  );
  await withSim(BASIC_SCENARIO, async ({ nova }) => {
    await nova.listServersOnHost("node001");
    assert.equal(nova.microversion, "2.90", "Nova's 2.96 is above ours");
  });
});

Deno.test("nova: a pinned version within Nova's range is sent as is", async () => {
  await withSim(
    { ...BASIC_SCENARIO, maxMicroversion: "2.88" },
    async ({ session, sim }) => {
      const nova = new NovaClient(session, { microversion: "2.79" });
      const seen: string[] = [];
      const off = sim.onCall((c) => seen.push(c.key));
      await nova.listServersOnHost("node001");
      off();
      assert.equal(nova.microversion, "2.79");
      assert.ok(seen.includes("GET /compute/v2.1/servers/detail"));
    },
  );
});

Deno.test("nova: a cloud below the floor is refused naming both ranges", async () => {
  await withSim(
    { ...BASIC_SCENARIO, maxMicroversion: "2.53" },
    async ({ nova, sim }) => {
      await assert.rejects(nova.listServersOnHost("node001"), (e: unknown) => {
        assert.ok(e instanceof MicroversionError);
        assert.match(
          e.message,
          /supports compute microversions 2\.1 to 2\.53; evictor needs 2\.59 to 2\.90/,
        );
        return true;
      });
      // A refusal is not cached as a success: the next call looks again.
      await assert.rejects(
        nova.listServersOnHost("node001"),
        MicroversionError,
      );
      assert.equal(sim.counters().calls["GET /compute/v2.1/"], 2);
    },
  );
});

Deno.test("nova: getServer and NotFound with Nova's message and request id", async () => {
  await withSim(BASIC_SCENARIO, async ({ nova, sim }) => {
    const id = sim.state().servers.find((s) => s.name === "vm-a")?.id ?? "";
    const s = await nova.getServer(id);
    assert.equal(s.name, "vm-a");
    const missing = "00000000-0000-4000-8000-000000000000";
    await assert.rejects(nova.getServer(missing), (e: unknown) => {
      assert.ok(e instanceof NotFoundError);
      assert.equal(e.status, 404);
      assert.equal(e.message, `Instance ${missing} could not be found.`);
      assert.match(e.requestId ?? "", /^req-/);
      return true;
    });
  });
});

Deno.test("nova: liveMigrate is accepted, goes through the live statuses and moves the VM", async () => {
  const clock = new ManualClock();
  await withSim(BASIC_SCENARIO, async ({ nova, sim, logger }) => {
    const id = sim.state().servers.find((s) => s.name === "vm-a")?.id ?? "";
    const r = await nova.liveMigrate(id);
    assert.match(r.requestId ?? "", /^req-/);
    assert.ok(
      logger.lines.some((l) =>
        l.msg === "Nova accepted action" && l.obj["requestId"] === r.requestId
      ),
    );
    const during = await nova.getServer(id);
    assert.equal(during.status, "MIGRATING");
    assert.equal(during.taskState, "migrating");
    // A second request while it migrates is refused with 409.
    await assert.rejects(nova.liveMigrate(id), (e: unknown) => {
      assert.ok(e instanceof ConflictError);
      assert.match(
        e.message,
        /Cannot 'os-migrateLive' instance .* while it is in task_state migrating/,
      );
      return true;
    });
    clock.advance(3_600_000);
    const seen = new Set<string>();
    await eventually(async () => {
      const ms = await nova.listMigrations({ instanceUuid: id });
      for (const m of ms) seen.add(m.status);
      return ms[0]?.status === "completed";
    });
    const [m] = await nova.listMigrations({
      instanceUuid: id,
      type: "live-migration",
    });
    assert.ok(m);
    assert.equal(m.sourceCompute, "node001");
    assert.equal(m.destCompute, "node002");
    assert.equal(m.instanceUuid, id);
    assert.equal(m.migrationType, "live-migration");
    assert.match(m.uuid, /^[0-9a-f-]{36}$/);
    const after = await nova.getServer(id);
    assert.equal(after.host, "node002");
    assert.equal(after.status, "ACTIVE");
    assert.equal(sim.counters().migrationsAccepted[id], 1);
    assert.equal(sim.counters().migrationRequests[id], 2);
  }, { clock });
});

Deno.test("nova: listServerMigrations shows progress and abortLiveMigration cancels", async () => {
  await withSim({ ...BASIC_SCENARIO, timeScale: 50 }, async ({ nova, sim }) => {
    const id = sim.state().servers.find((s) => s.name === "vm-b")?.id ?? "";
    sim.injectMigrationFault(id, "stuck");
    await nova.liveMigrate(id);
    let running: Awaited<ReturnType<typeof nova.listServerMigrations>> = [];
    await eventually(async () => {
      running = await nova.listServerMigrations(id);
      return running[0]?.status === "running";
    });
    const m = running[0];
    assert.ok(m);
    assert.equal(m.serverUuid, id);
    assert.equal(m.memoryTotalBytes, 8192 * 1024 * 1024);
    assert.ok((m.memoryProcessedBytes ?? -1) >= 0);
    await nova.abortLiveMigration(id, m.id);
    assert.deepEqual(await nova.listServerMigrations(id), []);
    const [rec] = await nova.listMigrations({ instanceUuid: id });
    assert.equal(rec?.status, "cancelled");
    const s = await nova.getServer(id);
    assert.equal(s.status, "ACTIVE");
    assert.equal(s.host, "node001");
    await assert.rejects(nova.abortLiveMigration(id, m.id), ConflictError);
  });
});

Deno.test("nova: getServerMigration reads one copy's progress, counted by route; a 404 once it ended is undefined, not retried", async () => {
  await withSim({ ...BASIC_SCENARIO, timeScale: 50 }, async ({ nova, sim }) => {
    const id = sim.state().servers.find((s) => s.name === "vm-b")?.id ?? "";
    sim.injectMigrationFault(id, "stuck");
    await nova.liveMigrate(id);
    let mid = -1;
    await eventually(async () => {
      const [m] = await nova.listServerMigrations(id);
      mid = m?.status === "running" ? m.id : -1;
      return mid >= 0;
    });
    const heard: NovaCall[] = [];
    nova.onCall((c) => heard.push(c));
    const read = await nova.getServerMigration(id, mid);
    assert.ok(read);
    assert.equal(read.id, mid);
    assert.equal(read.serverUuid, id);
    assert.equal(read.memoryTotalBytes, 8192 * 1024 * 1024);
    assert.equal(
      (read.memoryProcessedBytes ?? -1) + (read.memoryRemainingBytes ?? -1),
      read.memoryTotalBytes,
    );
    await nova.abortLiveMigration(id, mid);
    const before =
      sim.counters().calls["GET /compute/v2.1/servers/{id}/migrations/{mid}"] ??
        0;
    assert.equal(await nova.getServerMigration(id, mid), undefined);
    assert.equal(
      sim.counters().calls["GET /compute/v2.1/servers/{id}/migrations/{mid}"],
      before + 1,
    );
    assert.deepEqual(
      heard.filter((c) => c.call === "getServerMigration").map((c) => [
        c.method,
        c.route,
        c.outcome,
      ]),
      [
        ["GET", "/servers/{id}/migrations/{migrationId}", "ok"],
        ["GET", "/servers/{id}/migrations/{migrationId}", "not_found"],
      ],
    );
    await assert.rejects(nova.getServerMigration(id, "x"), TypeError);
  });
});

Deno.test("nova: coldMigrate ends in VERIFY_RESIZE until confirmResize", async () => {
  const clock = new ManualClock();
  await withSim(BASIC_SCENARIO, async ({ nova, sim }) => {
    const id = sim.state().servers.find((s) => s.name === "vm-c")?.id ?? "";
    await nova.coldMigrate(id);
    assert.equal((await nova.getServer(id)).status, "RESIZE");
    await assert.rejects(nova.confirmResize(id), ConflictError);
    clock.advance(3_600_000);
    await eventually(async () =>
      (await nova.getServer(id)).status === "VERIFY_RESIZE"
    );
    const s = await nova.getServer(id);
    assert.equal(s.host, "node002");
    const [m] = await nova.listMigrations({
      instanceUuid: id,
      type: "migration",
    });
    assert.equal(m?.status, "finished");
    await nova.confirmResize(id);
    const after = await nova.getServer(id);
    assert.equal(after.status, "SHUTOFF");
    const [confirmed] = await nova.listMigrations({ instanceUuid: id });
    assert.equal(confirmed?.status, "confirmed");
  }, { clock });
});

Deno.test("nova: coldMigrate with no valid host is a BadRequest", async () => {
  const scenario = {
    hosts: [{ name: "a" }, { name: "b", ramMb: 1024 }],
    servers: [{
      name: "big",
      host: "a",
      ramMb: 4096,
      status: "SHUTOFF" as const,
    }],
  };
  await withSim(scenario, async ({ nova, sim }) => {
    const id = sim.state().servers[0]?.id ?? "";
    await assert.rejects(nova.coldMigrate(id), (e: unknown) => {
      assert.ok(e instanceof BadRequestError);
      assert.match(e.message, /No valid host was found/);
      return true;
    });
    assert.equal(sim.counters().migrationsAccepted[id], undefined);
  });
});

Deno.test("nova: listMigrations filters by host, type and changes-since", async () => {
  const clock = new ManualClock();
  await withSim(BASIC_SCENARIO, async ({ nova, sim }) => {
    const st = sim.state();
    const a = st.servers.find((s) => s.name === "vm-a")?.id ?? "";
    const d = st.servers.find((s) => s.name === "vm-d")?.id ?? "";
    await nova.liveMigrate(a);
    await nova.liveMigrate(d);
    // As on real Nova, the conductor writes the record after the 202.
    assert.deepEqual(await nova.listMigrations({ host: "node001" }), []);
    clock.advance(300);
    // Not scheduled yet: only the source matches, and a fresh record
    // (updated_at null) is not in a changes-since list.
    assert.deepEqual(
      await nova.listMigrations({ changesSince: new Date(0) }),
      [],
    );
    const before = await nova.listMigrations({ host: "node001" });
    assert.deepEqual(before.map((m) => m.instanceUuid), [a]);
    clock.advance(1_000);
    // Scheduled: vm-d goes to node001, and `host` matches source or dest.
    const onNode001 = await nova.listMigrations({ host: "node001" });
    assert.deepEqual(onNode001.map((m) => m.instanceUuid), [d, a]);
    assert.equal(onNode001[0]?.destCompute, "node001");
    const live = await nova.listMigrations({ type: "live-migration" });
    assert.equal(live.length, 2);
    assert.deepEqual(await nova.listMigrations({ type: "migration" }), []);
    const future = new Date(sim.state().now + 3_600_000);
    assert.deepEqual(await nova.listMigrations({ changesSince: future }), []);
    const past = new Date(sim.state().now - 3_600_000);
    assert.equal((await nova.listMigrations({ changesSince: past })).length, 2);
  }, { clock });
});

Deno.test("nova: listMigrations follows migrations_links", async () => {
  await withSim({ ...BASIC_SCENARIO, maxLimit: 1 }, async ({ nova, sim }) => {
    for (const s of sim.state().servers.filter((x) => x.status === "ACTIVE")) {
      await nova.liveMigrate(s.id);
    }
    const all = await nova.listMigrations({});
    assert.equal(all.length, 3);
    assert.equal(new Set(all.map((m) => m.uuid)).size, 3);
  });
});

Deno.test("nova: findHypervisorByHostname matches exactly, with servers", async () => {
  const scenario = {
    hosts: [{ name: "node1" }, { name: "node10" }],
    servers: [{ name: "x", host: "node1" }],
  };
  await withSim(scenario, async ({ nova, sim }) => {
    const h = await nova.findHypervisorByHostname("node1", {
      withServers: true,
    });
    assert.ok(h);
    assert.equal(h.hypervisorHostname, "node1");
    assert.equal(h.id, sim.state().hosts[0]?.hypervisorId);
    assert.equal(h.serviceHost, "node1");
    assert.equal(h.servers?.length, 1);
    const h10 = await nova.findHypervisorByHostname("node10", {
      withServers: true,
    });
    assert.deepEqual(h10?.servers, []);
    assert.equal(await nova.findHypervisorByHostname("nodeX"), undefined);
  });
});

Deno.test("nova: findComputeService and setComputeServiceStatus with a reason", async () => {
  await withSim(BASIC_SCENARIO, async ({ nova, sim }) => {
    const svc = await nova.findComputeService("node001");
    assert.ok(svc);
    assert.equal(svc.status, "enabled");
    assert.equal(svc.disabledReason, null);
    assert.equal(svc.id, sim.state().hosts[0]?.serviceId);
    const off = await nova.setComputeServiceStatus(
      svc.id,
      false,
      "evictor: kernel 6.12",
    );
    assert.equal(off.status, "disabled");
    assert.equal(off.disabledReason, "evictor: kernel 6.12");
    const on = await nova.setComputeServiceStatus(svc.id, true);
    assert.equal(on.status, "enabled");
    assert.equal(on.disabledReason, null);
    assert.equal(await nova.findComputeService("nope"), undefined);
    await assert.rejects(
      nova.setComputeServiceStatus(
        "00000000-0000-4000-8000-000000000000",
        false,
      ),
      NotFoundError,
    );
    await assert.rejects(
      nova.setComputeServiceStatus(svc.id, true, "x"),
      TypeError,
    );
  });
});

Deno.test("nova: listComputeServices lists every nova-compute host", async () => {
  await withSim(BASIC_SCENARIO, async ({ nova, sim }) => {
    const services = await nova.listComputeServices();
    assert.deepEqual(
      services.map((s) => s.host).sort(),
      ["node001", "node002", "node003"],
    );
    assert.ok(services.every((s) => s.binary === "nova-compute"));
    const node003 = services.find((s) => s.host === "node003");
    assert.equal(node003?.status, "disabled");
    assert.equal(node003?.disabledReason, "broken");
    assert.equal(node003?.id, sim.state().hosts[2]?.serviceId);
  });
});

Deno.test("nova: a response of the wrong shape is an InvalidResponseError naming the field", async () => {
  await withSim(BASIC_SCENARIO, async ({ session, sim }) => {
    const nova = new NovaClient(session, { microversion: "2.40" });
    // Before 2.47 the flavor is not embedded: the zod boundary refuses it.
    await assert.rejects(nova.listServersOnHost("node001"), (e: unknown) => {
      assert.ok(e instanceof InvalidResponseError);
      assert.match(e.message, /servers\.0\.flavor\.ram/);
      return true;
    });
    void sim;
  });
});

Deno.test("nova/placement: the client sends the microversion headers and the token on every call", async () => {
  const seen: { url: string; headers: Headers }[] = [];
  const spy: typeof fetch = (input, init) => {
    seen.push({ url: String(input), headers: new Headers(init?.headers) });
    return fetch(input, init);
  };
  await withSim(BASIC_SCENARIO, async ({ nova, placement, sim }) => {
    await nova.listServersOnHost("node001");
    await nova.findComputeService("node001");
    const rp = sim.state().hosts[0]?.hypervisorId ?? "";
    await placement.getTraits(rp);
    const all = seen.filter((s) => s.url.includes("/compute/"));
    // First the version document (no microversion header: Nova ignores it
    // there), then the calls at the negotiated version.
    assert.match(all[0]?.url ?? "", /\/compute\/v2\.1\/$/);
    assert.equal(all[0]?.headers.get("openstack-api-version"), null);
    const compute = all.slice(1);
    assert.equal(compute.length, 2);
    for (const c of compute) {
      assert.equal(c.headers.get("openstack-api-version"), "compute 2.90");
      assert.equal(c.headers.get("x-openstack-nova-api-version"), "2.90");
      assert.ok(c.headers.get("x-auth-token"));
      assert.equal(c.headers.get("accept"), "application/json");
    }
    const detail = compute[0]?.url ?? "";
    assert.match(detail, /\/servers\/detail\?all_tenants=1&host=node001$/);
    const pl = seen.filter((s) => s.url.includes("/placement/"));
    assert.equal(pl[0]?.headers.get("openstack-api-version"), "placement 1.39");
    const auth = seen.find((s) => s.url.endsWith("/auth/tokens"));
    assert.equal(auth?.headers.get("x-auth-token"), null);
  }, { transport: { fetch: spy } });
});

Deno.test("nova: getInstanceAction gives Nova's reason for a live migration that failed after its 202", async () => {
  await withSim(BASIC_SCENARIO, async ({ nova, sim, session }) => {
    // Every other host disabled: the conductor finds no valid host.
    const other = await nova.findComputeService("node002");
    assert.ok(other !== undefined);
    await nova.setComputeServiceStatus(other.id, false, "test");
    const id = sim.state().servers.find((s) => s.name === "vm-a")?.id ?? "";
    const started = await nova.liveMigrate(id);
    assert.ok(started.requestId !== undefined);
    await eventually(
      () =>
        sim.state().migrations.some((m) =>
          m.serverId === id && m.status === "error"
        ),
      5_000,
      "the migration record in error",
    );
    const action = await nova.getInstanceAction(id, started.requestId);
    assert.equal(action.action, "live-migration");
    assert.equal(action.requestId, started.requestId);
    assert.equal(action.message, "Error");
    assert.equal(
      failureReason(action),
      "No valid host was found. There are not enough hosts available.",
    );
    // Before 2.84 there is no `details`: the traceback's last line says it.
    const old = new NovaClient(session, { microversion: "2.83" });
    const before = await old.getInstanceAction(id, started.requestId);
    assert.equal(before.events[0]?.details, null);
    assert.match(failureReason(before) ?? "", /No valid host was found/);
    await assert.rejects(
      nova.getInstanceAction(id, "req-00000000-0000-4000-8000-000000000000"),
      (e: unknown) => {
        assert.ok(e instanceof NotFoundError);
        assert.match(e.message, /Action req-0+-0+-4000-8000-0+ not found/);
        return true;
      },
    );
  });
});

Deno.test("nova: a completed live migration's action has no failure reason", async () => {
  await withSim(BASIC_SCENARIO, async ({ nova, sim }) => {
    const id = sim.state().servers.find((s) => s.name === "vm-b")?.id ?? "";
    const started = await nova.liveMigrate(id);
    await eventually(
      () =>
        sim.state().migrations.some((m) =>
          m.serverId === id && m.status === "completed"
        ),
      10_000,
      "the migration completed",
    );
    const action = await nova.getInstanceAction(id, started.requestId ?? "");
    assert.deepEqual(action.events.map((e) => [e.event, e.result]), [
      ["conductor_live_migrate_instance", "Success"],
      ["compute_live_migration", "Success"],
    ]);
    assert.equal(failureReason(action), undefined);
    assert.equal(action.message, null);
  });
});

Deno.test("nova: changes-since filters on updated_at, as Nova's does: a long-queued record drops out", async () => {
  const clock = new ManualClock();
  await withSim(BASIC_SCENARIO, async ({ nova, sim }) => {
    const idOf = (n: string) =>
      sim.state().servers.find((s) => s.name === n)?.id ?? "";
    // node001 runs one live migration at a time (Nova's default limit): the
    // first never ends, the second waits queued behind it.
    sim.injectMigrationFault("vm-a", "stuck");
    await nova.liveMigrate(idOf("vm-a"));
    clock.advance(10_000);
    await nova.liveMigrate(idOf("vm-b"));
    clock.advance(10_000);
    const statuses = async (
      filter: Parameters<NovaClient["listMigrations"]>[0],
    ) => (await nova.listMigrations(filter)).map((m) => m.status).sort();
    assert.deepEqual(await statuses({ host: "node001" }), [
      "queued",
      "running",
    ]);
    clock.advance(600_000);
    const since = new Date(clock.now() - 60_000);
    assert.deepEqual(
      await statuses({ host: "node001", changesSince: since }),
      [],
      "neither the queued nor the unchanged running record is seen",
    );
    assert.deepEqual(await statuses({ host: "node001" }), [
      "queued",
      "running",
    ]);
  }, { clock });
});

Deno.test("nova: onServerDate hears the Date of each answer (Nova's clock), until unsubscribed", async () => {
  await withSim(BASIC_SCENARIO, async ({ nova, sim }) => {
    sim.world.novaClockOffsetMs = -300_000;
    const heard: number[] = [];
    const stop = nova.onServerDate((ms) => heard.push(ms));
    await nova.listServersOnHost("node001");
    await nova.listMigrations({ host: "node001" });
    assert.equal(heard.length, 2);
    for (const ms of heard) {
      assert.equal(ms % 1000, 0);
      // the simulator's Nova runs 5 min behind its world (x1000 scaled)
      const behind = sim.world.now() - ms;
      assert.ok(behind > 290_000 && behind < 400_000, `${behind}`);
    }
    stop();
    await nova.listServersOnHost("node001");
    assert.equal(heard.length, 2);
  });
});

Deno.test("nova: onCall tells each call with the client's name, method, route template and outcome, until unsubscribed", async () => {
  // a still clock: the first migration runs on while the second start comes
  const clock = new ManualClock();
  await withSim(BASIC_SCENARIO, async ({ nova, sim }) => {
    const heard: NovaCall[] = [];
    const stop = nova.onCall((c) => heard.push(c));
    const id = sim.state().servers.find((s) => s.name === "vm-a")?.id ?? "";
    await nova.liveMigrate(id);
    await assert.rejects(nova.liveMigrate(id), ConflictError);
    await assert.rejects(nova.getServer("no-such-server"));
    await nova.findComputeService("node001");
    assert.deepEqual(heard, [
      {
        call: "liveMigrate",
        method: "POST",
        route: "/servers/{id}/action",
        outcome: "ok",
      },
      {
        call: "liveMigrate",
        method: "POST",
        route: "/servers/{id}/action",
        outcome: "conflict",
      },
      {
        call: "getServer",
        method: "GET",
        route: "/servers/{id}",
        outcome: "not_found",
      },
      {
        call: "findComputeService",
        method: "GET",
        route: "/os-services",
        outcome: "ok",
      },
    ]);
    stop();
    await nova.getServer(id);
    assert.equal(heard.length, 4);
  }, { clock });
});
