import assert from "node:assert/strict";
import fc from "fast-check";
import type { Eviction } from "../../models/mod.ts";
import {
  aboutToStart,
  BudgetWaiters,
  freesBudget,
  idleWaiters,
  inFlightByEviction,
  startsByRemainingWork,
  waitsForBudget,
} from "./budget_share.ts";

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

/** The rule with no waiter that has more left: the lower-limit slots alone. */
function byLimits(
  left: number,
  mine: number,
  want: number,
  limits: readonly number[],
): number {
  const waiting = limits.map((limit) => ({
    limit,
    remaining: 0,
    startsWithoutLook: true,
  }));
  return startsByRemainingWork(left, mine, want, 1000, waiting);
}

Deno.test("startsByRemainingWork, no waiter with more left: table", () => {
  const cases: [number, number, number, number[], number][] = [
    // left, mine, want, limits of idle waiters, allowed
    [10, 0, 4, [], 4],
    [3, 0, 4, [], 3],
    [0, 2, 2, [], 0],
    // a wave's start: budget 5 and two HANA drains waiting
    [5, 0, 4, [1, 1], 3],
    // a migration of the big drain ends: its slot goes to a HANA drain
    [1, 3, 1, [1], 0],
    [2, 3, 1, [1, 1], 0],
    [3, 2, 2, [1, 1], 1],
    // waiters with the same limit are not handed this drain's slots
    [1, 3, 1, [4, 4], 1],
    // ... nor with a higher one
    [2, 1, 2, [8], 2],
    // a waiting drain itself, beside another waiting one of its limit
    [1, 0, 1, [1], 1],
  ];
  for (const [left, mine, want, waiting, allowed] of cases) {
    assert.equal(
      byLimits(left, mine, want, waiting),
      allowed,
      `${left} ${mine} ${want} [${waiting}]`,
    );
  }
  assert.throws(
    () => byLimits(-1, 0, 1, []),
    /left must be an integer >= 0, got -1/,
  );
  assert.throws(
    () => byLimits(1, 0.5, 1, []),
    /mine must be an integer >= 0, got 0.5/,
  );
});

Deno.test("startsByRemainingWork, no waiter with more left: within the budget, the demand and the slots left for lower-limit waiters (property)", () => {
  fc.assert(fc.property(
    fc.nat(20),
    fc.nat(8),
    fc.nat(8),
    fc.array(fc.integer({ min: 1, max: 8 }), { maxLength: 10 }),
    (left, mine, want, waiting) => {
      const k = byLimits(left, mine, want, waiting);
      assert.ok(k <= want && k <= left);
      // every waiter below what this drain then holds keeps a slot
      const leave = waiting.filter((l) => l < mine + k).length;
      assert.ok(k === 0 || k + leave <= left);
      // no waiter below: as many as the budget and the demand allow
      if (waiting.every((l) => l >= mine + want)) {
        assert.equal(k, Math.min(left, want));
      }
    },
  ));
});

Deno.test("idleWaiters: drains waiting here with nothing in flight", () => {
  const e = (name: string, status: Eviction["status"]): Eviction => ({
    metadata: { name },
    spec: { hypervisor: name, reason: "r" },
    status,
  });
  const got = idleWaiters("self", [
    e("self", { inFlightCount: 0 }),
    e("idle", { inFlightCount: 0 }),
    e("no-status-yet", undefined),
    e("running", { inFlightCount: 2 }),
    e("elsewhere", { inFlightCount: 0 }),
    e("done", { inFlightCount: 0, finishedAt: "2026-01-01T00:00:00Z" }),
  ], (x) => x.metadata?.name !== "elsewhere");
  assert.deepEqual(got.map((x) => x.metadata?.name), [
    "idle",
    "no-status-yet",
  ]);
});

Deno.test("waitsForBudget: another process's drain is seen waiting by its Evicting reason", () => {
  const e = (reason: string, status: "True" | "False" = "True"): Eviction => ({
    metadata: { name: "b" },
    spec: { hypervisor: "b", reason: "r" },
    status: {
      conditions: [{
        type: "Evicting",
        status,
        reason,
        message: "",
        lastTransitionTime: "2026-01-01T00:00:00Z",
      }],
    },
  });
  assert.equal(waitsForBudget(e("WaitingForBudget")), true);
  // waiting for a retry, a wave or a transient state is no budget waiter
  assert.equal(waitsForBudget(e("Waiting")), false);
  assert.equal(waitsForBudget(e("Running")), false);
  assert.equal(waitsForBudget(e("WaitingForBudget", "False")), false);
  assert.equal(
    waitsForBudget({
      metadata: { name: "c" },
      spec: { hypervisor: "c", reason: "r" },
    }),
    false,
  );
});

