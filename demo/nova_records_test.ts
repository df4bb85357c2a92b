import assert from "node:assert/strict";
import type { RawMigration } from "../tests/harness/nova_migrations.ts";
import { inFlightPeak, summaryRecords } from "./nova_records.ts";

const raw = (over: Partial<RawMigration>): RawMigration => ({
  id: 1,
  instance_uuid: "a",
  migration_type: "live-migration",
  status: "completed",
  source_compute: "node001",
  dest_compute: "node002",
  created_at: "2026-01-01T00:00:00.000000",
  updated_at: "2026-01-01T00:00:07.000000",
  ...over,
});

Deno.test("summaryRecords: ours once each, span as copy time", () => {
  const rows = summaryRecords([
    raw({ id: 2, instance_uuid: "b", updated_at: null }),
    raw({ id: 1 }),
    raw({ id: 1 }), // listed from both hosts
    raw({ id: 3, instance_uuid: "someone-else" }),
  ], new Set(["a", "b"]));
  assert.deepEqual(rows.map((r) => [r.serverId, r.copyMs]), [
    ["a", 7000],
    ["b", 0],
  ]);
  assert.equal(rows[0]?.createdAt, Date.parse("2026-01-01T00:00:00Z"));
  assert.equal(rows[0]?.source, "node001");
});

Deno.test("summaryRecords: a bad time names the record", () => {
  assert.throws(
    () => summaryRecords([raw({ created_at: "soon" })], new Set(["a"])),
    /migration 1: created_at "soon"/,
  );
});

Deno.test("inFlightPeak: working records of the hosts, not queued ones", () => {
  const at = 0;
  assert.equal(
    inFlightPeak([
      {
        at,
        records: [
          raw({ id: 1, status: "running" }),
          raw({ id: 2, status: "queued" }),
          raw({ id: 3, status: "preparing", source_compute: "node009" }),
        ],
      },
      {
        at,
        records: [
          raw({ id: 1, status: "running" }),
          raw({ id: 4, status: "accepted", source_compute: "node002" }),
          raw({ id: 5, status: "completed" }),
        ],
      },
    ], ["node001", "node002"]),
    2,
  );
  assert.equal(inFlightPeak([], ["node001"]), 0);
});
