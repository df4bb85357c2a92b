import assert from "node:assert/strict";
import type { ObservedMigration } from "./observation.ts";
import { Prober } from "./probe.ts";

const rec = (
  id: number,
  status: string,
  source = "h",
): ObservedMigration => ({
  id,
  instanceUuid: `vm${id}`,
  migrationType: "live-migration",
  status,
  sourceCompute: source,
  createdAt: "2026-11-29T12:00:00",
});

Deno.test("Prober: a full pass is needed only when a record of the host appears or settles", () => {
  const p = new Prober();
  assert.equal(p.needsFullPass("e", "1/a/b", [], "h", 0, 30_000), true);
  p.fullPass("e", "1/a/b", [rec(1, "running"), rec(2, "queued")], "h", 0);
  const same = [rec(1, "running"), rec(2, "preparing")];
  assert.equal(p.needsFullPass("e", "1/a/b", same, "h", 1000, 30_000), false);
  // Arrivals from other hosts do not count.
  const arrival = [...same, rec(9, "running", "other")];
  assert.equal(
    p.needsFullPass("e", "1/a/b", arrival, "h", 1000, 30_000),
    false,
  );
  for (
    const changed of [
      [rec(1, "completed"), rec(2, "queued")],
      [rec(1, "running"), rec(2, "error")],
      [rec(1, "running"), rec(2, "queued"), rec(3, "accepted")],
    ]
  ) {
    assert.equal(
      p.needsFullPass("e", "1/a/b", changed, "h", 1000, 30_000),
      true,
    );
  }
});

Deno.test("Prober: another object version or an old full pass forces a full pass", () => {
  const p = new Prober();
  p.fullPass("e", "1/a/b", [rec(1, "running")], "h", 0);
  assert.equal(p.mayProbe("e", "1/a/b", 29_999, 30_000), true);
  assert.equal(p.mayProbe("e", "2/a/b", 1000, 30_000), false);
  assert.equal(p.mayProbe("e", "1/a/b", 30_000, 30_000), false);
  p.forget("e");
  assert.equal(p.mayProbe("e", "1/a/b", 1000, 30_000), false);
});

Deno.test("Prober: a refill becomes the reference of the next probe, not a full pass", () => {
  const p = new Prober();
  const servers = [{
    id: "vm1",
    status: "ACTIVE",
    host: "h",
    flavor: { ramMb: 1 },
  }, {
    id: "vm2",
    status: "ACTIVE",
    host: "h",
    flavor: { ramMb: 1 },
  }];
  p.fullPass("e", "fp", [rec(1, "running")], "h", 0, servers);
  const done = [{ ...rec(1, "completed"), destCompute: "d" }];
  const probe = {
    host: "h",
    status: {},
    nowMs: 1000,
    maxAgeMs: 30_000,
    gracePeriodMs: 60_000,
  };
  const v = p.verdict("e", "fp", done, probe);
  assert.equal(v.kind, "refill");
  if (v.kind !== "refill") return;
  assert.deepEqual(v.servers.map((s) => s.id), ["vm2"]);
  p.refilled("e", done, "h", v.servers);
  assert.equal(p.verdict("e", "fp", done, probe).kind, "idle");
  // The full pass's age still counts: past it, a full pass.
  assert.equal(
    p.verdict("e", "fp", done, { ...probe, nowMs: 31_000 }).kind,
    "full",
  );
  assert.equal(p.verdict("e", "other", done, probe).kind, "full");
});
