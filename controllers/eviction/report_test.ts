import assert from "node:assert/strict";
import fc from "fast-check";
import { type Counter, type Histogram, Registry } from "prom-client";
import { createLogger, silentLogger } from "../../framework/logger.ts";
import type { EvictionStatus } from "../../models/mod.ts";
import {
  at,
  emptyPlan,
  entry,
  HOST,
  T0,
} from "../../tests/harness/plan_fixtures.ts";
import { EvictionMetrics } from "./metrics.ts";
import type { Plan } from "./plan_types.ts";
import { type PendingEvent, reportPass } from "./report.ts";

function run(
  p: Plan,
  before: EvictionStatus = {},
  next: EvictionStatus = p.next,
  now: Date = T0,
) {
  const metrics = new EvictionMetrics(new Registry());
  const out = reportPass(
    { host: HOST, plan: p, before, next, now },
    metrics,
    silentLogger(),
  );
  return { ...out, metrics };
}

/** A counter's values by its `kind` label (zero series left out). */
async function byKind(c: Counter<"kind">): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await c.get()).values) {
    if (v.value !== 0) out[String(v.labels.kind)] = v.value;
  }
  return out;
}

/** A histogram's observation count and sum, for one `kind` or unlabelled. */
async function observed(
  h: Histogram<string>,
  kind?: string,
): Promise<{ count: number; sum: number }> {
  let count = 0;
  let sum = 0;
  for (const v of (await h.get()).values) {
    if (kind !== undefined && v.labels.kind !== kind) continue;
    if (v.metricName?.endsWith("_count")) count += v.value;
    if (v.metricName?.endsWith("_sum")) sum += v.value;
  }
  return { count, sum };
}

