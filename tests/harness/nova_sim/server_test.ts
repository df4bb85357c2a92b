import assert from "node:assert/strict";
import { startNovaSim } from "./server.ts";
import {
  call,
  type NovaSimClient,
  withSim as withSimOf,
} from "./test_client.ts";
import type { ScenarioInput } from "./scenario.ts";

const SCENARIO: ScenarioInput = {
  seed: 5,
  timeScale: 1,
  hosts: [{ name: "node001" }, { name: "node002" }],
  servers: [
    { name: "vm1", host: "node001", ramMb: 2048 },
    { name: "vm2", host: "node001", ramMb: 4096, status: "ERROR" },
  ],
};

function withSim(fn: NovaSimClient, scenario = SCENARIO): Promise<void> {
  return withSimOf(fn, scenario);
}

Deno.test("sim: Keystone issues a token in X-Subject-Token with a catalog", async () => {
  const sim = await startNovaSim(SCENARIO);
  try {
    const res = await fetch(`${sim.authUrl}/auth/tokens`, {
      method: "POST",
      body: JSON.stringify({
        auth: {
          identity: {
            methods: ["application_credential"],
            application_credential: sim.credentials.applicationCredential,
          },
        },
      }),
    });
    assert.equal(res.status, 201);
    assert.ok((res.headers.get("x-subject-token") ?? "").length > 20);
    const body = await res.json();
    assert.deepEqual(body.token.catalog.map((s: { type: string }) => s.type), [
      "identity",
      "compute",
      "placement",
    ]);
    assert.ok(Date.parse(body.token.expires_at) > Date.now());
    const bad = await fetch(`${sim.authUrl}/auth/tokens`, {
      method: "POST",
      body: JSON.stringify({
        auth: {
          identity: {
            methods: ["application_credential"],
            application_credential: { id: "x", secret: "y" },
          },
        },
      }),
    });
    assert.equal(bad.status, 401);
    assert.deepEqual(await bad.json(), {
      error: {
        code: 401,
        message: "The request you have made requires authentication.",
        title: "Unauthorized",
      },
    });
  } finally {
    await sim.close();
  }
});

Deno.test("sim: Nova refuses calls without a valid token (401, WWW-Authenticate)", async () => {
  await withSim(async (sim) => {
    const r = await call(sim, "bogus", "GET", "/servers/detail");
    assert.equal(r.status, 401);
    assert.match(r.headers.get("www-authenticate") ?? "", /^Keystone uri=/);
    assert.deepEqual(r.json, {
      error: {
        code: 401,
        message: "The request you have made requires authentication.",
        title: "Unauthorized",
      },
    });
  });
});

Deno.test("sim: Nova error bodies have Nova's shapes", async () => {
  await withSim(async (sim, token) => {
    const missing = "00000000-0000-4000-8000-000000000000";
    const nf = await call(sim, token, "GET", `/servers/${missing}`);
    assert.equal(nf.status, 404);
    assert.deepEqual(nf.json, {
      itemNotFound: {
        code: 404,
        message: `Instance ${missing} could not be found.`,
      },
    });
    const id = sim.world.findServerByRef("vm1")?.id ?? "";
    const ok = await call(sim, token, "POST", `/servers/${id}/action`, {
      "os-migrateLive": { host: null, block_migration: "auto" },
    });
    assert.equal(ok.status, 202);
    assert.equal(ok.json, undefined);
    const conflict = await call(sim, token, "POST", `/servers/${id}/action`, {
      "os-migrateLive": { host: null, block_migration: "auto" },
    });
    assert.equal(conflict.status, 409);
    assert.deepEqual(conflict.json, {
      conflictingRequest: {
        code: 409,
        message:
          `Cannot 'os-migrateLive' instance ${id} while it is in task_state migrating`,
      },
    });
    const unknown = await call(sim, token, "POST", `/servers/${id}/action`, {
      reboot: { type: "HARD" },
    });
    assert.equal(unknown.status, 400);
    assert.deepEqual(unknown.json, {
      badRequest: { code: 400, message: "There is no such action: reboot" },
    });
    const force = await call(sim, token, "POST", `/servers/${id}/action`, {
      "os-migrateLive": { host: null, block_migration: "auto", force: true },
    });
    assert.equal(force.status, 400);
    const wrongMethod = await call(sim, token, "PUT", "/servers/detail", {});
    assert.equal(wrongMethod.status, 405);
    const svc = sim.state().hosts[0]?.serviceId ?? "";
    const badReason = await call(sim, token, "PUT", `/os-services/${svc}`, {
      status: "enabled",
      disabled_reason: "x",
    });
    assert.equal(badReason.status, 400);
    assert.deepEqual(badReason.json, {
      badRequest: {
        code: 400,
        message:
          "Specifying 'disabled_reason' with status 'enabled' is invalid.",
      },
    });
  });
});

