import assert from "node:assert/strict";
import fc from "fast-check";
import type { EvictionStatus } from "../../models/mod.ts";
import { CONDITION_EVICTING } from "./conditions.ts";
import type { PlanOptions } from "./plan_options.ts";
import type { ObservedServer } from "../../openstack/informer/snapshot.ts";
import { type PlanInput, planPass } from "./plan.ts";
import {
  stallBoundMs,
  STALLED_PREFIX,
  stalledReason,
  stalledSinceMs,
} from "./stalled.ts";
import {
  at,
  entry,
  failure,
  input,
  mig,
  novaTime,
  OPTIONS,
  T0,
  vm,
} from "../../tests/harness/plan_fixtures.ts";

/** The server real Zed leaves when post_live_migration_at_destination fails. */
const stuck = (id = "s", ramMb = 8192): ObservedServer =>
  vm(id, ramMb, { status: "MIGRATING", taskState: "migrating", name: "web-1" });

/** Its record: completed `endedSeconds` after T0 (Nova time). */
const completed = (endedSeconds: number, status = "completed") =>
  mig(42, "s", status, {
    createdAt: novaTime(endedSeconds - 30),
    updatedAt: novaTime(endedSeconds),
    destCompute: "node007",
  });

const inFlightIds = (s: EvictionStatus) => (s.inFlight ?? []).map((e) => e.id);
const skippedIds = (s: EvictionStatus) => (s.skipped ?? []).map((e) => e.id);

Deno.test("stallBoundMs: the clock skew allowance plus the settle interval", () => {
  assert.equal(stallBoundMs(OPTIONS), 5_000);
  assert.equal(stallBoundMs({ ...OPTIONS, settleMs: 6_000 }), 11_000);
});

Deno.test("stalledSinceMs: only a task shown past an ended record of its kind", () => {
  const ended = at(-20).getTime();
  const cases: Array<
    [string, ObservedServer, string, string, boolean, number | undefined]
  > = [
    [
      "live task, completed record",
      stuck(),
      "live-migration",
      "completed",
      false,
      ended,
    ],
    [
      "live task, error record",
      stuck(),
      "live-migration",
      "error",
      false,
      ended,
    ],
    [
      "live task, cancelled record",
      stuck(),
      "live-migration",
      "cancelled",
      false,
      ended,
    ],
    [
      "cold task, failed record",
      vm("s", 1, { status: "RESIZE", taskState: "resize_migrating" }),
      "migration",
      "failed",
      false,
      ended,
    ],
    ["no task shown", vm("s"), "live-migration", "completed", false, undefined],
    [
      "record in progress",
      stuck(),
      "live-migration",
      "running",
      false,
      undefined,
    ],
    [
      "an older record in progress too",
      stuck(),
      "live-migration",
      "completed",
      true,
      undefined,
    ],
    [
      "a new cold task, the last record live",
      vm("s", 1, { taskState: "resize_prep" }),
      "live-migration",
      "completed",
      false,
      undefined,
    ],
  ];
  for (const [name, server, type, status, older, want] of cases) {
    const latest = mig(42, "s", status, {
      migrationType: type,
      updatedAt: novaTime(-20),
    });
    const inProgress = older ? mig(41, "s", "running") : undefined;
    assert.equal(stalledSinceMs(server, latest, inProgress, 0), want, name);
  }
  assert.equal(stalledSinceMs(stuck(), undefined, undefined, 0), undefined);
  // Nova's clock 30 s behind ours: its times are read on ours.
  assert.equal(
    stalledSinceMs(stuck(), completed(-20), undefined, -30_000),
    ended + 30_000,
  );
});

Deno.test("stalledSinceMs: a start of ours after the record ended is counted from", () => {
  const ended = at(-60).getTime();
  const cases: Array<[string, number | undefined, number]> = [
    ["no start of ours", undefined, ended],
    ["our start before the end (the stranded one)", at(-90).getTime(), ended],
    ["our retry after the end", at(-2).getTime(), at(-2).getTime()],
  ];
  for (const [name, ownStartMs, want] of cases) {
    assert.equal(
      stalledSinceMs(
        stuck(),
        completed(-60, "error"),
        undefined,
        0,
        ownStartMs,
      ),
      want,
      name,
    );
  }
});

Deno.test("stalledReason: names the server, the record and the reset", () => {
  const now = T0.getTime();
  assert.equal(
    stalledReason(stuck(), completed(-5), undefined, now, OPTIONS),
    undefined,
    "at the bound: still in flight",
  );
  const reason =
    stalledReason(stuck(), completed(-6), undefined, now, OPTIONS) ?? "";
  assert.ok(reason.startsWith(STALLED_PREFIX), reason);
  assert.match(
    reason,
    /server web-1 \(s\) still shows status MIGRATING, task_state migrating/,
  );
  assert.match(
    reason,
    /live-migration 42 ended completed at 2026-11-29T11:59:54\.000000/,
  );
  assert.match(reason, /nova reset-state --active s/);
});

