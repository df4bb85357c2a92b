import assert from "node:assert/strict";
import { allow, deny, handleAdmission } from "./admission.ts";
import { createTestCa, waitFor } from "../tests/harness/framework_util.ts";
import { FrameworkMetrics } from "./metrics.ts";
import { WebhookServer } from "./webhook_server.ts";
import { generateSelfSignedCertificate } from "./self_signed.ts";

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

async function setup(tls: { certFile: string; keyFile: string }) {
  const metrics = new FrameworkMetrics({ processMetrics: false });
  const server = new WebhookServer({
    hostname: "127.0.0.1",
    port: 0,
    tls,
    metrics,
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
  });
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
    // workers 0-1: HTTP/1.1 keep-alive; 2-3: HTTP/2 keep-alive; 4-5: a new
    // connection each time
    const make = () =>
      Deno.createHttpClient({
        caCerts: [ca1.certPem, ca2.certPem],
        ...(i < 2 ? { http2: false } : {}),
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

Deno.test("webhook server: after a rotation HTTP/1.1 keep-alive clients are told to reconnect and the old backend closes", async () => {
  const ca = await createTestCa();
  const dir = await Deno.makeTempDir();
  const write = async () => {
    const pair = await ca.issue(["127.0.0.1"]);
    await Deno.writeTextFile(`${dir}/tls.key`, pair.keyPem);
    await Deno.writeTextFile(`${dir}/tls.crt`, pair.certPem);
  };
  await write();
  const { server } = await setup({
    certFile: `${dir}/tls.crt`,
    keyFile: `${dir}/tls.key`,
  });
  const client = Deno.createHttpClient({ caCerts: [ca.certPem], http2: false });
  const call = async () => {
    const res = await fetch(`https://127.0.0.1:${server.port}/validate`, {
      method: "POST",
      body: JSON.stringify(review("k")),
      headers: { "content-type": "application/json" },
      client,
    });
    await res.body?.cancel();
    return res.status;
  };
  try {
    assert.equal(await call(), 200);
    await write();
    assert.equal(await server.reload(), true);
    assert.equal(
      server.retiredBackends,
      1,
      "the kept-alive connection holds the old backend",
    );
    assert.equal(
      await call(),
      200,
      "served on the old connection, with Connection: close",
    );
    await waitFor(
      "the old backend to close",
      () => server.retiredBackends === 0,
      5_000,
    );
    assert.equal(
      await call(),
      200,
      "and the next request uses a new connection",
    );
  } finally {
    client.close();
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
