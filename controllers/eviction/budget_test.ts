import assert from "node:assert/strict";
import fc from "fast-check";
import type { Eviction } from "../../models/mod.ts";
import {
  budgetCompetitors,
  BudgetWaiters,
  fairShares,
  freesBudget,
  inFlightByEviction,
} from "./budget.ts";

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

Deno.test("fairShares: table", () => {
  const cases: [number, [string, number][], Record<string, number>][] = [
    // nobody else: up to the demand
    [10, [["a", 4]], { a: 4 }],
    [3, [["a", 4]], { a: 3 }],
    // a big drain leaves one slot each to the HANA drains
    [5, [["big", 4], ["h1", 1], ["h2", 1]], { big: 3, h1: 1, h2: 1 }],
    // even split, the remainder by name
    [10, [["a", 4], ["b", 4], ["c", 4]], { a: 4, b: 3, c: 3 }],
    // fewer slots than drains: one each to the first by name
    [2, [["c", 4], ["a", 4], ["b", 4]], { a: 1, b: 1, c: 0 }],
    [0, [["a", 4]], { a: 0 }],
    [4, [["a", 0], ["b", 8]], { a: 0, b: 4 }],
  ];
  for (const [budget, demands, want] of cases) {
    const got = fairShares(
      budget,
      demands.map(([key, demand]) => ({ key, demand })),
    );
    assert.deepEqual(Object.fromEntries(got), want, `${budget} ${demands}`);
  }
  assert.throws(
    () => fairShares(-1, []),
    /budget must be an integer >= 0, got -1/,
  );
  assert.throws(
    () => fairShares(2, [{ key: "a", demand: 1.5 }]),
    /the demand of a must be an integer >= 0, got 1.5/,
  );
});

Deno.test("fairShares: within the budget and the demands, work-conserving, max-min fair (property)", () => {
  fc.assert(fc.property(
    fc.integer({ min: 0, max: 40 }),
    fc.uniqueArray(
      fc.record({ key: fc.string({ minLength: 1 }), demand: fc.nat(16) }),
      { selector: (d) => d.key, maxLength: 12 },
    ),
    (budget, demands) => {
      const s = fairShares(budget, demands);
      const got = (k: string) => s.get(k) ?? 0;
      const total = demands.reduce((n, d) => n + got(d.key), 0);
      assert.ok(total <= budget);
      for (const d of demands) assert.ok(got(d.key) <= d.demand);
      // slots left over only when every demand is met
      const wanted = demands.reduce((n, d) => n + d.demand, 0);
      assert.equal(total, Math.min(budget, wanted));
      // a drain short of its demand has at least everyone else's share - 1
      for (const a of demands) {
        if (got(a.key) >= a.demand) continue;
        for (const b of demands) assert.ok(got(b.key) <= got(a.key) + 1);
      }
    },
  ));
});

Deno.test("budgetCompetitors: drains with migrations in flight or waiting for budget", () => {
  const e = (name: string, status: Eviction["status"]): Eviction => ({
    metadata: { name },
    spec: { hypervisor: name, reason: "r" },
    status,
  });
  const waitingCondition = {
    type: "Evicting",
    status: "True" as const,
    reason: "Waiting",
    message: "budget",
    lastTransitionTime: "2026-01-01T00:00:00Z",
  };
  const got = budgetCompetitors("self", [
    e("self", { inFlightCount: 2, effectiveLimit: 4, outstandingCount: 9 }),
    e("running", { inFlightCount: 2, effectiveLimit: 4, outstandingCount: 9 }),
    // few VMs left: it would run only those
    e("tail", { inFlightCount: 1, effectiveLimit: 4, outstandingCount: 2 }),
    // Waiting, for a retry or in another process: not told apart, not counted
    e("waits", {
      inFlightCount: 0,
      effectiveLimit: 1,
      outstandingCount: 5,
      conditions: [waitingCondition],
    }),
    e("held-here", {
      inFlightCount: 0,
      effectiveLimit: 2,
      outstandingCount: 5,
    }),
    e("idle", { inFlightCount: 0, effectiveLimit: 4, outstandingCount: 5 }),
    e("done", {
      inFlightCount: 3,
      effectiveLimit: 4,
      finishedAt: "2026-01-01T00:00:00Z",
    }),
  ], (name) => name === "held-here");
  assert.deepEqual(got, [
    { key: "running", demand: 4 },
    { key: "tail", demand: 2 },
    { key: "held-here", demand: 2 },
  ]);
});
