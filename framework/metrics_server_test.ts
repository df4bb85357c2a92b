import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { Counter } from "prom-client";
import { HealthServer } from "./health_server.ts";
import type { MetricsAuthorizer } from "./metrics_auth.ts";
import { MetricsServer } from "./metrics_server.ts";
import { generateSelfSignedCertificate } from "./self_signed.ts";
import { rawTls, untilClosed } from "../tests/harness/raw_conn.ts";

const encode = (s: string) => new TextEncoder().encode(s);

function registryWithOneMetric(): Registry {
  const registry = new Registry();
  new Counter({ name: "demo_total", help: "a counter", registers: [registry] })
    .inc();
  return registry;
}

/** A decision table standing in for the API server's reviews (tests/deploy_test.ts asks the real one). */
function tableAuthorizer(seen: (string | null)[]): MetricsAuthorizer {
  return (header) => {
    seen.push(header);
    if (header === null) {
      return Promise.resolve({ allowed: false, status: 401, reason: "no" });
    }
    return Promise.resolve(
      header === "Bearer good"
        ? { allowed: true, user: "scraper" }
        : { allowed: false, status: 403, reason: "scraper may not" },
    );
  };
}

Deno.test("metrics server: HTTPS only, and only scrapes the authorizer allows", async () => {
  const pair = await generateSelfSignedCertificate({ hosts: ["localhost"] });
  const seen: (string | null)[] = [];
  const server = new MetricsServer({
    address: "127.0.0.1:0",
    registry: registryWithOneMetric(),
    tls: { certPem: pair.certPem, keyPem: pair.keyPem },
    authorize: tableAuthorizer(seen),
  });
  await server.start();
  const client = Deno.createHttpClient({ caCerts: [pair.certPem] });
  try {
    const get = async (path: string, authorization?: string) => {
      const res = await fetch(`https://localhost:${server.port}${path}`, {
        headers: authorization === undefined ? {} : { authorization },
        client,
      });
      return {
        status: res.status,
        text: await res.text(),
        headers: res.headers,
      };
    };
    const anonymous = await get("/metrics");
    assert.equal(anonymous.status, 401);
    assert.match(anonymous.headers.get("www-authenticate") ?? "", /^Bearer/);
    assert.doesNotMatch(anonymous.text, /demo_total/);
    const stranger = await get("/metrics", "Bearer bad");
    assert.equal(stranger.status, 403);
    assert.doesNotMatch(stranger.text, /demo_total/);
    const scraper = await get("/metrics", "Bearer good");
    assert.equal(scraper.status, 200);
    assert.match(scraper.text, /^demo_total 1$/m);
    assert.deepEqual(seen, [null, "Bearer bad", "Bearer good"]);
    assert.equal((await get("/other", "Bearer good")).status, 404);

    // plain HTTP to the TLS port: no HTTP answer, the token never read
    const plain = await Deno.connect({
      hostname: "127.0.0.1",
      port: server.port,
    });
    await plain.write(
      encode(
        "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\n\r\n",
      ),
    );
    const refused = await untilClosed(plain, 5_000);
    assert.doesNotMatch(refused.text, /^HTTP\/1\.1 200|demo_total/);
    assert.ok(refused.ms < 2_000, `plain HTTP held ${refused.ms} ms`);
    await assert.rejects(fetch(`http://127.0.0.1:${server.port}/metrics`));
    assert.equal(
      seen.length,
      3,
      "a plain request never reaches the authorizer",
    );
  } finally {
    client.close();
    await server.stop();
  }
});

