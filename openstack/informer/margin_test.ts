import assert from "node:assert/strict";
import fc from "fast-check";
import {
  bestMargin,
  MARGIN_RANGE,
  marginCost,
  type MarginSample,
  MAX_EARLY_LOOKS,
} from "./margin.ts";

const at = (predictedMs: number, ...actual: number[]): MarginSample[] =>
  actual.map((actualMs) => ({ predictedMs, actualMs }));

Deno.test("marginCost: idle time and early looks, table", () => {
  const cases: Array<[MarginSample[], number, number, number, number]> = [
    // samples, margin, poll, idle, early looks
    [[], 0.1, 2000, 0, 0],
    [at(10_000, 10_000), 0.1, 2000, 1000, 0],
    [at(10_000, 10_000), -0.05, 2000, 1500, 1],
    [at(10_000, 12_500), 0, 1000, 500, 3],
    [at(10_000, 9000, 11_000), 0, 2000, 1000, 0.5],
  ];
  for (const [samples, m, poll, idle, early] of cases) {
    const c = marginCost(samples, m, poll);
    assert.ok(Math.abs(c.idleMs - idle) < 1e-6, `${m}: idle ${c.idleMs}`);
    assert.equal(c.earlyLooks, early);
  }
  assert.throws(() => marginCost([], 0, 0), RangeError);
});

Deno.test("bestMargin: table", () => {
  const spread = at(10_000, 9000, 9500, 10_000, 10_500, 11_000);
  // poll long against the spread: past the latest end
  assert.ok(Math.abs(bestMargin(spread, 20_000, 0.03) - 0.11) < 1e-9);
  // poll short against it: earlier, paying with a few early looks
  const short = bestMargin(spread, 100, 0.03);
  assert.ok(short < 0.11, String(short));
  assert.ok(marginCost(spread, short, 100).earlyLooks <= MAX_EARLY_LOOKS);
  // no samples: the fallback
  assert.equal(bestMargin([], 2000, 0.03), 0.03);
  // steady: just after the end
  assert.ok(Math.abs(bestMargin(at(10_000, 10_000), 2000, 0.03) - 0.01) < 1e-9);
});

Deno.test("bestMargin: within range; at the cap of early looks; idles no more than any margin on a grid that keeps the cap (property)", () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.record({
          predictedMs: fc.integer({ min: 1000, max: 60_000 }),
          over: fc.double({ min: -0.2, max: 0.3, noNaN: true }),
        }),
        { minLength: 1, maxLength: 20 },
      ),
      fc.integer({ min: 100, max: 20_000 }),
      (xs, pollMs) => {
        const samples = xs.map((x) => ({
          predictedMs: x.predictedMs,
          actualMs: x.predictedMs * (1 + x.over),
        }));
        const m = bestMargin(samples, pollMs, 0.03);
        const [lo, hi] = MARGIN_RANGE;
        assert.ok(m >= lo && m <= hi, String(m));
        const got = marginCost(samples, m, pollMs);
        const hedgeMs = 0.01 * Math.max(...xs.map((x) => x.predictedMs));
        for (let g = lo; g <= hi + 1e-9; g += 0.005) {
          const c = marginCost(samples, g, pollMs);
          if (c.earlyLooks > MAX_EARLY_LOOKS) continue;
          assert.ok(got.earlyLooks <= MAX_EARLY_LOOKS);
          assert.ok(
            got.idleMs <= c.idleMs + hedgeMs + 1e-6,
            `margin ${m} idles ${got.idleMs}, ${g} idles ${c.idleMs}`,
          );
        }
      },
    ),
  );
});
