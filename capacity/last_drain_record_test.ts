import assert from "node:assert/strict";
import { drainLessons } from "./history.ts";
import {
  LAST_DRAIN_ANNOTATION,
  lastDrainAnnotation,
  lastDrainOf,
} from "./last_drain_record.ts";

const record = {
  eviction: "n1",
  startedAt: "2026-01-01T00:00:00Z",
  endedAt: "2026-01-01T00:01:30Z",
  migrated: 3,
  migrationRate: { mbPerSecond: 63, overheadMs: 11000, migrations: 3 },
  fixedMs: 14000,
};

Deno.test("lastDrainOf: the status first, else the annotation; a bad annotation is none", () => {
  const inStatus = { ...record, eviction: "from-status" };
  const table: [unknown, string | undefined][] = [
    [{ status: { lastDrain: inStatus } }, "from-status"],
    [{ metadata: { annotations: lastDrainAnnotation(record) } }, "n1"],
    [{
      status: { lastDrain: inStatus },
      metadata: { annotations: lastDrainAnnotation(record) },
    }, "from-status"],
    [
      { metadata: { annotations: { [LAST_DRAIN_ANNOTATION]: "not json" } } },
      undefined,
    ],
    // fails the CRD's schema: no migrated count
    [{
      metadata: {
        annotations: {
          [LAST_DRAIN_ANNOTATION]: JSON.stringify({ eviction: "x" }),
        },
      },
    }, undefined],
    [{}, undefined],
  ];
  for (const [hv, want] of table) {
    assert.equal(
      lastDrainOf(hv as Parameters<typeof lastDrainOf>[0])?.eviction,
      want,
      JSON.stringify(hv),
    );
  }
});

Deno.test("drainLessons reads a Hypervisor's record from its annotation where the status holds none", () => {
  const lessons = drainLessons([], [{
    metadata: { name: "n1", annotations: lastDrainAnnotation(record) },
  }], () => undefined);
  assert.equal(lessons.length, 1);
  assert.deepEqual(lessons[0]?.rate, { mbPerSecond: 63, overheadSeconds: 11 });
  assert.equal(lessons[0]?.fixedSeconds, 14);
});
