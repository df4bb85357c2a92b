import assert from "node:assert/strict";
import fc from "fast-check";
import { Registry } from "prom-client";
import { HealthServer } from "./health_server.ts";
import { bearerToken, type MetricsAuthorizer } from "./metrics_auth.ts";

Deno.test("bearerToken reads only a Bearer header with one token", () => {
  const table: [string | null, string | undefined][] = [
    [null, undefined],
    ["", undefined],
    ["Bearer", undefined],
    ["Bearer ", undefined],
    ["Basic dXNlcjpwYXNz", undefined],
    ["Bearer abc.def", "abc.def"],
    ["bearer abc", "abc"],
    ["BEARER\tabc ", "abc"],
    ["Bearer a b", undefined],
  ];
  for (const [header, want] of table) {
    assert.equal(bearerToken(header), want, JSON.stringify(header));
  }
});

Deno.test("bearerToken returns any token without blanks it is given", () => {
  fc.assert(
    fc.property(
      fc.string({ minLength: 1 }).filter((t) => !/[ \t]/.test(t)),
      (token) => bearerToken(`Bearer ${token}`) === token,
    ),
  );
});

Deno.test("the health server asks the authorizer for /metrics only", async () => {
  const registry = new Registry();
  const seen: (string | null)[] = [];
  // a decision table standing in for the API server's reviews
  const authorize: MetricsAuthorizer = (header) => {
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
  const hs = new HealthServer({
    address: "127.0.0.1:0",
    liveness: new Map([["ping", () => true]]),
    readiness: new Map(),
    registry,
    authorizeMetrics: authorize,
  });
  await hs.start();
  try {
    const base = `http://127.0.0.1:${hs.port}`;
    const get = async (path: string, token?: string) => {
      const res = await fetch(`${base}${path}`, {
        headers: token === undefined ? {} : { authorization: token },
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
    assert.equal((await get("/metrics", "Bearer bad")).status, 403);
    assert.equal((await get("/metrics", "Bearer good")).status, 200);
    const probesBefore = seen.length;
    assert.equal((await get("/healthz")).status, 200);
    assert.equal((await get("/readyz")).status, 200);
    assert.equal(seen.length, probesBefore, "probes are not authorized");
  } finally {
    await hs.stop();
  }
});
