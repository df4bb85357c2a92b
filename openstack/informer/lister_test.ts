import assert from "node:assert/strict";
import fc from "fast-check";
import { Registry } from "prom-client";
import { nextNovaLimit, NovaLister, withInProgress } from "./lister.ts";
import type { ObservedMigration } from "./snapshot.ts";
import { countNovaCalls } from "../nova_metrics.ts";
import { NotFoundError } from "../errors.ts";
import { ManualClock } from "../../tests/harness/nova_sim/mod.ts";
import { eventually, withSim } from "../../tests/harness/openstack_util.ts";

function rec(
  id: number,
  status: string,
  o: Partial<ObservedMigration> = {},
): ObservedMigration {
  return {
    id,
    instanceUuid: `vm${id}`,
    migrationType: "live-migration",
    status,
    sourceCompute: "h",
    createdAt: "2026-12-02T10:00:00.000000",
    ...o,
  };
}

Deno.test("nextNovaLimit: a first list shows the copying count while Nova queues one from the host", () => {
  const cases: Array<[string, ObservedMigration[], number | undefined]> = [
    ["nothing", [], undefined],
    [
      "copying, none queued",
      [rec(1, "running"), rec(2, "preparing")],
      undefined,
    ],
    ["one copying, one queued", [rec(1, "running"), rec(2, "queued")], 1],
    ["two copying, two queued", [
      rec(1, "running"),
      rec(2, "post-migrating"),
      rec(3, "queued"),
      rec(4, "queued"),
    ], 2],
    ["queued, nothing copying (between two)", [rec(1, "queued")], undefined],
    [
      "accepted is not Nova's queue",
      [rec(1, "running"), rec(2, "accepted")],
      undefined,
    ],
    ["finished ones do not count", [
      rec(1, "completed"),
      rec(2, "running"),
      rec(3, "queued"),
      rec(4, "error"),
    ], 1],
    ["another host's queue says nothing of this one", [
      rec(1, "running"),
      rec(2, "queued", { sourceCompute: "other" }),
    ], undefined],
    ["cold migrations are not under this limit", [
      rec(1, "migrating", { migrationType: "migration" }),
      rec(2, "queued"),
    ], undefined],
  ];
  for (const [what, records, want] of cases) {
    assert.equal(nextNovaLimit(undefined, records, "h"), want, what);
  }
});

Deno.test("nextNovaLimit: a known limit is kept without a queue (no relearning), raised by a queue behind more, dropped when Nova runs more", () => {
  const cases: Array<
    [string, number | undefined, ObservedMigration[], number | undefined]
  > = [
    ["no list says otherwise: kept", 1, [], 1],
    ["copying at the limit, none queued: kept", 2, [
      rec(1, "running"),
      rec(2, "running"),
    ], 2],
    ["fewer copying while one is queued (between two): the higher", 2, [
      rec(1, "running"),
      rec(2, "queued"),
    ], 2],
    ["more copying behind a queue: raised", 1, [
      rec(1, "running"),
      rec(2, "running"),
      rec(3, "queued"),
    ], 2],
    ["more copying and none queued: known no more", 1, [
      rec(1, "running"),
      rec(2, "running"),
    ], undefined],
    ["unknown and nothing queued: unknown", undefined, [
      rec(1, "running"),
    ], undefined],
  ];
  for (const [what, known, records, want] of cases) {
    assert.equal(nextNovaLimit(known, records, "h"), want, what);
  }
});

Deno.test("nextNovaLimit: a first limit exactly when one is queued and some copy, never above the copying ones; a known one only grows under a queue (property)", () => {
  const statuses = [
    "accepted",
    "queued",
    "preparing",
    "running",
    "post-migrating",
    "completed",
    "error",
    "cancelled",
  ];
  fc.assert(fc.property(
    fc.array(
      fc.record({
        status: fc.constantFrom(...statuses),
        host: fc.constantFrom("h", "other"),
        live: fc.boolean(),
      }),
      { maxLength: 12 },
    ),
    fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined }),
    (shapes, known) => {
      const records = shapes.map((x, i) =>
        rec(i, x.status, {
          sourceCompute: x.host,
          migrationType: x.live ? "live-migration" : "migration",
        })
      );
      const mine = shapes.filter((x) => x.host === "h" && x.live);
      const queued = mine.filter((x) => x.status === "queued").length;
      const copying = mine.filter((x) =>
        ["preparing", "running", "post-migrating"].includes(x.status)
      ).length;
      const first = nextNovaLimit(undefined, records, "h");
      assert.equal(first, queued > 0 && copying > 0 ? copying : undefined);
      const next = nextNovaLimit(known, records, "h");
      if (queued > 0 && copying > 0) {
        assert.equal(next, Math.max(copying, known ?? 0));
      } else if (known !== undefined && copying > known) {
        assert.equal(next, undefined);
      } else assert.equal(next, known);
    },
  ));
});

