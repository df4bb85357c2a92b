import assert from "node:assert/strict";
import fc from "fast-check";
import {
  type HostInformer,
  type LookNeed,
  PollingInformer,
  relistAgeMs,
  untimedCopies,
} from "./informer.ts";
import { NovaLister } from "./lister.ts";
import {
  FixedNova,
  HOST,
  listed,
  record,
  T0,
} from "../../tests/harness/notified_fixtures.ts";

Deno.test("relistAgeMs: the relist interval while a copy runs untimed, else no sooner than the finished check, on the drain's clock", () => {
  const cases: Array<[number, number, number, number, number, string]> = [
    // relistMs, finishedCheckMs, rate, untimed copies, age
    [
      60_000,
      120_000,
      1,
      1,
      60_000,
      "a copy untimed: the relist interval",
    ],
    [60_000, 120_000, 1, 4, 60_000, "four of them"],
    [60_000, 120_000, 1, 0, 120_000, "every copy timed: the finished check"],
    [300_000, 120_000, 1, 0, 300_000, "a longer relist interval still holds"],
    [60_000, 120_000, 20, 2, 1_200_000, "a clock 20 times real time"],
  ];
  for (const [relistMs, finishedCheckMs, rate, untimed, age, why] of cases) {
    assert.equal(
      relistAgeMs({ pollMs: 2000, relistMs, finishedCheckMs, rate }, untimed),
      age,
      why,
    );
  }
});

Deno.test("untimedCopies: ours in flight the pacing model timed no end for; timed, ended and not yet seen copying ones do not count", () => {
  const ends = new Map<string, number | undefined>([
    ["a", undefined],
    ["b", 5_000],
    ["gone", undefined],
  ]);
  const cases: Array<[string[], number, string]> = [
    [["a", "b"], 1, "a untimed, b timed"],
    [["b"], 0, "b timed"],
    [["a", "c"], 1, "c queued at the last pace: timed at this one"],
    [[], 0, "none in flight: an ended copy's note counts for nothing"],
  ];
  for (const [ids, want, why] of cases) {
    assert.equal(untimedCopies(ends, ids.map((id) => ({ id }))), want, why);
  }
  assert.equal(untimedCopies(ends, undefined), 0, "no status yet");
});

Deno.test("PollingInformer: every look lists, at the drain's clock, with Nova's limit as the lists showed it; a glance teaches it too", async () => {
  const nova = new FixedNova();
  let now = 100;
  const informer = new PollingInformer(
    new NovaLister(nova, { now: () => now }),
  );
  const need: LookNeed = {
    host: HOST,
    since: new Date(0),
    status: { outstandingInstances: ["a", "b"] },
    ram: () => undefined,
    starts: [],
  };
  nova.show([listed("a"), listed("b")]);
  const first = await informer.look("ev", need);
  assert.equal(first.listedAtMs, 100);
  assert.equal(first.fromView, undefined);
  assert.equal(first.novaLimit, undefined);
  assert.equal(informer.cached(), false, "nothing cached");
  nova.show([listed("a", { taskState: "migrating" }), listed("b")], [
    record(1, "a", "running"),
    record(2, "b", "queued"),
  ]);
  const migrations = await informer.glance(HOST, new Date(0));
  assert.equal(migrations.length, 2);
  now = 200;
  const second = await informer.look("ev", need);
  assert.equal(second.listedAtMs, 200);
  assert.equal(second.novaLimit, 1, "learned from the glance, kept");
  assert.deepEqual(nova.calls, [
    `listServersOnHost ${HOST}`,
    `listMigrations ${HOST} since`,
    `listMigrations ${HOST} since`,
    `listServersOnHost ${HOST}`,
    `listMigrations ${HOST} since`,
  ]);
  assert.equal(informer.woken(), false);
  assert.equal(informer.watching(), false);
  assert.deepEqual(informer.takeWarnings(), []);
  assert.equal(informer.notifications(), undefined);
});

Deno.test("property: relistAgeMs — an untimed copy gives the relist interval, none never sooner nor before the finished check, linear in the rate; the poll interval plays no part", () => {
  const timing = fc.record({
    pollMs: fc.integer({ min: 1, max: 10_000 }),
    relistMs: fc.integer({ min: 1, max: 600_000 }),
    finishedCheckMs: fc.integer({ min: 1, max: 600_000 }),
    rate: fc.integer({ min: 1, max: 100 }),
  });
  fc.assert(
    fc.property(
      timing,
      fc.integer({ min: 1, max: 50 }),
      fc.integer({ min: 1, max: 1_000_000 }),
      (t, untimed, pollMs) => {
        const busy = relistAgeMs(t, untimed);
        const calm = relistAgeMs(t, 0);
        assert.equal(busy, t.relistMs * t.rate, "the relist interval");
        assert.ok(calm >= busy, "never sooner with every end looked for");
        assert.ok(calm >= t.finishedCheckMs * t.rate, "nor before the check");
        assert.equal(relistAgeMs({ ...t, rate: 1 }, 0) * t.rate, calm);
        assert.equal(relistAgeMs(t, untimed + 1), busy, "how many: no matter");
        assert.equal(relistAgeMs({ ...t, pollMs }, untimed), busy, "poll");
        assert.equal(relistAgeMs({ ...t, pollMs }, 0), calm, "poll");
      },
    ),
  );
});