Deno.test("BudgetWaiters.wake with a rank: the highest first, equals in their place in line", () => {
  const w = new BudgetWaiters();
  for (const k of ["a", "b", "c", "d"]) w.add(k);
  const left: Record<string, number> = { a: 3, b: 12, c: 5, d: 12 };
  const woken: string[] = [];
  w.wake((k) => woken.push(k), 3, (k) => left[k] ?? 0);
  assert.deepEqual(woken, ["b", "d", "c"]);
  assert.equal(w.standing("a"), "waiting");
  w.wake((k) => woken.push(k), 1, (k) => left[k] ?? 0);
  assert.deepEqual(woken, ["b", "d", "c", "a"]);
});

Deno.test("startsByRemainingWork: table", () => {
  const w = (limit: number, remaining: number, startsWithoutLook = true) => ({
    limit,
    remaining,
    startsWithoutLook,
  });
  const cases: [
    number,
    number,
    number,
    number,
    ReturnType<typeof w>[],
    number,
    string,
  ][] = [
    [10, 0, 4, 20, [], 4, "no waiter: the budget and the demand"],
    [3, 0, 4, 20, [], 3, "the budget binds"],
    [
      1,
      3,
      1,
      3,
      [w(4, 12)],
      0,
      "a freed slot goes to the drain with more left",
    ],
    [
      1,
      3,
      1,
      15,
      [w(4, 12)],
      1,
      "the running drain has more left: it keeps it",
    ],
    [1, 3, 1, 12, [w(4, 12)], 1, "equal work: no hand-over (no ping-pong)"],
    [
      1,
      3,
      1,
      3,
      [w(4, 12, false)],
      1,
      "the waiter would look at Nova first: the drain that looked keeps it",
    ],
    [
      2,
      3,
      1,
      3,
      [w(4, 12, false), w(4, 9)],
      1,
      "a slot for the bigger waiter that starts without a look, not for the one that must look",
    ],
    [
      1,
      3,
      1,
      30,
      [w(1, 2, false)],
      0,
      "a lower limit's slot whatever it costs",
    ],
    [
      2,
      3,
      2,
      14,
      [w(4, 12)],
      1,
      "the second start would leave it less than the waiter",
    ],
    [
      2,
      3,
      1,
      3,
      [w(4, 12), w(4, 9)],
      0,
      "one slot each for two bigger waiters",
    ],
    [3, 3, 1, 3, [w(4, 12), w(4, 9)], 1, "a third slot is its own"],
    [1, 0, 1, 12, [w(4, 9)], 1, "the waiter with the most left starts"],
    [1, 0, 1, 9, [w(4, 12)], 0, "a waiter with less left leaves it"],
    [2, 3, 1, 30, [w(1, 2)], 1, "a lower limit still gets its slot"],
    [1, 3, 1, 30, [w(1, 2)], 0, "... as with no waiter bigger"],
    [0, 2, 2, 5, [], 0, "no budget"],
  ];
  for (const [left, mine, want, remaining, waiting, allowed, why] of cases) {
    assert.equal(
      startsByRemainingWork(left, mine, want, remaining, waiting),
      allowed,
      why,
    );
  }
  assert.throws(
    () => startsByRemainingWork(1, 0, 1, -2, []),
    /remaining must be an integer >= 0, got -2/,
  );
});

