import { strict as assert } from "node:assert";
import type {
  EvictionStatus,
  HypervisorStatusLastDrain,
} from "../../models/mod.ts";
import {
  drainLesson,
  type DrainMarks,
  needsRecording,
  noteMarks,
} from "./drain_lesson.ts";

const T0 = Date.parse("2026-01-01T00:00:00Z");
const at = (s: number) => new Date(T0 + s * 1000).toISOString();
const ms = (s: number) => T0 + s * 1000;

Deno.test("noteMarks: table", () => {
  const inFlight = [{ id: "x", kind: "live" as const, startedAt: at(0) }];
  const cases: [
    string,
    DrainMarks,
    Parameters<typeof noteMarks>[1],
    DrainMarks,
  ][] = [
    [
      "nothing happened",
      {},
      { before: {}, started: 0, ended: 0, nowMs: 1 },
      {},
    ],
    ["the drain's first start", {}, {
      before: {},
      started: 2,
      ended: 0,
      nowMs: 5,
    }, { firstStartMs: 5 }],
    ["a later start keeps the first", { firstStartMs: 5 }, {
      before: { inFlight },
      started: 1,
      ended: 1,
      nowMs: 9,
    }, { firstStartMs: 5, lastEndMs: 9 }],
    [
      "taken over mid-way: a start after migrations is not the first",
      {},
      { before: { migratedCount: 2 }, started: 1, ended: 0, nowMs: 9 },
      {},
    ],
    ["taken over with one in flight", {}, {
      before: { inFlight },
      started: 1,
      ended: 0,
      nowMs: 9,
    }, {}],
    ["after a failure", {}, {
      before: {
        failed: [{ id: "y", reason: "r", attempts: 1, lastAttemptAt: at(0) }],
      },
      started: 1,
      ended: 0,
      nowMs: 9,
    }, {}],
    ["the last end moves on", { firstStartMs: 5, lastEndMs: 9 }, {
      before: { inFlight },
      started: 0,
      ended: 1,
      nowMs: 20,
    }, { firstStartMs: 5, lastEndMs: 20 }],
  ];
  for (const [name, marks, pass, want] of cases) {
    assert.deepEqual(noteMarks(marks, pass), want, name);
  }
});

Deno.test("drainLesson: table", () => {
  const rate = { mbPerSecond: 63, overheadMs: 11_000, migrations: 3 };
  const ended: EvictionStatus = {
    startedAt: at(0),
    finishedAt: at(89),
    migratedCount: 3,
    predictedMakespanSeconds: 21,
    observedMigrationRate: rate,
  };
  const cases: [
    string,
    EvictionStatus,
    DrainMarks,
    HypervisorStatusLastDrain | undefined,
  ][] = [
    [
      "running: nothing yet",
      { startedAt: at(0), migratedCount: 1 },
      {},
      undefined,
    ],
    ["no start time", { finishedAt: at(9) }, {}, undefined],
    [
      "ended: 5 s to the first start, 9 s from the last end (settling)",
      ended,
      { firstStartMs: ms(5), lastEndMs: ms(80) },
      {
        eviction: "n1",
        startedAt: at(0),
        endedAt: at(89),
        migrated: 3,
        predictedMakespanSeconds: 21,
        migrationRate: rate,
        fixedMs: 14_000,
      },
    ],
    [
      "this process did not see the first start: no time per drain",
      ended,
      { lastEndMs: ms(80) },
      {
        eviction: "n1",
        startedAt: at(0),
        endedAt: at(89),
        migrated: 3,
        predictedMakespanSeconds: 21,
        migrationRate: rate,
      },
    ],
    [
      "Nova's limit as the drain learned it is kept",
      { ...ended, novaLiveMigrationLimit: 1 },
      { lastEndMs: ms(80) },
      {
        eviction: "n1",
        startedAt: at(0),
        endedAt: at(89),
        migrated: 3,
        predictedMakespanSeconds: 21,
        migrationRate: rate,
        novaLiveMigrationLimit: 1,
      },
    ],
    [
      "an empty host: the whole drain is fixed cost",
      { startedAt: at(0), finishedAt: at(12), migratedCount: 0 },
      {},
      {
        eviction: "n1",
        startedAt: at(0),
        endedAt: at(12),
        migrated: 0,
        fixedMs: 12_000,
      },
    ],
    [
      "ended with only VMs that need a person: when it stopped",
      {
        startedAt: at(0),
        migratedCount: 1,
        conditions: [{
          type: "Evicting",
          status: "False",
          reason: "Failed",
          message: "1 VMs left on the host need a person",
          lastTransitionTime: at(40),
        }],
      },
      { firstStartMs: ms(3), lastEndMs: ms(30) },
      {
        eviction: "n1",
        startedAt: at(0),
        endedAt: at(40),
        migrated: 1,
        fixedMs: 13_000,
      },
    ],
  ];
  for (const [name, status, marks, want] of cases) {
    assert.deepEqual(drainLesson("n1", status, marks), want, name);
  }
});

Deno.test("needsRecording: table", () => {
  const l: HypervisorStatusLastDrain = {
    eviction: "n1",
    startedAt: at(0),
    endedAt: at(89),
    migrated: 3,
    fixedMs: 14_000,
    migrationRate: { mbPerSecond: 63, overheadMs: 11_000, migrations: 3 },
  };
  const cases: [string, HypervisorStatusLastDrain | undefined, boolean][] = [
    ["none recorded", undefined, true],
    ["the same", structuredClone(l), false],
    ["the same, times written otherwise", {
      ...l,
      startedAt: "2026-01-01T00:00:00Z",
      endedAt: "2026-01-01T00:01:29Z",
    }, false],
    ["an older drain of the host", {
      ...l,
      eviction: "old",
      startedAt: at(-500),
      endedAt: at(-400),
    }, true],
    ["a newer drain of the host: kept", {
      ...l,
      eviction: "new",
      endedAt: at(500),
    }, false],
    ["the same drain, reopened and ended again later", {
      ...l,
      endedAt: at(50),
    }, true],
    ["the rate differs", {
      ...l,
      migrationRate: { mbPerSecond: 64, overheadMs: 11_000, migrations: 3 },
    }, true],
    ["without a time per drain", { ...l, fixedMs: undefined }, true],
  ];
  for (const [name, recorded, want] of cases) {
    assert.equal(needsRecording(l, recorded), want, name);
  }
});
