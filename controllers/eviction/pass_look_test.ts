import assert from "node:assert/strict";
import { lookAtHost, plansFromSnapshot, relistAgeMs } from "./pass_look.ts";
import { NOVA_LIMIT_TTL_MS } from "./nova_limit.ts";
import { eviction, passFixture } from "../../tests/harness/pass_fixture.ts";

Deno.test("a plan from a snapshot may only start, count completions and wait", () => {
  const starts = {
    finished: false,
    settleAtMs: undefined,
    confirmResize: [],
    abort: [],
    failed: [],
    stuck: [],
  };
  assert.equal(plansFromSnapshot(starts), true);
  const needFresh: Array<[string, Parameters<typeof plansFromSnapshot>[0]]> = [
    ["finish", { ...starts, finished: true }],
    ["settle", { ...starts, settleAtMs: 1 }],
    ["confirm", { ...starts, confirmResize: ["a"] }],
    ["abort", { ...starts, abort: [{ id: "a", migrationId: "7" }] }],
    ["failure", {
      ...starts,
      failed: [{
        id: "a",
        reason: "r",
        attempts: 1,
        exhausted: false,
        transient: true,
      }],
    }],
    ["stuck", {
      ...starts,
      stuck: [{ id: "a", kind: "live", startedAt: "t", elapsedSeconds: 9 }],
    }],
  ];
  for (const [why, plan] of needFresh) {
    assert.equal(plansFromSnapshot(plan), false, why);
  }
});

Deno.test("relistAgeMs: the relist interval while migrations are held, else no sooner than the finished check", () => {
  const cases: Array<[number, number, number, number, string]> = [
    // relistMs, finishedCheckMs, holding, age
    [60_000, 120_000, 1, 60_000, "running: the relist interval"],
    [60_000, 120_000, 4, 60_000, "running at the limit"],
    [60_000, 120_000, 0, 120_000, "finished or waiting: the finished check"],
    [300_000, 120_000, 0, 300_000, "a longer relist interval still holds"],
    [300_000, 120_000, 2, 300_000, "running, a long relist interval"],
  ];
  for (const [relistMs, finishedCheckMs, holding, age, why] of cases) {
    assert.equal(relistAgeMs({ relistMs, finishedCheckMs, holding }), age, why);
  }
});

Deno.test("lookAtHost asks the informer with Nova's limit as the drain knows it, until the learned value lapses", async () => {
  const asked: Array<number | undefined> = [];
  const f = passFixture(eviction("ev", "h"), {
    informer: {
      snapshot: (_key, request) => void asked.push(request.novaLimit),
    },
  });
  const empty = { servers: [], migrations: [], departed: [] };
  const look = () =>
    lookAtHost(
      f.pass,
      () => {
        throw new Error("no snapshot to plan from");
      },
      () => Promise.resolve(empty),
    );
  await look();
  f.pass.state.novaLimit = { limit: 1, seenAtMs: f.clock.now() };
  await look();
  f.clock.set(f.clock.now() + NOVA_LIMIT_TTL_MS);
  await look();
  assert.deepEqual(asked, [undefined, 1, undefined]);
});