Deno.test("planPass: within the bound a stalled task still holds its slot", () => {
  const plan = planPass(input({
    servers: [stuck(), vm("b")],
    migrations: [completed(-3)],
    status: { inFlight: [entry("s", -40, { migrationId: "42" })] },
    limit: 1,
  }));
  assert.deepEqual(inFlightIds(plan.next), ["s"]);
  assert.deepEqual(plan.start, []);
  assert.deepEqual(plan.skipped, []);
});

Deno.test("planPass: past the bound the slot is freed, the VM skipped, never migrated", () => {
  const plan = planPass(input({
    servers: [stuck(), vm("b")],
    migrations: [completed(-60)],
    status: {
      outstandingInstances: ["s", "b"],
      inFlight: [entry("s", -90, { migrationId: "42" })],
      migratedCount: 0,
    },
    limit: 1,
  }));
  assert.deepEqual(plan.start.map((s) => s.id), ["b"]);
  assert.deepEqual(inFlightIds(plan.next), ["b"]);
  assert.deepEqual(skippedIds(plan.next), ["s"]);
  assert.match(plan.skipped[0]?.reason ?? "", /nova reset-state --active s/);
  assert.deepEqual(plan.done, []);
  assert.deepEqual(plan.failed, [], "no attempt charged");
  assert.equal(plan.next.migratedCount, 0);
  assert.deepEqual(plan.next.outstandingInstances, ["b", "s"]);
});

Deno.test("planPass: an error record with the task still shown is skipped too", () => {
  const plan = planPass(input({
    servers: [stuck()],
    migrations: [completed(-60, "error")],
    status: { inFlight: [entry("s", -90)] },
  }));
  assert.deepEqual(skippedIds(plan.next), ["s"]);
  assert.equal(plan.next.inFlightCount, 0);
});

Deno.test("planPass: the Evicting condition says a person is needed when it is all that is left", () => {
  const plan = planPass(input({
    servers: [stuck()],
    migrations: [completed(-60)],
    status: { inFlight: [entry("s", -90)], migratedCount: 3 },
  }));
  const evicting = plan.next.conditions?.find((c) =>
    c.type === CONDITION_EVICTING
  );
  assert.equal(evicting?.status, "False");
  // only skipped VMs left, none failed: it waits for a person
  assert.equal(evicting?.reason, "WaitingForPerson");
  assert.match(evicting?.message ?? "", /waiting for a person/);
  assert.equal(plan.finished, false);
});

Deno.test("planPass: reset ACTIVE on the source, it is migrated again", () => {
  const plan = planPass(input({
    servers: [vm("s", 8192)],
    migrations: [completed(-600)],
    status: {
      outstandingInstances: ["s"],
      skipped: [{ id: "s", reason: `${STALLED_PREFIX}...` }],
    },
  }));
  assert.deepEqual(plan.start.map((s) => s.id), ["s"]);
  assert.deepEqual(plan.skipped, []);
});

Deno.test("planPass: reset ACTIVE on the destination, it is counted departed, not migrated", () => {
  const plan = planPass(input({
    servers: [],
    migrations: [completed(-600)],
    departed: [{ id: "s", server: vm("s", 8192, { host: "node007" }) }],
    status: {
      outstandingInstances: ["s"],
      skipped: [{ id: "s", reason: `${STALLED_PREFIX}...` }],
      migratedCount: 2,
    },
  }));
  assert.deepEqual(plan.done, []);
  assert.deepEqual(plan.movedByOthers, ["s"]);
  assert.equal(plan.next.migratedCount, 2);
  assert.equal(plan.next.outstandingCount, 0);
});

Deno.test("planPass: a departed VM still migrating past an ended record holds no slot", () => {
  const plan = planPass(input({
    servers: [],
    migrations: [completed(-60, "error")],
    departed: [{ id: "s", server: { ...stuck(), host: "node007" } }],
    status: { outstandingInstances: ["s"], inFlight: [entry("s", -90)] },
  }));
  assert.equal(plan.next.inFlightCount, 0);
  assert.deepEqual(skippedIds(plan.next), ["s"]);
  assert.deepEqual(plan.done, []);
  assert.equal(plan.finished, false);
});

/**
 * Real Zed under load: Nova shows a retry's task (MIGRATING) before its
 * conductor writes the retry's record, so the latest record is the failed
 * attempt's, ended long ago. The retry is ours and in flight, never a
 * stalled task; once it lands it is counted migrated.
 */
