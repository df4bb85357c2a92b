import assert from "node:assert/strict";
import {
  BASIC_SCENARIO,
  fakeClock,
  withSim,
} from "../tests/harness/openstack_util.ts";
import { ConflictError, TimeoutError, UnavailableError } from "./errors.ts";
import { HttpTransport, parseRetryAfter } from "./http.ts";
import { NovaClient } from "./nova.ts";
import { createTestCa } from "../tests/harness/pki.ts";

const DETAIL = "GET /compute/v2.1/servers/detail";
const ACTION = "POST /compute/v2.1/servers/{id}/action";

Deno.test("retry: a 503 then success is retried for a read", async () => {
  await withSim(BASIC_SCENARIO, async ({ nova, sim, logger }) => {
    await nova.listServersOnHost("node001"); // authenticate first
    sim.injectHttpFault({
      method: "GET",
      path: "/servers/detail",
      status: 503,
      count: 1,
    });
    const servers = await nova.listServersOnHost("node001");
    assert.equal(servers.length, 3);
    assert.equal(sim.counters().calls[DETAIL], 3);
    assert.ok(
      logger.lines.some((l) => l.level === "warn" && l.obj["status"] === 503),
    );
  });
});

Deno.test("retry: a 429 with Retry-After is waited for", async () => {
  const clock = fakeClock();
  await withSim(BASIC_SCENARIO, async ({ nova, sim }) => {
    await nova.listServersOnHost("node001");
    sim.injectHttpFault({
      path: "/servers/detail",
      status: 429,
      retryAfterSeconds: 3,
      count: 1,
    });
    await nova.listServersOnHost("node001");
    assert.deepEqual(clock.sleeps, [3000]);
    assert.equal(sim.counters().calls[DETAIL], 3);
  }, { transport: { clock } });
});

Deno.test("retry: reads give up after maxAttempts with Unavailable carrying the request id", async () => {
  const clock = fakeClock();
  await withSim(BASIC_SCENARIO, async ({ nova, sim }) => {
    await nova.listServersOnHost("node001");
    sim.injectHttpFault({ path: "/servers/detail", status: 500 });
    await assert.rejects(nova.listServersOnHost("node001"), (e: unknown) => {
      assert.ok(e instanceof UnavailableError);
      assert.equal(e.status, 500);
      assert.match(e.message, /Unexpected API Error/);
      assert.match(e.requestId ?? "", /^req-/);
      return true;
    });
    assert.equal(sim.counters().calls[DETAIL], 1 + 3);
    // Capped exponential back-off: 3 sleeps, each <= maxDelayMs.
    assert.equal(clock.sleeps.length, 2);
    for (const s of clock.sleeps) assert.ok(s <= 5);
  }, {
    transport: {
      clock,
      retry: { maxAttempts: 3, baseDelayMs: 2, maxDelayMs: 5 },
    },
  });
});

Deno.test("retry: a live migration whose response is lost is not resent; the caller sees Timeout", async () => {
  await withSim(
    { ...BASIC_SCENARIO, timeScale: 1 },
    async ({ session, sim }) => {
      const nova = new NovaClient(session, { timeoutMs: 300 });
      const id = sim.state().servers.find((s) => s.name === "vm-a")?.id ?? "";
      await nova.listServersOnHost("node001");
      sim.injectHttpFault({
        method: "POST",
        path: "/servers/{id}/action",
        dropResponse: true,
        count: 1,
      });
      await assert.rejects(nova.liveMigrate(id), TimeoutError);
      assert.equal(sim.counters().calls[ACTION], 1);
      assert.equal(sim.counters().migrationsAccepted[id], 1);
      // The caller re-observes: the server is migrating, a resend would be refused.
      const s = await nova.getServer(id);
      assert.equal(s.taskState, "migrating");
      await assert.rejects(nova.liveMigrate(id), ConflictError);
    },
  );
});

Deno.test("retry: a 500 after the action took effect is reported, not resent", async () => {
  await withSim(BASIC_SCENARIO, async ({ nova, sim }) => {
    const id = sim.state().servers.find((s) => s.name === "vm-a")?.id ?? "";
    await nova.listServersOnHost("node001");
    sim.injectHttpFault({
      method: "POST",
      status: 500,
      afterProcessing: true,
      count: 1,
    });
    await assert.rejects(nova.liveMigrate(id), UnavailableError);
    assert.equal(sim.counters().calls[ACTION], 1);
    assert.equal(sim.counters().migrationsAccepted[id], 1);
  });
});

Deno.test("retry: a 503 on a service disable is not resent", async () => {
  await withSim(BASIC_SCENARIO, async ({ nova, sim }) => {
    const svc = await nova.findComputeService("node001");
    assert.ok(svc);
    sim.injectHttpFault({
      method: "PUT",
      path: "/os-services/{id}",
      status: 503,
      count: 1,
    });
    await assert.rejects(
      nova.setComputeServiceStatus(svc.id, false, "x"),
      UnavailableError,
    );
    assert.equal(sim.counters().calls["PUT /compute/v2.1/os-services/{id}"], 1);
  });
});

Deno.test("retry: injected latency beyond the timeout is a Timeout for reads after retries", async () => {
  await withSim(BASIC_SCENARIO, async ({ session, sim }) => {
    const nova = new NovaClient(session, { timeoutMs: 100 });
    await nova.listServersOnHost("node001");
    sim.injectHttpFault({ path: "/servers/detail", latencyMs: 400, count: 2 });
    // Two slow attempts time out, the third is answered.
    const servers = await nova.listServersOnHost("node001");
    assert.equal(servers.length, 3);
    assert.equal(sim.counters().calls[DETAIL], 4);
  });
});