Deno.test("startsByRemainingWork: within the budget and the demand; a slot for each lower-limit waiter and each bigger one that starts without a look (property)", () => {
  const waiter = fc.record({
    limit: fc.integer({ min: 1, max: 8 }),
    remaining: fc.nat(30),
    startsWithoutLook: fc.boolean(),
  });
  fc.assert(fc.property(
    fc.nat(20),
    fc.nat(8),
    fc.nat(8),
    fc.nat(30),
    fc.array(waiter, { maxLength: 10 }),
    (left, mine, want, remaining, waiting) => {
      const k = startsByRemainingWork(left, mine, want, remaining, waiting);
      assert.ok(k <= want && k <= left);
      if (k > 0) {
        const leave = waiting.filter((x) =>
          x.limit < mine + k ||
          (x.startsWithoutLook && x.remaining > remaining - k + 1)
        ).length;
        assert.ok(k + leave <= left);
      }
      // with no bigger waiter that starts without a look, only the lower
      // limits count
      if (
        waiting.every((x) =>
          !x.startsWithoutLook || x.remaining <= remaining - want
        )
      ) {
        assert.equal(
          k,
          byLimits(left, mine, want, waiting.map((x) => x.limit)),
        );
      }
    },
  ));
});

Deno.test("startsByRemainingWork: a wave under it never exceeds the budget and every drain finishes (property)", () => {
  const drain = fc.record({
    limit: fc.integer({ min: 1, max: 4 }),
    work: fc.integer({ min: 1, max: 12 }),
    startsWithoutLook: fc.boolean(),
  });
  fc.assert(fc.property(
    fc.integer({ min: 1, max: 6 }),
    fc.array(drain, { minLength: 1, maxLength: 8 }),
    fc.array(fc.nat(), { maxLength: 200 }),
    (budget, drains, picks) => {
      const d = drains.map((x) => ({ ...x, left: x.work, running: 0 }));
      const total = d.reduce((a, x) => a + x.work, 0);
      let ended = 0;
      let first = -1;
      for (let step = 0; ended < total; step++) {
        // the drain whose migration ended plans first, then the waiters
        // with the most left (woken in that order)
        const order = d.map((_, i) => i).sort((a, b) =>
          (b === first ? 1 : 0) - (a === first ? 1 : 0) ||
          d[b]!.left - d[a]!.left
        );
        for (const i of order) {
          const x = d[i]!;
          const inFlight = d.reduce((a, y) => a + y.running, 0);
          const waiting = d.filter((y, j) =>
            j !== i && y.running === 0 && y.left > 0
          ).map((y) => ({
            limit: y.limit,
            remaining: y.left,
            startsWithoutLook: y.startsWithoutLook,
          }));
          const k = startsByRemainingWork(
            budget - inFlight,
            x.running,
            Math.min(x.limit - x.running, x.left),
            x.left,
            waiting,
          );
          x.running += k;
          x.left -= k;
        }
        const running = d.flatMap((x, i) => x.running > 0 ? [i] : []);
        assert.ok(d.reduce((a, x) => a + x.running, 0) <= budget);
        // never stuck: work left means something runs
        assert.ok(running.length > 0, "work left and nothing running");
        first = running[(picks[step] ?? step) % running.length]!;
        d[first]!.running--;
        ended++;
      }
      assert.ok(d.every((x) => x.left === 0 && x.running === 0));
    },
  ));
});

Deno.test("aboutToStart: preflighted, nothing moved or held, not left to a person or failed", () => {
  const evicting = (reason: string) => ({
    type: "Evicting",
    status: "True" as const,
    reason,
    message: "",
    lastTransitionTime: "2026-01-01T00:00:00Z",
  });
  const e = (status: Eviction["status"], deleting = false): Eviction => ({
    metadata: {
      name: "b",
      ...(deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}),
    },
    spec: { hypervisor: "b", reason: "r" },
    status,
  });
  const ready = { hypervisorServiceId: "s" };
  const cases: [string, Eviction, boolean][] = [
    ["preflighted, nothing yet", e(ready), true],
    [
      "waiting for its wave",
      e({ ...ready, conditions: [evicting("Pending")] }),
      true,
    ],
    ["not preflighted", e({}), false],
    ["no status", e(undefined), false],
    ["moved one", e({ ...ready, migratedCount: 1 }), false],
    ["holds one", e({ ...ready, inFlightCount: 1 }), false],
    ["finished", e({ ...ready, finishedAt: "2026-01-01T00:00:00Z" }), false],
    ["being deleted", e(ready, true), false],
    [
      "left to a person",
      e({ ...ready, conditions: [evicting("WaitingForPerson")] }),
      false,
    ],
    ["failed", e({ ...ready, conditions: [evicting("Failed")] }), false],
  ];
  for (const [why, ev, want] of cases) {
    assert.equal(aboutToStart(ev), want, why);
  }
});