Deno.test("reportPass: the Events each outcome of a plan produces", () => {
  const rows: {
    name: string;
    plan: Plan;
    before?: EvictionStatus;
    want: PendingEvent[];
  }[] = [
    { name: "an empty plan says nothing", plan: emptyPlan(), want: [] },
    {
      name: "a transient failure with retries left",
      plan: emptyPlan({
        failed: [{
          id: "vm-a",
          reason: "no valid host",
          attempts: 1,
          exhausted: false,
          transient: true,
        }],
      }),
      want: [{
        type: "Warning",
        reason: "MigrationFailed",
        message: "vm-a (attempt 1, transient): no valid host",
      }],
    },
    {
      name: "a permanent failure out of attempts",
      plan: emptyPlan({
        failed: [{
          id: "vm-b",
          reason: "VM in ERROR",
          attempts: 3,
          exhausted: true,
          transient: false,
        }],
      }),
      want: [{
        type: "Warning",
        reason: "MigrationFailed",
        message: "vm-b (attempt 3, permanent, no more retries): VM in ERROR",
      }],
    },
    {
      name: "a finished migration",
      plan: emptyPlan({ done: ["vm-c"] }),
      want: [{
        type: "Normal",
        reason: "MigrationsCompleted",
        message:
          `1 migration completed, left ${HOST}: vm-c (0 in flight, 0 outstanding, 0 migrated)`,
        series: true,
      }],
    },
    {
      name: "a deleted VM",
      plan: emptyPlan({ gone: ["vm-d"] }),
      want: [{
        type: "Normal",
        reason: "InstanceGone",
        message: "vm-d was deleted during the drain",
      }],
    },
    {
      name: "a VM moved by someone else",
      plan: emptyPlan({ movedByOthers: ["vm-e"] }),
      want: [{
        type: "Normal",
        reason: "InstanceMovedAway",
        message:
          `vm-e left host ${HOST}, moved by someone else (not counted as migrated)`,
      }],
    },
    {
      name: "a newly found VM on the host joins the queue",
      plan: emptyPlan({ newlyFound: ["vm-f"] }),
      want: [{
        type: "Normal",
        reason: "InstanceFound",
        message: `vm-f appeared on host ${HOST}; it joins the queue`,
      }],
    },
    {
      name: "a newly found VM still arriving is drained once it lands",
      plan: emptyPlan({ newlyFound: ["vm-g"], arriving: ["vm-g"] }),
      want: [{
        type: "Normal",
        reason: "InstanceFound",
        message:
          `vm-g is arriving on host ${HOST}; it is drained once it lands`,
      }],
    },
    {
      name: "a newly skipped VM",
      plan: emptyPlan({ skipped: [{ id: "vm-h", reason: "SHELVED" }] }),
      want: [{
        type: "Warning",
        reason: "InstanceSkipped",
        message: "vm-h: SHELVED",
      }],
    },
    {
      name: "a VM skipped already before the pass is not reported again",
      plan: emptyPlan({
        skipped: [
          { id: "vm-h", reason: "SHELVED" },
          { id: "vm-i", reason: "RESCUE" },
        ],
      }),
      before: { skipped: [{ id: "vm-h", reason: "SHELVED" }] },
      want: [{
        type: "Warning",
        reason: "InstanceSkipped",
        message: "vm-i: RESCUE",
      }],
    },
    {
      name: "a stuck migration",
      plan: emptyPlan({
        stuck: [{
          id: "vm-j",
          kind: "cold",
          startedAt: at(-900).toISOString(),
          elapsedSeconds: 900,
        }],
      }),
      want: [{
        type: "Warning",
        reason: "MigrationStuck",
        message: `cold migration of vm-j in flight since ${
          at(-900).toISOString()
        }`,
      }],
    },
    {
      name:
        "several outcomes: failures, finishes, gone, moved, found, skipped, stuck in that order",
      plan: emptyPlan({
        stuck: [{
          id: "s",
          kind: "live",
          startedAt: "2026-11-29T11:00:00.000Z",
          elapsedSeconds: 3600,
        }],
        skipped: [{ id: "k", reason: "SUSPENDED" }],
        newlyFound: ["n"],
        movedByOthers: ["m"],
        gone: ["g"],
        done: ["d"],
        failed: [{
          id: "f",
          reason: "r",
          attempts: 2,
          exhausted: false,
          transient: false,
        }],
      }),
      want: [
        {
          type: "Warning",
          reason: "MigrationFailed",
          message: "f (attempt 2, permanent): r",
        },
        {
          type: "Normal",
          reason: "MigrationsCompleted",
          message:
            `1 migration completed, left ${HOST}: d (0 in flight, 0 outstanding, 0 migrated)`,
          series: true,
        },
        {
          type: "Normal",
          reason: "InstanceGone",
          message: "g was deleted during the drain",
        },
        {
          type: "Normal",
          reason: "InstanceMovedAway",
          message:
            `m left host ${HOST}, moved by someone else (not counted as migrated)`,
        },
        {
          type: "Normal",
          reason: "InstanceFound",
          message: `n appeared on host ${HOST}; it joins the queue`,
        },
        {
          type: "Warning",
          reason: "InstanceSkipped",
          message: "k: SUSPENDED",
        },
        {
          type: "Warning",
          reason: "MigrationStuck",
          message:
            "live migration of s in flight since 2026-11-29T11:00:00.000Z",
        },
      ],
    },
  ];
  for (const row of rows) {
    const got = run(row.plan, row.before ?? {});
    assert.deepEqual(got.events, row.want, row.name);
    assert.equal(got.finishedNow, false, `${row.name}: finishedNow`);
    assert.equal(got.reopened, false, `${row.name}: reopened`);
  }
});