Deno.test("planPass: a retry whose record Nova has not written yet is in flight, then counted migrated", () => {
  const failed = failure("s", 1, -40, "live-migration 42 ended error");
  const retry = entry("s", -2);
  const waiting = planPass(input({
    servers: [stuck()],
    migrations: [completed(-45, "error")],
    status: {
      outstandingInstances: ["s"],
      inFlight: [retry],
      failed: [failed],
      migratedCount: 0,
    },
  }));
  assert.deepEqual(skippedIds(waiting.next), []);
  assert.deepEqual(inFlightIds(waiting.next), ["s"]);
  assert.equal(waiting.next.inFlight?.[0]?.adopted, undefined, "still ours");
  assert.equal(waiting.finished, false);
  const landed = planPass(input({
    servers: [],
    migrations: [
      completed(-45, "error"),
      mig(43, "s", "completed", {
        createdAt: novaTime(-1),
        updatedAt: novaTime(4),
      }),
    ],
    departed: [{ id: "s", server: vm("s", 8192, { host: "node007" }) }],
    now: at(5),
    status: waiting.next,
  }));
  assert.deepEqual(landed.done, ["s"]);
  assert.equal(landed.next.migratedCount, 1);
  // No record of the retry ever shown: stalled only past the bound from
  // the retry's own start.
  const stillNone = (seconds: number) =>
    planPass(input({
      servers: [stuck()],
      migrations: [completed(-45, "error")],
      status: waiting.next,
      now: at(seconds),
    }));
  const bound = stallBoundMs(OPTIONS) / 1000;
  assert.deepEqual(skippedIds(stillNone(-2 + bound).next), []);
  assert.deepEqual(skippedIds(stillNone(-1 + bound).next), ["s"]);
});

const optionsArb: fc.Arbitrary<PlanOptions> = fc.record({
  clockSkewMs: fc.integer({ min: 0, max: 20_000 }),
  settleMs: fc.integer({ min: 0, max: 30_000 }),
  gracePeriodMs: fc.integer({ min: 0, max: 120_000 }),
  // Whole seconds: Nova's times are written to the microsecond.
  novaClockOffsetMs: fc.integer({ min: -300, max: 300 }).map((s) => s * 1000),
}).map((o) => ({ ...OPTIONS, ...o }));

Deno.test("property: a stalled task never holds a slot past the bound, is never started nor counted migrated", () => {
  fc.assert(
    fc.property(
      optionsArb,
      fc.integer({ min: 1, max: 3 }),
      fc.integer({ min: 0, max: 4 }),
      fc.array(fc.integer({ min: 1, max: 20_000 }), {
        minLength: 1,
        maxLength: 12,
      }),
      fc.constantFrom("completed", "error", "failed", "cancelled"),
      (options, limit, others, steps, recordStatus) => {
        const offset = options.novaClockOffsetMs ?? 0;
        // The record ended at T0 on our clock; Nova wrote its own time.
        const record = completed(offset / 1000, recordStatus);
        const bound = stallBoundMs(options);
        const idle = Array.from({ length: others }, (_, i) => vm(`o${i}`));
        let status: EvictionStatus = {
          inFlight: [entry("s", -100, { migrationId: "42" })],
          outstandingInstances: ["s", ...idle.map((s) => s.id)],
          migratedCount: 0,
        };
        let nowMs = T0.getTime();
        for (const step of steps) {
          nowMs += step;
          const plan = planPass(input({
            servers: [stuck(), ...idle],
            migrations: [record],
            status,
            limit,
            options,
            now: new Date(nowMs),
          }));
          const heldSlot = inFlightIds(plan.next).includes("s");
          const past = nowMs - T0.getTime() > bound;
          assert.equal(
            heldSlot,
            !past,
            `held ${heldSlot} at +${nowMs - T0.getTime()} ms, bound ${bound}`,
          );
          assert.equal(skippedIds(plan.next).includes("s"), past);
          assert.ok(!plan.start.some((s) => s.id === "s"));
          assert.ok(!plan.done.includes("s"));
          assert.equal(plan.next.migratedCount, 0);
          if (past) {
            // Its slot is free: the others fill every slot there is.
            assert.equal(plan.next.inFlightCount, Math.min(limit, others));
          }
          // The others never show their moves: in flight while in grace,
          // started again after it (uncharged).
          status = plan.next;
        }
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("property: a stalled task among random observations is never counted migrated or started", () => {
  fc.assert(
    fc.property(
      optionsArb,
      fc.integer({ min: -120_000, max: 120_000 }),
      fc.boolean(),
      (options, elapsedMs, onHost) => {
        const bound = stallBoundMs(options);
        const offset = options.novaClockOffsetMs ?? 0;
        const now = new Date(T0.getTime() + elapsedMs);
        const record = completed(offset / 1000);
        const server: ObservedServer = onHost
          ? stuck()
          : { ...stuck(), host: "node007" };
        const given: PlanInput = input({
          servers: onHost ? [server] : [],
          departed: onHost ? [] : [{ id: "s", server }],
          migrations: [{ ...record, status: "error" }],
          status: { outstandingInstances: ["s"], inFlight: [entry("s", -300)] },
          options,
          now,
        });
        const plan = planPass(given);
        assert.ok(
          !plan.done.includes("s") && !plan.movedByOthers.includes("s"),
        );
        assert.ok(!plan.start.some((s) => s.id === "s"));
        assert.equal(
          inFlightIds(plan.next).includes("s"),
          elapsedMs <= bound,
        );
      },
    ),
    { numRuns: 300 },
  );
});
