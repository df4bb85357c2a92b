import assert from "node:assert/strict";
import fc from "fast-check";
import {
  type ClassifyInput,
  classifyServer,
  inFlightEntry,
  isExhausted,
  recordMatchesEntry,
  UNSUPPORTED_PREFIX,
} from "./classify.ts";
import { isOurKind } from "../../openstack/informer/nova_states.ts";
import type { StartNote } from "./once.ts";
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
import {
  arrivingRecords,
  latestRecords,
} from "../../openstack/informer/nova_records.ts";

Deno.test("recordMatchesEntry: by migration id, or created no earlier than the trigger minus skew", () => {
  const e = entry("a", 0);
  assert.ok(
    recordMatchesEntry(mig(1, "a", "error", { createdAt: novaTime(2) }), e, 0),
  );
  assert.ok(
    recordMatchesEntry(
      mig(1, "a", "error", { createdAt: novaTime(-3) }),
      e,
      5_000,
    ),
  );
  assert.ok(
    !recordMatchesEntry(
      mig(1, "a", "error", { createdAt: novaTime(-3) }),
      e,
      1_000,
    ),
  );
  assert.ok(
    recordMatchesEntry(
      mig(9, "a", "error", { createdAt: novaTime(-300) }),
      entry("a", 0, { migrationId: "9" }),
      0,
    ),
  );
});

Deno.test("latestRecords: latest by created_at then id; in progress tracked apart; other sources ignored", () => {
  const byVm = latestRecords([
    mig(1, "a", "running", { createdAt: novaTime(-100) }),
    mig(2, "a", "error", { createdAt: novaTime(-50) }),
    mig(4, "b", "completed", { createdAt: novaTime(-10) }),
    mig(3, "b", "error", { createdAt: novaTime(-10) }),
    mig(5, "c", "running", { sourceCompute: "node007" }),
  ], HOST);
  assert.equal(byVm.get("a")?.latest.id, 2);
  assert.equal(byVm.get("a")?.inProgress?.id, 1);
  assert.equal(byVm.get("b")?.latest.id, 4);
  assert.equal(byVm.get("b")?.inProgress, undefined);
  assert.equal(byVm.has("c"), false);
});

Deno.test("inFlightEntry: keeps startedAt and kind; adopts migration id and progress from the record", () => {
  const kept = inFlightEntry(
    "a",
    entry("a", -60, { kind: "cold" }),
    "live",
    mig(7, "a", "running", { memoryProcessedBytes: 3, memoryTotalBytes: 4 }),
    at(0).getTime(),
  );
  assert.deepEqual(kept, {
    id: "a",
    kind: "cold",
    startedAt: at(-60).toISOString(),
    migrationId: "7",
    memoryProcessedPercent: 75,
  });
  const adopted = inFlightEntry(
    "b",
    undefined,
    "live",
    mig(8, "b", "queued", { createdAt: novaTime(-30) }),
    at(0).getTime(),
  );
  assert.deepEqual(adopted, {
    id: "b",
    kind: "live",
    startedAt: at(-30).toISOString(),
    migrationId: "8",
  });
  // A Nova clock ahead of ours never puts startedAt in the future.
  const ahead = inFlightEntry(
    "c",
    undefined,
    "live",
    mig(9, "c", "queued", { createdAt: novaTime(30) }),
    at(0).getTime(),
  );
  assert.equal(ahead.startedAt, at(0).toISOString());
});

function classify(overrides: Partial<ClassifyInput>) {
  return classifyServer({
    server: vm("a"),
    latest: undefined,
    inProgress: undefined,
    inFlight: entry("a", -10),
    failed: undefined,
    nowMs: T0.getTime(),
    options: OPTIONS,
    ...overrides,
  });
}

const note = (
  state: StartNote["state"],
  message?: string,
  transient?: boolean,
): StartNote => ({
  id: "a",
  state,
  ...(message === undefined ? {} : { message }),
  ...(transient === undefined ? {} : { transient }),
});

