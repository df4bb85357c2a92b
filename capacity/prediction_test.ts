import { strict as assert } from "node:assert";
import fc from "fast-check";
import { DEFAULT_COST, SLOW_COST } from "./history.ts";
import { predictDrains } from "./prediction.ts";

Deno.test("predictDrains: table", () => {
  const cases: {
    name: string;
    ramMb: number[];
    limit: number;
    cost: {
      mbPerSecond: number;
      overheadSeconds: number;
      fixedSeconds: number;
    };
    spread?: {
      mbPerSecond: number;
      overheadSeconds: number;
      fixedSeconds: number;
    }[];
    want: [number, number, number, number];
  }[] = [
    {
      name: "no fixed costs: the schedule alone",
      ramMb: [4000, 2000, 2000],
      limit: 2,
      cost: { mbPerSecond: 1000, overheadSeconds: 0, fixedSeconds: 0 },
      want: [4, 4, 4, 4],
    },
    {
      name: "the time per drain is paid once, not per migration",
      ramMb: [4000, 2000, 2000],
      limit: 2,
      cost: { mbPerSecond: 1000, overheadSeconds: 1, fixedSeconds: 10 },
      want: [16, 15.5, 16, 16],
    },
    {
      name: "an empty host still pays the time per drain",
      ramMb: [],
      limit: 4,
      cost: { mbPerSecond: 1000, overheadSeconds: 5, fixedSeconds: 10 },
      want: [10, 10, 10, 10],
    },
    {
      // the real cloud of issue 30: 3 GiB in 3 VMs, one at a time
      name: "without history: the defaults and the slow end",
      ramMb: [1024, 1024, 1024],
      limit: 1,
      cost: DEFAULT_COST,
      spread: [DEFAULT_COST, SLOW_COST],
      want: [28.072, 28.072, 28.072, 136.44],
    },
    {
      name: "the learned cost of that cloud",
      ramMb: [1024, 1024, 1024],
      limit: 1,
      cost: { mbPerSecond: 63, overheadSeconds: 11, fixedSeconds: 14 },
      want: [95.762, 95.762, 95.762, 95.762],
    },
  ];
  for (const c of cases) {
    const p = predictDrains(
      [{ host: "h", ramMb: c.ramMb, limit: c.limit }],
      undefined,
      c.cost,
      c.spread,
    ).get("h");
    assert.ok(p !== undefined, c.name);
    const got = [
      p.predictedSeconds,
      p.lowerBoundSeconds,
      p.lowSeconds,
      p.highSeconds,
    ].map((x) => Math.round(x * 1000) / 1000);
    assert.deepEqual(got, c.want, c.name);
  }
});

Deno.test("predictDrains: a negative time per drain is refused by name", () => {
  assert.throws(
    () =>
      predictDrains([{ host: "h", ramMb: [1], limit: 1 }], undefined, {
        mbPerSecond: 1,
        overheadSeconds: 0,
        fixedSeconds: -1,
      }),
    /fixedSeconds must be >= 0, got -1/,
  );
});

Deno.test("property: bound <= predicted, and low <= predicted <= high", () => {
  const cost = fc.record({
    mbPerSecond: fc.integer({ min: 1, max: 5000 }),
    overheadSeconds: fc.integer({ min: 0, max: 60 }),
    fixedSeconds: fc.integer({ min: 0, max: 120 }),
  });
  fc.assert(fc.property(
    fc.array(fc.integer({ min: 0, max: 1 << 18 }), { maxLength: 20 }),
    fc.integer({ min: 1, max: 8 }),
    cost,
    fc.array(cost, { maxLength: 4 }),
    (ramMb, limit, central, spread) => {
      const p = predictDrains(
        [{ host: "h", ramMb, limit }],
        undefined,
        central,
        spread,
      )
        .get("h");
      assert.ok(p !== undefined);
      assert.ok(p.lowerBoundSeconds <= p.predictedSeconds + 1e-9);
      assert.ok(p.lowSeconds <= p.predictedSeconds + 1e-9);
      assert.ok(p.predictedSeconds <= p.highSeconds + 1e-9);
      assert.ok(p.predictedSeconds >= central.fixedSeconds);
    },
  ));
});