Deno.test("reportPass: the kind label a failure or a finish is counted under", async () => {
  const rows: {
    name: string;
    plan: Plan;
    before: EvictionStatus;
    want: { failed: Record<string, number>; succeeded: Record<string, number> };
  }[] = [
    {
      name: "in flight before the pass: its recorded kind",
      plan: emptyPlan({
        done: ["vm-a"],
        failed: [{
          id: "vm-b",
          reason: "r",
          attempts: 1,
          exhausted: false,
          transient: true,
        }],
      }),
      before: {
        inFlight: [entry("vm-a", -60, { kind: "cold" }), entry("vm-b", -30)],
      },
      want: { failed: { live: 1 }, succeeded: { cold: 1 } },
    },
    {
      name: "started this pass (a refused start): the start's kind",
      plan: emptyPlan({
        start: [{ id: "vm-c", kind: "cold", ramMb: 2048, attempt: 1 }],
        failed: [{
          id: "vm-c",
          reason: "refused",
          attempts: 1,
          exhausted: false,
          transient: false,
        }],
      }),
      before: {},
      want: { failed: { cold: 1 }, succeeded: {} },
    },
    {
      name: "the in-flight record wins over a start of the same VM",
      plan: emptyPlan({
        start: [{ id: "vm-d", kind: "cold", ramMb: 2048, attempt: 2 }],
        failed: [{
          id: "vm-d",
          reason: "r",
          attempts: 2,
          exhausted: false,
          transient: true,
        }],
      }),
      before: { inFlight: [entry("vm-d", -10, { kind: "live" })] },
      want: { failed: { live: 1 }, succeeded: {} },
    },
    {
      name: "known to neither (a VM newly in ERROR, a lost record): unknown",
      plan: emptyPlan({
        done: ["vm-e"],
        failed: [{
          id: "vm-f",
          reason: "ERROR",
          attempts: 1,
          exhausted: true,
          transient: false,
        }],
      }),
      before: {},
      want: { failed: { unknown: 1 }, succeeded: { unknown: 1 } },
    },
    {
      name: "each outcome counted once per VM",
      plan: emptyPlan({ done: ["vm-g", "vm-h", "vm-i"] }),
      before: {
        inFlight: [
          entry("vm-g", -5),
          entry("vm-h", -5),
          entry("vm-i", -5, { kind: "cold" }),
        ],
      },
      want: { failed: {}, succeeded: { live: 2, cold: 1 } },
    },
  ];
  for (const row of rows) {
    const { metrics } = run(row.plan, row.before);
    assert.deepEqual(
      await byKind(metrics.failed),
      row.want.failed,
      `${row.name}: failed`,
    );
    assert.deepEqual(
      await byKind(metrics.succeeded),
      row.want.succeeded,
      `${row.name}: succeeded`,
    );
  }
});

Deno.test("reportPass: the migration duration observed for a finished VM", async () => {
  const rows: {
    name: string;
    before: EvictionStatus;
    now: Date;
    want: { kind: string; count: number; sum: number };
  }[] = [
    {
      name: "from its in-flight start to the pass",
      before: { inFlight: [entry("vm-a", -90)] },
      now: T0,
      want: { kind: "live", count: 1, sum: 90 },
    },
    {
      name: "labelled with the recorded kind",
      before: { inFlight: [entry("vm-a", -30, { kind: "cold" })] },
      now: at(15),
      want: { kind: "cold", count: 1, sum: 45 },
    },
    {
      name: "a start after the pass's time (clock skew) counts as 0 s",
      before: { inFlight: [entry("vm-a", 20)] },
      now: T0,
      want: { kind: "live", count: 1, sum: 0 },
    },
    {
      name: "no in-flight record: nothing observed",
      before: {},
      now: T0,
      want: { kind: "unknown", count: 0, sum: 0 },
    },
    {
      name: "an unparsable start: nothing observed",
      before: {
        inFlight: [{ id: "vm-a", kind: "live", startedAt: "not a time" }],
      },
      now: T0,
      want: { kind: "live", count: 0, sum: 0 },
    },
  ];
  for (const row of rows) {
    const { metrics } = run(
      emptyPlan({ done: ["vm-a"] }),
      row.before,
      {},
      row.now,
    );
    assert.deepEqual(
      await observed(metrics.migrationDuration, row.want.kind),
      { count: row.want.count, sum: row.want.sum },
      row.name,
    );
    assert.deepEqual(
      await observed(metrics.migrationDuration),
      { count: row.want.count, sum: row.want.sum },
      `${row.name}: no other kind observed`,
    );
  }
});

