import assert from "node:assert/strict";
import type { ScenarioInput } from "./scenario.ts";
import type { NovaSim } from "./server.ts";
import { call, withSim } from "./test_client.ts";

const SCENARIO: ScenarioInput = {
  seed: 11,
  timeScale: 1,
  timing: { jitter: 0, scheduleSeconds: 0, prepareSeconds: 0.05 },
  hosts: [
    { name: "node001", maxConcurrentLiveMigrations: 4 },
    { name: "node002" },
    { name: "node003" },
  ],
  servers: [
    { name: "vm1", host: "node001", ramMb: 1024 },
    { name: "vm2", host: "node001", ramMb: 1024 },
    { name: "off", host: "node001", ramMb: 1024, status: "SHUTOFF" },
    { name: "tpm", host: "node001", liveMigrationBlocker: "vtpm" },
    { name: "sev", host: "node001", liveMigrationBlocker: "sev" },
    { name: "locked", host: "node001", locked: true },
    { name: "away", host: "node002", ramMb: 1024 },
  ],
};

const LIVE = { "os-migrateLive": { host: null, block_migration: "auto" } };

function idOf(sim: NovaSim, name: string): string {
  const s = sim.world.findServerByRef(name);
  assert.ok(s, `no server ${name}`);
  return s.id;
}

function migrationsOf(sim: NovaSim, name: string) {
  const id = idOf(sim, name);
  return sim.state().migrations.filter((m) => m.serverId === id);
}

