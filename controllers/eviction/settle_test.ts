import assert from "node:assert/strict";
import fc from "fast-check";
import type { Migration } from "../../openstack/mod.ts";
import { settleLook, unlistedStarts } from "./settle.ts";

const HOST = "h";

function rec(over: Partial<Migration> & { id: number }): Migration {
  return {
    uuid: `u${over.id}`,
    instanceUuid: `vm${over.id}`,
    migrationType: "live-migration",
    status: "running",
    sourceCompute: HOST,
    destCompute: "d",
    sourceNode: HOST,
    destNode: "d",
    destHost: null,
    createdAt: "2026-01-01T00:00:00",
    updatedAt: "2026-01-01T00:00:05",
    ...over,
  };
}

const STALL = 60_000;

function look(
  migrations: Migration[],
  options: {
    ourCold?: string[];
    marks?: Map<number, { sig: string; sinceMs: number }>;
    nowMs?: number;
  } = {},
) {
  return settleLook({
    host: HOST,
    migrations,
    ourCold: new Set(options.ourCold ?? []),
    marks: options.marks ?? new Map(),
    nowMs: options.nowMs ?? 0,
    stalledAfterMs: STALL,
  });
}

Deno.test("settleLook: what counts, what is confirmed, what is stalled", () => {
  const cases: {
    name: string;
    records: Migration[];
    ourCold?: string[];
    counted: number[];
    confirm?: string[];
  }[] = [
    { name: "running counts", records: [rec({ id: 1 })], counted: [1] },
    {
      name: "queued counts (never updated since long ago)",
      records: [rec({ id: 1, status: "queued", updatedAt: null })],
      counted: [1],
    },
    {
      name: "an unknown status counts (until stalled)",
      records: [rec({ id: 1, status: "weird" })],
      counted: [1],
    },
    {
      name: "done and failed do not count",
      records: [
        rec({ id: 1, status: "completed" }),
        rec({ id: 2, status: "error" }),
      ],
      counted: [],
    },
    {
      name: "towards the host does not count (not ours to settle)",
      records: [rec({ id: 1, sourceCompute: "other", destCompute: HOST })],
      counted: [],
    },
    {
      name: "our cold migration at finished counts and is confirmed",
      records: [rec({ id: 1, migrationType: "migration", status: "finished" })],
      ourCold: ["vm1"],
      counted: [1],
      confirm: ["vm1"],
    },
    {
      name: "someone else's finished resize is neither counted nor confirmed",
      records: [rec({ id: 1, migrationType: "resize", status: "finished" })],
      counted: [],
    },
  ];
  for (const c of cases) {
    const got = look(c.records, { ourCold: c.ourCold ?? [] });
    assert.deepEqual(got.counted.map((m) => m.id), c.counted, c.name);
    assert.deepEqual(got.confirm, c.confirm ?? [], c.name);
    assert.deepEqual(got.stalled, [], c.name);
  }
});

Deno.test("settleLook: a record without progress for the bound stops counting; progress counts it again", () => {
  const m = rec({ id: 7 });
  const first = look([m], { nowMs: 0 });
  assert.equal(first.counted.length, 1);
  const before = look([m], { marks: first.marks, nowMs: STALL - 1 });
  assert.equal(before.counted.length, 1, "not yet");
  const at = look([m], { marks: before.marks, nowMs: STALL });
  assert.deepEqual(at.stalled.map((x) => x.id), [7]);
  assert.equal(at.counted.length, 0);
  const moved = { ...m, updatedAt: "2026-01-01T00:10:00" };
  const later = look([moved], { marks: at.marks, nowMs: STALL + 1 });
  assert.deepEqual(later.counted.map((x) => x.id), [7], "progress again");
  const status = { ...moved, status: "post-migrating" };
  const next = look([status], { marks: later.marks, nowMs: 3 * STALL });
  assert.equal(next.counted.length, 1, "a status change is progress");
});