Deno.test("reportPass: finishedNow and reopened follow the finishedAt transition", async () => {
  const done = at(-10).toISOString();
  const rows: {
    name: string;
    before: EvictionStatus;
    next: EvictionStatus;
    want: {
      finishedNow: boolean;
      reopened: boolean;
      events: PendingEvent[];
      drainSeconds: number[];
    };
  }[] = [
    {
      name: "not finished before nor after",
      before: {},
      next: { startedAt: at(-600).toISOString(), outstandingCount: 3 },
      want: {
        finishedNow: false,
        reopened: false,
        events: [],
        drainSeconds: [],
      },
    },
    {
      name: "finished this pass: DrainFinished and the drain duration",
      before: { startedAt: at(-600).toISOString() },
      next: {
        startedAt: at(-600).toISOString(),
        finishedAt: T0.toISOString(),
        migratedCount: 7,
      },
      want: {
        finishedNow: true,
        reopened: false,
        events: [{
          type: "Normal",
          reason: "DrainFinished",
          message: `host ${HOST} is empty: 7 VMs migrated`,
        }],
        drainSeconds: [600],
      },
    },
    {
      name:
        "finished this pass without counts or start: 0 migrated, no duration",
      before: {},
      next: { finishedAt: T0.toISOString() },
      want: {
        finishedNow: true,
        reopened: false,
        events: [{
          type: "Normal",
          reason: "DrainFinished",
          message: `host ${HOST} is empty: 0 VMs migrated`,
        }],
        drainSeconds: [],
      },
    },
    {
      name: "finished with a start after the pass's time: duration 0",
      before: {},
      next: { startedAt: at(30).toISOString(), finishedAt: T0.toISOString() },
      want: {
        finishedNow: true,
        reopened: false,
        events: [{
          type: "Normal",
          reason: "DrainFinished",
          message: `host ${HOST} is empty: 0 VMs migrated`,
        }],
        drainSeconds: [0],
      },
    },
    {
      name: "finished before and still: nothing new",
      before: { finishedAt: done },
      next: { finishedAt: done, migratedCount: 7 },
      want: {
        finishedNow: false,
        reopened: false,
        events: [],
        drainSeconds: [],
      },
    },
    {
      name: "finished before, not any more: DrainReopened",
      before: { finishedAt: done, migratedCount: 7 },
      next: { migratedCount: 7, outstandingCount: 2 },
      want: {
        finishedNow: false,
        reopened: true,
        events: [{
          type: "Warning",
          reason: "DrainReopened",
          message:
            `host ${HOST} is not empty any more: 2 VMs on or heading to it; draining again`,
        }],
        drainSeconds: [],
      },
    },
    {
      name: "reopened without an outstanding count: 0 VMs",
      before: { finishedAt: done },
      next: {},
      want: {
        finishedNow: false,
        reopened: true,
        events: [{
          type: "Warning",
          reason: "DrainReopened",
          message:
            `host ${HOST} is not empty any more: 0 VMs on or heading to it; draining again`,
        }],
        drainSeconds: [],
      },
    },
  ];
  for (const row of rows) {
    const got = run(emptyPlan({ next: row.next }), row.before, row.next, T0);
    assert.equal(
      got.finishedNow,
      row.want.finishedNow,
      `${row.name}: finishedNow`,
    );
    assert.equal(got.reopened, row.want.reopened, `${row.name}: reopened`);
    assert.deepEqual(got.events, row.want.events, `${row.name}: events`);
    const d = await observed(got.metrics.drainDuration);
    assert.deepEqual(
      d,
      {
        count: row.want.drainSeconds.length,
        sum: row.want.drainSeconds.reduce((a, b) => a + b, 0),
      },
      `${row.name}: drain duration`,
    );
  }
});

Deno.test("reportPass: a failure is logged as a warning naming the VM and its attempts; a finish at info", () => {
  const lines: string[] = [];
  const log = createLogger({
    level: "info",
    destination: { write: (l) => lines.push(l) },
  });
  const p = emptyPlan({
    done: ["vm-ok"],
    failed: [{
      id: "vm-x",
      reason: "no valid host",
      attempts: 2,
      exhausted: true,
      transient: true,
    }],
  });
  reportPass(
    { host: HOST, plan: p, before: {}, next: {}, now: T0 },
    new EvictionMetrics(new Registry()),
    log,
  );
  const parsed = lines.map((l) => JSON.parse(l));
  assert.equal(parsed.length, 2, "a line for the failure, one for the finish");
  // the finish's own record (its Event is the pass's summary)
  assert.deepEqual(
    parsed.filter((l) => l.msg === "migration finished").map((l) => [
      l.level,
      l.serverId,
    ]),
    [["info", "vm-ok"]],
  );
  parsed.splice(parsed.findIndex((l) => l.msg === "migration finished"), 1);
  assert.equal(parsed[0].level, "warn");
  assert.equal(parsed[0].msg, "migration failed: no valid host");
  assert.equal(parsed[0].serverId, "vm-x");
  assert.equal(parsed[0].attempts, 2);
  assert.equal(parsed[0].exhausted, true);
});