/** A look's need on HOST for `outstanding`, from `freshSince` when given. */
function needOf(outstanding: string[], freshSince?: number): LookNeed {
  return {
    host: HOST,
    since: new Date(0),
    status: { outstandingInstances: outstanding },
    ram: () => undefined,
    starts: [{ id: "a", state: "accepted", issuedAtMs: 1 }],
    ...(freshSince === undefined ? {} : { freshSince }),
  };
}

Deno.test("PollingInformer: a look lists even when asked for nothing fresher, and each drain key or repeat lists again", async () => {
  const nova = new FixedNova().show([listed("a")]);
  let now = 10;
  const informer: HostInformer = new PollingInformer(
    new NovaLister(nova, { now: () => now++ }),
  );
  const seen = [
    await informer.look("ev", needOf(["a"])),
    await informer.look("ev", needOf(["a"], 0)),
    await informer.look("other", needOf(["a"], 1_000_000)),
  ];
  assert.deepEqual(seen.map((o) => o.listedAtMs), [10, 11, 12]);
  assert.ok(seen.every((o) => o.fromView === undefined), "never from a view");
  assert.equal(
    nova.calls.filter((c) => c.startsWith("listServersOnHost")).length,
    3,
  );
  assert.equal(informer.cached("ev"), false);
  assert.equal(informer.cached("other"), false);
});

Deno.test("PollingInformer: a look carries the list's servers, records, departures and the limit this very list shows", async () => {
  const nova = new FixedNova().show(
    [listed("a", { status: "MIGRATING", taskState: "migrating" })],
    [record(1, "a", "running"), record(2, "b", "queued")],
  );
  nova.elsewhere.set("c", listed("c", { host: "node001" }));
  const informer = new PollingInformer(new NovaLister(nova, { now: () => 7 }));
  const seen = await informer.look("ev", needOf(["a", "b", "c", "d"]));
  assert.deepEqual(seen.servers.map((s) => s.id), ["a"]);
  assert.deepEqual(seen.migrations.map((m) => m.id), [1, 2]);
  assert.equal(seen.novaLimit, 1, "one copying, one queued: Nova's limit is 1");
  const departed = new Map(seen.departed.map((d) => [d.id, d.server]));
  assert.equal(departed.get("c")?.host, "node001", "looked up: elsewhere");
  assert.equal(departed.get("d"), null, "404: deleted");
  assert.equal(departed.has("a"), false, "still listed: not departed");
  assert.equal(seen.listedAtMs, 7);
});

Deno.test("PollingInformer: with no server left, a look also lists every record in progress however old", async () => {
  const nova = new FixedNova().show([], [
    record(3, "a", "queued", {
      updatedAt: null,
      createdAt: "2020-01-01T00:00:00",
    }),
  ]);
  const informer = new PollingInformer(new NovaLister(nova, { now: () => 0 }));
  const seen = await informer.look("ev", {
    ...needOf([]),
    since: new Date(T0),
  });
  assert.deepEqual(seen.migrations.map((m) => m.id), [3]);
  assert.deepEqual(nova.calls, [
    `listServersOnHost ${HOST}`,
    `listMigrations ${HOST} since`,
    `listMigrations ${HOST}`,
    "getServer a", // gone from the host, its queued record says not where
  ]);
});

Deno.test("PollingInformer: a glance without `since` lists all the host's records; one since a time only the newer", async () => {
  const old = new Date(T0 - 3_600_000).toISOString().replace("Z", "");
  const nova = new FixedNova().show([], [
    record(1, "a", "completed", { createdAt: old, updatedAt: old }),
    record(2, "b", "running"),
  ]);
  const informer = new PollingInformer(new NovaLister(nova, { now: () => 0 }));
  assert.deepEqual((await informer.glance(HOST, undefined)).map((m) => m.id), [
    1,
    2,
  ]);
  assert.deepEqual(
    (await informer.glance(HOST, new Date(T0 - 60_000))).map((m) => m.id),
    [2],
  );
  assert.deepEqual(nova.calls, [
    `listMigrations ${HOST}`,
    `listMigrations ${HOST} since`,
  ]);
});

Deno.test("PollingInformer: a glance that shows the limit raised forgets it for the next look", async () => {
  const nova = new FixedNova().show([listed("a"), listed("b"), listed("c")], [
    record(1, "a", "running"),
    record(2, "b", "queued"),
  ]);
  const informer = new PollingInformer(new NovaLister(nova, { now: () => 0 }));
  assert.equal((await informer.look("ev", needOf([]))).novaLimit, 1);
  nova.show(nova.servers, [
    record(1, "a", "running"),
    record(2, "b", "running"),
  ]);
  await informer.glance(HOST, new Date(0));
  assert.equal((await informer.look("ev", needOf([]))).novaLimit, undefined);
});

Deno.test("PollingInformer: nothing wakes, watches or warns, and forgetting a key or closing leaves looks listing", async () => {
  const nova = new FixedNova().show([listed("a")]);
  const informer: HostInformer = new PollingInformer(
    new NovaLister(nova, { now: () => 0 }),
  );
  await informer.look("ev", needOf(["a"]));
  for (const key of ["ev", "never-looked"]) {
    assert.equal(informer.woken(key), false, key);
    assert.equal(informer.watching(key), false, key);
    assert.deepEqual(informer.takeWarnings(key), [], key);
    assert.equal(informer.notifications(key), undefined, key);
    assert.equal(informer.cached(key), false, key);
  }
  informer.forget("ev");
  assert.equal(
    (await informer.look("ev", needOf(["a"]))).servers.length,
    1,
    "a forgotten key looks as before",
  );
  informer.close();
  assert.equal(nova.calls.filter((c) => c.startsWith("listServers")).length, 2);
});