Deno.test("withInProgress: the recent records, and of the others those in progress", () => {
  const r = (id: number, status: string) => rec(id, status);
  const cases: Array<
    [string, ObservedMigration[], ObservedMigration[], number[]]
  > = [
    ["nothing old", [r(1, "running")], [r(1, "running")], [1]],
    ["an old queued one is added", [r(2, "completed")], [
      r(1, "queued"),
      r(2, "completed"),
    ], [2, 1]],
    ["old ended ones are not", [], [r(1, "completed"), r(3, "error")], []],
    ["a recent one is not doubled", [r(1, "queued")], [r(1, "queued")], [1]],
  ];
  for (const [what, recent, all, want] of cases) {
    assert.deepEqual(withInProgress(recent, all).map((m) => m.id), want, what);
  }
});

Deno.test("lister against the simulator: a look shows Nova's queue and teaches its limit; the host empty, where each VM went, with no lookup a record answers", async () => {
  const clock = new ManualClock();
  await withSim({
    seed: 3,
    timeScale: 1000,
    hosts: [
      { name: "src", maxConcurrentLiveMigrations: 1 },
      { name: "dst", ramMb: 1_048_576 },
    ],
    servers: [
      { name: "a", host: "src", ramMb: 2048 },
      { name: "b", host: "src", ramMb: 2048 },
      { name: "c", host: "src", ramMb: 2048 },
    ],
  }, async ({ nova, sim }) => {
    const id = (name: string) =>
      sim.state().servers.find((s) => s.name === name)?.id ?? "";
    const ids = ["a", "b", "c"].map(id);
    let now = 1_000;
    const lister = new NovaLister(nova, { now: () => now });
    const status = { outstandingInstances: ids };
    const since = new Date(clock.now() - 60_000);
    const look = () =>
      lister.list({ host: "src", since, status, ram: () => 2048 });
    for (const vm of ids) await nova.liveMigrate(vm);
    clock.advance(1_000); // Nova schedules them: one copies, two wait
    await eventually(async () =>
      (await nova.listMigrations({ host: "src" })).some((m) =>
        m.status === "queued"
      )
    );
    const copying = await look();
    assert.equal(copying.listedAtMs, 1_000);
    assert.deepEqual(copying.servers.map((s) => s.id).sort(), [...ids].sort());
    const statuses = copying.migrations.map((m) => m.status).sort();
    assert.deepEqual(statuses.filter((s) => s === "queued").length, 2);
    assert.equal(copying.novaLimit, 1, "one copies while two wait");
    assert.equal(lister.novaLimit("src"), 1);
    clock.advance(3_600_000);
    await eventually(async () =>
      (await nova.listServersOnHost("src")).length === 0
    );
    sim.resetCounters();
    now = 2_000;
    const empty = await look();
    assert.deepEqual(empty.servers, []);
    assert.equal(empty.listedAtMs, 2_000);
    assert.deepEqual(
      empty.departed.map((d) => [d.id, d.server?.host, d.server?.status])
        .sort(),
      ids.map((vm) => [vm, "dst", "ACTIVE"]).sort(),
    );
    assert.equal(empty.novaLimit, 1, "kept: no queue since, no relearning");
    const calls = sim.counters().calls;
    assert.equal(calls["GET /compute/v2.1/servers/{id}"], undefined);
    assert.equal(
      calls["GET /compute/v2.1/os-migrations"],
      2,
      "an empty host also reads the records in progress, whatever their age",
    );
  }, { clock });
});

Deno.test("lister against the simulator: a tracked VM gone is deleted (404, looked up); one whose record tells where it went is not looked up", async () => {
  const clock = new ManualClock();
  await withSim({
    seed: 4,
    timeScale: 1000,
    hosts: [{ name: "src" }, { name: "dst" }],
    servers: [
      { name: "a", host: "src", ramMb: 1024 },
      { name: "b", host: "src", ramMb: 1024 },
      { name: "c", host: "src", ramMb: 1024 },
    ],
  }, async ({ nova, sim }) => {
    const id = (name: string) =>
      sim.state().servers.find((s) => s.name === name)?.id ?? "";
    sim.deleteServer(id("a"));
    sim.migrateTo(id("b"), "dst");
    clock.advance(3_600_000);
    await eventually(async () =>
      (await nova.getServer(id("b"))).host === "dst"
    );
    sim.resetCounters();
    const seen = await new NovaLister(nova, { now: () => 0 }).list({
      host: "src",
      since: new Date(0),
      status: { outstandingInstances: [id("a"), id("b"), id("c")] },
      ram: () => undefined,
    });
    assert.deepEqual(seen.servers.map((s) => s.id), [id("c")]);
    const where = new Map(seen.departed.map((d) => [d.id, d.server?.host]));
    assert.equal(where.get(id("a")), undefined);
    assert.equal(seen.departed.find((d) => d.id === id("a"))?.server, null);
    assert.equal(where.get(id("b")), "dst");
    assert.equal(sim.counters().calls["GET /compute/v2.1/servers/{id}"], 1);
  }, { clock });
});