Deno.test("settleLook: a bad bound is a RangeError naming it", () => {
  assert.throws(
    () =>
      settleLook({
        host: HOST,
        migrations: [],
        ourCold: new Set(),
        marks: new Map(),
        nowMs: 0,
        stalledAfterMs: 0,
      }),
    /stalledAfterMs must be a number > 0, got 0/,
  );
});

Deno.test("settleLook (property): counted and stalled split the in-progress records from the host; marks keep only those", () => {
  const status = fc.constantFrom(
    "queued",
    "running",
    "completed",
    "error",
    "finished",
    "weird",
  );
  const record = fc.record({
    id: fc.integer({ min: 1, max: 30 }),
    status,
    migrationType: fc.constantFrom("live-migration", "migration", "resize"),
    sourceCompute: fc.constantFrom(HOST, "other"),
    updatedAt: fc.constantFrom(null, "2026-01-01T00:00:05"),
  });
  fc.assert(
    fc.property(
      fc.uniqueArray(record, { selector: (r) => r.id, maxLength: 12 }),
      fc.array(fc.integer({ min: 0, max: 5 * STALL }), { maxLength: 4 }),
      (raw, times) => {
        const records = raw.map((r) => rec(r));
        let marks = new Map<number, { sig: string; sinceMs: number }>();
        let nowMs = 0;
        for (const dt of [0, ...times]) {
          nowMs += dt;
          const got = settleLook({
            host: HOST,
            migrations: records,
            ourCold: new Set(records.map((r) => r.instanceUuid)),
            marks,
            nowMs,
            stalledAfterMs: STALL,
          });
          const ids = (xs: Migration[]) => xs.map((m) => m.id);
          const counted = new Set(ids(got.counted));
          for (const id of ids(got.stalled)) assert.ok(!counted.has(id));
          for (const m of [...got.counted, ...got.stalled]) {
            assert.equal(m.sourceCompute, HOST);
          }
          // Nothing stalls before the bound has passed since the first look.
          if (nowMs < STALL) assert.equal(got.stalled.length, 0);
          for (const id of got.marks.keys()) {
            assert.ok(counted.has(id) || ids(got.stalled).includes(id));
          }
          marks = got.marks;
        }
      },
    ),
  );
});

Deno.test("unlistedStarts: a fresh start of ours without its record yet keeps the drain unsettled", () => {
  const now = Date.parse("2026-01-01T00:01:00Z");
  const cases: {
    name: string;
    inFlight: { id: string; startedAt: string; adopted?: boolean }[];
    migrations: Migration[];
    want: string[];
  }[] = [
    {
      name: "no record yet (Nova writes it after the 202)",
      inFlight: [{ id: "vm1", startedAt: "2026-01-01T00:00:59.800Z" }],
      migrations: [],
      want: ["vm1"],
    },
    {
      name: "its record is listed (whole seconds, created in the same second)",
      inFlight: [{ id: "vm1", startedAt: "2026-01-01T00:00:59.800Z" }],
      migrations: [rec({ id: 1, createdAt: "2026-01-01T00:00:59.000000" })],
      want: [],
    },
    {
      name: "only an older record of the VM: this start is still unlisted",
      inFlight: [{ id: "vm1", startedAt: "2026-01-01T00:00:59.800Z" }],
      migrations: [rec({ id: 1, createdAt: "2026-01-01T00:00:10.000000" })],
      want: ["vm1"],
    },
    {
      name: "older than the grace period: the record would show by now",
      inFlight: [{ id: "vm1", startedAt: "2026-01-01T00:00:00Z" }],
      migrations: [],
      want: [],
    },
    {
      name: "adopted entries are Nova's to show, not ours to assume",
      inFlight: [{
        id: "vm1",
        startedAt: "2026-01-01T00:00:59Z",
        adopted: true,
      }],
      migrations: [],
      want: [],
    },
  ];
  for (const c of cases) {
    assert.deepEqual(
      unlistedStarts({
        host: HOST,
        inFlight: c.inFlight,
        migrations: c.migrations,
        nowMs: now,
        graceMs: 30_000,
      }),
      c.want,
      c.name,
    );
  }
});
