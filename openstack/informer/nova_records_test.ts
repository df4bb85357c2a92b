import assert from "node:assert/strict";
import fc from "fast-check";
import {
  arrivingRecords,
  departedIds,
  departureOf,
  latestRecords,
  recordName,
  unfinishedElsewhere,
  untoldLiveMigrations,
} from "./nova_records.ts";
import type { ObservedMigration } from "./snapshot.ts";

const H = "h";

function rec(
  id: number | undefined,
  instanceUuid: string,
  status: string,
  o: Partial<ObservedMigration> = {},
): ObservedMigration {
  return {
    ...(id === undefined ? {} : { id }),
    instanceUuid,
    migrationType: "live-migration",
    status,
    sourceCompute: H,
    destCompute: "d",
    createdAt: "2026-12-02T10:00:00.000000",
    ...o,
  };
}

/** A server as the lists show it: on the host, at rest or migrating. */
function vm(id: string, taskState: string | null = null) {
  return { id, taskState };
}

Deno.test("latestRecords: per VM leaving the host, the latest record (created, then id) and the latest in progress", () => {
  const later = "2026-12-02T10:05:00.000000";
  const cases: Array<
    [string, ObservedMigration[], Record<string, [unknown, unknown]>]
  > = [
    ["none", [], {}],
    ["one running", [rec(1, "a", "running")], { a: [1, 1] }],
    ["a later error after a running one", [
      rec(1, "a", "running"),
      rec(2, "a", "error", { createdAt: later }),
    ], { a: [2, 1] }],
    ["same time: the higher id", [
      rec(3, "a", "completed"),
      rec(2, "a", "completed"),
    ], { a: [3, undefined] }],
    ["ids compared as numbers", [
      rec(10, "a", "completed"),
      rec(9, "a", "completed"),
    ], { a: [10, undefined] }],
    ["another source is ignored; no source counts as this host", [
      rec(1, "a", "running", { sourceCompute: "x" }),
      rec(2, "b", "queued", { sourceCompute: null }),
    ], { b: [2, 2] }],
  ];
  for (const [what, records, want] of cases) {
    const got = Object.fromEntries(
      [...latestRecords(records, H)].map((
        [id, r],
      ) => [id, [r.latest.id, r.inProgress?.id]]),
    );
    assert.deepEqual(got, want, what);
  }
});

Deno.test("arrivingRecords: migrations towards the host still in progress, the latest per VM", () => {
  const to = { sourceCompute: "x", destCompute: H };
  const got = arrivingRecords([
    rec(1, "a", "running", to),
    rec(2, "a", "queued", { ...to, createdAt: "2026-12-02T10:01:00" }),
    rec(3, "b", "completed", to),
    rec(4, "c", "running"),
    rec(5, "e", "running", { sourceCompute: H, destCompute: H }),
  ], H);
  assert.deepEqual([...got].map(([id, m]) => [id, m.id]), [["a", 2]]);
});

Deno.test("unfinishedElsewhere: VMs off the host whose record still holds the source (in progress, or finished awaiting confirm)", () => {
  const latest = latestRecords([
    rec(1, "a", "running"),
    rec(2, "b", "finished", { migrationType: "migration" }),
    rec(3, "c", "completed"),
    rec(4, "d", "running"),
  ], H);
  const got = unfinishedElsewhere(latest, new Set(["d"]));
  assert.deepEqual([...got.keys()].sort(), ["a", "b"]);
});

Deno.test("departedIds: an arriving VM is not looked up (its record says where it is); tracked and unfinished ones are", () => {
  const ids = departedIds(
    { outstandingInstances: ["a", "x"] },
    [vm("z")],
    [
      rec(1, "a", "running", { sourceCompute: "o", destCompute: H }),
      rec(2, "b", "running"),
    ],
    H,
  );
  assert.deepEqual(ids, ["b", "x"]);
});

