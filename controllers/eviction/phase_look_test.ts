import assert from "node:assert/strict";
import { TemporaryError } from "../../framework/errors.ts";
import type { LookNeed } from "../../openstack/informer/informer.ts";
import { lookAtHost, type Planned, plansFromSnapshot } from "./phase_look.ts";
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
    ["abort", {
      ...starts,
      abort: [{ id: "a", migrationId: "7", reason: "stuck" }],
    }],
    ["force-complete", {
      ...starts,
      forceComplete: [{ id: "a", migrationId: "7", reason: "timeout" }],
    }],
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

Deno.test("lookAtHost: a view whose plan only starts is the pass's; one it cannot act on is looked at again, fresh since that view's list", async () => {
  const asked: LookNeed[] = [];
  const view = { servers: [], migrations: [], departed: [], listedAtMs: 7 };
  const f = passFixture(eviction("ev", "h", { inFlightCount: 2 }), {
    informer: {
      look: (_key, need) => {
        asked.push(need);
        return Promise.resolve(
          need.freshSince === undefined
            ? { ...view, fromView: true }
            : { ...view, listedAtMs: 9 },
        );
      },
    },
  });
  const plan = (finished: boolean) => () =>
    ({
      plan: {
        finished,
        settleAtMs: undefined,
        confirmResize: [],
        abort: [],
        failed: [],
        stuck: [],
        next: {},
      },
      input: { options: { clockSkewMs: 0 } },
    }) as unknown as Planned;
  const since = new Date(5);
  const starting = await lookAtHost(f.pass, plan(false), since);
  assert.ok(starting.planned, "planned from the view");
  assert.deepEqual(
    asked.map((n) => [n.host, n.since, n.holding, n.freshSince]),
    [
      ["h", since, 2, undefined],
    ],
  );
  const finishing = await lookAtHost(f.pass, plan(true), since);
  assert.equal(finishing.planned, undefined);
  assert.equal(finishing.seen.listedAtMs, 9);
  assert.deepEqual(asked.slice(1).map((n) => n.freshSince), [undefined, 7]);
  const looks = await f.pass.deps.metrics.looks.get();
  assert.deepEqual(
    Object.fromEntries(looks.values.map((v) => [v.labels.source, v.value])),
    { view: 1, nova: 1 },
  );
});

Deno.test("lookAtHost: a failed look retries after the poll interval, and what the informer found wrong is said on the Eviction", async () => {
  const f = passFixture(eviction("ev", "h"), {
    informer: {
      look: () => Promise.reject(new Error("Nova is away")),
      takeWarnings: () => [{ reason: "NotificationViewDemoted", message: "m" }],
    },
  });
  await assert.rejects(
    lookAtHost(f.pass, () => {
      throw new Error("nothing to plan");
    }, new Date(0)),
    (err: unknown) => {
      assert.ok(err instanceof TemporaryError);
      assert.match(err.message, /observing host h failed: .*Nova is away/);
      assert.equal(err.delayMs, f.pass.deps.pollIntervalMs);
      return true;
    },
  );
  assert.deepEqual(f.events, [
    { type: "Warning", reason: "NotificationViewDemoted", message: "m" },
  ]);
});
