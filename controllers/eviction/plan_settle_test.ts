// The settled Succeeded: the planner declares a host empty only once looks
// at least `settleMs` apart have all found it so.
import assert from "node:assert/strict";
import fc from "fast-check";
import type { EvictionStatus } from "../../models/mod.ts";
import { type Plan, planPass } from "./plan.ts";
import {
  at,
  HOST,
  input,
  mig,
  OPTIONS,
  vm,
} from "../../tests/harness/plan_fixtures.ts";

const SETTLE = { ...OPTIONS, settleMs: 6000 };

function evicting(plan: Plan): string | undefined {
  return plan.next.conditions?.find((c) => c.type === "Evicting")?.reason;
}

/** One pass at T0 + `seconds` on the previous status. */
function look(
  status: EvictionStatus | undefined,
  seconds: number,
  servers = [] as ReturnType<typeof vm>[],
  extra: Parameters<typeof input>[0] = {},
): Plan {
  return planPass(input({
    status,
    servers,
    now: at(seconds),
    options: SETTLE,
    ...extra,
  }));
}

Deno.test("settle: the first empty look is Settling, not Succeeded", () => {
  const plan = look({ outstandingInstances: [] }, 0);
  assert.equal(plan.finished, false);
  assert.equal(plan.next.finishedAt, undefined);
  assert.equal(plan.next.emptySince, at(0).toISOString());
  assert.equal(plan.settleAtMs, at(6).getTime());
  assert.equal(evicting(plan), "Settling");
  const c = plan.next.conditions?.find((x) => x.type === "Evicting");
  assert.equal(c?.status, "True");
});

Deno.test("settle: an empty look a settle interval later is Succeeded", () => {
  const first = look({ outstandingInstances: [] }, 0);
  const mid = look(first.next, 3);
  assert.equal(mid.finished, false);
  assert.equal(mid.next.emptySince, at(0).toISOString());
  const last = look(mid.next, 6);
  assert.equal(last.finished, true);
  assert.equal(last.next.finishedAt, at(6).toISOString());
  assert.equal(last.settleAtMs, undefined);
  assert.equal(evicting(last), "Succeeded");
  // and it stays Succeeded while looks find it empty
  const later = look(last.next, 100);
  assert.equal(later.finished, true);
  assert.equal(later.next.finishedAt, at(6).toISOString());
});

Deno.test("settle: a VM seen between the looks starts the interval again", () => {
  const first = look({ outstandingInstances: [] }, 0);
  const arrived = look(first.next, 3, [vm("x")]);
  assert.equal(arrived.next.emptySince, undefined);
  assert.deepEqual(arrived.start.map((s) => s.id), ["x"]);
  // x left (its record completed), the host is empty again at 10 s
  const empty = planPass(input({
    status: arrived.next,
    now: at(10),
    options: SETTLE,
    migrations: [mig(1, "x", "completed", { destCompute: "other" })],
    departed: [{
      id: "x",
      server: { ...vm("x"), host: "other" },
    }],
  }));
  assert.equal(empty.next.emptySince, at(10).toISOString());
  assert.equal(empty.finished, false);
  assert.equal(look(empty.next, 15).finished, false);
  assert.equal(look(empty.next, 16).finished, true);
});

Deno.test("settle: a migration queued towards the host keeps it from settling", () => {
  const queued = mig(7, "incoming", "queued", {
    sourceCompute: "elsewhere",
    destCompute: HOST,
    createdAt: "2026-11-01T00:00:00",
    updatedAt: "2026-11-01T00:00:00",
  });
  const first = look({ outstandingInstances: [] }, 0, [], {
    migrations: [queued],
  });
  assert.equal(first.next.emptySince, undefined);
  assert.equal(first.finished, false);
  assert.deepEqual(first.next.outstandingInstances, ["incoming"]);
});

Deno.test("settle: a start of ours without an answer is not empty", () => {
  const plan = look({ outstandingInstances: [] }, 0, [], {
    starts: new Map([["gone", { id: "gone", state: "pending" }]]),
  });
  assert.equal(plan.next.emptySince, undefined);
  assert.equal(plan.settleAtMs, undefined);
  assert.notEqual(evicting(plan), "Succeeded");
});

Deno.test("settle: a finished drain that finds a VM reopens", () => {
  const done = look(look({ outstandingInstances: [] }, 0).next, 6);
  assert.equal(done.finished, true);
  const reopened = look(done.next, 8, [vm("late")]);
  assert.equal(reopened.finished, false);
  assert.equal(reopened.next.finishedAt, undefined);
  assert.equal(reopened.next.emptySince, undefined);
  assert.deepEqual(reopened.start.map((s) => s.id), ["late"]);
});

Deno.test("settle 0: the first empty look finishes (the planner's default)", () => {
  const plan = planPass(input({ status: { outstandingInstances: [] } }));
  assert.equal(plan.finished, true);
  assert.equal(plan.next.emptySince, plan.next.finishedAt);
});

Deno.test("settle property: finishedAt only after looks a settle interval apart all found it empty", () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.record({ gapS: fc.integer({ min: 0, max: 5 }), vm: fc.boolean() }),
        {
          minLength: 1,
          maxLength: 20,
        },
      ),
      (looks) => {
        let status: EvictionStatus | undefined = { outstandingInstances: [] };
        let t = 0;
        let emptyFrom: number | undefined;
        for (const l of looks) {
          t += l.gapS;
          const plan = look(status, t, l.vm ? [vm("v")] : []);
          if (l.vm) emptyFrom = undefined;
          else emptyFrom ??= t;
          if (plan.finished) {
            assert.ok(emptyFrom !== undefined && t - emptyFrom >= 6);
          } else if (emptyFrom !== undefined && t - emptyFrom >= 6) {
            assert.fail(`empty since ${emptyFrom}, not finished at ${t}`);
          }
          // every VM that appears leaves at once (the next look is empty)
          status = l.vm
            ? { ...plan.next, outstandingInstances: [], inFlight: [] }
            : plan.next;
        }
      },
    ),
  );
});