Deno.test("sim: microversion negotiation (default 2.1, latest, 400, 406) and gated fields", async () => {
  await withSim(async (sim, token) => {
    const none = await call(
      sim,
      token,
      "GET",
      "/servers/detail?all_tenants=1",
      undefined,
      null,
    );
    assert.equal(none.headers.get("openstack-api-version"), "compute 2.1");
    const s21 =
      (none.json as { servers: { flavor: Record<string, unknown> }[] })
        .servers[0];
    assert.ok(s21 && !("ram" in s21.flavor), "no embedded flavor before 2.47");
    const latest = await call(
      sim,
      token,
      "GET",
      "/servers/detail?all_tenants=1",
      undefined,
      "latest",
    );
    assert.equal(latest.headers.get("openstack-api-version"), "compute 2.96");
    const legacy = await fetch(`${sim.computeUrl}/os-services`, {
      headers: {
        "X-Auth-Token": token,
        "X-OpenStack-Nova-API-Version": "2.60",
      },
    });
    await legacy.body?.cancel();
    assert.equal(legacy.headers.get("x-openstack-nova-api-version"), "2.60");
    const bad = await call(
      sim,
      token,
      "GET",
      "/servers/detail",
      undefined,
      "two",
    );
    assert.equal(bad.status, 400);
    const tooNew = await call(
      sim,
      token,
      "GET",
      "/servers/detail",
      undefined,
      "2.97",
    );
    assert.equal(tooNew.status, 406);
    assert.deepEqual(tooNew.json, {
      computeFault: {
        code: 406,
        message:
          "Version 2.97 is not supported by the API. Minimum is 2.1 and maximum is 2.96.",
      },
    });
    // Service and hypervisor ids are UUIDs from 2.53, integers before.
    const old = await call(
      sim,
      token,
      "GET",
      "/os-services",
      undefined,
      "2.52",
    );
    assert.equal(
      typeof (old.json as { services: { id: unknown }[] }).services[0]?.id,
      "number",
    );
    const neu = await call(
      sim,
      token,
      "GET",
      "/os-services",
      undefined,
      "2.53",
    );
    assert.equal(
      typeof (neu.json as { services: { id: unknown }[] }).services[0]?.id,
      "string",
    );
  });
});

Deno.test("sim: fault only on ERROR servers; all_tenants needed to see other projects", async () => {
  await withSim(async (sim, token) => {
    const own = await call(sim, token, "GET", "/servers/detail");
    assert.deepEqual((own.json as { servers: unknown[] }).servers, []);
    const all = await call(
      sim,
      token,
      "GET",
      "/servers/detail?all_tenants=1&host=node001",
    );
    const servers = (all.json as {
      servers: { name: string; status: string; fault?: unknown }[];
    }).servers;
    assert.equal(servers.length, 2);
    const err = servers.find((s) => s.name === "vm2");
    assert.equal(err?.status, "ERROR");
    assert.ok(err?.fault);
    assert.equal(servers.find((s) => s.name === "vm1")?.fault, undefined);
  });
});

Deno.test("sim: os-migrations validates changes-since and unknown markers", async () => {
  await withSim(async (sim, token) => {
    const bad = await call(
      sim,
      token,
      "GET",
      "/os-migrations?changes-since=yesterday",
    );
    assert.equal(bad.status, 400);
    assert.match(
      (bad.json as { badRequest: { message: string } }).badRequest.message,
      /changes-since/,
    );
    const marker = await call(sim, token, "GET", "/os-migrations?marker=nope");
    assert.equal(marker.status, 400);
  });
});

Deno.test("sim: Placement 406 and error bodies have Placement's shape", async () => {
  await withSim(async (sim, token) => {
    const rp = sim.state().hosts[0]?.hypervisorId ?? "";
    const res = await fetch(
      `${sim.placementUrl}/resource_providers/${rp}/traits`,
      {
        headers: {
          "X-Auth-Token": token,
          "OpenStack-API-Version": "placement 1.99",
        },
      },
    );
    assert.equal(res.status, 406);
    const body = await res.json();
    assert.equal(body.errors[0].status, 406);
    assert.match(body.errors[0].detail, /Unacceptable version header: 1.99/);
    assert.match(body.errors[0].request_id, /^req-/);
  });
});

