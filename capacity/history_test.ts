import { strict as assert } from "node:assert";
import fc from "fast-check";
import {
  DEFAULT_COST,
  type DrainLesson,
  drainLessons,
  learnedCost,
  SLOW_COST,
} from "./history.ts";

const T0 = Date.parse("2026-01-01T00:00:00Z");
const at = (s: number) => new Date(T0 + s * 1000).toISOString();
const rate = (mbPerSecond: number, overheadMs: number) => ({
  mbPerSecond,
  overheadMs,
  migrations: 3,
});

Deno.test("drainLessons: Hypervisors' records, ended Evictions no Hypervisor recorded, newest first", () => {
  const lessons = drainLessons(
    [
      // recorded by its Hypervisor too: the Hypervisor's record wins
      {
        spec: { hypervisor: "a" },
        status: {
          startedAt: at(0),
          finishedAt: at(90),
          observedMigrationRate: rate(1, 1),
        },
      },
      // ended, its Hypervisor has none (deleted, or not written yet)
      {
        spec: { hypervisor: "b" },
        status: {
          startedAt: at(100),
          finishedAt: at(200),
          predictedMakespanSeconds: 50,
          observedMigrationRate: rate(80, 4000),
        },
      },
      // running: no lesson
      {
        spec: { hypervisor: "c" },
        status: { startedAt: at(0), observedMigrationRate: rate(2, 2) },
      },
    ],
    [
      {
        metadata: { name: "a" },
        status: {
          lastDrain: {
            startedAt: at(0),
            endedAt: at(90),
            migrationRate: rate(63, 11_000),
            fixedMs: 14_000,
            predictedMakespanSeconds: 21,
          },
        },
      },
      { metadata: { name: "d" }, status: {} },
      // unreadable times are no lesson
      {
        metadata: { name: "e" },
        status: { lastDrain: { startedAt: "soon", endedAt: at(1) } },
      },
    ],
    // the controller's word for an Eviction's end (here: its finishedAt)
    (e) =>
      e.status?.finishedAt === undefined
        ? undefined
        : Date.parse(e.status.finishedAt),
  );
  assert.deepEqual(lessons, [
    {
      host: "b",
      startedMs: T0 + 100_000,
      endedMs: T0 + 200_000,
      rate: { mbPerSecond: 80, overheadSeconds: 4 },
      predictedSeconds: 50,
    },
    {
      host: "a",
      startedMs: T0,
      endedMs: T0 + 90_000,
      rate: { mbPerSecond: 63, overheadSeconds: 11 },
      fixedSeconds: 14,
      predictedSeconds: 21,
    },
  ]);
});

function lesson(
  host: string,
  endS: number,
  more: Partial<DrainLesson> = {},
): DrainLesson {
  return { host, startedMs: T0, endedMs: T0 + endS * 1000, ...more };
}