Deno.test("metrics server: slow or silent TLS clients are closed within their timeout", async () => {
  const pair = await generateSelfSignedCertificate({ hosts: ["localhost"] });
  const server = new MetricsServer({
    address: "127.0.0.1:0",
    registry: registryWithOneMetric(),
    tls: { certPem: pair.certPem, keyPem: pair.keyPem },
    authorize: tableAuthorizer([]),
    limits: {
      handshakeTimeoutMs: 300,
      headersTimeoutMs: 300,
      requestTimeoutMs: 600,
      idleTimeoutMs: 600,
    },
  });
  await server.start();
  try {
    // no TLS handshake at all
    const tcp = await Deno.connect({
      hostname: "127.0.0.1",
      port: server.port,
    });
    const silent = await untilClosed(tcp, 5_000);
    assert.ok(silent.ms < 2_000, `no handshake: open ${silent.ms} ms`);
    // a handshake, then nothing
    const quiet = await untilClosed(
      await rawTls(server.port, pair.certPem),
      5_000,
    );
    assert.ok(quiet.ms < 2_000, `silent after TLS: open ${quiet.ms} ms`);
    // a head that never ends
    const slow = await rawTls(server.port, pair.certPem);
    await slow.write(encode("GET /metrics HTTP/1.1\r\nHost: x\r\n"));
    const drip = setInterval(
      () => void slow.write(encode("X-A: b\r\n")).catch(() => {}),
      100,
    );
    const headers = await untilClosed(slow, 5_000);
    clearInterval(drip);
    assert.ok(headers.ms < 2_000, `slow headers: open ${headers.ms} ms`);
    assert.match(headers.text, /^HTTP\/1\.1 408/);
    assert.equal(server.secure, true);
  } finally {
    await server.stop();
  }
});

Deno.test("metrics server: a renewed certificate is served after reload", async () => {
  const dir = await Deno.makeTempDir();
  const first = await generateSelfSignedCertificate({ hosts: ["localhost"] });
  const second = await generateSelfSignedCertificate({ hosts: ["localhost"] });
  await Deno.writeTextFile(`${dir}/tls.crt`, first.certPem);
  await Deno.writeTextFile(`${dir}/tls.key`, first.keyPem);
  const server = new MetricsServer({
    address: "127.0.0.1:0",
    registry: registryWithOneMetric(),
    tls: { certFile: `${dir}/tls.crt`, keyFile: `${dir}/tls.key` },
    authorize: tableAuthorizer([]),
    reloadIntervalMs: 60_000,
  });
  await server.start();
  try {
    (await rawTls(server.port, first.certPem)).close();
    await Deno.writeTextFile(`${dir}/tls.crt`, second.certPem);
    await Deno.writeTextFile(`${dir}/tls.key`, second.keyPem);
    assert.equal(await server.reload(), true);
    assert.equal(server.loads, 2);
    (await rawTls(server.port, second.certPem)).close();
    await assert.rejects(rawTls(server.port, first.certPem));
  } finally {
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("metrics server: insecure serves plain HTTP to anyone", async () => {
  const server = new MetricsServer({
    address: "127.0.0.1:0",
    registry: registryWithOneMetric(),
    insecure: true,
  });
  await server.start();
  try {
    const res = await fetch(`http://127.0.0.1:${server.port}/metrics`);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /^demo_total 1$/m);
    assert.equal(server.secure, false);
  } finally {
    await server.stop();
  }
});

Deno.test("health server: probes over plain HTTP, a silent client closed", async () => {
  let ready = false;
  const hs = new HealthServer({
    address: "127.0.0.1:0",
    liveness: new Map([["ping", () => true]]),
    readiness: new Map([["cache", () => ready]]),
    limits: { headersTimeoutMs: 300, requestTimeoutMs: 600 },
  });
  await hs.start();
  try {
    const get = async (path: string) => {
      const res = await fetch(`http://127.0.0.1:${hs.port}${path}`);
      return { status: res.status, text: await res.text() };
    };
    assert.deepEqual(await get("/healthz"), {
      status: 200,
      text: "[+]ping ok\nok\n",
    });
    assert.equal((await get("/readyz")).status, 503);
    ready = true;
    assert.equal((await get("/readyz")).status, 200);
    assert.equal((await get("/metrics")).status, 404);
    const tcp = await Deno.connect({ hostname: "127.0.0.1", port: hs.port });
    const silent = await untilClosed(tcp, 5_000);
    assert.ok(silent.ms < 2_000, `silent client: open ${silent.ms} ms`);
  } finally {
    await hs.stop();
  }
});