Deno.test("classifyServer: what Nova answered to our start, resolved by what it shows", () => {
  const running = vm("a", 1024, {
    status: "MIGRATING",
    taskState: "migrating",
  });
  const rows: Array<
    [string, Partial<ClassifyInput>, string, number | undefined, boolean?]
  > = [
    // name, input, class, attempts charged (undefined: no failure), adopted
    [
      "no answer yet: in flight",
      { note: note("pending") },
      "in_flight",
      undefined,
      false,
    ],
    [
      "no valid host: a transient failure",
      { note: note("refused", "No valid host was found.", true) },
      "backoff",
      1,
    ],
    [
      "another refusal: a permanent failure",
      { note: note("refused", "Invalid input", false) },
      "backoff",
      1,
    ],
    [
      "400 not supported (vTPM): skipped",
      {
        note: note(
          "refused",
          "Operation 'live-migration' not supported for vTPM-enabled instance",
        ),
      },
      "skipped",
      undefined,
    ],
    [
      "409 not supported (SEV): skipped",
      {
        note: note(
          "conflict",
          "Operation 'live-migration' not supported for SEV-enabled instance",
        ),
      },
      "skipped",
      undefined,
    ],
    [
      "409 task_state and Nova shows it: someone else's, in flight",
      {
        note: note("conflict", "while it is in task_state migrating"),
        server: running,
      },
      "in_flight",
      undefined,
      true,
    ],
    [
      "409 vm_state: planned again from the fresh state",
      {
        note: note("conflict", "while it is in vm_state stopped"),
        server: vm("a", 1024, { status: "SHUTOFF" }),
      },
      "ready",
      undefined,
    ],
    [
      "no answer (timeout, 5xx) and nothing shows: planned again, uncharged",
      {
        note: { ...note("unknown", "503"), answeredAtMs: T0.getTime() - 5000 },
      },
      "ready",
      undefined,
    ],
    [
      "no answer, and the look began before it came: in flight (once.ts)",
      {
        note: { ...note("unknown", "503"), answeredAtMs: T0.getTime() - 5000 },
        lookedAtMs: T0.getTime() - 6000,
      },
      "in_flight",
      undefined,
      false,
    ],
    [
      "accepted, past grace, but the look (a view's list) began before the answer: in flight",
      {
        note: { ...note("accepted"), answeredAtMs: T0.getTime() - 500_000 },
        inFlight: entry("a", -600),
        lookedAtMs: T0.getTime() - 500_001,
      },
      "in_flight",
      undefined,
      false,
    ],
    [
      "accepted, past grace, a look after its answer shows nothing: planned again, uncharged",
      {
        note: { ...note("accepted"), answeredAtMs: T0.getTime() - 500_000 },
        inFlight: entry("a", -600),
        lookedAtMs: T0.getTime() - 1000,
      },
      "ready",
      undefined,
    ],
    [
      "after a restart, a look begun within the grace period: in flight",
      { inFlight: entry("a", -600), lookedAtMs: T0.getTime() - 590_000 },
      "in_flight",
      undefined,
      false,
    ],
    [
      "no answer but Nova shows it: ours, in flight",
      { note: note("unknown", "timed out"), server: running },
      "in_flight",
      undefined,
      false,
    ],
    [
      "after a restart, past grace, nothing shows: planned again, uncharged",
      { inFlight: entry("a", -600) },
      "ready",
      undefined,
    ],
    [
      "our migration's record failed: a transient failure",
      {
        inFlight: entry("a", -30),
        latest: mig(3, "a", "error", { createdAt: novaTime(-29) }),
      },
      "backoff",
      1,
    ],
    [
      "arriving: waited for, uncharged",
      {
        inFlight: undefined,
        arriving: mig(4, "a", "running", {
          sourceCompute: "x",
          destCompute: HOST,
        }),
      },
      "busy",
      undefined,
    ],
    [
      "a user's resize after our start: not ours",
      {
        inFlight: entry("a", -30, { kind: "cold" }),
        server: vm("a", 1024, { status: "RESIZE", taskState: "resize_prep" }),
        inProgress: mig(5, "a", "migrating", {
          migrationType: "resize",
          createdAt: novaTime(-5),
        }),
      },
      "in_flight",
      undefined,
      true,
    ],
  ];
  for (const [name, input, cls, attempts, adopted] of rows) {
    const v = classify(input);
    assert.equal(v.vm.class, cls, name);
    assert.equal(v.failure?.attempts, attempts, name);
    if (adopted !== undefined && v.vm.class === "in_flight") {
      assert.equal(v.vm.entry.adopted === true, adopted, name);
    }
    if (
      cls === "skipped" && attempts === undefined && v.vm.class === "skipped"
    ) {
      if (name.includes("not supported")) {
        assert.ok(v.vm.reason.startsWith(UNSUPPORTED_PREFIX), name);
      }
    }
  }
});

