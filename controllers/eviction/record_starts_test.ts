import assert from "node:assert/strict";
import { planPass } from "./plan.ts";
import { recordStarts } from "./record_starts.ts";
import { statusEqual } from "./status_equal.ts";
import {
  at,
  entry,
  failure,
  input,
  OPTIONS,
  T0,
  vm,
} from "./_plan_test_util.ts";

const threeReady = () =>
  planPass(
    input({
      limit: 3,
      servers: [vm("a", 3), vm("b", 2), vm("c", 1), vm("d", 0)],
    }),
  );

Deno.test("recordStarts: all started leaves the plan's next status unchanged", () => {
  const plan = threeReady();
  const { status, failed } = recordStarts(
    plan,
    plan.start.map((s) => ({ id: s.id, outcome: "started" as const })),
    T0,
    OPTIONS,
  );
  assert.ok(statusEqual(status, plan.next));
  assert.deepEqual(failed, []);
});

Deno.test("recordStarts: a 409 means Nova already has it in flight: kept, no failure", () => {
  const plan = threeReady();
  const { status, failed } = recordStarts(
    plan,
    [
      { id: "a", outcome: "conflict" },
      { id: "b", outcome: "started" },
      { id: "c", outcome: "started" },
    ],
    T0,
    OPTIONS,
  );
  assert.deepEqual(status.inFlight?.map((e) => e.id), ["a", "b", "c"]);
  assert.equal(status.inFlightCount, 3);
  assert.deepEqual(failed, []);
  assert.deepEqual(status.failed, []);
});

Deno.test("recordStarts: another error is a failed attempt with backoff", () => {
  const plan = threeReady();
  const { status, failed } = recordStarts(
    plan,
    [
      { id: "a", outcome: "error", message: "500 boom" },
      { id: "b", outcome: "started" },
      { id: "c", outcome: "started" },
    ],
    T0,
    OPTIONS,
  );
  assert.deepEqual(status.inFlight?.map((e) => e.id), ["b", "c"]);
  assert.equal(status.inFlightCount, 2);
  assert.deepEqual(failed.map((f) => [f.id, f.attempts, f.exhausted]), [[
    "a",
    1,
    false,
  ]]);
  assert.equal(status.failed?.[0]?.lastAttemptAt, T0.toISOString());
  assert.match(status.failed?.[0]?.reason ?? "", /500 boom/);
  const mi = status.conditions?.find((c) => c.type === "MigratingInstance");
  assert.deepEqual([mi?.status, mi?.reason], ["False", "Failed"]);
  // The next pass does not retry it before its delay.
  const next = planPass(input({
    now: at(10),
    limit: 3,
    servers: [
      vm("a", 3),
      vm("b", 2, { status: "MIGRATING" }),
      vm("c", 1, { status: "MIGRATING" }),
      vm("d", 0),
    ],
    status,
  }));
  assert.deepEqual(next.start.map((s) => s.id), ["d"]);
});

Deno.test("recordStarts: an error on the last attempt exhausts the VM", () => {
  const plan = planPass(input({
    servers: [vm("a")],
    status: { outstandingInstances: ["a"], failed: [failure("a", 2, -10_000)] },
  }));
  assert.deepEqual(plan.start.map((s) => [s.id, s.attempt]), [["a", 3]]);
  const { status, failed } = recordStarts(
    plan,
    [
      { id: "a", outcome: "error", message: "400" },
    ],
    T0,
    OPTIONS,
  );
  assert.deepEqual(failed.map((f) => [f.attempts, f.exhausted]), [[3, true]]);
  const evicting = status.conditions?.find((c) => c.type === "Evicting");
  assert.deepEqual([evicting?.status, evicting?.reason], ["False", "Failed"]);
});

Deno.test("recordStarts: not attempted frees the slot without counting an attempt", () => {
  const plan = threeReady();
  const { status, failed } = recordStarts(
    plan,
    [
      { id: "a", outcome: "not_attempted" },
      { id: "b", outcome: "not_attempted" },
      { id: "c", outcome: "not_attempted" },
    ],
    T0,
    OPTIONS,
  );
  assert.deepEqual(status.inFlight, []);
  assert.deepEqual(status.failed, []);
  assert.deepEqual(failed, []);
  const evicting = status.conditions?.find((c) => c.type === "Evicting");
  assert.deepEqual([evicting?.status, evicting?.reason], ["True", "Waiting"]);
});

Deno.test("recordStarts: a start without an outcome stays in flight (it may have reached Nova)", () => {
  const plan = threeReady();
  const { status } = recordStarts(plan, [], T0, OPTIONS);
  assert.deepEqual(status.inFlight?.map((e) => e.id), ["a", "b", "c"]);
});

Deno.test("recordStarts: an outcome for a VM the plan did not start is refused", () => {
  const plan = threeReady();
  assert.throws(
    () => recordStarts(plan, [{ id: "zz", outcome: "started" }], T0, OPTIONS),
    /start outcome for "zz", which the plan did not start/,
  );
});

Deno.test("recordStarts: transitions are judged against the conditions before the pass", () => {
  // Before: MigratingInstance False/Failed since T0-100 (a failure remains).
  const before = planPass(input({
    now: at(-100),
    servers: [vm("e", 1, { status: "ERROR", fault: { message: "x" } })],
  })).next;
  const plan = planPass(input({
    servers: [
      vm("e", 1, { status: "ERROR", fault: { message: "x" } }),
      vm("a"),
    ],
    status: before,
  }));
  const { status } = recordStarts(
    plan,
    [{ id: "a", outcome: "error", message: "503" }],
    T0,
    OPTIONS,
  );
  const mi = status.conditions?.find((c) => c.type === "MigratingInstance");
  assert.equal(mi?.lastTransitionTime, at(-100).toISOString());
});

Deno.test("recordStarts: keeps the trigger in status so a restart never triggers twice", () => {
  const plan = threeReady();
  const { status } = recordStarts(
    plan,
    plan.start.map((s) => ({ id: s.id, outcome: "started" as const })),
    T0,
    OPTIONS,
  );
  // Restarted operator, Nova shows nothing yet: nothing is started again.
  const again = planPass(input({
    now: at(5),
    limit: 10,
    servers: [vm("a", 3), vm("b", 2), vm("c", 1), vm("d", 0)],
    status,
  }));
  assert.deepEqual(again.start.map((s) => s.id), ["d"]);
  assert.deepEqual(again.next.inFlight?.map((e) => e.startedAt), [
    entry("a", 0).startedAt,
    entry("b", 0).startedAt,
    entry("c", 0).startedAt,
    at(5).toISOString(),
  ]);
});
