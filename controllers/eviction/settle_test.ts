// What a deleted drain waits for: the drain's plan at limit 0
// (finalize.ts deletedPlan) and the stall bound on top of it (settle.ts).
import assert from "node:assert/strict";
import fc from "fast-check";
import type { EvictionStatusInFlightItem } from "../../models/mod.ts";
import type {
  DepartedServer,
  ObservedMigration,
  ObservedServer,
} from "../../openstack/informer/snapshot.ts";
import { deletedPlan } from "./finalize.ts";
import { describeSettling, type ProgressMarks, settleLook } from "./settle.ts";
import {
  at,
  entry,
  HOST,
  mig,
  novaTime,
  OPTIONS,
  T0,
  vm,
} from "../../tests/harness/plan_fixtures.ts";

const STALL = 60_000;

/** What the finalizer's first look counts and confirms for one observation. */
function deleted(input: {
  servers?: ObservedServer[];
  migrations?: ObservedMigration[];
  departed?: DepartedServer[];
  inFlight?: EvictionStatusInFlightItem[];
}) {
  const plan = deletedPlan({
    host: HOST,
    servers: input.servers ?? [],
    migrations: input.migrations ?? [],
    departed: input.departed ?? [],
    status: { startedAt: at(-600).toISOString(), inFlight: input.inFlight },
    now: T0,
    options: {
      ...OPTIONS,
      abortStuckMigrations: true,
      migrationTimeoutSeconds: 600,
    },
  });
  const look = settleLook({
    host: HOST,
    inFlight: plan.next.inFlight ?? [],
    migrations: input.migrations ?? [],
    marks: new Map(),
    nowMs: T0.getTime(),
    stalledAfterMs: STALL,
  });
  return { plan, counted: look.counted.map((s) => s.id) };
}

const migrating = (id: string) =>
  vm(id, 1024, { status: "MIGRATING", taskState: "migrating" });
const elsewhere = (id: string, status = "ACTIVE"): DepartedServer => ({
  id,
  server: vm(id, 1024, { host: "node043", status }),
});

Deno.test("deletedPlan + settleLook: what a deleted drain counts and confirms", () => {
  const cases: {
    name: string;
    input: Parameters<typeof deleted>[0];
    counted: string[];
    confirm?: string[];
  }[] = [
    {
      name: "running counts",
      input: {
        servers: [migrating("a")],
        migrations: [mig(1, "a", "running")],
      },
      counted: ["a"],
    },
    {
      name: "queued counts (never updated since long ago)",
      input: {
        servers: [migrating("a")],
        migrations: [mig(1, "a", "queued", { updatedAt: null })],
      },
      counted: ["a"],
    },
    {
      name: "an unknown status counts (until stalled)",
      input: { servers: [migrating("a")], migrations: [mig(1, "a", "weird")] },
      counted: ["a"],
    },
    {
      name: "someone else's migration in progress from the host counts",
      input: {
        departed: [elsewhere("a")],
        migrations: [mig(1, "a", "running", { destCompute: "node043" })],
      },
      counted: ["a"],
    },
    {
      name: "done and failed do not count",
      input: {
        servers: [vm("b")],
        departed: [elsewhere("a")],
        migrations: [
          mig(1, "a", "completed", { destCompute: "node043" }),
          mig(2, "b", "error"),
        ],
        inFlight: [entry("a", -100), entry("b", -100)],
      },
      counted: [],
    },
    {
      name: "towards the host does not count (not ours to settle)",
      input: {
        migrations: [
          mig(1, "a", "running", {
            sourceCompute: "other",
            destCompute: HOST,
          }),
        ],
      },
      counted: [],
    },
    {
      name: "our cold migration at finished counts and is confirmed",
      input: {
        departed: [elsewhere("a", "VERIFY_RESIZE")],
        migrations: [
          mig(1, "a", "finished", {
            migrationType: "migration",
            destCompute: "node043",
          }),
        ],
        inFlight: [entry("a", -100, { kind: "cold" })],
      },
      counted: ["a"],
      confirm: ["a"],
    },
    {
      name: "someone else's finished resize is neither counted nor confirmed",
      input: {
        departed: [elsewhere("a", "VERIFY_RESIZE")],
        migrations: [
          mig(1, "a", "finished", {
            migrationType: "resize",
            destCompute: "node043",
          }),
        ],
        inFlight: [entry("a", -100, { kind: "cold", adopted: true })],
      },
      counted: [],
    },
    {
      name: "a start of ours Nova shows nothing of yet counts (the 202 " +
        "comes before the record)",
      input: { servers: [vm("a")], inFlight: [entry("a", -0.2)] },
      counted: ["a"],
    },
    {
      name: "such a start past the grace period does not",
      input: { servers: [vm("a")], inFlight: [entry("a", -120)] },
      counted: [],
    },
    {
      name: "a start Nova took, its record listed, counts",
      input: {
        servers: [migrating("a")],
        migrations: [mig(1, "a", "queued", { createdAt: novaTime(0) })],
        inFlight: [entry("a", -0.2)],
      },
      counted: ["a"],
    },
  ];
  for (const c of cases) {
    const got = deleted(c.input);
    assert.deepEqual(got.counted, c.counted, c.name);
    assert.deepEqual(got.plan.confirmResize, c.confirm ?? [], c.name);
    assert.deepEqual(got.plan.start, [], `${c.name}: no start`);
    assert.deepEqual(got.plan.abort, [], `${c.name}: no abort`);
  }
});

