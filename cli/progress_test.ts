import assert from "node:assert/strict";
import fc from "fast-check";
import { ProgressLines, renderBar, renderProgressLine } from "./progress.ts";

Deno.test("renderBar: table", () => {
  const rows: [string, Parameters<typeof renderBar>[0], number, string][] = [
    [
      "nothing to do",
      { migrated: 0, inFlight: 0, outstanding: 0, failed: 0, skipped: 0 },
      4,
      "[####]",
    ],
    [
      "all waiting",
      { migrated: 0, inFlight: 0, outstanding: 4, failed: 0, skipped: 0 },
      4,
      "[....]",
    ],
    [
      "half done",
      { migrated: 2, inFlight: 1, outstanding: 2, failed: 0, skipped: 0 },
      4,
      "[##>.]",
    ],
    [
      "a failure",
      { migrated: 2, inFlight: 0, outstanding: 2, failed: 1, skipped: 0 },
      4,
      "[##!.]",
    ],
    [
      "a SUSPENDED VM left for a person, none failed",
      { migrated: 3, inFlight: 0, outstanding: 1, failed: 0, skipped: 1 },
      4,
      "[###?]",
    ],
    [
      "a failure and a SUSPENDED VM",
      { migrated: 2, inFlight: 1, outstanding: 4, failed: 1, skipped: 1 },
      6,
      "[##>!?.]",
    ],
    [
      "done",
      { migrated: 7, inFlight: 0, outstanding: 0, failed: 0, skipped: 0 },
      5,
      "[#####]",
    ],
  ];
  for (const [name, counts, width, expected] of rows) {
    assert.equal(renderBar(counts, width), expected, name);
  }
});

Deno.test("renderBar: always exactly width cells", () => {
  fc.assert(fc.property(
    fc.nat(500),
    fc.nat(50),
    fc.nat(50),
    fc.nat(500),
    fc.integer({ min: 1, max: 120 }),
    fc.nat(50),
    (migrated, inFlight, failed, extra, width, skipped) => {
      const outstanding = inFlight + failed + skipped + extra;
      const bar = renderBar(
        { migrated, inFlight, outstanding, failed, skipped },
        width,
      );
      assert.equal(bar.length, width + 2);
      assert.match(bar, /^\[#*>*!*\?*\.*\]$/);
    },
  ));
});

Deno.test("renderBar refuses a width below 1", () => {
  assert.throws(
    () =>
      renderBar({
        migrated: 0,
        inFlight: 0,
        outstanding: 0,
        failed: 0,
        skipped: 0,
      }, 0),
    { name: "RangeError", message: "width must be an integer >= 1, got 0" },
  );
});

Deno.test("renderProgressLine names every count", () => {
  assert.equal(
    renderProgressLine("node042", {
      migrated: 3,
      inFlight: 1,
      outstanding: 2,
      failed: 0,
      skipped: 0,
    }, 5),
    "node042        [###>.]   3/5 migrated, 1 in flight, 2 outstanding, 0 failed",
  );
});

Deno.test("renderProgressLine: table, a SUSPENDED VM reads as skipped, never as failed", () => {
  const rows: [string, Parameters<typeof renderProgressLine>[1], string][] = [
    [
      "running, nothing skipped: no skipped count",
      { migrated: 1, inFlight: 1, outstanding: 3, failed: 0, skipped: 0 },
      "n1             [#>..]   1/4 migrated, 1 in flight, 3 outstanding, 0 failed",
    ],
    [
      "stopped on a SUSPENDED VM: 0 failed, 1 skipped",
      { migrated: 3, inFlight: 0, outstanding: 1, failed: 0, skipped: 1 },
      "n1             [###?]   3/4 migrated, 0 in flight, 1 outstanding, 0 failed, 1 skipped",
    ],
    [
      "a failed VM and a SUSPENDED one",
      { migrated: 2, inFlight: 0, outstanding: 2, failed: 1, skipped: 1 },
      "n1             [##!?]   2/4 migrated, 0 in flight, 2 outstanding, 1 failed, 1 skipped",
    ],
  ];
  for (const [name, counts, expected] of rows) {
    assert.equal(renderProgressLine("n1", counts, 4), expected, name);
  }
});

Deno.test("ProgressLines: a line only when it changed; in place on a terminal, and the newline another line needs", () => {
  for (const inPlace of [false, true]) {
    const out: string[] = [];
    const p = new ProgressLines((l) => out.push(l), inPlace);
    assert.equal(p.end, "", "nothing shown yet");
    p.show("a", "1");
    p.show("a", "1");
    p.show("b", "1");
    p.show("a", "2");
    const r = inPlace ? "\r" : "";
    assert.deepEqual(out, [`${r}1`, `${r}1`, `${r}2`]);
    assert.equal(p.end, inPlace ? "\n" : "");
  }
});
