import { strict as assert } from "node:assert";
import fc from "fast-check";
import { DEFAULT_RATE, observedRate, predictMakespan } from "./makespan.ts";

Deno.test("predictMakespan: table", () => {
  const cases: [number[], number, number, number][] = [
    // ram, limit, predicted, lower bound (1000 MB/s, no overhead)
    [[], 3, 0, 0],
    [[8000], 4, 8, 8],
    [[4000, 2000, 2000], 2, 4, 4],
    [[3000, 3000, 2000, 2000, 2000], 2, 7, 6],
    [[1000, 1000, 1000, 1000], 1, 4, 4],
    [[1000, 1000, 1000, 1000], 3, 2, 4 / 3],
  ];
  for (const [ramMb, limit, predicted, bound] of cases) {
    const m = predictMakespan({
      ramMb,
      limit,
      mbPerSecond: 1000,
      overheadSeconds: 0,
    });
    assert.equal(m.predictedSeconds, predicted, `${ramMb} / ${limit}`);
    assert.equal(m.lowerBoundSeconds, bound, `${ramMb} / ${limit}`);
  }
});

Deno.test("predictMakespan: bad input names the value", () => {
  const base = { ramMb: [1], limit: 1, mbPerSecond: 1, overheadSeconds: 0 };
  assert.throws(
    () => predictMakespan({ ...base, limit: 0 }),
    /limit must be an integer >= 1, got 0/,
  );
  assert.throws(
    () => predictMakespan({ ...base, mbPerSecond: 0 }),
    /mbPerSecond must be > 0, got 0/,
  );
  assert.throws(() => predictMakespan({ ...base, ramMb: [-1] }), /got -1/);
});

Deno.test("property: lower bound <= predicted <= (2 - 1/limit) x bound (Graham)", () => {
  fc.assert(fc.property(
    fc.array(fc.integer({ min: 0, max: 100_000 }), { maxLength: 40 }),
    fc.integer({ min: 1, max: 16 }),
    fc.integer({ min: 0, max: 30 }),
    (ramMb, limit, overheadSeconds) => {
      const m = predictMakespan({
        ramMb,
        limit,
        mbPerSecond: 700,
        overheadSeconds,
      });
      assert.ok(m.lowerBoundSeconds <= m.predictedSeconds + 1e-9);
      assert.ok(
        m.predictedSeconds <= (2 - 1 / limit) * m.lowerBoundSeconds + 1e-9,
      );
    },
  ));
});

Deno.test("property: a higher limit never predicts a longer drain", () => {
  fc.assert(fc.property(
    fc.array(fc.integer({ min: 0, max: 100_000 }), { maxLength: 30 }),
    fc.integer({ min: 1, max: 15 }),
    (ramMb, limit) => {
      const a = predictMakespan({
        ramMb,
        limit,
        mbPerSecond: 1000,
        overheadSeconds: 2,
      });
      const b = predictMakespan({
        ramMb,
        limit: limit + 1,
        mbPerSecond: 1000,
        overheadSeconds: 2,
      });
      assert.ok(b.lowerBoundSeconds <= a.lowerBoundSeconds + 1e-9);
    },
  ));
});

Deno.test("observedRate: default without observations, else RAM over copy time", () => {
  assert.deepEqual(observedRate([]), { ...DEFAULT_RATE, observed: 0 });
  const r = observedRate([{ ramMb: 4000, seconds: 3 }, {
    ramMb: 2000,
    seconds: 4,
  }], 1);
  assert.equal(r.mbPerSecond, 6000 / 5);
  assert.equal(r.observed, 2);
});