// Property: whatever the plan, one Event per reported outcome (skips only
// when new), the drain's end at most once and never both ways, and the
// counters counting exactly the failures and finishes.
Deno.test("reportPass: Events and counters match the plan's outcomes (property)", async () => {
  const id = fc.constantFrom("a", "b", "c", "d", "e", "f");
  const ids = fc.uniqueArray(id, { maxLength: 4 });
  const kind = fc.constantFrom("live" as const, "cold" as const);
  const iso = fc.option(fc.integer({ min: -7200, max: 60 }), { nil: undefined })
    .map((s) => (s === undefined ? undefined : at(s).toISOString()));
  const arb = fc.record({
    failed: fc.uniqueArray(
      fc.record({
        id,
        reason: fc.string({ maxLength: 8 }),
        attempts: fc.integer({ min: 1, max: 5 }),
        exhausted: fc.boolean(),
        transient: fc.boolean(),
      }),
      { selector: (f) => f.id, maxLength: 4 },
    ),
    done: ids,
    gone: ids,
    movedByOthers: ids,
    newlyFound: ids,
    arriving: ids,
    skipped: fc.uniqueArray(
      fc.record({ id, reason: fc.string({ maxLength: 8 }) }),
      { selector: (s) => s.id, maxLength: 4 },
    ),
    skippedBefore: ids,
    stuck: fc.uniqueArray(
      fc.record({
        id,
        kind,
        startedAt: fc.constant(at(-3600).toISOString()),
        elapsedSeconds: fc.constant(3600),
      }),
      { selector: (s) => s.id, maxLength: 3 },
    ),
    inFlightBefore: fc.uniqueArray(
      fc.record({ id, kind, startedAt: fc.constant(at(-60).toISOString()) }),
      { selector: (e) => e.id, maxLength: 4 },
    ),
    finishedBefore: iso,
    finishedAfter: iso,
    startedAt: iso,
  });
  await fc.assert(
    fc.asyncProperty(arb, async (a) => {
      const p = emptyPlan({
        failed: a.failed,
        done: a.done,
        gone: a.gone,
        movedByOthers: a.movedByOthers,
        newlyFound: a.newlyFound,
        arriving: a.arriving,
        skipped: a.skipped,
        stuck: a.stuck,
      });
      const before: EvictionStatus = {
        inFlight: a.inFlightBefore,
        skipped: a.skippedBefore.map((s) => ({ id: s, reason: "earlier" })),
        ...(a.finishedBefore === undefined
          ? {}
          : { finishedAt: a.finishedBefore }),
      };
      const next: EvictionStatus = {
        ...(a.finishedAfter === undefined
          ? {}
          : { finishedAt: a.finishedAfter }),
        ...(a.startedAt === undefined ? {} : { startedAt: a.startedAt }),
      };
      const got = run(p, before, next, T0);
      const count = (reason: string) =>
        got.events.filter((e) => e.reason === reason).length;
      const newSkips = a.skipped.filter((s) => !a.skippedBefore.includes(s.id));
      assert.equal(count("MigrationFailed"), a.failed.length);
      // one summary for the pass's finished migrations, naming them all
      assert.equal(count("MigrationsCompleted"), a.done.length > 0 ? 1 : 0);
      const completed = got.events.find((e) =>
        e.reason === "MigrationsCompleted"
      );
      for (const id of a.done) assert.ok(completed?.message.includes(id));
      assert.equal(count("InstanceGone"), a.gone.length);
      assert.equal(count("InstanceMovedAway"), a.movedByOthers.length);
      assert.equal(count("InstanceFound"), a.newlyFound.length);
      assert.equal(count("InstanceSkipped"), newSkips.length);
      assert.equal(count("MigrationStuck"), a.stuck.length);
      const wasDone = a.finishedBefore !== undefined;
      const isDone = a.finishedAfter !== undefined;
      assert.equal(got.finishedNow, !wasDone && isDone);
      assert.equal(got.reopened, wasDone && !isDone);
      assert.ok(!(got.finishedNow && got.reopened), "never both");
      assert.equal(count("DrainFinished"), got.finishedNow ? 1 : 0);
      assert.equal(count("DrainReopened"), got.reopened ? 1 : 0);
      assert.equal(
        got.events.length,
        a.failed.length + (a.done.length > 0 ? 1 : 0) + a.gone.length +
          a.movedByOthers.length + a.newlyFound.length + newSkips.length +
          a.stuck.length + (got.finishedNow ? 1 : 0) + (got.reopened ? 1 : 0),
        "no other Event",
      );
      const drainEnd = got.events.findIndex((e) =>
        e.reason === "DrainFinished" || e.reason === "DrainReopened"
      );
      if (drainEnd !== -1) {
        assert.equal(
          drainEnd,
          got.events.length - 1,
          "the drain's end is last",
        );
      }
      const sum = (r: Record<string, number>) =>
        Object.values(r).reduce((x, y) => x + y, 0);
      assert.equal(sum(await byKind(got.metrics.failed)), a.failed.length);
      assert.equal(sum(await byKind(got.metrics.succeeded)), a.done.length);
      const timed = a.done.filter((d) =>
        a.inFlightBefore.some((e) => e.id === d)
      ).length;
      assert.equal(
        (await observed(got.metrics.migrationDuration)).count,
        timed,
        "a duration for each finish with an in-flight start",
      );
      assert.equal(
        (await observed(got.metrics.drainDuration)).count,
        got.finishedNow && a.startedAt !== undefined ? 1 : 0,
      );
    }),
    { numRuns: 200 },
  );
});

