import assert from "node:assert/strict";
import { type LookNeed, PollingInformer, relistAgeMs } from "./informer.ts";
import { NovaLister } from "./lister.ts";
import { NotFoundError } from "../errors.ts";
import {
  FixedNova,
  HOST,
  listed,
  record,
} from "../../tests/harness/notified_fixtures.ts";

Deno.test("relistAgeMs: the relist interval while migrations are held, else no sooner than the finished check, on the drain's clock", () => {
  const cases: Array<[number, number, number, number, number, string]> = [
    // relistMs, finishedCheckMs, rate, holding, age
    [60_000, 120_000, 1, 1, 60_000, "running: the relist interval"],
    [60_000, 120_000, 1, 4, 60_000, "running at the limit"],
    [60_000, 120_000, 1, 0, 120_000, "finished or waiting: the finished check"],
    [300_000, 120_000, 1, 0, 300_000, "a longer relist interval still holds"],
    [60_000, 120_000, 20, 2, 1_200_000, "a clock 20 times real time"],
  ];
  for (const [relistMs, finishedCheckMs, rate, holding, age, why] of cases) {
    assert.equal(
      relistAgeMs({ pollMs: 2000, relistMs, finishedCheckMs, rate }, holding),
      age,
      why,
    );
  }
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
    holding: 1,
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
  nova.elsewhere.set("gone-by", listed("gone-by", { host: "node007" }));
  assert.equal((await informer.server("gone-by")).host, "node007");
  await assert.rejects(informer.server("deleted"), NotFoundError);
  assert.equal(informer.woken(), false);
  assert.equal(informer.watching(), false);
  assert.deepEqual(informer.takeWarnings(), []);
  assert.equal(informer.notifications(), undefined);
});
