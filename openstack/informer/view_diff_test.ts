import assert from "node:assert/strict";
import { factDiffs, planFacts } from "./view_diff.ts";
import type { ObservedMigration, ObservedServer } from "./snapshot.ts";

const H = "h";
const vm = (
  id: string,
  status = "ACTIVE",
  taskState: string | null = null,
): ObservedServer => ({ id, status, host: H, taskState, flavor: { ramMb: 1 } });
const rec = (
  id: number,
  vmId: string,
  status: string,
  o: Partial<ObservedMigration> = {},
): ObservedMigration => ({
  id,
  instanceUuid: vmId,
  migrationType: "live-migration",
  status,
  sourceCompute: H,
  destCompute: "d",
  createdAt: "2026-12-02T10:00:00",
  ...o,
});

Deno.test("planFacts: on the host at rest or moving, left with how its migration ended and where, or arriving", () => {
  const facts = planFacts({
    servers: [
      vm("a"),
      vm("b", "SHUTOFF"),
      vm("c", "MIGRATING", "migrating"),
      vm("d"),
      vm("e", "active"),
    ],
    migrations: [
      rec(1, "d", "queued"),
      rec(2, "f", "completed"),
      rec(3, "g", "error", { destCompute: null }),
      rec(4, "i", "running", { sourceCompute: "x", destCompute: H }),
      rec(5, "j", "running"),
    ],
  }, H);
  assert.deepEqual(Object.fromEntries(facts), {
    a: "on ACTIVE",
    b: "on SHUTOFF",
    c: "on moving",
    d: "on moving",
    e: "on ACTIVE",
    f: "left done d",
    g: "left failed ?",
    i: "arriving",
    j: "left in_progress d",
  });
});

Deno.test("factDiffs: the VMs two observations plan apart on, sorted, with both facts; none for the same facts told otherwise", () => {
  const view = {
    servers: [vm("a", "MIGRATING", "migrating"), vm("b")],
    migrations: [rec(1, "a", "running")],
  };
  assert.deepEqual(factDiffs(view, view, H), []);
  const fresh = {
    servers: [vm("b"), vm("c")],
    migrations: [rec(1, "a", "completed")],
  };
  assert.deepEqual(factDiffs(view, fresh, H), [
    { id: "a", view: "on moving", fresh: "left done d" },
    { id: "c", view: undefined, fresh: "on ACTIVE" },
  ]);
  // moving by its state or by its record: the same fact
  const byState = {
    servers: [vm("a", "MIGRATING", "migrating")],
    migrations: [],
  };
  const byRecord = { servers: [vm("a")], migrations: [rec(1, "a", "running")] };
  assert.deepEqual(factDiffs(byState, byRecord, H), []);
});
