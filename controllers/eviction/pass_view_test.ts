import assert from "node:assert/strict";
import { plansFromView } from "./pass_view.ts";

Deno.test("a plan from the view may only start, count completions and wait", () => {
  const starts = {
    finished: false,
    settleAtMs: undefined,
    confirmResize: [],
    abort: [],
    failed: [],
    stuck: [],
  };
  assert.equal(plansFromView(starts), true);
  const needFresh: Array<[string, Parameters<typeof plansFromView>[0]]> = [
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
    assert.equal(plansFromView(plan), false, why);
  }
});
