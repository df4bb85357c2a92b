// Backoff for starts Nova left unanswered: per VM, on the drain's clock,
// never charged; reported after several in a row.
import assert from "node:assert/strict";
import { unansweredBackoffMs } from "./phase_act.ts";
import { evictingCondition } from "./conditions.ts";
import { planPass, UNANSWERED_REPORT_AFTER } from "./plan.ts";
import { at, input, vm } from "../../tests/harness/plan_fixtures.ts";

Deno.test("unansweredBackoffMs: 2 s doubling, capped at 2 min", () => {
  const table: Array<[number, number]> = [
    [1, 2000],
    [2, 4000],
    [3, 8000],
    [6, 64_000],
    [7, 120_000],
    [1000, 120_000],
  ];
  for (const [count, ms] of table) assert.equal(unansweredBackoffMs(count), ms);
});

Deno.test("a VM in start backoff is not started, not in flight, not charged", () => {
  const plan = planPass(input({
    servers: [vm("a", 4096), vm("b", 1024)],
    status: { outstandingInstances: ["a", "b"] },
    starts: new Map([["a", {
      id: "a",
      state: "unknown",
      kind: "live",
      issuedAtMs: at(-1).getTime(),
      answeredAtMs: at(-1).getTime(),
      message: "503",
    }]]),
    startBackoff: new Map([["a", { count: 1, retryAtMs: at(2).getTime() }]]),
  }));
  assert.deepEqual(plan.start.map((s) => s.id), ["b"]);
  assert.deepEqual(plan.next.inFlight?.map((e) => e.id), ["b"]);
  assert.deepEqual(plan.next.failed ?? [], []);
  assert.equal(plan.nextRetryAtMs, at(2).getTime());
  assert.equal(plan.summary.backoff, 1);
  // once its time has come it is started again
  const later = planPass(input({
    servers: [vm("a", 4096)],
    status: { outstandingInstances: ["a"] },
    now: at(2),
    startBackoff: new Map([["a", { count: 1, retryAtMs: at(2).getTime() }]]),
  }));
  assert.deepEqual(later.start.map((s) => s.id), ["a"]);
});

Deno.test("after several unanswered starts in a row the condition says Nova is not taking starts", () => {
  const plan = planPass(input({
    servers: [vm("a")],
    status: { outstandingInstances: ["a"] },
    startBackoff: new Map([["a", {
      count: UNANSWERED_REPORT_AFTER,
      retryAtMs: at(8).getTime(),
    }]]),
  }));
  const c = plan.next.conditions?.find((x) => x.type === "Evicting");
  assert.equal(c?.status, "True");
  assert.equal(c?.reason, "StartsUnanswered");
  assert.match(c?.message ?? "", /Nova is not taking starts/);
  assert.equal(plan.next.inFlightCount, 0);
  // fewer in a row: just waiting
  const early = planPass(input({
    servers: [vm("a")],
    status: { outstandingInstances: ["a"] },
    startBackoff: new Map([["a", { count: 1, retryAtMs: at(2).getTime() }]]),
  }));
  assert.equal(
    early.next.conditions?.find((x) => x.type === "Evicting")?.reason,
    "Waiting",
  );
});

Deno.test("evictingCondition: Running wins over StartsUnanswered", () => {
  const c = evictingCondition(
    { outstandingCount: 2, inFlightCount: 1 },
    {
      ready: 0,
      busy: 0,
      backoff: 1,
      needsPerson: 0,
      held: undefined,
      unanswered: 1,
    },
  );
  assert.equal(c.reason, "Running");
});