/** POSTs an action that the client gives up on after `ms`. */
async function actionWithTimeout(
  sim: NovaSim,
  token: string,
  server: string,
  body: unknown,
  ms: number,
): Promise<number | "timeout"> {
  try {
    const res = await fetch(
      `${sim.computeUrl}/servers/${idOf(sim, server)}/action`,
      {
        method: "POST",
        headers: {
          "X-Auth-Token": token,
          "OpenStack-API-Version": "compute 2.90",
          "Content-Type": "application/json",
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(ms),
      },
    );
    await res.body?.cancel();
    return res.status;
  } catch (e) {
    if (e instanceof DOMException && e.name === "TimeoutError") {
      return "timeout";
    }
    throw e;
  }
}

Deno.test("sim faults: a dropped answer of a processed start hangs that call only", async () => {
  await withSim(async (sim, token) => {
    sim.injectActionFault("vm1", {
      action: "os-migrateLive",
      mode: "drop",
      processed: true,
    });
    const dropped = actionWithTimeout(sim, token, "vm1", LIVE, 300);
    // Another start is answered at once while the first one hangs.
    const other = await call(
      sim,
      token,
      "POST",
      `/servers/${idOf(sim, "vm2")}/action`,
      LIVE,
    );
    assert.equal(other.status, 202);
    assert.equal(await dropped, "timeout");
    // Nova carried it out: a migration record and the VM is MIGRATING.
    assert.equal(migrationsOf(sim, "vm1").length, 1);
    assert.equal(sim.counters().faultsInjected, 1);
  }, SCENARIO);
});

Deno.test("sim faults: a dropped unprocessed start leaves no trace in Nova", async () => {
  await withSim(async (sim, token) => {
    sim.injectActionFault("vm1", { mode: "drop", processed: false });
    assert.equal(
      await actionWithTimeout(sim, token, "vm1", LIVE, 200),
      "timeout",
    );
    assert.equal(migrationsOf(sim, "vm1").length, 0);
    const s = await call(sim, token, "GET", `/servers/${idOf(sim, "vm1")}`);
    assert.equal(
      (s.json as { server: { status: string } }).server.status,
      "ACTIVE",
    );
    // The fault was used up: the retry goes through.
    assert.equal(await actionWithTimeout(sim, token, "vm1", LIVE, 2000), 202);
    assert.equal(migrationsOf(sim, "vm1").length, 1);
  }, SCENARIO);
});

Deno.test("sim faults: a delayed answer comes late; processed or not decides when Nova acts", async () => {
  await withSim(async (sim, token) => {
    sim.injectActionFault("vm1", {
      mode: "delay",
      delayMs: 400,
      processed: true,
    });
    sim.injectActionFault("vm2", {
      mode: "delay",
      delayMs: 400,
      processed: false,
    });
    const t0 = performance.now();
    const a = actionWithTimeout(sim, token, "vm1", LIVE, 5000);
    const b = actionWithTimeout(sim, token, "vm2", LIVE, 5000);
    await new Promise((r) => setTimeout(r, 150));
    assert.equal(migrationsOf(sim, "vm1").length, 1, "processed at once");
    assert.equal(migrationsOf(sim, "vm2").length, 0, "not yet processed");
    assert.equal(await a, 202);
    assert.equal(await b, 202);
    assert.ok(performance.now() - t0 >= 390);
    assert.equal(migrationsOf(sim, "vm2").length, 1);
  }, SCENARIO);
});

Deno.test("sim faults: a 503 on a start, processed or not, for the named action only", async () => {
  await withSim(async (sim, token) => {
    sim.injectActionFault("vm1", {
      action: "os-migrateLive",
      mode: "status",
      status: 503,
      processed: false,
    });
    sim.injectActionFault("vm2", {
      action: "os-migrateLive",
      mode: "status",
      status: 500,
      processed: true,
    });
    const path = (n: string) => `/servers/${idOf(sim, n)}/action`;
    // A fault on os-migrateLive does not hit another action of the VM.
    const confirm = await call(sim, token, "POST", path("vm1"), {
      confirmResize: null,
    });
    assert.equal(confirm.status, 409);
    const r1 = await call(sim, token, "POST", path("vm1"), LIVE);
    assert.equal(r1.status, 503);
    assert.deepEqual(Object.keys(r1.json as object), ["serviceUnavailable"]);
    assert.equal(migrationsOf(sim, "vm1").length, 0);
    const r2 = await call(sim, token, "POST", path("vm2"), LIVE);
    assert.equal(r2.status, 500);
    assert.equal(migrationsOf(sim, "vm2").length, 1);
    // times: 1 (the default): the next start of vm1 is accepted.
    assert.equal(
      (await call(sim, token, "POST", path("vm1"), LIVE)).status,
      202,
    );
  }, SCENARIO);
});

Deno.test("sim faults: bad action faults are refused naming the value", async () => {
  await withSim((sim) => {
    assert.throws(
      () => sim.injectActionFault("vm1", { mode: "delay", processed: true }),
      /delayMs >= 0, got undefined/,
    );
    assert.throws(
      () =>
        sim.injectActionFault("vm1", {
          mode: "status",
          processed: false,
          status: 404 as 503,
        }),
      /status 500, 502, 503, 504 or 429, got 404/,
    );
    assert.throws(
      () => sim.injectActionFault("nope", { mode: "drop", processed: true }),
      /no server with id or name "nope"/,
    );
    return Promise.resolve();
  }, SCENARIO);
});

Deno.test("sim: the refusals of os-migrateLive carry Nova's status and message", async () => {
  await withSim(async (sim, token) => {
    const start = (n: string) =>
      call(sim, token, "POST", `/servers/${idOf(sim, n)}/action`, LIVE);
    const msg = (r: { json: unknown }) =>
      Object.values(r.json as Record<string, { message: string }>)[0]
        ?.message;
    assert.equal((await start("vm1")).status, 202);
    const again = await start("vm1");
    assert.equal(again.status, 409);
    assert.equal(
      msg(again),
      `Cannot 'os-migrateLive' instance ${
        idOf(sim, "vm1")
      } while it is in task_state migrating`,
    );
    const off = await start("off");
    assert.equal(off.status, 409);
    assert.equal(
      msg(off),
      `Cannot 'os-migrateLive' instance ${
        idOf(sim, "off")
      } while it is in vm_state stopped`,
    );
    const tpm = await start("tpm");
    assert.equal(tpm.status, 400);
    assert.equal(
      msg(tpm),
      `Operation 'live-migration' not supported for vTPM-enabled instance (${
        idOf(sim, "tpm")
      }).`,
    );
    const sev = await start("sev");
    assert.equal(sev.status, 400);
    assert.match(msg(sev) ?? "", /not supported for SEV-enabled instance/);
    const locked = await start("locked");
    assert.equal(locked.status, 409);
    assert.equal(msg(locked), `Instance ${idOf(sim, "locked")} is locked`);
    // A VM that cannot live-migrate can still be cold-migrated.
    sim.setPower("tpm", false);
    const cold = await call(
      sim,
      token,
      "POST",
      `/servers/${idOf(sim, "tpm")}/action`,
      { migrate: null },
    );
    assert.equal(cold.status, 202);
    const force = await call(
      sim,
      token,
      "POST",
      `/servers/${idOf(sim, "vm2")}/action`,
      { "os-migrateLive": { host: null, block_migration: false, force: true } },
      "2.67",
    );
    assert.equal(force.status, 400);
    assert.equal(msg(force), "Can't force to a non-provided destination");
  }, SCENARIO);
});

Deno.test("sim: power on/off between passes changes what Nova allows", async () => {
  await withSim(async (sim, token) => {
    sim.setPower("vm1", false);
    const path = `/servers/${idOf(sim, "vm1")}`;
    const show = async () =>
      ((await call(sim, token, "GET", path)).json as {
        server: Record<string, unknown>;
      }).server;
    assert.equal((await show())["status"], "SHUTOFF");
    assert.equal((await show())["OS-EXT-STS:power_state"], 4);
    const live = await call(sim, token, "POST", `${path}/action`, LIVE);
    assert.equal(live.status, 409);
    sim.setPower("vm1", true);
    assert.equal((await show())["status"], "ACTIVE");
    assert.throws(() => sim.setPower("vm1", true), /vm_state active/);
  }, SCENARIO);
});

Deno.test("sim: os-migrations?host= matches source or destination, with changes-since and instance_uuid", async () => {
  await withSim(async (sim, token) => {
    await call(
      sim,
      token,
      "PUT",
      `/os-services/${
        sim.state().hosts.find((h) => h.name === "node001")?.serviceId
      }`,
      { status: "disabled", disabled_reason: "drain" },
    );
    const t0 = sim.state().now;
    await new Promise((r) => setTimeout(r, 20));
    // Outgoing from node001 and incoming (admin-forced) to disabled node001.
    assert.equal(
      (await call(
        sim,
        token,
        "POST",
        `/servers/${idOf(sim, "vm1")}/action`,
        LIVE,
      ))
        .status,
      202,
    );
    sim.migrateTo("away", "node001");
    // Nova writes a live migration's record after the 202 (recordDelaySeconds).
    await new Promise((r) => setTimeout(r, 300));
    const list = async (q: string) =>
      ((await call(sim, token, "GET", `/os-migrations?${q}`, undefined, "2.80"))
        .json as { migrations: Record<string, unknown>[] }).migrations;
    const onHost = await list("host=node001");
    assert.deepEqual(
      onHost.map((m) => m["instance_uuid"]).sort(),
      [idOf(sim, "vm1"), idOf(sim, "away")].sort(),
    );
    const incoming = onHost.find((m) =>
      m["instance_uuid"] === idOf(sim, "away")
    );
    assert.equal(incoming?.["source_compute"], "node002");
    assert.equal(incoming?.["dest_compute"], "node001");
    assert.deepEqual(
      (await list(`host=node001&instance_uuid=${idOf(sim, "away")}`)).length,
      1,
    );
    // vm1 went to node003 (most free RAM): node002 sees only "away" leave.
    assert.deepEqual(
      (await list("host=node002")).map((m) => m["instance_uuid"]),
      [idOf(sim, "away")],
    );
    const since = new Date(t0 + 10).toISOString();
    assert.equal((await list(`host=node001&changes-since=${since}`)).length, 2);
    const future = new Date(sim.state().now + 60_000).toISOString();
    assert.equal(
      (await list(`host=node001&changes-since=${future}`)).length,
      0,
    );
    // The forced migration lands on the disabled host.
    await new Promise((r) => setTimeout(r, 2500));
    const away = sim.state().servers.find((s) => s.name === "away");
    assert.equal(away?.host, "node001");
  }, SCENARIO);
});

Deno.test("sim: a named host is checked by the scheduler unless forced", async () => {
  await withSim(async (sim, token) => {
    const svc = sim.state().hosts.find((h) => h.name === "node003")?.serviceId;
    await call(sim, token, "PUT", `/os-services/${svc}`, {
      status: "disabled",
    });
    const to3 = {
      "os-migrateLive": { host: "node003", block_migration: "auto" },
    };
    const path = (n: string) => `/servers/${idOf(sim, n)}/action`;
    assert.equal(
      (await call(sim, token, "POST", path("vm1"), to3)).status,
      202,
    );
    assert.equal(
      (await call(sim, token, "POST", path("vm2"), {
        "os-migrateLive": { ...to3["os-migrateLive"], force: true },
      }, "2.67")).status,
      202,
    );
    await new Promise((r) => setTimeout(r, 2500));
    const st = sim.state();
    const byName = (n: string) => st.servers.find((s) => s.name === n);
    assert.equal(byName("vm1")?.host, "node001", "disabled host refused");
    assert.equal(migrationsOf(sim, "vm1")[0]?.status, "error");
    assert.equal(byName("vm2")?.host, "node003", "forced: scheduler skipped");
  }, SCENARIO);
});

Deno.test("sim: a user's own resize is a `resize` migration waiting in VERIFY_RESIZE", async () => {
  await withSim(async (sim, token) => {
    sim.resize("vm1", 2048);
    // 0.05 s prepare + 1024 MB at 500 MB/s + 1 s post.
    await new Promise((r) => setTimeout(r, 3500));
    const id = idOf(sim, "vm1");
    const server = ((await call(sim, token, "GET", `/servers/${id}`)).json as {
      server: Record<string, unknown>;
    }).server;
    assert.equal(server["status"], "VERIFY_RESIZE");
    assert.notEqual(server["OS-EXT-SRV-ATTR:host"], "node001");
    assert.equal((server["flavor"] as { ram: number }).ram, 2048);
    const ms = ((await call(
      sim,
      token,
      "GET",
      `/os-migrations?instance_uuid=${id}`,
    )).json as { migrations: Record<string, unknown>[] }).migrations;
    assert.equal(ms[0]?.["migration_type"], "resize");
    assert.equal(ms[0]?.["status"], "finished");
    assert.equal(ms[0]?.["source_compute"], "node001");
    const confirm = await call(sim, token, "POST", `/servers/${id}/action`, {
      confirmResize: null,
    });
    assert.equal(confirm.status, 204);
  }, SCENARIO);
});

Deno.test("sim faults: `*` hits whichever server's action comes next; the log and held answers tell which", async () => {
  await withSim(async (sim, token) => {
    sim.injectActionFault("*", {
      action: "os-migrateLive",
      mode: "drop",
      processed: true,
    });
    assert.equal(sim.heldAnswers(), 0);
    const held = actionWithTimeout(sim, token, "vm2", LIVE, 400);
    await new Promise((r) => setTimeout(r, 150));
    assert.equal(sim.heldAnswers(), 1);
    // Used up: the next server's start is answered.
    assert.equal(await actionWithTimeout(sim, token, "vm1", LIVE, 2000), 202);
    assert.equal(await held, "timeout");
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(sim.heldAnswers(), 0, "released when the client gave up");
    assert.deepEqual(sim.actionFaultLog(), [{
      serverId: idOf(sim, "vm2"),
      action: "os-migrateLive",
      mode: "drop",
    }]);
  }, SCENARIO);
});

Deno.test("sim: os-resetState brings an ERROR server back to active", async () => {
  await withSim(async (sim, token) => {
    sim.setServerError("vm1", "boom");
    const path = `/servers/${idOf(sim, "vm1")}`;
    const show = async () =>
      ((await call(sim, token, "GET", path)).json as {
        server: Record<string, unknown>;
      }).server;
    assert.equal((await show())["status"], "ERROR");
    assert.ok("fault" in await show());
    sim.resetState("vm1", "active");
    const s = await show();
    assert.equal(s["status"], "ACTIVE");
    assert.ok(!("fault" in s));
    assert.equal(
      (await call(sim, token, "POST", `${path}/action`, LIVE)).status,
      202,
    );
  }, SCENARIO);
});

Deno.test("sim faults: a stranded live migration completes but leaves the server MIGRATING on the source until os-resetState", async () => {
  await withSim(async (sim, token) => {
    sim.injectMigrationFault("vm1", "strand");
    const id = idOf(sim, "vm1");
    const path = `/servers/${id}`;
    assert.equal(
      (await call(sim, token, "POST", `${path}/action`, LIVE)).status,
      202,
    );
    const deadline = Date.now() + 20_000;
    while (migrationsOf(sim, "vm1")[0]?.status !== "completed") {
      assert.ok(Date.now() < deadline, "the record never completed");
      await new Promise((r) => setTimeout(r, 50));
      sim.world.advance();
    }
    const show = async () =>
      ((await call(sim, token, "GET", path)).json as {
        server: Record<string, unknown>;
      }).server;
    const stranded = await show();
    assert.equal(stranded["status"], "MIGRATING");
    assert.equal(stranded["OS-EXT-STS:task_state"], "migrating");
    assert.equal(stranded["OS-EXT-SRV-ATTR:host"], "node001");
    // Nova keeps refusing a new start while the task shows.
    const again = await call(sim, token, "POST", `${path}/action`, LIVE);
    assert.equal(again.status, 409);
    assert.match(JSON.stringify(again.json), /task_state migrating/);
    // The destination's event says why, in the live migration's action.
    const action = [...sim.world.instanceActions.values()].find((a) =>
      a.serverId === id && a.action === "live-migration"
    );
    const failed = action?.events.find((e) =>
      e.event === "compute_post_live_migration_at_destination"
    );
    assert.equal(failed?.result, "Error");
    assert.equal(failed?.details, "Not authorized.");
    // A person resets it (Nova's admin action): ACTIVE on the source.
    const reset = await call(sim, token, "POST", `${path}/action`, {
      "os-resetState": { state: "active" },
    });
    assert.equal(reset.status, 202);
    const after = await show();
    assert.equal(after["status"], "ACTIVE");
    assert.equal(after["OS-EXT-STS:task_state"], null);
    assert.equal(after["OS-EXT-SRV-ATTR:host"], "node001");
    assert.equal(
      (await call(sim, token, "POST", `${path}/action`, LIVE)).status,
      202,
    );
    const bad = await call(sim, token, "POST", `${path}/action`, {
      "os-resetState": { state: "paused" },
    });
    assert.equal(bad.status, 400);
  }, SCENARIO);
});