Deno.test("learnedCost: table", () => {
  const r = (mbPerSecond: number, overheadSeconds: number) => ({
    mbPerSecond,
    overheadSeconds,
  });
  const cases: {
    name: string;
    lessons: DrainLesson[];
    want: Omit<ReturnType<typeof learnedCost>, "spread">;
    spread: number;
  }[] = [
    {
      name:
        "no history: the range from the documented defaults up to a slow network, headlined at the slow end",
      lessons: [],
      want: {
        ...SLOW_COST,
        source: "default",
        drains: 0,
        hosts: [],
        fixedMeasured: false,
      },
      spread: 2,
    },
    {
      name: "one drain: its rate and its time per drain",
      lessons: [lesson("a", 89, { rate: r(63, 11), fixedSeconds: 14 })],
      want: {
        mbPerSecond: 63,
        overheadSeconds: 11,
        fixedSeconds: 14,
        source: "observed",
        drains: 1,
        hosts: ["a"],
        fixedMeasured: true,
      },
      spread: 1,
    },
    {
      name: "a rate without a measured time per drain: the default's",
      lessons: [lesson("a", 89, { rate: r(63, 11) })],
      want: {
        mbPerSecond: 63,
        overheadSeconds: 11,
        fixedSeconds: DEFAULT_COST.fixedSeconds,
        source: "observed",
        drains: 1,
        hosts: ["a"],
        fixedMeasured: false,
      },
      spread: 1,
    },
    {
      name: "medians of the latest five; the oldest left out",
      lessons: [
        lesson("old", 10, { rate: r(1, 99), fixedSeconds: 999 }),
        lesson("b", 20, { rate: r(800, 2), fixedSeconds: 8 }),
        lesson("c", 30, { rate: r(900, 3), fixedSeconds: 9 }),
        lesson("d", 40, { rate: r(700, 4), fixedSeconds: 7 }),
        lesson("e", 50, { rate: r(600, 1), fixedSeconds: 6 }),
        lesson("f", 60, { rate: r(1000, 5), fixedSeconds: 10 }),
        // no rate and no prediction: not a rate lesson
        lesson("g", 70),
      ],
      want: {
        mbPerSecond: 800,
        overheadSeconds: 3,
        fixedSeconds: 8,
        source: "observed",
        drains: 5,
        hosts: ["f", "e", "d", "c", "b"],
        fixedMeasured: true,
      },
      spread: 5,
    },
    {
      name: "no rate observed: the default scaled by actual / predicted",
      lessons: [lesson("a", 200, { predictedSeconds: 100 })],
      want: {
        mbPerSecond: 500,
        overheadSeconds: 10,
        fixedSeconds: 20,
        source: "calibrated",
        drains: 1,
        hosts: ["a"],
        fixedMeasured: false,
      },
      spread: 1,
    },
    {
      name: "calibrated with a measured time per drain: that one",
      lessons: [lesson("a", 200, { predictedSeconds: 100, fixedSeconds: 12 })],
      want: {
        mbPerSecond: 500,
        overheadSeconds: 10,
        fixedSeconds: 12,
        source: "calibrated",
        drains: 1,
        hosts: ["a"],
        fixedMeasured: true,
      },
      spread: 1,
    },
  ];
  for (const c of cases) {
    const { spread, ...got } = learnedCost(c.lessons);
    assert.deepEqual(got, c.want, c.name);
    assert.equal(spread.length, c.spread, c.name);
  }
  assert.deepEqual(learnedCost([]).spread, [DEFAULT_COST, SLOW_COST]);
});

Deno.test("learnedCost: an operator's default that is slower than the slow end stays the slow end", () => {
  const base = { mbPerSecond: 20, overheadSeconds: 30, fixedSeconds: 60 };
  assert.deepEqual(learnedCost([], base).spread, [base, base]);
});

Deno.test("learnedCost: without history, a default rate the operator set is the headline, the built-in one the range's fast end", () => {
  const set = { mbPerSecond: 200, overheadSeconds: 8, fixedSeconds: 12 };
  const own = learnedCost([], set);
  assert.deepEqual([own.mbPerSecond, own.overheadSeconds], [200, 8]);
  const builtIn = learnedCost([]);
  assert.deepEqual(builtIn.spread[0], DEFAULT_COST);
  assert.equal(builtIn.mbPerSecond, SLOW_COST.mbPerSecond);
});

Deno.test("property: the learned cost lies within its spread", () => {
  fc.assert(fc.property(
    fc.array(
      fc.record({
        mb: fc.integer({ min: 1, max: 5000 }),
        over: fc.integer({ min: 0, max: 60 }),
        fixed: fc.option(fc.integer({ min: 0, max: 120 })),
        end: fc.integer({ min: 1, max: 10_000 }),
      }),
      { minLength: 1, maxLength: 12 },
    ),
    (xs) => {
      const c = learnedCost(xs.map((x, i) =>
        lesson(`h${i}`, x.end, {
          rate: { mbPerSecond: x.mb, overheadSeconds: x.over },
          ...(x.fixed === null ? {} : { fixedSeconds: x.fixed }),
        })
      ));
      for (const k of ["mbPerSecond", "overheadSeconds"] as const) {
        const vs = c.spread.map((s) => s[k]);
        assert.ok(c[k] >= Math.min(...vs) && c[k] <= Math.max(...vs), k);
      }
      assert.equal(c.source, "observed");
      assert.equal(c.drains, Math.min(5, xs.length));
    },
  ));
});
