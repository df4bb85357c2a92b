import assert from "node:assert/strict";
import fc from "fast-check";
import { renderBar, renderProgressLine } from "./progress.ts";

Deno.test("renderBar: table", () => {
  const rows: [string, Parameters<typeof renderBar>[0], number, string][] = [
    [
      "nothing to do",
      { migrated: 0, inFlight: 0, outstanding: 0, failed: 0 },
      4,
      "[####]",
    ],
    [
      "all waiting",
      { migrated: 0, inFlight: 0, outstanding: 4, failed: 0 },
      4,
      "[....]",
    ],
    [
      "half done",
      { migrated: 2, inFlight: 1, outstanding: 2, failed: 0 },
      4,
      "[##>.]",
    ],
    [
      "a failure",
      { migrated: 2, inFlight: 0, outstanding: 2, failed: 1 },
      4,
      "[##!.]",
    ],
    [
      "done",
      { migrated: 7, inFlight: 0, outstanding: 0, failed: 0 },
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
    (migrated, inFlight, failed, extra, width) => {
      const outstanding = inFlight + failed + extra;
      const bar = renderBar({ migrated, inFlight, outstanding, failed }, width);
      assert.equal(bar.length, width + 2);
      assert.match(bar, /^\[#*>*!*\.*\]$/);
    },
  ));
});

Deno.test("renderBar refuses a width below 1", () => {
  assert.throws(
    () => renderBar({ migrated: 0, inFlight: 0, outstanding: 0, failed: 0 }, 0),
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
    }, 5),
    "node042        [###>.]   3/5 migrated, 1 in flight, 2 outstanding, 0 failed",
  );
});
