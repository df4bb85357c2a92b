import assert from "node:assert/strict";
import fc from "fast-check";
import type { Eviction } from "../../models/mod.ts";
import { BudgetWaiters, freesBudget, inFlightByEviction } from "./budget.ts";

const T = "2026-11-29T12:00:00Z";

function ev(
  name: string,
  inFlight: number | undefined,
  more: { finished?: boolean; deleting?: boolean } = {},
): Eviction {
  return {
    metadata: {
      name,
      ...(more.deleting ? { deletionTimestamp: T } : {}),
    },
    spec: { hypervisor: name, reason: "r" },
    status: {
      ...(inFlight === undefined ? {} : { inFlightCount: inFlight }),
      ...(more.finished ? { finishedAt: T } : {}),
    },
  };
}

Deno.test("inFlightByEviction: running and deleted drains count, finished ones do not", () => {
  const got = inFlightByEviction([
    ev("run", 3),
    ev("idle", 0),
    ev("new", undefined),
    ev("deleted", 2, { deleting: true }),
    ev("done", 4, { finished: true }),
  ]);
  assert.deepEqual([...got], [["run", 3], ["deleted", 2]]);
});

Deno.test("BudgetWaiters.wake: the longest-waiting first, each once", () => {
  const w = new BudgetWaiters();
  for (const k of ["a", "b", "c"]) w.add(k);
  w.add("a");
  const woken: string[] = [];
  w.wake((k) => woken.push(k), 2);
  assert.deepEqual(woken, ["a", "b"]);
  w.wake((k) => woken.push(k));
  assert.deepEqual(woken, ["a", "b", "c"]);
  assert.equal(w.size, 0);
});

Deno.test("BudgetWaiters: a woken drain keeps its place; waiting again, it is the next woken", () => {
  const w = new BudgetWaiters();
  for (const k of ["a", "b", "c"]) w.add(k);
  const woken: string[] = [];
  w.wake((k) => woken.push(k), 1);
  assert.deepEqual(woken, ["a"]);
  assert.equal(w.standing("a"), "woken");
  assert.equal(w.size, 2);
  // its pass found the slot taken: back to waiting, still first in line
  w.add("a");
  assert.equal(w.standing("a"), "waiting");
  w.wake((k) => woken.push(k), 1);
  assert.deepEqual(woken, ["a", "a"]);
  // a full pass takes it out of line
  w.delete("a");
  assert.equal(w.standing("a"), undefined);
  w.wake((k) => woken.push(k));
  assert.deepEqual(woken, ["a", "a", "b", "c"]);
});

Deno.test("freesBudget: only a drop frees budget", () => {
  const cases: Array<[number | undefined, number | undefined, boolean]> = [
    [3, 2, true],
    [3, 0, true],
    [2, undefined, true],
    [undefined, 2, false],
    [2, 2, false],
    [0, undefined, false],
    [1, 4, false],
  ];
  for (const [before, after, want] of cases) {
    assert.equal(freesBudget(before, after), want, `${before} -> ${after}`);
  }
});

Deno.test("BudgetWaiters: a drop or a deletion wakes one waiter per slot freed; a rise wakes none (property)", () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.record({
          key: fc.constantFrom("a", "b", "c"),
          n: fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined }),
          wait: fc.constantFrom("x", "y", undefined),
        }),
        { maxLength: 30 },
      ),
      (events) => {
        const w = new BudgetWaiters();
        const seen = new Map<string, number>();
        for (const e of events) {
          if (e.wait !== undefined) w.add(e.wait);
          const waitingBefore = w.size;
          const woken: string[] = [];
          const before = seen.get(e.key) ?? 0;
          const after = e.n ?? 0;
          w.observe(
            e.key,
            e.n === undefined ? undefined : ev(e.key, e.n),
            (k) => woken.push(k),
          );
          if (e.n === undefined) seen.delete(e.key);
          else seen.set(e.key, e.n);
          if (after < before) {
            // as many as slots freed, the longest-waiting first
            const n = Math.min(waitingBefore, before - after);
            assert.equal(woken.length, n);
            assert.equal(new Set(woken).size, woken.length);
            assert.equal(w.size, waitingBefore - n);
          } else {
            assert.deepEqual(woken, []);
            assert.equal(w.size, waitingBefore);
          }
        }
      },
    ),
  );
});
