import assert from "node:assert/strict";
import { allow, deny, handleAdmission } from "./admission.ts";
import { createTestCa } from "../tests/harness/framework_util.ts";
import { FrameworkMetrics } from "./metrics.ts";
import {
  type WebhookLimits,
  WebhookServer,
  type WebhookTls,
} from "./webhook_server.ts";
import { generateSelfSignedCertificate } from "./self_signed.ts";
import { rawTls, untilClosed } from "../tests/harness/raw_conn.ts";

function review(
  uid: string | undefined,
  object: unknown = { metadata: { name: "a" }, spec: { n: 1 } },
) {
  return {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      ...(uid === undefined ? {} : { uid }),
      operation: "CREATE",
      name: "a",
      object,
    },
  };
}

async function setup(
  tls: WebhookTls,
  limits: Partial<WebhookLimits> = {},
) {
  const metrics = new FrameworkMetrics({ processMetrics: false });
  const server = new WebhookServer({
    hostname: "127.0.0.1",
    port: 0,
    tls,
    metrics,
    limits,
    reloadIntervalMs: 60_000,
    routes: new Map([
      [
        "/validate",
        (json: unknown) =>
          handleAdmission<
            { metadata?: { name?: string }; spec?: { n?: number } }
          >(json, (req) => {
            const n = req.object?.spec?.n ?? 0;
            if (n < 0) throw new Error("boom: internal detail");
            return n > 5
              ? deny(`spec.n must be <= 5, got ${n}`, { warnings: ["w1"] })
              : allow(n === 5 ? ["at the limit"] : undefined);
          }),
      ],
    ]),
  });
  await server.start();
  return { server, metrics };
}

