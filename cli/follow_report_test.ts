import assert from "node:assert/strict";
import type { Eviction } from "../models/mod.ts";
import {
  endReport,
  progressLine,
  specDifferences,
  timeoutLine,
} from "./follow_report.ts";

const T0 = "2026-12-01T00:00:00Z";
const condition = (status: "True" | "False", reason: string, message = "") => ({
  type: "Evicting",
  status,
  reason,
  message,
  lastTransitionTime: T0,
});
const base: Eviction = {
  metadata: { name: "n1", generation: 1 },
  spec: { hypervisor: "n1", reason: "r" },
};

Deno.test("progressLine: a Pending or NotInNova drain draws no full bar", () => {
  const empty = `[${" ".repeat(30)}]`;
  const rows: [string, Eviction, string][] = [
    [
      "pending: no status yet",
      base,
      `n1             ${empty} waiting for the controller's first look at the host (Pending)`,
    ],
    [
      "not in Nova",
      {
        ...base,
        status: {
          migratedCount: 0,
          outstandingCount: 0,
          conditions: [condition("False", "NotInNova")],
        },
      },
      `n1             ${empty} nothing to drain: Nova has no compute service named n1 (NotInNova)`,
    ],
    [
      "running: the bar",
      {
        ...base,
        status: {
          migratedCount: 1,
          inFlightCount: 1,
          outstandingCount: 2,
          conditions: [condition("True", "Running")],
        },
      },
      "n1             [##########>>>>>>>>>>..........]   1/3 migrated, 1 in flight, 2 outstanding, 0 failed (Running)",
    ],
  ];
  for (const [what, e, want] of rows) {
    assert.equal(progressLine("n1", e), want, what);
  }
});

Deno.test("endReport: drained 0, nothing drained 1, stopped for a person 1, running none", () => {
  const now = Date.parse("2026-12-01T00:00:07Z");
  const done: Eviction = {
    ...base,
    status: {
      observedGeneration: 1,
      migratedCount: 3,
      inFlightCount: 0,
      outstandingCount: 0,
      emptySince: T0,
      finishedAt: T0,
      conditions: [condition("False", "Succeeded")],
    },
  };
  assert.deepEqual(endReport("n1", done, now), {
    code: 0,
    lines: [
      `n1: drained, 3 VMs migrated; the host has been seen empty for 7 s (since ${T0})`,
    ],
  });
  // Succeeded without finishedAt: still settling
  assert.equal(
    endReport("n1", {
      ...done,
      status: { ...done.status, finishedAt: undefined },
    }, now),
    undefined,
  );
  assert.equal(endReport("n1", base, now), undefined);
  assert.equal(
    endReport("n1", {
      ...base,
      status: { conditions: [condition("False", "NotInNova")] },
    }, now)?.code,
    1,
  );
  assert.deepEqual(
    endReport("n1", {
      ...base,
      status: {
        failed: [{ id: "vm1", reason: "boom", attempts: 3, lastAttemptAt: T0 }],
        skipped: [{ id: "vm2", reason: "SUSPENDED needs a person" }],
        conditions: [condition("False", "Failed")],
      },
    }, now),
    {
      code: 1,
      lines: [
        "n1: drain stopped with VMs left that need a person:",
        "  vm1: boom (3 attempts)",
        "  vm2: SUSPENDED needs a person",
      ],
    },
  );
});

Deno.test("timeoutLine: kubectl wait's words with the deadline as given", () => {
  assert.equal(
    timeoutLine("n1", undefined, 300_000),
    "error: timed out waiting for eviction.kvm.cloud.sap/n1 after 5m: Pending (the drain goes on)",
  );
  assert.equal(
    timeoutLine("n1", {
      ...base,
      status: { conditions: [condition("True", "Running")] },
    }, 3000),
    "error: timed out waiting for eviction.kvm.cloud.sap/n1 after 3s: Running (the drain goes on)",
  );
});

Deno.test("specDifferences: reason and limit, in words", () => {
  assert.deepEqual(
    specDifferences(
      { hypervisor: "n1", reason: "a" },
      { hypervisor: "n1", reason: "a" },
    ),
    [],
  );
  assert.deepEqual(
    specDifferences(
      { hypervisor: "n1", reason: "a", maxConcurrentMigrations: 2 },
      { hypervisor: "n1", reason: "b" },
    ),
    ['reason "a" (not "b")', "maxConcurrentMigrations 2 (not none)"],
  );
});