Deno.test("deletedPlan: a stuck live migration of ours is reported, never aborted, whatever the policy", () => {
  const { plan, counted } = deleted({
    servers: [migrating("a")],
    migrations: [mig(7, "a", "running")],
    inFlight: [entry("a", -4000, { migrationId: "7" })],
  });
  assert.deepEqual(plan.stuck.map((s) => s.id), ["a"], "past the timeout");
  assert.deepEqual(plan.abort, []);
  assert.deepEqual(counted, ["a"]);
});

Deno.test("settleLook: a record without progress for the bound stops counting; progress counts it again", () => {
  const look = (m: ObservedMigration, marks: ProgressMarks, nowMs: number) =>
    settleLook({
      host: HOST,
      inFlight: [{ id: "a" }],
      migrations: [m],
      marks,
      nowMs,
      stalledAfterMs: STALL,
    });
  const m = mig(7, "a", "running");
  const first = look(m, new Map(), 0);
  assert.equal(first.counted.length, 1);
  const before = look(m, first.marks, STALL - 1);
  assert.equal(before.counted.length, 1, "not yet");
  const stalled = look(m, before.marks, STALL);
  assert.deepEqual(stalled.stalled.map((x) => x.record?.id), [7]);
  assert.equal(stalled.counted.length, 0);
  const moved = { ...m, updatedAt: novaTime(600) };
  const later = look(moved, stalled.marks, STALL + 1);
  assert.deepEqual(later.counted.map((x) => x.id), ["a"], "progress again");
  const next = look(
    { ...moved, status: "post-migrating" },
    later.marks,
    3 * STALL,
  );
  assert.equal(next.counted.length, 1, "a status change is progress");
  assert.equal(
    describeSettling(stalled.stalled),
    "migration 7 of a (running)",
  );
});

Deno.test("settleLook: one without a record in progress never stalls; a bad bound is a RangeError naming it", () => {
  const finished = mig(1, "a", "finished", { migrationType: "migration" });
  const got = settleLook({
    host: HOST,
    inFlight: [{ id: "a" }, { id: "b" }],
    migrations: [finished],
    marks: new Map(),
    nowMs: 10 * STALL,
    stalledAfterMs: STALL,
  });
  assert.deepEqual(got.counted.map((s) => s.id), ["a", "b"]);
  assert.equal(got.marks.size, 0);
  assert.equal(
    describeSettling(got.counted),
    "migration 1 of a (finished), b (not listed yet)",
  );
  assert.throws(
    () =>
      settleLook({
        host: HOST,
        inFlight: [],
        migrations: [],
        marks: new Map(),
        nowMs: 0,
        stalledAfterMs: 0,
      }),
    /stalledAfterMs must be a number > 0, got 0/,
  );
});

Deno.test("settleLook (property): counted and stalled split the in-flight VMs; only those with a record in progress are marked or stall", () => {
  const ids = ["a", "b", "c", "d", "e"];
  const record = fc.record({
    id: fc.integer({ min: 1, max: 30 }),
    vm: fc.constantFrom(...ids),
    status: fc.constantFrom("queued", "running", "completed", "weird"),
    source: fc.constantFrom(HOST, "other"),
    updated: fc.integer({ min: 0, max: 3 }),
  });
  fc.assert(
    fc.property(
      fc.uniqueArray(record, { selector: (r) => r.id, maxLength: 8 }),
      fc.subarray(ids),
      fc.array(
        fc.record({
          dt: fc.integer({ min: 0, max: 2 * STALL }),
          bump: fc.boolean(),
        }),
        { maxLength: 5 },
      ),
      (raw, inFlight, steps) => {
        let marks = new Map<string, { sig: string; sinceMs: number }>();
        let nowMs = 0;
        let records = raw;
        const lastChange = new Map<string, number>();
        for (const step of [{ dt: 0, bump: false }, ...steps]) {
          nowMs += step.dt;
          if (step.bump) {
            records = records.map((r) => ({ ...r, updated: r.updated + 1 }));
          }
          const migrations = records.map((r) =>
            mig(r.id, r.vm, r.status, {
              sourceCompute: r.source,
              updatedAt: novaTime(r.updated),
            })
          );
          const got = settleLook({
            host: HOST,
            inFlight: inFlight.map((id) => ({ id })),
            migrations,
            marks,
            nowMs,
            stalledAfterMs: STALL,
          });
          const counted = got.counted.map((s) => s.id);
          const stalled = got.stalled.map((s) => s.id);
          assert.deepEqual(
            [...counted, ...stalled].sort(),
            [...inFlight].sort(),
          );
          for (const s of got.stalled) {
            assert.ok(s.record !== undefined, "a stall has its record");
            assert.equal(s.record.sourceCompute, HOST);
          }
          for (const id of got.marks.keys()) assert.ok(inFlight.includes(id));
          for (const id of inFlight) {
            if (step.bump || !lastChange.has(id)) lastChange.set(id, nowMs);
          }
          // Nothing stalls before the bound has passed since it last moved.
          for (const id of stalled) {
            assert.ok(nowMs - (lastChange.get(id) ?? nowMs) >= STALL, id);
          }
          marks = got.marks;
        }
      },
    ),
  );
});
