import { strict as assert } from "node:assert";
import { type DrainLesson, learnedCost } from "../capacity/history.ts";
import { costText, planCost } from "./plan_cost.ts";

const T0 = Date.parse("2026-01-01T00:00:00Z");
const lesson = (
  host: string,
  endS: number,
  more: Partial<DrainLesson>,
): DrainLesson => ({ host, startedMs: T0, endedMs: T0 + endS * 1000, ...more });
const rate = (mbPerSecond: number, overheadSeconds: number) => ({
  mbPerSecond,
  overheadSeconds,
});

Deno.test("planCost: where the cost comes from and how uncertain it is", () => {
  const cases: {
    name: string;
    lessons: DrainLesson[];
    flags?: Parameters<typeof planCost>[1];
    cost: string;
    source: string;
    uncertainty: RegExp | undefined;
    spread: string[];
  }[] = [
    {
      name: "no history: headlined at the slow end",
      lessons: [],
      cost: "50 MB/s + 15 s per migration + 30 s per drain",
      source: "documented defaults assumed: no ended drain to learn from",
      uncertainty:
        /^without history the defaults are the fast end \(1000 MB\/s \+ 5 s per migration \+ 10 s per drain\) and the slow end is 50 MB\/s \+ 15 s per migration \+ 30 s per drain/,
      spread: [
        "1000 MB/s + 5 s per migration + 10 s per drain",
        "50 MB/s + 15 s per migration + 30 s per drain",
      ],
    },
    {
      name: "one ended drain: no spread to show",
      lessons: [lesson("n1", 89, { rate: rate(63, 11), fixedSeconds: 14 })],
      cost: "63 MB/s + 11 s per migration + 14 s per drain",
      source:
        "observed by the latest 1 ended drain (n1); time per drain measured",
      uncertainty: undefined,
      spread: ["63 MB/s + 11 s per migration + 14 s per drain"],
    },
    {
      name: "two drains that differ: a range over them",
      lessons: [
        lesson("n1", 89, { rate: rate(63, 11) }),
        lesson("n2", 99, { rate: rate(80, 9) }),
      ],
      cost: "71.5 MB/s + 10 s per migration + 10 s per drain",
      source:
        "observed by the latest 2 ended drains (n2, n1); time per drain assumed (no drain measured one)",
      uncertainty: /^over the costs of the latest 2 ended drains$/,
      spread: [
        "80 MB/s + 9 s per migration + 10 s per drain",
        "63 MB/s + 11 s per migration + 10 s per drain",
      ],
    },
    {
      name: "calibrated",
      lessons: [lesson("n1", 200, { predictedSeconds: 100 })],
      cost: "500 MB/s + 10 s per migration + 20 s per drain",
      source:
        "documented defaults calibrated on the makespans of 1 ended drain (n1), which observed no rate",
      uncertainty: undefined,
      spread: ["500 MB/s + 10 s per migration + 20 s per drain"],
    },
    {
      name:
        "the rate from the command line: the range is the rest's, the rest headlined at its slow end",
      lessons: [],
      flags: { mbPerSecond: 100 },
      cost: "100 MB/s + 15 s per migration + 30 s per drain",
      source:
        "rate from the command line, the rest documented defaults assumed: no ended drain to learn from",
      uncertainty:
        /slow end is 100 MB\/s \+ 15 s per migration \+ 30 s per drain/,
      spread: [
        "100 MB/s + 5 s per migration + 10 s per drain",
        "100 MB/s + 15 s per migration + 30 s per drain",
      ],
    },
    {
      name: "everything from the command line: no range",
      lessons: [lesson("n1", 89, { rate: rate(63, 11), fixedSeconds: 14 })],
      flags: { mbPerSecond: 100, overheadSeconds: 2, fixedSeconds: 0 },
      cost: "100 MB/s + 2 s per migration + 0 s per drain",
      source: "from the command line",
      uncertainty: undefined,
      spread: ["100 MB/s + 2 s per migration + 0 s per drain"],
    },
  ];
  for (const c of cases) {
    const p = planCost(learnedCost(c.lessons), c.flags ?? {});
    assert.equal(costText(p), c.cost, c.name);
    assert.equal(p.source, c.source, c.name);
    if (c.uncertainty === undefined) {
      assert.equal(p.uncertainty, undefined, c.name);
    } else assert.match(p.uncertainty ?? "", c.uncertainty, c.name);
    assert.deepEqual(p.spread.map(costText), c.spread, c.name);
  }
});