Deno.test("http: network errors on reads are retried, then Unavailable", async () => {
  let calls = 0;
  const failing: typeof fetch = () => {
    calls++;
    return Promise.reject(new TypeError("connection refused"));
  };
  const t = new HttpTransport({
    fetch: failing,
    clock: fakeClock(),
    retry: { maxAttempts: 3 },
  });
  await assert.rejects(
    t.send({ method: "GET", url: "http://127.0.0.1:1/x", idempotent: true }),
    (e: unknown) =>
      e instanceof UnavailableError && /connection refused/.test(e.message),
  );
  assert.equal(calls, 3);
  calls = 0;
  await assert.rejects(
    t.send({
      method: "POST",
      url: "http://127.0.0.1:1/x",
      idempotent: false,
      body: {},
    }),
    UnavailableError,
  );
  assert.equal(calls, 1);
});

Deno.test("http: parseRetryAfter reads seconds and HTTP dates", () => {
  assert.equal(parseRetryAfter("2", 0), 2000);
  assert.equal(parseRetryAfter(null, 0), undefined);
  assert.equal(parseRetryAfter("soon", 0), undefined);
  const now = Date.parse("2026-01-01T00:00:00Z");
  assert.equal(parseRetryAfter("Thu, 01 Jan 2026 00:00:05 GMT", now), 5000);
});

Deno.test("http: bad options are RangeErrors naming the value", () => {
  assert.throws(
    () => new HttpTransport({ timeoutMs: 0 }),
    /timeoutMs must be > 0, got 0/,
  );
  assert.throws(
    () => new HttpTransport({ retry: { maxAttempts: 0 } }),
    /maxAttempts must be an integer >= 1, got 0/,
  );
});

Deno.test("an action over TLS uses its own connection and trusts its tls settings", async () => {
  const ca = await createTestCa("evictor-http-test");
  const leaf = await ca.issue({
    commonName: "127.0.0.1",
    hosts: ["127.0.0.1"],
    usage: "server",
  });
  const peers = new Set<number>();
  await using server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    cert: leaf.certPem,
    key: leaf.keyPem,
    onListen: () => {},
  }, (_req, info) => {
    peers.add(info.remoteAddr.port);
    return Response.json({ ok: true });
  });
  const url = `https://127.0.0.1:${server.addr.port}/x`;
  const httpClient = Deno.createHttpClient({ caCerts: [ca.certPem] });
  try {
    const http = new HttpTransport({
      httpClient,
      tls: { caCerts: [ca.certPem] },
    });
    await http.send({ method: "GET", url, idempotent: true });
    await http.send({ method: "GET", url, idempotent: true });
    assert.equal(peers.size, 1, "reads share a pooled connection");
    const res = await http.send({
      method: "POST",
      url,
      body: {},
      idempotent: false,
    });
    assert.deepEqual(res.json, { ok: true });
    await http.send({ method: "POST", url, body: {}, idempotent: false });
    assert.equal(peers.size, 3, "each action on a connection of its own");
  } finally {
    httpClient.close();
  }
});

Deno.test("hedge: a read not answered within the hedge delay is sent again beside it; the first answer wins", async () => {
  await withSim(BASIC_SCENARIO, async ({ session, sim }) => {
    const nova = new NovaClient(session, {
      timeoutMs: 30_000,
      readHedgeMs: 100,
    });
    await nova.listServersOnHost("node001");
    sim.injectHttpFault({
      path: "/servers/detail",
      latencyMs: 6_000,
      count: 1,
    });
    const before = sim.counters().calls[DETAIL] ?? 0;
    const started = Date.now();
    const servers = await nova.listServersOnHost("node001");
    const tookMs = Date.now() - started;
    assert.equal(servers.length, 3);
    assert.equal(sim.counters().calls[DETAIL], before + 2, "sent twice");
    assert.ok(
      tookMs < 4_000,
      `answered after ${tookMs} ms, not the stall's 6 s`,
    );
  });
});

Deno.test("hedge: a read answered in time is sent once; an error before the hedge ends it at once; actions are never hedged", async () => {
  await withSim(
    { ...BASIC_SCENARIO, timeScale: 1 },
    async ({ session, sim }) => {
      const nova = new NovaClient(session, {
        timeoutMs: 300,
        readHedgeMs: 2_000,
      });
      await nova.listServersOnHost("node001");
      const before = sim.counters().calls[DETAIL] ?? 0;
      await nova.listServersOnHost("node001");
      assert.equal(sim.counters().calls[DETAIL], before + 1);
      sim.injectHttpFault({ path: "/servers/detail", status: 500, count: 1 });
      const detailBefore = sim.counters().calls[DETAIL] ?? 0;
      // a 500 is retried (a new attempt), never hedged beside itself
      await nova.listServersOnHost("node001");
      assert.equal(sim.counters().calls[DETAIL], detailBefore + 2);
      const id = sim.state().servers.find((s) => s.name === "vm-a")?.id ?? "";
      sim.injectHttpFault({
        method: "POST",
        path: "/servers/{id}/action",
        dropResponse: true,
        count: 1,
      });
      await assert.rejects(nova.liveMigrate(id), TimeoutError);
      assert.equal(sim.counters().calls[ACTION], 1, "an action goes out once");
    },
  );
});
