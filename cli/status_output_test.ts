import assert from "node:assert/strict";
import type { Eviction } from "../models/mod.ts";
import { renderData } from "./usage.ts";
import { parse as parseYaml } from "yaml";
import {
  statusData,
  statusNames,
  statusRows,
  statusTable,
} from "./status_output.ts";

const T0 = "2026-12-01T00:00:00Z";

const running: Eviction = {
  metadata: { name: "node042" },
  spec: { hypervisor: "node042", reason: "kernel" },
  status: {
    migratedCount: 3,
    inFlightCount: 1,
    outstandingCount: 2,
    effectiveLimit: 2,
    limitSource: "policy",
    startedAt: T0,
    failed: [{ id: "vm1", reason: "boom", attempts: 2, lastAttemptAt: T0 }],
    skipped: [{ id: "vm2", reason: "SUSPENDED" }],
    conditions: [{
      type: "Evicting",
      status: "True",
      reason: "Running",
      message: "1 in flight",
      lastTransitionTime: T0,
    }],
  },
};
const unknownHost: Eviction = {
  metadata: { name: "nod042" },
  spec: { hypervisor: "nod042", reason: "kernel" },
  status: {
    migratedCount: 0,
    inFlightCount: 0,
    outstandingCount: 0,
    startedAt: T0,
    finishedAt: T0,
    conditions: [{
      type: "Evicting",
      status: "False",
      reason: "NotInNova",
      message: "nothing drained: Nova has no compute service named nod042",
      lastTransitionTime: T0,
    }],
  },
};
const pending: Eviction = {
  metadata: { name: "a" },
  spec: { hypervisor: "ha", reason: "r" },
};

Deno.test("status output formats: table, the CRD's printer columns", () => {
  const now = Date.parse("2026-12-01T00:05:03Z");
  const made = (e: Eviction, at: string): Eviction => ({
    ...e,
    metadata: { ...e.metadata, creationTimestamp: at },
  });
  const rows: [string, Eviction[], boolean, string][] = [
    ["none", [], false, ""],
    ["none, wide", [], true, ""],
    [
      "table, sorted by name; AGE as kubectl shows it",
      [made(running, T0), made(unknownHost, "2026-11-29T00:00:00Z")],
      false,
      "NAME      HYPERVISOR   REASON   STATE       MIGRATED   IN FLIGHT   OUTSTANDING   LIMIT   AGE\n" +
      "nod042    nod042       kernel   NotInNova   0          0           0                     2d\n" +
      "node042   node042      kernel   Running     3          1           2             2       5m3s",
    ],
    [
      "wide: the limit's source, the start as an age, failures and the message",
      [running, unknownHost, pending],
      true,
      "NAME      HYPERVISOR   REASON   STATE       MIGRATED   IN FLIGHT   OUTSTANDING   LIMIT   AGE   SOURCE   STARTED   MIGRATIONS   MESSAGE\n" +
      "a         ha           r        Pending\n" +
      "nod042    nod042       kernel   NotInNova   0          0           0                                    5m3s                   nothing drained: Nova has no compute service named nod042\n" +
      "node042   node042      kernel   Running     3          1           2             2             policy   5m3s                   1 in flight",
    ],
  ];
  for (const [what, evictions, wide, want] of rows) {
    assert.equal(statusTable(evictions, wide, now), want, what);
  }
});

Deno.test("statusRows: the headers are NAME and the CRD's columns, upper-cased", () => {
  const crd = parseYaml(
    Deno.readTextFileSync(
      new URL(
        "../manifests/crds/kvm.cloud.sap_evictions.yaml",
        import.meta.url,
      ),
    ),
  ) as {
    spec: {
      versions: {
        additionalPrinterColumns: { name: string; priority?: number }[];
      }[];
    };
  };
  const columns = crd.spec.versions[0]?.additionalPrinterColumns ?? [];
  assert.deepEqual(statusRows([], true, 0)[0], [
    "NAME",
    ...columns.map((c) => c.name.toUpperCase()),
  ]);
  assert.deepEqual(statusRows([], false, 0)[0], [
    "NAME",
    ...columns.filter((c) => (c.priority ?? 0) === 0).map((c) =>
      c.name.toUpperCase()
    ),
  ]);
  // a line break ends a cell, as kubectl cuts it
  const multi: Eviction = {
    ...running,
    spec: { hypervisor: "node042", reason: "first line\nsecond" },
  };
  assert.equal(statusRows([multi], false, 0)[1]?.[2], "first line...");
});

Deno.test("status output formats: name", () => {
  assert.equal(statusNames([]), "");
  assert.equal(
    statusNames([running, pending, unknownHost]),
    "eviction.kvm.cloud.sap/a\neviction.kvm.cloud.sap/nod042\neviction.kvm.cloud.sap/node042",
  );
});

Deno.test("status output formats: json and yaml, every field present, sorted by name", () => {
  const data = statusData([running, unknownHost, pending]);
  assert.deepEqual(data, {
    evictions: [
      {
        name: "a",
        hypervisor: "ha",
        reason: "r",
        state: "Pending",
        message: null,
        migrated: 0,
        inFlight: 0,
        outstanding: 0,
        failed: [],
        skipped: [],
        limit: null,
        limitSource: null,
        startedAt: null,
        finishedAt: null,
      },
      {
        name: "nod042",
        hypervisor: "nod042",
        reason: "kernel",
        state: "NotInNova",
        message: "nothing drained: Nova has no compute service named nod042",
        migrated: 0,
        inFlight: 0,
        outstanding: 0,
        failed: [],
        skipped: [],
        limit: null,
        limitSource: null,
        startedAt: T0,
        finishedAt: T0,
      },
      {
        name: "node042",
        hypervisor: "node042",
        reason: "kernel",
        state: "Running",
        message: "1 in flight",
        migrated: 3,
        inFlight: 1,
        outstanding: 2,
        failed: [{ id: "vm1", reason: "boom", attempts: 2 }],
        skipped: [{ id: "vm2", reason: "SUSPENDED" }],
        limit: 2,
        limitSource: "policy",
        startedAt: T0,
        finishedAt: null,
      },
    ],
  });
  const one = statusData([pending]);
  assert.deepEqual(JSON.parse(renderData(one, "json")), one);
  assert.equal(
    renderData(one, "yaml"),
    [
      "evictions:",
      "  - name: a",
      "    hypervisor: ha",
      "    reason: r",
      "    state: Pending",
      "    message: null",
      "    migrated: 0",
      "    inFlight: 0",
      "    outstanding: 0",
      "    failed: []",
      "    skipped: []",
      "    limit: null",
      "    limitSource: null",
      "    startedAt: null",
      "    finishedAt: null",
    ].join("\n"),
  );
});
