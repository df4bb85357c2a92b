import assert from "node:assert/strict";
import fc from "fast-check";
import { histogramQuantile } from "./histogram.ts";

Deno.test("histogramQuantile: table (as PromQL's histogram_quantile)", () => {
  const b = new Map([["0.005", 99], ["0.025", 100], ["0.1", 100], [
    "+Inf",
    100,
  ]]);
  assert.equal(histogramQuantile(b, 0.99), 0.005);
  assert.ok(Math.abs(histogramQuantile(b, 0.995) - 0.015) < 1e-12);
  assert.ok(Number.isNaN(histogramQuantile(new Map([["+Inf", 0]]), 0.5)));
  // a rank in +Inf gives the highest finite bound
  assert.equal(histogramQuantile(new Map([["1", 1], ["+Inf", 3]]), 0.9), 1);
  assert.throws(() => histogramQuantile(b, 1.5), /quantile must be in 0..1/);
});

Deno.test("property: quantiles grow with q and stay within the bounds", () => {
  fc.assert(fc.property(
    fc.array(fc.nat(50), { minLength: 1, maxLength: 8 }),
    fc.double({ min: 0, max: 1, noNaN: true }),
    fc.double({ min: 0, max: 1, noNaN: true }),
    (counts, q1, q2) => {
      let sum = 0;
      const b = new Map<string, number>();
      counts.forEach((c, i) => b.set(String(0.001 * 2 ** i), sum += c));
      b.set("+Inf", sum);
      if (sum === 0) return;
      const [lo, hi] = q1 <= q2 ? [q1, q2] : [q2, q1];
      const a = histogramQuantile(b, lo);
      const c = histogramQuantile(b, hi);
      assert.ok(a <= c + 1e-12, `${a} > ${c}`);
      assert.ok(a >= 0 && c <= 0.001 * 2 ** (counts.length - 1));
    },
  ));
});