Deno.test("reportPass: NotConverging once per copy, requests with who asked, VmLeftForPerson at maxAbortedTries", () => {
  const gib = 1024 ** 3;
  const report = (id: string, migrationId: string) => ({
    id,
    migrationId,
    why: "progress" as const,
    remainingBytes: 2 * gib,
    totalBytes: 16 * gib,
    sinceSeconds: 10,
    onTimeout: "Abort" as const,
    actAt: at(900).toISOString(),
  });
  const before: EvictionStatus = {
    inFlight: [
      entry("a", 0, { migrationId: "1", notConverging: true }),
      entry("b", 0, { migrationId: "2" }),
      entry("c", 0, { migrationId: "3", notConverging: true }),
    ],
  };
  const p = emptyPlan({
    notConverging: [report("a", "1"), report("b", "2"), report("c", "4")],
    requestOutcomes: [
      {
        server: "b",
        action: "ForceComplete",
        requestedBy: "alice",
        requestedAt: at(5).toISOString(),
        outcome: "Sent",
        message: "",
      },
      {
        server: "z",
        action: "Abort",
        requestedBy: "bob",
        requestedAt: at(6).toISOString(),
        outcome: "NotInFlight",
        message: "z has no live copy in flight",
      },
    ],
    failed: [
      {
        id: "d",
        reason: "3 copies aborted, none converged",
        attempts: 3,
        exhausted: true,
        transient: false,
      },
      {
        id: "e",
        reason: "ERROR",
        attempts: 1,
        exhausted: true,
        transient: false,
      },
    ],
    next: {
      aborted: [{ id: "d", tries: 3, lastAbortedAt: at(1).toISOString() }],
    },
  });
  const { events } = run(p, before);
  const of = (reason: string) => events.filter((e) => e.reason === reason);
  // a was already marked; c's copy is a new one
  assert.deepEqual(
    of("NotConverging").map((e) => e.message.split(" ")[0]),
    ["b", "c"],
  );
  assert.ok(of("NotConverging").every((e) => e.type === "Warning"));
  const [fc] = of("ForceCompleteRequested");
  assert.equal(fc?.type, "Normal");
  assert.match(
    fc?.message ?? "",
    /^alice asked to force-complete .* of b .*: sent to Nova$/,
  );
  const [ab] = of("AbortRequested");
  assert.equal(ab?.type, "Warning");
  assert.match(
    ab?.message ?? "",
    /^bob asked to abort .* of z .*: not sent: no live copy of it is in flight \(z has no live copy in flight\)$/,
  );
  assert.deepEqual(of("VmLeftForPerson").map((e) => e.message), [
    "d is left for a person after 3 aborted copies: 3 copies aborted, none converged; kubectl evictor retry re-arms it",
  ]);
});
