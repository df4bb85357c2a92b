import { strict as assert } from "node:assert";
import fc from "fast-check";
import {
  calibratedRate,
  DEFAULT_RATE,
  predictMakespan,
  predictWave,
  type WaveHost,
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

Deno.test("predictWave: table (1000 MB/s, no overhead)", () => {
  const cases: {
    hosts: [string, number[], number][];
    budget?: number;
    want: Record<string, number>;
  }[] = [
    // alone: the same as predictMakespan
    { hosts: [["a", [3000, 3000, 2000, 2000, 2000], 2]], want: { a: 7 } },
    // a budget that never binds changes nothing
    {
      hosts: [["a", [2000, 2000], 2], ["b", [2000, 2000], 2]],
      budget: 4,
      want: { a: 2, b: 2 },
    },
    // budget 2 for 4 slots: the host with more work left goes first
    {
      hosts: [["a", [2000, 2000], 2], ["b", [6000], 2]],
      budget: 2,
      want: { a: 4, b: 6 },
    },
    // budget 1: one migration at a time in the whole wave
    {
      hosts: [["a", [1000], 4], ["b", [3000], 4], ["c", [2000], 4]],
      budget: 1,
      want: { b: 3, c: 5, a: 6 },
    },
    // a host with nothing to move
    {
      hosts: [["a", [], 1], ["b", [1000], 1]],
      budget: 1,
      want: { a: 0, b: 1 },
    },
  ];
  for (const { hosts, budget, want } of cases) {
    const m = predictWave({
      hosts: hosts.map(([host, ramMb, limit]) => ({ host, ramMb, limit })),
      budget,
      mbPerSecond: 1000,
      overheadSeconds: 0,
    });
    for (const [host, seconds] of Object.entries(want)) {
      assert.equal(m.get(host)?.predictedSeconds, seconds, `${host} ${budget}`);
    }
  }
});

Deno.test("predictWave: bad input names the value", () => {
  const hosts = [{ host: "a", ramMb: [1], limit: 1 }];
  const rate = { mbPerSecond: 1, overheadSeconds: 0 };
  assert.throws(
    () => predictWave({ hosts, budget: 0, ...rate }),
    /budget must be an integer >= 1, got 0/,
  );
  assert.throws(
    () => predictWave({ hosts: [{ ...hosts[0]!, limit: 1.5 }], ...rate }),
    /limit must be an integer >= 1, got 1.5/,
  );
});

Deno.test("property: under a budget each host takes at least as long as alone, and the wave no less than its total work / budget", () => {
  const host = fc.record({
    ramMb: fc.array(fc.integer({ min: 0, max: 50_000 }), { maxLength: 12 }),
    limit: fc.integer({ min: 1, max: 6 }),
  });
  fc.assert(fc.property(
    fc.array(host, { minLength: 1, maxLength: 5 }),
    fc.integer({ min: 1, max: 12 }),
    (specs, budget) => {
      const hosts = specs.map((s, i) => ({ host: `h${i}`, ...s }));
      const rate = { mbPerSecond: 1000, overheadSeconds: 1 };
      const shared = predictWave({ hosts, budget, ...rate });
      let work = 0;
      let end = 0;
      for (const h of hosts) {
        const alone = predictMakespan({ ...h, ...rate });
        const together = shared.get(h.host);
        assert.ok(together !== undefined);
        assert.ok(together.predictedSeconds >= alone.lowerBoundSeconds - 1e-9);
        assert.equal(together.lowerBoundSeconds, alone.lowerBoundSeconds);
        work += h.ramMb.reduce((a, r) => a + r / 1000 + 1, 0);
        end = Math.max(end, together.predictedSeconds);
      }
      assert.ok(end >= work / budget - 1e-9);
    },
  ));
});

Deno.test("predictWave: running slots and given migration times", () => {
  const cases: [string, WaveHost, number][] = [
    // name, host, predicted seconds (1000 MB/s, no overhead)
    [
      "busy slots only",
      { host: "", ramMb: [], limit: 2, busySeconds: [3, 7] },
      7,
    ],
    // the 4 s VM waits for the slot free at 3 s
    ["queue after the first free slot", {
      host: "",
      ramMb: [4000],
      limit: 2,
      busySeconds: [3, 7],
    }, 7],
    ["queue longer than the busy slots", {
      host: "",
      ramMb: [6000],
      limit: 2,
      busySeconds: [3, 7],
    }, 9],
    // limit lowered below the slots running: the queue waits for two to end
    ["more running than the limit", {
      host: "",
      ramMb: [1000],
      limit: 1,
      busySeconds: [2, 5],
    }, 6],
    ["given times stand for RAM and rate", {
      host: "",
      ramMb: [1, 1],
      migrationSeconds: [10, 4],
      limit: 1,
    }, 14],
  ];
  for (const [name, host, predicted] of cases) {
    const m = predictWave({
      hosts: [host],
      mbPerSecond: 1000,
      overheadSeconds: 0,
    });
    assert.equal(m.get("")?.predictedSeconds, predicted, name);
  }
  assert.throws(
    () =>
      predictWave({
        hosts: [{ host: "", ramMb: [], limit: 1, busySeconds: [-1] }],
        mbPerSecond: 1000,
        overheadSeconds: 0,
      }),
    /busySeconds must be >= 0 s, got -1/,
  );
});

Deno.test("property: running slots never make a drain end sooner, nor before the last of them", () => {
  fc.assert(fc.property(
    fc.array(fc.integer({ min: 0, max: 16_000 }), { maxLength: 12 }),
    fc.array(fc.integer({ min: 0, max: 60 }), { maxLength: 4 }),
    fc.integer({ min: 1, max: 4 }),
    (ramMb, busySeconds, limit) => {
      const rate = { mbPerSecond: 1000, overheadSeconds: 5 };
      const idle = predictWave({
        hosts: [{ host: "", ramMb, limit }],
        ...rate,
      });
      const busy = predictWave({
        hosts: [{ host: "", ramMb, limit, busySeconds }],
        ...rate,
      });
      const t = busy.get("")?.predictedSeconds ?? NaN;
      assert.ok(t >= (idle.get("")?.predictedSeconds ?? NaN));
      assert.ok(t >= Math.max(0, ...busySeconds));
    },
  ));
});