Deno.test("sim: counters count every call per path template and accepted migrations per VM", async () => {
  await withSim(async (sim, token) => {
    const id = sim.world.findServerByRef("vm1")?.id ?? "";
    await call(sim, token, "GET", `/servers/${id}`);
    await call(sim, token, "GET", `/servers/${id}`);
    await call(sim, token, "POST", `/servers/${id}/action`, {
      "os-migrateLive": { host: null, block_migration: "auto" },
    });
    await call(sim, token, "POST", `/servers/${id}/action`, {
      "os-migrateLive": { host: null, block_migration: "auto" },
    });
    const c = sim.counters();
    assert.equal(c.calls["POST /identity/v3/auth/tokens"], 1);
    assert.equal(c.calls["GET /compute/v2.1/servers/{id}"], 2);
    assert.equal(c.calls["POST /compute/v2.1/servers/{id}/action"], 2);
    assert.equal(c.total, 5);
    assert.deepEqual(c.migrationRequests, { [id]: 2 });
    assert.deepEqual(c.migrationsAccepted, { [id]: 1 });
    sim.resetCounters();
    assert.equal(sim.counters().total, 0);
    assert.deepEqual(sim.counters().migrationsAccepted, { [id]: 1 });
  });
});

Deno.test("sim: HTTP faults: counts, rates (seeded), 429 with Retry-After and overLimit", async () => {
  await withSim(async (sim, token) => {
    const remove = sim.injectHttpFault({
      path: "/os-services",
      status: 429,
      retryAfterSeconds: 7,
      count: 2,
    });
    const r1 = await call(sim, token, "GET", "/os-services");
    assert.equal(r1.status, 429);
    assert.equal(r1.headers.get("retry-after"), "7");
    assert.equal(
      (r1.json as { overLimit: { code: number } }).overLimit.code,
      429,
    );
    assert.equal((await call(sim, token, "GET", "/os-services")).status, 429);
    assert.equal((await call(sim, token, "GET", "/os-services")).status, 200);
    remove();
    const rate = async () => {
      sim.clearHttpFaults();
      const s = await startNovaSim({
        ...SCENARIO,
        faults: { http: [{ path: "/os-hypervisors", status: 503, rate: 0.5 }] },
      });
      try {
        const out: number[] = [];
        for (let i = 0; i < 20; i++) {
          const res = await fetch(`${s.computeUrl}/os-hypervisors`, {
            headers: { "X-Auth-Token": "x" },
          });
          await res.body?.cancel();
          out.push(res.status);
        }
        return out;
      } finally {
        await s.close();
      }
    };
    const a = await rate();
    assert.deepEqual(await rate(), a, "same seed, same faults");
    assert.ok(a.includes(503) && a.includes(401));
  });
});

Deno.test("sim: slow token endpoint", async () => {
  const sim = await startNovaSim({
    ...SCENARIO,
    faults: { tokenLatencyMs: 150 },
  });
  try {
    const started = Date.now();
    const res = await fetch(`${sim.authUrl}/auth/tokens`, {
      method: "POST",
      body: "{}",
    });
    await res.body?.cancel();
    assert.ok(Date.now() - started >= 140);
  } finally {
    await sim.close();
  }
});

Deno.test("sim: clouds.yaml and env describe the simulator", async () => {
  const sim = await startNovaSim(SCENARIO);
  try {
    assert.match(sim.cloudsYaml(), new RegExp(`auth_url: ${sim.authUrl}`));
    assert.match(
      sim.cloudsYaml({ auth: "application_credential" }),
      /application_credential_secret/,
    );
    assert.equal(sim.env()["OS_AUTH_URL"], sim.authUrl);
    assert.match(sim.authUrl, /^http:\/\/127\.0\.0\.1:\d+\/identity\/v3$/);
  } finally {
    await sim.close();
  }
});

Deno.test("sim: runtime faults: admin-forced server on a disabled host, delete, error", async () => {
  await withSim(async (sim, token) => {
    const svc = sim.state().hosts[1]?.serviceId ?? "";
    await call(sim, token, "PUT", `/os-services/${svc}`, {
      status: "disabled",
      disabled_reason: "drain",
    });
    const forced = sim.addServer({ name: "late", host: "node002", ramMb: 512 });
    const onHost = await call(
      sim,
      token,
      "GET",
      "/servers/detail?all_tenants=1&host=node002",
    );
    assert.deepEqual(
      (onHost.json as { servers: { id: string }[] }).servers.map((s) => s.id),
      [forced.id],
    );
    sim.setServerError("late", "boom");
    const s = await call(sim, token, "GET", `/servers/${forced.id}`);
    assert.equal(
      (s.json as { server: { status: string } }).server.status,
      "ERROR",
    );
    sim.deleteServer("late");
    assert.equal(
      (await call(sim, token, "GET", `/servers/${forced.id}`)).status,
      404,
    );
  });
});