Deno.test("lister against the simulator: a lookup that fails leaves that VM out and says so; a failed list throws", async () => {
  await withSim({
    seed: 5,
    timeScale: 1000,
    hosts: [{ name: "src" }, { name: "dst" }],
    servers: [{ name: "a", host: "src", ramMb: 1024 }],
  }, async ({ nova, sim }) => {
    // tracked, and neither on the host nor in a record: only a lookup tells
    const a = "9d0c2b6e-0000-4000-8000-000000000001";
    const warned: string[] = [];
    const lister = new NovaLister(nova, {
      now: () => 0,
      warn: (fields) => warned.push(String(fields["serverId"])),
    });
    const req = {
      host: "src",
      since: new Date(0),
      status: { outstandingInstances: [a] },
      ram: () => undefined,
    };
    const stop = sim.injectHttpFault({
      method: "GET",
      path: "/compute/v2.1/servers/{id}",
      status: 503,
    });
    const seen = await lister.list(req);
    assert.deepEqual(seen.departed, []);
    assert.deepEqual(warned, [a]);
    stop();
    sim.injectHttpFault({
      method: "GET",
      path: "/compute/v2.1/servers/detail",
      status: 503,
    });
    await assert.rejects(lister.list(req));
  });
});

Deno.test("Nova calls are counted at the client by route: the lister's calls as the simulator served them", async () => {
  await withSim({
    seed: 6,
    timeScale: 1000,
    hosts: [{ name: "src" }, { name: "dst" }],
    servers: [
      { name: "a", host: "src", ramMb: 1024 },
      { name: "b", host: "src", ramMb: 1024 },
    ],
  }, async ({ nova, sim }) => {
    const registry = new Registry();
    const counter = countNovaCalls(nova, registry);
    const [a, b] = sim.state().servers.map((s) => s.id);
    sim.migrateTo(a ?? "", "dst");
    sim.deleteServer(b ?? "");
    await nova.negotiate();
    sim.resetCounters();
    const lister = new NovaLister(nova, { now: () => 0 });
    await lister.list({
      host: "src",
      since: new Date(0),
      status: { outstandingInstances: [a ?? "", b ?? ""] },
      ram: () => undefined,
    });
    await lister.migrations("src", undefined);
    await nova.getServer(sim.state().servers.find((s) => s.id !== b)?.id ?? "");
    const counted: Record<string, number> = {};
    for (const v of (await counter.get()).values) {
      const key = `${v.labels.method} /compute/v2.1${v.labels.route}`;
      counted[key] = (counted[key] ?? 0) + v.value;
    }
    assert.deepEqual(counted, sim.counters().calls);
    const outcomes = (await counter.get()).values
      .filter((v) => v.labels.call === "getServer")
      .map((v) => v.labels.outcome).sort();
    assert.deepEqual(outcomes, ["not_found", "ok"]);
    const text = await registry.metrics();
    assert.match(
      text,
      /evictor_nova_calls_total\{call="listMigrations",method="GET",route="\/os-migrations",outcome="ok"\} [23]$/m,
    );
  });
});

Deno.test("lister: the lookups of one look run at most `concurrency` at once, each VM once", async () => {
  const ids = Array.from({ length: 9 }, (_, i) => `vm${i}`);
  let running = 0;
  let most = 0;
  const asked: string[] = [];
  const nova = {
    listServersOnHost: () => Promise.resolve([]),
    listMigrations: () => Promise.resolve([]),
    getServer: async (id: string) => {
      asked.push(id);
      most = Math.max(most, ++running);
      await new Promise((r) => setTimeout(r, 5));
      running--;
      throw new NotFoundError(`server ${id} not found`);
    },
  };
  const seen = await new NovaLister(nova, { now: () => 0, concurrency: 3 })
    .list({
      host: "h",
      since: new Date(0),
      status: { outstandingInstances: ids },
      ram: () => undefined,
    });
  assert.equal(most, 3);
  assert.deepEqual(asked.sort(), ids);
  assert.deepEqual(seen.departed.map((d) => d.server), ids.map(() => null));
});
