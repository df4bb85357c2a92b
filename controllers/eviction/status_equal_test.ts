import assert from "node:assert/strict";
import { statusEqual } from "./status_equal.ts";

const rows: Array<[string, Parameters<typeof statusEqual>, boolean]> = [
  ["both absent", [undefined, undefined], true],
  ["absent equals empty", [undefined, {}], true],
  ["undefined property equals a missing one", [{ migratedCount: 1 }, {
    migratedCount: 1,
    finishedAt: undefined,
  }], true],
  [
    "a changed count differs",
    [{ migratedCount: 1 }, { migratedCount: 2 }],
    false,
  ],
  ["list order matters", [{ outstandingInstances: ["a", "b"] }, {
    outstandingInstances: ["b", "a"],
  }], false],
  ["nested equal entries", [
    {
      inFlight: [{ id: "a", kind: "live", startedAt: "2026-01-01T00:00:00Z" }],
    },
    {
      inFlight: [{ id: "a", kind: "live", startedAt: "2026-01-01T00:00:00Z" }],
    },
  ], true],
  ["a changed progress differs", [
    {
      inFlight: [{
        id: "a",
        kind: "live",
        startedAt: "t",
        memoryProcessedPercent: 1,
      }],
    },
    {
      inFlight: [{
        id: "a",
        kind: "live",
        startedAt: "t",
        memoryProcessedPercent: 2,
      }],
    },
  ], false],
  ["an added list entry differs", [{ skipped: [] }, {
    skipped: [{ id: "a", reason: "r" }],
  }], false],
  ["an empty list differs from a missing one", [{ skipped: [] }, {}], false],
];

for (const [name, [a, b], expected] of rows) {
  Deno.test(`statusEqual: ${name}`, () => {
    assert.equal(statusEqual(a, b), expected);
    assert.equal(statusEqual(b, a), expected, "symmetric");
  });
}