Deno.test("untoldLiveMigrations: migrating VMs with no record while another copies, unless Nova already runs its limit", () => {
  const seen = {
    servers: [vm("a", "migrating"), vm("b", "migrating"), vm("c")],
    migrations: [rec(1, "a", "running")],
  };
  const cases: Array<[string, typeof seen, number | undefined, string[]]> = [
    ["b moves untold while a copies", seen, undefined, ["b"]],
    ["Nova's limit 1 copies: b is queued, as expected", seen, 1, []],
    ["a limit of 2 leaves b unexplained", seen, 2, ["b"]],
    [
      "nothing copies: nothing to wait behind",
      {
        ...seen,
        migrations: [rec(1, "a", "queued")],
      },
      undefined,
      [],
    ],
    [
      "every migrating VM has its record",
      {
        ...seen,
        migrations: [rec(1, "a", "running"), rec(2, "b", "queued")],
      },
      undefined,
      [],
    ],
  ];
  for (const [what, s, limit, want] of cases) {
    assert.deepEqual(untoldLiveMigrations(s, H, limit), want, what);
  }
});

Deno.test("recordName: its type and Nova's id, or the type alone for one known only from events", () => {
  assert.equal(recordName(rec(7, "a", "running")), "live-migration 7");
  assert.equal(
    recordName(rec(undefined, "a", "running", { migrationType: "migration" })),
    "migration",
  );
});

Deno.test("property: latestRecords' latest is never older than any record of its VM from the host", () => {
  fc.assert(fc.property(
    fc.array(
      fc.record({
        vm: fc.constantFrom("a", "b"),
        minute: fc.integer({ min: 0, max: 5 }),
        status: fc.constantFrom("queued", "running", "completed", "error"),
      }),
      { maxLength: 10 },
    ),
    (shapes) => {
      const records = shapes.map((x, i) =>
        rec(i, x.vm, x.status, {
          createdAt: `2026-12-02T10:0${x.minute}:00.000000`,
        })
      );
      for (const [id, r] of latestRecords(records, H)) {
        for (const m of records.filter((m) => m.instanceUuid === id)) {
          assert.ok(m.createdAt <= r.latest.createdAt);
          if (m.createdAt === r.latest.createdAt) {
            assert.ok(Number(m.id) <= Number(r.latest.id));
          }
        }
        assert.equal(
          r.inProgress === undefined,
          records.every((m) =>
            m.instanceUuid !== id || !["queued", "running"].includes(m.status)
          ),
        );
      }
    },
  ));
});

Deno.test("departureOf: where a record says the VM went, or undefined", () => {
  const r = (
    migrationType: string,
    status: string,
    destCompute: string | null = "d",
  ) => ({
    instanceUuid: "a",
    migrationType,
    status,
    destCompute,
  });
  const rows: Array<[string, ReturnType<typeof r>, string | undefined]> = [
    [
      "live completed: ACTIVE there",
      r("live-migration", "completed"),
      "ACTIVE",
    ],
    [
      "cold finished: VERIFY_RESIZE there",
      r("migration", "finished"),
      "VERIFY_RESIZE",
    ],
    ["cold confirmed: there", r("migration", "confirmed"), "ACTIVE"],
    [
      "a user's resize finished: VERIFY_RESIZE",
      r("resize", "finished"),
      "VERIFY_RESIZE",
    ],
    ["in progress: ask Nova", r("live-migration", "running"), undefined],
    ["failed: ask Nova (deleted?)", r("live-migration", "error"), undefined],
    [
      "no destination: ask Nova",
      r("live-migration", "completed", null),
      undefined,
    ],
  ];
  for (const [name, record, want] of rows) {
    const s = departureOf(record, 1024);
    assert.equal(s?.status, want, name);
    if (s !== undefined) assert.equal(s.host, "d", name);
  }
});

Deno.test("property: departureOf tells a place only for a finished record with a destination", () => {
  fc.assert(fc.property(
    fc.constantFrom("live-migration", "migration", "resize", "evacuation"),
    fc.constantFrom(
      "queued",
      "running",
      "post-migrating",
      "completed",
      "finished",
      "confirmed",
      "error",
      "reverted",
      "weird",
    ),
    fc.option(fc.constantFrom("d", "e"), { nil: null }),
    (migrationType, status, destCompute) => {
      const s = departureOf(
        { instanceUuid: "a", migrationType, status, destCompute },
        1,
      );
      const done = ["completed", "finished", "confirmed"].includes(status);
      assert.equal(s !== undefined, done && destCompute !== null);
      if (s !== undefined) assert.equal(s.host, destCompute);
    },
  ));
});