Deno.test("webhook server: AdmissionReview answers, bad input gets 400/413, never crashes", async () => {
  const ca = await createTestCa();
  const dir = await Deno.makeTempDir();
  const pair = await ca.issue(["127.0.0.1", "localhost"]);
  await Deno.writeTextFile(`${dir}/tls.crt`, pair.certPem);
  await Deno.writeTextFile(`${dir}/tls.key`, pair.keyPem);
  const { server, metrics } = await setup({
    certFile: `${dir}/tls.crt`,
    keyFile: `${dir}/tls.key`,
  }, { maxBodyBytes: 1024 * 1024 });
  const client = Deno.createHttpClient({ caCerts: [ca.certPem] });
  const url = `https://127.0.0.1:${server.port}/validate`;
  const post = async (
    body: string,
    contentType = "application/json",
    path = "/validate",
  ) => {
    const res = await fetch(url.replace("/validate", path), {
      method: "POST",
      body,
      headers: { "content-type": contentType },
      client,
    });
    return {
      status: res.status,
      json: await res.json() as Record<string, unknown>,
    };
  };
  try {
    let r = await post(JSON.stringify(review("u-1")));
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, {
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      response: { uid: "u-1", allowed: true },
    });

    r = await post(
      JSON.stringify(
        review("u-2", { metadata: { name: "a" }, spec: { n: 9 } }),
      ),
    );
    assert.deepEqual(r.json.response, {
      uid: "u-2",
      allowed: false,
      status: { code: 403, message: "spec.n must be <= 5, got 9" },
      warnings: ["w1"],
    });
    r = await post(
      JSON.stringify(
        review("u-3", { metadata: { name: "a" }, spec: { n: 5 } }),
      ),
    );
    assert.deepEqual(r.json.response, {
      uid: "u-3",
      allowed: true,
      warnings: ["at the limit"],
    });

    // a validator that throws denies without leaking its exception
    r = await post(
      JSON.stringify(
        review("u-4", { metadata: { name: "a" }, spec: { n: -1 } }),
      ),
    );
    const resp = r.json.response as {
      allowed: boolean;
      status: { message: string };
    };
    assert.equal(resp.allowed, false);
    assert.ok(!resp.status.message.includes("boom"));

    assert.equal((await post("{not json")).status, 400);
    assert.equal(
      (await post(JSON.stringify(review("u-5")), "text/plain")).status,
      400,
    );
    assert.equal((await post(JSON.stringify(review(undefined)))).status, 400);
    assert.equal(
      (await post(
        JSON.stringify({
          ...review("u-6"),
          apiVersion: "admission.k8s.io/v1beta1",
        }),
      )).status,
      400,
    );
    assert.equal((await post("[]")).status, 400);
    const big = JSON.stringify(
      review("u-7", { metadata: { name: "a" }, data: "x".repeat(1024 * 1024) }),
    );
    assert.equal((await post(big)).status, 413);
    assert.equal((await post("{}", "application/json", "/nope")).status, 404);
    // and it still works after all that
    assert.equal((await post(JSON.stringify(review("u-8")))).status, 200);

    const text = await metrics.registry.metrics();
    assert.match(
      text,
      /operator_webhook_requests_total\{path="\/validate",code="400"\} 5/,
    );
    assert.match(
      text,
      /operator_webhook_requests_total\{path="\/validate",code="413"\} 1/,
    );
  } finally {
    client.close();
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("webhook server: certificate rotation under load fails no request", async () => {
  const ca1 = await createTestCa();
  const ca2 = await createTestCa();
  const dir = await Deno.makeTempDir();
  const write = async (pair: { certPem: string; keyPem: string }) => {
    // write-then-rename, as kubelet's atomic writer does
    await Deno.writeTextFile(`${dir}/tls.key.tmp`, pair.keyPem);
    await Deno.writeTextFile(`${dir}/tls.crt.tmp`, pair.certPem);
    await Deno.rename(`${dir}/tls.key.tmp`, `${dir}/tls.key`);
    await Deno.rename(`${dir}/tls.crt.tmp`, `${dir}/tls.crt`);
  };
  await write(await ca1.issue(["127.0.0.1"]));
  const { server } = await setup({
    certFile: `${dir}/tls.crt`,
    keyFile: `${dir}/tls.key`,
  });
  const url = `https://127.0.0.1:${server.port}/validate`;
  let ok = 0;
  const failures: string[] = [];
  let running = true;
  const worker = async (i: number) => {
    // workers 0-3: keep-alive; 4-5: a new connection each time
    const make = () =>
      Deno.createHttpClient({
        caCerts: [ca1.certPem, ca2.certPem],
      });
    let client = make();
    let n = 0;
    while (running) {
      try {
        const res = await fetch(url, {
          method: "POST",
          body: JSON.stringify(review(`w${i}-${n}`)),
          headers: { "content-type": "application/json" },
          client,
        });
        const body = await res.json() as {
          response?: { uid?: string; allowed?: boolean };
        };
        if (
          res.status !== 200 || body.response?.uid !== `w${i}-${n}` ||
          body.response.allowed !== true
        ) {
          failures.push(`status ${res.status}`);
        } else ok++;
      } catch (err) {
        failures.push(String(err));
      }
      n++;
      if (i >= 4) {
        client.close();
        client = make();
      }
    }
    client.close();
  };
  const workers = [0, 1, 2, 3, 4, 5].map(worker);
  try {
    for (let round = 0; round < 6; round++) {
      await new Promise((r) => setTimeout(r, 150));
      await write(await (round % 2 === 0 ? ca2 : ca1).issue(["127.0.0.1"]));
      assert.equal(await server.reload(), true);
    }
    // the last round wrote a ca1 cert; rotate to ca2 and check a ca2-only client gets through
    await write(await ca2.issue(["127.0.0.1"]));
    assert.equal(await server.reload(), true);
    assert.equal(
      await server.reload(),
      false,
      "unchanged files are not reloaded",
    );
    const only2 = Deno.createHttpClient({ caCerts: [ca2.certPem] });
    const res = await fetch(url, {
      method: "POST",
      body: JSON.stringify(review("check")),
      headers: { "content-type": "application/json" },
      client: only2,
    });
    await res.body?.cancel();
    only2.close();
    assert.equal(res.status, 200);
    await new Promise((r) => setTimeout(r, 150));
  } finally {
    running = false;
    await Promise.all(workers);
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
  assert.deepEqual(failures, []);
  assert.ok(ok > 20, `only ${ok} requests went through`);
  assert.equal(server.loads, 8);
});

Deno.test("self-signed certificate serves TLS for its hosts", async () => {
  const pair = await generateSelfSignedCertificate({
    hosts: ["localhost", "127.0.0.1"],
  });
  const server = new WebhookServer({
    hostname: "127.0.0.1",
    port: 0,
    tls: pair,
    routes: new Map([[
      "/v",
      (json: unknown) => handleAdmission(json, () => allow()),
    ]]),
  });
  await server.start();
  const client = Deno.createHttpClient({ caCerts: [pair.certPem] });
  try {
    const res = await fetch(`https://127.0.0.1:${server.port}/v`, {
      method: "POST",
      body: JSON.stringify(review("s")),
      headers: { "content-type": "application/json" },
      client,
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
  } finally {
    client.close();
    await server.stop();
  }
  await assert.rejects(
    () => generateSelfSignedCertificate({ hosts: [] }),
    /at least one host/,
  );
});

const encode = (s: string) => new TextEncoder().encode(s);

/** One review over a new raw connection is answered 200. */
async function assertServes(port: number, certPem: string, uid: string) {
  const conn = await rawTls(port, certPem);
  const ok = JSON.stringify(review(uid));
  await conn.write(encode(postHead(ok.length) + ok));
  const buf = new Uint8Array(1024);
  const n = await conn.read(buf);
  assert.match(
    new TextDecoder().decode(buf.subarray(0, n ?? 0)),
    /^HTTP\/1\.1 200/,
  );
  conn.close();
}

function postHead(length: number): string {
  return `POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
}

Deno.test("webhook server: slow or silent clients are closed within their timeout", async () => {
  const pair = await generateSelfSignedCertificate({ hosts: ["localhost"] });
  const { server } = await setup(pair, {
    handshakeTimeoutMs: 300,
    headersTimeoutMs: 300,
    requestTimeoutMs: 600,
    idleTimeoutMs: 600,
  });
  try {
    // no TLS handshake at all
    const tcp = await Deno.connect({
      hostname: "127.0.0.1",
      port: server.port,
    });
    const silent = await untilClosed(tcp, 5_000);
    assert.ok(silent.ms < 2_000, `no handshake: open ${silent.ms} ms`);

    // headers that never end: a byte every 100 ms keeps the socket busy
    const slow = await rawTls(server.port, pair.certPem);
    await slow.write(encode("POST /validate HTTP/1.1\r\nHost: x\r\n"));
    const drip = setInterval(
      () => void slow.write(encode("X-A: b\r\n")).catch(() => {}),
      100,
    );
    const headers = await untilClosed(slow, 5_000);
    clearInterval(drip);
    assert.ok(headers.ms < 2_000, `slow headers: open ${headers.ms} ms`);

    // a body that stops halfway gets 408 and the connection ends
    const body = await rawTls(server.port, pair.certPem);
    await body.write(encode(postHead(100) + "{".repeat(10)));
    const half = await untilClosed(body, 5_000);
    assert.match(half.text, /^HTTP\/1\.1 408/);
    assert.ok(half.ms < 2_000, `slow body: open ${half.ms} ms`);

    // an idle keep-alive connection after an answer
    const idle = await rawTls(server.port, pair.certPem);
    const ok = JSON.stringify(review("idle"));
    await idle.write(encode(postHead(ok.length) + ok));
    const answered = await untilClosed(idle, 5_000);
    assert.match(answered.text, /^HTTP\/1\.1 200/);
    assert.ok(
      answered.ms > 400 && answered.ms < 3_000,
      `idle connection closed after ${answered.ms} ms`,
    );
    assert.equal(server.connections, 0);

    // a busy keep-alive connection outlives the header and idle timeouts
    const busy = await rawTls(server.port, pair.certPem);
    const again = JSON.stringify(review("busy"));
    const buf = new Uint8Array(4096);
    for (let i = 0; i < 10; i++) {
      await busy.write(encode(postHead(again.length) + again));
      const n = await busy.read(buf);
      assert.match(
        new TextDecoder().decode(buf.subarray(0, n ?? 0)),
        /^HTTP\/1\.1 200/,
        `request ${i} on the kept connection`,
      );
      await new Promise((r) => setTimeout(r, 150));
    }
    busy.close();
  } finally {
    await server.stop();
  }
});

Deno.test("webhook server: beyond the caps, a quick 429 or 413, and the server still serves", async () => {
  const pair = await generateSelfSignedCertificate({ hosts: ["localhost"] });
  let release = () => {};
  const blocked = new Promise<void>((r) => release = r);
  const server = new WebhookServer({
    hostname: "127.0.0.1",
    port: 0,
    tls: pair,
    limits: { maxInFlight: 3, maxBodyBytes: 1000, maxBufferedBytes: 1500 },
    routes: new Map([
      ["/validate", (json) => handleAdmission(json, () => allow())],
      ["/block", async (json) => {
        await blocked;
        return handleAdmission(json, () => allow());
      }],
    ]),
  });
  await server.start();
  const client = Deno.createHttpClient({ caCerts: [pair.certPem] });
  const post = async (path: string, body: string) => {
    const res = await fetch(`https://localhost:${server.port}${path}`, {
      method: "POST",
      body,
      headers: { "content-type": "application/json" },
      client,
    });
    return { status: res.status, text: await res.text() };
  };
  try {
    const small = JSON.stringify(review("s"));
    assert.equal((await post("/validate", small)).status, 200);
    const tooBig = JSON.stringify(review("b", { pad: "x".repeat(1200) }));
    const big = await post("/validate", tooBig);
    assert.equal(big.status, 413);
    assert.match(big.text, /exceeds 1000 bytes/);

    // a body over the cap without a content-length (chunked)
    const chunked = await rawTls(server.port, pair.certPem);
    await chunked.write(encode(
      "POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
    ));
    for (let i = 0; i < 12; i++) {
      await chunked.write(encode(`64\r\n${" ".repeat(100)}\r\n`)).catch(
        () => {},
      );
    }
    const streamed = await untilClosed(chunked, 5_000);
    assert.match(streamed.text, /^HTTP\/1\.1 413/);

    // the body budget: two bodies of 700 declared bytes, waiting for the rest
    const a = await rawTls(server.port, pair.certPem);
    await a.write(encode(postHead(700) + "{"));
    const b = await rawTls(server.port, pair.certPem);
    await b.write(encode(postHead(700) + "{"));
    await new Promise((r) => setTimeout(r, 100));
    const full = await post("/validate", small);
    assert.equal(full.status, 429);
    assert.match(full.text, /1500 bytes of bodies are buffered/);
    a.close();
    b.close();
    await new Promise((r) => setTimeout(r, 100));
    assert.equal((await post("/validate", small)).status, 200);

    // requests in flight: three held by the route, the fourth refused at once
    const held = [1, 2, 3].map(() => post("/block", small));
    await new Promise((r) => setTimeout(r, 100));
    const started = performance.now();
    const fourth = await post("/validate", small);
    assert.equal(fourth.status, 429);
    assert.match(fourth.text, /3 requests are in flight/);
    assert.ok(performance.now() - started < 1_000);
    release();
    assert.deepEqual(
      (await Promise.all(held)).map((r) => r.status),
      [200, 200, 200],
    );
    assert.equal((await post("/validate", small)).status, 200);
  } finally {
    client.close();
    await server.stop();
  }
});

{
  Deno.test("webhook server: the update review of a 2.5 MiB object is served", async () => {
    const pair = await generateSelfSignedCertificate({ hosts: ["localhost"] });
    const { server, metrics } = await setup(pair);
    const object = {
      metadata: {
        name: "a",
        annotations: { big: "x".repeat(2.5 * 1024 * 1024) },
      },
      spec: { n: 1 },
    };
    const body = JSON.stringify({
      ...review("big", object),
      request: {
        ...review("big", object).request,
        operation: "UPDATE",
        oldObject: object,
      },
    });
    assert.ok(body.length > 5 * 1024 * 1024);
    try {
      const client = Deno.createHttpClient({
        caCerts: [pair.certPem],
      });
      const res = await fetch(`https://localhost:${server.port}/validate`, {
        method: "POST",
        body,
        headers: { "content-type": "application/json" },
        client,
      });
      const json = await res.json() as { response?: { allowed?: boolean } };
      client.close();
      assert.equal(res.status, 200);
      assert.equal(json.response?.allowed, true);
      const text = await metrics.registry.metrics();
      assert.ok(
        text.includes('webhook_connections_total{protocol="http/1.1"} 1\n'),
        text,
      );
    } finally {
      await server.stop();
    }
  });
}

Deno.test("webhook server: HTTP/1.1 only, whatever the client offers", async () => {
  const pair = await generateSelfSignedCertificate({ hosts: ["localhost"] });
  const { server, metrics } = await setup(pair);
  try {
    // ALPN: a client offering h2 first is given http/1.1
    const raw = await rawTls(server.port, pair.certPem, ["h2", "http/1.1"]);
    assert.equal((await raw.handshake()).alpnProtocol, "http/1.1");
    raw.close();
    // a client that offers only h2 gets no h2: the handshake fails
    await assert.rejects(rawTls(server.port, pair.certPem, ["h2"]));
    // fetch offers HTTP/2 first by default: it gets HTTP/1.1
    const client = Deno.createHttpClient({ caCerts: [pair.certPem] });
    const res = await fetch(`https://localhost:${server.port}/validate`, {
      method: "POST",
      body: JSON.stringify(review("h1")),
      headers: { "content-type": "application/json" },
      client,
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    client.close();
    const text = await metrics.registry.metrics();
    assert.match(
      text,
      /webhook_connections_total\{protocol="http\/1\.1"\} [12]\n/,
    );
    assert.doesNotMatch(text, /protocol="h2"/);
  } finally {
    await server.stop();
  }
});

Deno.test("webhook server: connections beyond the cap are closed before TLS", async () => {
  const pair = await generateSelfSignedCertificate({ hosts: ["localhost"] });
  const { server } = await setup(pair, { maxConnections: 2 });
  const open: Deno.TlsConn[] = [];
  try {
    open.push(await rawTls(server.port, pair.certPem));
    open.push(await rawTls(server.port, pair.certPem));
    const third = await Deno.connect({
      hostname: "127.0.0.1",
      port: server.port,
    });
    const refused = await untilClosed(third, 5_000);
    assert.ok(refused.ms < 1_000, `the third stayed open ${refused.ms} ms`);
    open.pop()?.close();
    await new Promise((r) => setTimeout(r, 100));
    // a slot is free again: a request goes through
    await assertServes(server.port, pair.certPem, "again");
  } finally {
    for (const c of open) c.close();
    await server.stop();
  }
});

Deno.test("webhook server: malformed HTTP gets 400, a head over the cap 431, each a JSON Status", async () => {
  const pair = await generateSelfSignedCertificate({ hosts: ["localhost"] });
  const { server } = await setup(pair, { maxHeaderBytes: 8 * 1024 });
  try {
    const cases: Array<[string, RegExp, string]> = [
      ["GARBAGE\r\n\r\n", /^HTTP\/1\.1 400 /, "BadRequest"],
      [
        `POST /validate HTTP/1.1\r\nHost: x\r\nX-Big: ${
          "a".repeat(16 * 1024)
        }\r\n\r\n`,
        /^HTTP\/1\.1 431 /,
        "RequestHeaderFieldsTooLarge",
      ],
    ];
    for (const [sent, status, reason] of cases) {
      const conn = await rawTls(server.port, pair.certPem);
      await conn.write(encode(sent));
      const { text } = await untilClosed(conn, 5_000);
      assert.match(text, status, JSON.stringify(sent.slice(0, 20)));
      const body = JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4)) as {
        kind?: string;
        reason?: string;
      };
      assert.equal(body.kind, "Status");
      assert.equal(body.reason, reason);
    }
    // and it still serves
    await assertServes(server.port, pair.certPem, "after");
  } finally {
    await server.stop();
  }
});