Deno.test("property: an attempt is charged only for a refusal, a failed record of ours, or ERROR", () => {
  const states = [
    "pending",
    "accepted",
    "refused",
    "conflict",
    "unknown",
  ] as const;
  fc.assert(fc.property(
    fc.option(fc.constantFrom(...states), { nil: undefined }),
    fc.constantFrom("ACTIVE", "SHUTOFF", "MIGRATING", "ERROR", "PAUSED"),
    fc.option(fc.constantFrom("error", "running", "completed", "queued"), {
      nil: undefined,
    }),
    fc.integer({ min: -600, max: 0 }),
    (state, status, recordStatus, startedSec) => {
      const v = classify({
        server: vm("a", 1024, {
          status,
          taskState: status === "MIGRATING" ? "migrating" : null,
        }),
        inFlight: entry("a", startedSec),
        note: state === undefined ? undefined : note(state, "m"),
        latest: recordStatus === undefined
          ? undefined
          : mig(1, "a", recordStatus, { createdAt: novaTime(startedSec + 1) }),
      });
      if (v.failure === undefined) return;
      assert.ok(
        state === "refused" || status === "ERROR" ||
          (recordStatus !== undefined && state !== "pending"),
        `charged with note ${state}, status ${status}, record ${recordStatus}`,
      );
    },
  ));
});

Deno.test("isExhausted: attempts, then the retry window for transient causes", () => {
  const f = (attempts: number, transient: boolean) => ({
    id: "a",
    reason: "r",
    attempts,
    lastAttemptAt: T0.toISOString(),
    firstFailedAt: T0.toISOString(),
    ...(transient ? { transient } : {}),
  });
  const options = { ...OPTIONS, retryWindowMs: 3_600_000 };
  assert.equal(isExhausted(f(2, false), T0.getTime(), options), false);
  assert.equal(isExhausted(f(3, false), T0.getTime(), options), true);
  assert.equal(isExhausted(f(3, true), at(1800).getTime(), options), false);
  assert.equal(isExhausted(f(3, true), at(3600).getTime(), options), true);
});

Deno.test("arrivingRecords and isOurKind", () => {
  const arriving = arrivingRecords([
    mig(1, "a", "running", { sourceCompute: "x", destCompute: HOST }),
    mig(2, "b", "completed", { sourceCompute: "x", destCompute: HOST }),
    mig(3, "c", "running", { sourceCompute: HOST, destCompute: "x" }),
  ], HOST);
  assert.deepEqual([...arriving.keys()], ["a"]);
  assert.ok(isOurKind("live-migration", "live"));
  assert.ok(!isOurKind("migration", "live"));
  assert.ok(!isOurKind("resize", "cold"));
});

Deno.test("property: isExhausted never turns back to retrying as time passes, and never before maxAttempts", () => {
  fc.assert(fc.property(
    fc.integer({ min: 0, max: 10 }),
    fc.boolean(),
    fc.integer({ min: 0, max: 7_200_000 }),
    fc.integer({ min: 0, max: 7_200_000 }),
    (attempts, transient, t1, dt) => {
      const f = {
        id: "a",
        reason: "r",
        attempts,
        lastAttemptAt: T0.toISOString(),
        firstFailedAt: T0.toISOString(),
        ...(transient ? { transient } : {}),
      };
      const options = { ...OPTIONS, retryWindowMs: 3_600_000 };
      const early = isExhausted(f, T0.getTime() + t1, options);
      const later = isExhausted(f, T0.getTime() + t1 + dt, options);
      if (early) assert.ok(later);
      if (attempts < options.maxAttempts) assert.ok(!early && !later);
    },
  ));
});
