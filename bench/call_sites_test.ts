import assert from "node:assert/strict";
import {
  bySite,
  callSite,
  routeOf,
  type TracedCall,
  traceFetch,
} from "./call_sites.ts";

Deno.test("routeOf: ids (uuids, hex, numbers, request ids) become {id}", () => {
  const table: [string, string, string][] = [
    ["GET", "/compute/v2.1/servers/detail", "GET /compute/v2.1/servers/detail"],
    [
      "POST",
      "/compute/v2.1/servers/0b6f4f4e-1d2c-4b7e-9a3f-0123456789ab/action",
      "POST /compute/v2.1/servers/{id}/action",
    ],
    [
      "PUT",
      "/compute/v2.1/os-services/42",
      "PUT /compute/v2.1/os-services/{id}",
    ],
    [
      "GET",
      "/placement/resource_providers/0123456789abcdef0123456789abcdef/usages",
      "GET /placement/resource_providers/{id}/usages",
    ],
    [
      "GET",
      "/compute/v2.1/servers/7/os-instance-actions/req-a1-b2",
      "GET /compute/v2.1/servers/{id}/os-instance-actions/{id}",
    ],
  ];
  for (const [method, path, want] of table) {
    assert.equal(routeOf(method, path), want);
  }
});

Deno.test("callSite: frames under the root, the plumbing and node_modules skipped, innermost first", () => {
  const stack = [
    "Error",
    "    at globalThis.fetch (file:///r/bench/call_sites.ts:1:1)",
    "    at Http.#once (file:///r/openstack/http.ts:374:20)",
    "    at file:///r/node_modules/x/index.js:3:3",
    "    at async NovaClient.#call (file:///r/openstack/nova.ts:274:9)",
    "    at async glance (file:///r/controllers/eviction/phase_pace.ts:214:18)",
    "    at ext:core/01_core.js:10:1",
    "    at async runPhases (file:///r/controllers/eviction/reconcile.ts:205:7)",
    "    at file:///r/main.ts:9:1",
  ].join("\n");
  assert.deepEqual(
    callSite(stack, "file:///r/", ["bench/", "openstack/"], 10),
    [
      "glance (controllers/eviction/phase_pace.ts:214)",
      "runPhases (controllers/eviction/reconcile.ts:205)",
      "<anonymous> (main.ts:9)",
    ],
  );
  assert.deepEqual(
    callSite(stack, "file:///r/", ["bench/", "openstack/"], 1),
    ["glance (controllers/eviction/phase_pace.ts:214)"],
  );
  assert.deepEqual(callSite(stack, "file:///elsewhere/", [], 10), []);
});

Deno.test("bySite: counts by route and site prefix, most first", () => {
  const c = (route: string, site: string[]): TracedCall => ({
    atMs: 0,
    route,
    search: "",
    site,
  });
  const calls = [
    c("GET /m", ["glance (a.ts:1)", "run (r.ts:1)"]),
    c("GET /m", ["look (b.ts:2)", "run (r.ts:1)"]),
    c("GET /m", ["look (b.ts:2)", "other (o.ts:3)"]),
    c("GET /s", ["look (b.ts:2)", "run (r.ts:1)"]),
  ];
  assert.deepEqual(bySite(calls, 1), [
    { route: "GET /m", site: "look (b.ts:2)", count: 2 },
    { route: "GET /m", site: "glance (a.ts:1)", count: 1 },
    { route: "GET /s", site: "look (b.ts:2)", count: 1 },
  ]);
  assert.equal(bySite(calls, 2).length, 4);
});

Deno.test("traceFetch: requests to the prefixes are recorded with the code that made them, others not", async () => {
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => new Response("ok"),
  );
  const base = `http://127.0.0.1:${server.addr.port}`;
  const asksNova = async () => {
    const res = await fetch(`${base}/compute/v2.1/servers/12/action?x=1`, {
      method: "POST",
    });
    await res.body?.cancel();
  };
  const seen: TracedCall[] = [];
  let prefixes: string[] = [];
  const undo = traceFetch(
    () => prefixes,
    (c) => seen.push(c),
    new URL("../", import.meta.url).href,
    ["bench/call_sites.ts"],
  );
  try {
    await asksNova(); // no prefix yet: not recorded
    prefixes = [base];
    await asksNova();
    await (await fetch(new Request(`${base}/os-migrations`))).body?.cancel();
  } finally {
    undo();
  }
  await (await fetch(`${base}/after`)).body?.cancel();
  assert.deepEqual(seen.map((c) => [c.route, c.search]), [
    ["POST /compute/v2.1/servers/{id}/action", "?x=1"],
    ["GET /os-migrations", ""],
  ]);
  assert.match(
    seen[0]?.site[0] ?? "",
    /^asksNova \(bench\/call_sites_test\.ts:\d+\)$/,
  );
});
