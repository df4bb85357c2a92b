import assert from "node:assert/strict";
import fc from "fast-check";
import {
  CONDITION_NOVA_LIMITED,
  learnNovaLimit,
  observedNovaLimit,
  withNovaLimit,
} from "./nova_limit.ts";
import type { ObservedMigration } from "../../openstack/informer/snapshot.ts";

function rec(
  id: number,
  status: string,
  o: Partial<ObservedMigration> = {},
): ObservedMigration {
  return {
    id,
    instanceUuid: `vm${id}`,
    migrationType: "live-migration",
    status,
    sourceCompute: "h",
    createdAt: "2026-12-02T10:00:00.000000",
    ...o,
  };
}

Deno.test("observedNovaLimit: the copying count while Nova queues one from the host", () => {
  const cases: Array<[string, ObservedMigration[], number | undefined]> = [
    ["nothing", [], undefined],
    [
      "copying, none queued",
      [rec(1, "running"), rec(2, "preparing")],
      undefined,
    ],
    ["one copying, one queued", [rec(1, "running"), rec(2, "queued")], 1],
    ["two copying, two queued", [
      rec(1, "running"),
      rec(2, "post-migrating"),
      rec(3, "queued"),
      rec(4, "queued"),
    ], 2],
    ["queued, nothing copying (between two)", [rec(1, "queued")], undefined],
    [
      "accepted is not Nova's queue",
      [rec(1, "running"), rec(2, "accepted")],
      undefined,
    ],
    ["finished ones do not count", [
      rec(1, "completed"),
      rec(2, "running"),
      rec(3, "queued"),
      rec(4, "error"),
    ], 1],
    ["another host's queue says nothing of this one", [
      rec(1, "running"),
      rec(2, "queued", { sourceCompute: "other" }),
    ], undefined],
    ["cold migrations are not under this limit", [
      rec(1, "migrating", { migrationType: "migration" }),
      rec(2, "queued"),
    ], undefined],
  ];
  for (const [what, records, want] of cases) {
    assert.equal(observedNovaLimit(records, "h"), want, what);
  }
});

Deno.test("learnNovaLimit: a look's limit, the higher of it and a fresh memo's; lapses after the TTL", () => {
  const ttl = 1000;
  const cases: Array<
    [
      string,
      Parameters<typeof learnNovaLimit>[0],
      number | undefined,
      number,
      ReturnType<typeof learnNovaLimit>,
    ]
  > = [
    ["nothing known, nothing seen", undefined, undefined, 0, undefined],
    ["first seen", undefined, 2, 5, { limit: 2, seenAtMs: 5 }],
    ["kept while fresh", { limit: 2, seenAtMs: 0 }, undefined, 999, {
      limit: 2,
      seenAtMs: 0,
    }],
    ["lapsed", { limit: 2, seenAtMs: 0 }, undefined, 1000, undefined],
    [
      "a lower look does not lower a fresh memo",
      { limit: 2, seenAtMs: 0 },
      1,
      500,
      { limit: 2, seenAtMs: 500 },
    ],
    ["a higher look raises it", { limit: 1, seenAtMs: 0 }, 3, 500, {
      limit: 3,
      seenAtMs: 500,
    }],
    [
      "after a lapse the look stands alone",
      { limit: 3, seenAtMs: 0 },
      1,
      5000,
      { limit: 1, seenAtMs: 5000 },
    ],
  ];
  for (const [what, memo, seen, now, want] of cases) {
    assert.deepEqual(learnNovaLimit(memo, seen, now, ttl), want, what);
  }
});

Deno.test("observedNovaLimit: defined exactly when one is queued and some copy; never above the copying ones (property)", () => {
  const statuses = [
    "accepted",
    "queued",
    "preparing",
    "running",
    "post-migrating",
    "completed",
    "error",
    "cancelled",
  ];
  fc.assert(fc.property(
    fc.array(
      fc.record({
        status: fc.constantFrom(...statuses),
        host: fc.constantFrom("h", "other"),
        live: fc.boolean(),
      }),
      { maxLength: 12 },
    ),
    (shapes) => {
      const records = shapes.map((x, i) =>
        rec(i, x.status, {
          sourceCompute: x.host,
          migrationType: x.live ? "live-migration" : "migration",
        })
      );
      const mine = shapes.filter((x) => x.host === "h" && x.live);
      const queued = mine.filter((x) => x.status === "queued").length;
      const copying = mine.filter((x) =>
        ["preparing", "running", "post-migrating"].includes(x.status)
      ).length;
      const seen = observedNovaLimit(records, "h");
      assert.equal(seen, queued > 0 && copying > 0 ? copying : undefined);
    },
  ));
});

Deno.test("withNovaLimit: field and condition while known, False once lapsed, nothing before", () => {
  const now = new Date("2026-12-02T10:00:00Z");
  const known = withNovaLimit(
    { effectiveLimit: 4 },
    { limit: 1, seenAtMs: 0 },
    "h",
    now,
  );
  assert.equal(known.status.novaLiveMigrationLimit, 1);
  assert.equal(known.changed, true);
  const c = known.status.conditions?.find((x) =>
    x.type === CONDITION_NOVA_LIMITED
  );
  assert.equal(c?.status, "True");
  assert.equal(c?.reason, "NovaQueues");
  assert.equal(
    c?.message,
    "Nova runs at most 1 live migration(s) at a time from host h (nova.conf [DEFAULT] max_concurrent_live_migrations) and queued more; evictor starts no more than that here (its own limit: 4), leaving the rest of the cluster budget to other hosts",
  );
  const again = withNovaLimit(
    known.status,
    { limit: 1, seenAtMs: 0 },
    "h",
    now,
  );
  assert.equal(again.changed, false);
  const lapsed = withNovaLimit(again.status, undefined, "h", now);
  assert.equal(lapsed.status.novaLiveMigrationLimit, undefined);
  assert.equal(
    lapsed.status.conditions?.find((x) => x.type === CONDITION_NOVA_LIMITED)
      ?.status,
    "False",
  );
  assert.deepEqual(withNovaLimit({ effectiveLimit: 4 }, undefined, "h", now), {
    status: { effectiveLimit: 4 },
    changed: false,
  });
});
