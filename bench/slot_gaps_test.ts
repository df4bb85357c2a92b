import assert from "node:assert/strict";
import fc from "fast-check";
import { slotGaps } from "./slot_gaps.ts";

Deno.test("slotGaps: table", () => {
  // two in flight: starts 3 and 4 refill the slots of completions 1 and 2
  const records = [
    { createdAt: 0, updatedAt: 100 },
    { createdAt: 0, updatedAt: 50 },
    { createdAt: 60, updatedAt: 200 },
    { createdAt: 110, updatedAt: 150 },
  ];
  const g = slotGaps(records, [0, 40, 55, 105, 160, 210]);
  assert.equal(g.refills, 2);
  // 60 - 50 and 110 - 100; first looks after them at 55 and 105
  assert.equal(g.meanIdleMs, 10);
  assert.equal(g.meanWaitMs, 5);
  assert.equal(g.meanPassMs, 5);
  assert.equal(g.looks, 6);
  // 40 (early), 105 .. 160 has 110, 160 (a completion, nothing left)
  assert.equal(g.emptyLooks, 2);
});

Deno.test("slotGaps: fewer in flight than before pairs each start with the completion before it", () => {
  // four started at once; Nova's limit 1 copies them one by one; the drain
  // then keeps two in flight (one copying, one queued): completions 10 and
  // 20 are not refilled, starts 31, 41 and 51 refill completions 30, 40
  // and 50 a millisecond later (pairing start k with completion k - 4
  // would say 21 ms: migrations ago)
  const records = [
    { createdAt: 0, updatedAt: 10 },
    { createdAt: 0, updatedAt: 20 },
    { createdAt: 0, updatedAt: 30 },
    { createdAt: 0, updatedAt: 40 },
    { createdAt: 31, updatedAt: 50 },
    { createdAt: 41, updatedAt: 60 },
    { createdAt: 51, updatedAt: 70 },
  ];
  const g = slotGaps(records, []);
  assert.equal(g.refills, 3);
  assert.equal(g.meanIdleMs, 1);
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
      fc.array(fc.integer({ min: 0, max: 1200 }), { maxLength: 30 }),
      (xs, looks) => {
        const records = xs.map((x) => ({
          createdAt: x.createdAt,
          updatedAt: x.createdAt + x.len,
        }));
        const g = slotGaps(records, looks);
        assert.ok(g.meanWaitMs >= 0 && g.meanPassMs >= 0);
        assert.ok(Math.abs(g.meanWaitMs + g.meanPassMs - g.meanIdleMs) < 1e-6);
        assert.ok(g.emptyLooks <= Math.max(0, g.looks - 1));
      },
    ),
  );
});
