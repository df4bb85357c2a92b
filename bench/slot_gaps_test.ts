import assert from "node:assert/strict";
import fc from "fast-check";
import { slotGaps } from "./slot_gaps.ts";

Deno.test("slotGaps: table", () => {
  // limit 2: starts 3 and 4 refill the slots of completions 1 and 2
  const records = [
    { createdAt: 0, updatedAt: 100 },
    { createdAt: 0, updatedAt: 50 },
    { createdAt: 60, updatedAt: 200 },
    { createdAt: 110, updatedAt: 150 },
  ];
  const g = slotGaps(records, 2, [0, 40, 55, 105, 160, 210]);
  assert.equal(g.refills, 2);
  // 60 - 50 and 110 - 100; first looks after them at 55 and 105
  assert.equal(g.meanIdleMs, 10);
  assert.equal(g.meanWaitMs, 5);
  assert.equal(g.meanPassMs, 5);
  assert.equal(g.looks, 6);
  // 40 (early), 105 .. 160 has 110, 160 (a completion, nothing left)
  assert.equal(g.emptyLooks, 2);
  assert.throws(() => slotGaps(records, 0, []), RangeError);
});

Deno.test("slotGaps: the wait and the pass's part add up to the idle time (property)", () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.record({
          createdAt: fc.integer({ min: 0, max: 1000 }),
          len: fc.integer({ min: 1, max: 100 }),
        }),
        { maxLength: 20 },
      ),
      fc.integer({ min: 1, max: 4 }),
      fc.array(fc.integer({ min: 0, max: 1200 }), { maxLength: 30 }),
      (xs, limit, looks) => {
        const records = xs.map((x) => ({
          createdAt: x.createdAt,
          updatedAt: x.createdAt + x.len,
        }));
        const g = slotGaps(records, limit, looks);
        assert.ok(g.meanWaitMs >= 0 && g.meanPassMs >= 0);
        assert.ok(Math.abs(g.meanWaitMs + g.meanPassMs - g.meanIdleMs) < 1e-6);
        assert.ok(g.emptyLooks <= Math.max(0, g.looks - 1));
      },
    ),
  );
});
