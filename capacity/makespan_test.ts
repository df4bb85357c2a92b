import { strict as assert } from "node:assert";
import fc from "fast-check";
import {
  calibratedRate,
  DEFAULT_RATE,
  drainHistory,
  predictMakespan,
  rateFromHistory,
} from "./makespan.ts";

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

Deno.test("calibratedRate: median of actual / predicted scales the rate", () => {
  assert.deepEqual(calibratedRate([]), { ...DEFAULT_RATE, drains: 0 });
  const r = calibratedRate([
    { predictedSeconds: 100, actualSeconds: 100 },
    { predictedSeconds: 100, actualSeconds: 300 },
    { predictedSeconds: 100, actualSeconds: 200 },
    { predictedSeconds: 0, actualSeconds: 50 },
  ]);
  assert.equal(r.drains, 3);
  assert.equal(r.mbPerSecond, DEFAULT_RATE.mbPerSecond / 2);
  assert.equal(r.overheadSeconds, DEFAULT_RATE.overheadSeconds * 2);
});

Deno.test("property: calibrating on exact predictions keeps the rate", () => {
  fc.assert(fc.property(
    fc.array(fc.integer({ min: 1, max: 10_000 }), { minLength: 1 }),
    (secs) => {
      const r = calibratedRate(
        secs.map((s) => ({ predictedSeconds: s, actualSeconds: s })),
      );
      assert.equal(r.mbPerSecond, DEFAULT_RATE.mbPerSecond);
    },
  ));
});

Deno.test("drainHistory: only finished drains with a prediction", () => {
  const t0 = "2026-01-01T00:00:00Z";
  assert.deepEqual(
    drainHistory([
      {
        status: {
          startedAt: t0,
          finishedAt: "2026-01-01T00:02:00Z",
          predictedMakespanSeconds: 60,
        },
      },
      { status: { startedAt: t0, predictedMakespanSeconds: 60 } },
      { status: { startedAt: t0, finishedAt: "2026-01-01T00:02:00Z" } },
      {},
      // Stopped with only VMs that need a person: ended then.
      {
        status: {
          startedAt: t0,
          predictedMakespanSeconds: 40,
          conditions: [{
            type: "Evicting",
            status: "False",
            reason: "Failed",
            lastTransitionTime: "2026-01-01T00:00:50Z",
          }],
        },
      },
      // Still running (Waiting is no end).
      {
        status: {
          startedAt: t0,
          predictedMakespanSeconds: 40,
          conditions: [{
            type: "Evicting",
            status: "True",
            reason: "Waiting",
            lastTransitionTime: "2026-01-01T00:00:50Z",
          }],
        },
      },
    ]),
    [
      { predictedSeconds: 60, actualSeconds: 120 },
      { predictedSeconds: 40, actualSeconds: 50 },
    ],
  );
});

Deno.test("rateFromHistory: observed, else calibrated, else the default", () => {
  const ended = (
    end: string,
    rate?: { mbPerSecond: number; overheadMs: number; migrations: number },
  ) => ({
    status: {
      startedAt: "2026-01-01T00:00:00Z",
      finishedAt: end,
      predictedMakespanSeconds: 100,
      ...(rate === undefined ? {} : { observedMigrationRate: rate }),
    },
  });
  assert.deepEqual(rateFromHistory([]), {
    ...DEFAULT_RATE,
    drains: 0,
    source: "default",
  });
  assert.deepEqual(rateFromHistory([ended("2026-01-01T00:03:20Z")]), {
    mbPerSecond: 500,
    overheadSeconds: 10,
    drains: 1,
    source: "calibrated",
  });
  // The median of the latest five that observed a rate; a running drain's
  // rate is no history.
  const r = (mbPerSecond: number, overheadMs: number) => ({
    mbPerSecond,
    overheadMs,
    migrations: 9,
  });
  const running = {
    status: {
      startedAt: "2026-01-01T00:00:00Z",
      observedMigrationRate: r(1, 1),
    },
  };
  assert.deepEqual(
    rateFromHistory([
      ended("2026-01-01T00:01:00Z", r(1, 99_000)), // oldest: left out
      ended("2026-01-01T00:02:00Z", r(800, 2000)),
      ended("2026-01-01T00:03:00Z", r(900, 3000)),
      ended("2026-01-01T00:04:00Z", r(700, 4000)),
      ended("2026-01-01T00:05:00Z", r(600, 1000)),
      ended("2026-01-01T00:06:00Z", r(1000, 5000)),
      ended("2026-01-01T00:07:00Z"),
      running,
    ]),
    { mbPerSecond: 800, overheadSeconds: 3, drains: 5, source: "observed" },
  );
});
