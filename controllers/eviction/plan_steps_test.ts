// The planner's steps (plan_steps.ts), each tested on its own: the
// decisions planPass composes (plan_test.ts tests them together).
import assert from "node:assert/strict";
import fc from "fast-check";
import type { EvictionStatus } from "../../models/mod.ts";
import {
  arrivals,
  classifyOnHost,
  confirmNeeded,
  departures,
  foldNotes,
  newAcc,
  onHostView,
  pendingStarts,
  pickStarts,
  type PlanAcc,
  type PrevView,
  type Records,
  splitStarts,
  UNANSWERED_REPORT_AFTER,
} from "./plan_steps.ts";
import type { PlanInput } from "./plan_types.ts";
import { converge } from "./plan_converge.ts";
import type { StartNote } from "./once.ts";
import {
  arrivingRecords,
  latestRecords,
} from "../../openstack/informer/nova_records.ts";
import {
  at,
  entry,
  failure,
  HOST,
  input,
  mig,
  novaTime,
  OPTIONS,
  T0,
  vm,
} from "../../tests/harness/plan_fixtures.ts";

/** The steps before classification, as planPass runs them. */
function stages(inp: PlanInput): {
  prev: PrevView;
  view: ReturnType<typeof onHostView>;
  records: Records;
  acc: PlanAcc;
} {
  return {
    prev: foldNotes(inp),
    view: onHostView(inp),
    records: {
      latest: latestRecords(inp.migrations, inp.host),
      incoming: arrivingRecords(inp.migrations, inp.host),
    },
    acc: newAcc(inp.holdStarts),
  };
}

/** A status from a previous pass that knew `ids` as outstanding. */
function seen(ids: string[], extra: EvictionStatus = {}): EvictionStatus {
  return {
    outstandingInstances: ids,
    startedAt: at(-3600).toISOString(),
    ...extra,
  };
}

function notes(...list: StartNote[]): Map<string, StartNote> {
  return new Map(list.map((n) => [n.id, n]));
}

type Ready = PlanAcc["ready"][number];

function ready(
  id: string,
  ramMb: number,
  kind: "live" | "cold" = "live",
): Ready {
  return { id, kind, ramMb, attempt: 1 };
}

/** An accumulator with `ready` and in-flight entries of `inFlight`'s kinds. */
function accWith(
  readyVms: Ready[],
  inFlight: Array<"live" | "cold"> = [],
  holdStarts?: string,
): PlanAcc {
  const acc = newAcc(holdStarts);
  acc.ready.push(...readyVms);
  inFlight.forEach((kind, i) =>
    acc.inFlight.push(entry(`f${i}`, -10, { kind }))
  );
  return acc;
}

Deno.test("newAcc: starts empty and carries the hold into the summary", () => {
  const rows: Array<{ name: string; hold: string | undefined }> = [
    { name: "no hold", hold: undefined },
    { name: "held", hold: "traits may be stale" },
  ];
  for (const row of rows) {
    const acc = newAcc(row.hold);
    assert.deepEqual(
      acc,
      {
        inFlight: [],
        failed: [],
        skipped: [],
        failures: [],
        waiting: [],
        ready: [],
        aborted: new Map(),
        outstanding: [],
        outstandingRamMb: 0,
        summary: {
          ready: 0,
          busy: 0,
          backoff: 0,
          needsPerson: 0,
          held: row.hold,
        },
        nextRetryAtMs: undefined,
      },
      row.name,
    );
  }
  // Two accumulators share nothing.
  const a = newAcc(undefined);
  a.ready.push(ready("x", 1));
  assert.equal(newAcc(undefined).ready.length, 0, "a fresh accumulator");
});

Deno.test("foldNotes: a start note newer than the status makes the VM ours in flight", () => {
  const issued = T0.getTime() - 1_000;
  const issuedIso = new Date(issued).toISOString();
  const rows: Array<{
    name: string;
    input: PlanInput;
    /** id -> [kind, startedAt, migrationId] of the folded in-flight entries. */
    inFlight: Record<string, [string, string, string | undefined]>;
    outstanding: string[];
  }> = [
    {
      name: "first pass without notes: nothing",
      input: input(),
      inFlight: {},
      outstanding: [],
    },
    {
      name: "a note not in the status joins in flight and outstanding",
      input: input({
        starts: notes({
          id: "a",
          state: "pending",
          kind: "live",
          issuedAtMs: issued,
        }),
      }),
      inFlight: { a: ["live", issuedIso, undefined] },
      outstanding: ["a"],
    },
    {
      name: "a note without kind or issue time is not folded",
      input: input({
        starts: notes(
          { id: "a", state: "pending", issuedAtMs: issued },
          { id: "b", state: "accepted", kind: "cold" },
        ),
      }),
      inFlight: {},
      outstanding: [],
    },
    {
      name: "an entry of the same kind at or after the note is kept as written",
      input: input({
        status: seen(["a"], {
          inFlight: [entry("a", 0, { migrationId: "7" })],
        }),
        starts: notes({
          id: "a",
          state: "accepted",
          kind: "live",
          issuedAtMs: issued,
        }),
      }),
      inFlight: { a: ["live", T0.toISOString(), "7"] },
      outstanding: ["a"],
    },
    {
      name: "an entry older than the note is replaced by the note",
      input: input({
        status: seen(["a"], {
          inFlight: [entry("a", -600, { migrationId: "7" })],
        }),
        starts: notes({
          id: "a",
          state: "accepted",
          kind: "live",
          issuedAtMs: issued,
        }),
      }),
      inFlight: { a: ["live", issuedIso, undefined] },
      outstanding: ["a"],
    },
    {
      name: "an entry of another kind is replaced by the note",
      input: input({
        status: seen(["a"], { inFlight: [entry("a", 0)] }),
        starts: notes({
          id: "a",
          state: "accepted",
          kind: "cold",
          issuedAtMs: issued,
        }),
      }),
      inFlight: { a: ["cold", issuedIso, undefined] },
      outstanding: ["a"],
    },
  ];
  for (const row of rows) {
    const prev = foldNotes(row.input);
    const got = Object.fromEntries(
      [...prev.inFlight].map((
        [id, e],
      ) => [id, [e.kind, e.startedAt, e.migrationId]]),
    );
    assert.deepEqual(got, row.inFlight, row.name);
    assert.deepEqual([...prev.outstanding].sort(), row.outstanding, row.name);
  }
});

Deno.test("foldNotes: failed and skipped of the status are indexed by id; the status is not changed", () => {
  const status = seen(["a", "b"], {
    failed: [failure("a", 1, -60)],
    skipped: [{ id: "b", reason: "vtpm" }],
  });
  const before = structuredClone(status);
  const prev = foldNotes(
    input({
      status,
      starts: notes({ id: "c", state: "pending", kind: "live", issuedAtMs: 1 }),
    }),
  );
  assert.equal(prev.status, status, "the previous status itself");
  assert.deepEqual(status, before, "the status is not mutated by the fold");
  assert.equal(prev.failed.get("a")?.attempts, 1, "failed by id");
  assert.equal(prev.skipped.get("b")?.reason, "vtpm", "skipped by id");
  assert.equal(prev.notes.get("c")?.state, "pending", "notes kept");
  assert.deepEqual(foldNotes(input()).status, {}, "{} on the first pass");
});

Deno.test("onHostView: the list wins, duplicates ignored, a looked-up VM still here joins", () => {
  const rows: Array<{
    name: string;
    input: PlanInput;
    onHost: Record<string, number>;
    departed: Record<string, string | null>;
  }> = [
    {
      name: "duplicates in the list: the first one counts",
      input: input({ servers: [vm("a", 1), vm("a", 2), vm("b", 3)] }),
      onHost: { a: 1, b: 3 },
      departed: {},
    },
    {
      name: "a departed answer still on this host joins the view",
      input: input({
        servers: [vm("a", 1)],
        departed: [{ id: "b", server: vm("b", 5) }],
      }),
      onHost: { a: 1, b: 5 },
      departed: { b: HOST },
    },
    {
      name: "a departed answer elsewhere or deleted does not",
      input: input({
        departed: [
          { id: "b", server: vm("b", 5, { host: "node043" }) },
          { id: "c", server: null },
        ],
      }),
      onHost: {},
      departed: { b: "node043", c: null },
    },
    {
      name: "the first answer per id counts; the list beats a lookup",
      input: input({
        servers: [vm("a", 1)],
        departed: [
          { id: "a", server: vm("a", 9) },
          { id: "b", server: null },
          { id: "b", server: vm("b", 5) },
        ],
      }),
      onHost: { a: 1 },
      departed: { a: HOST, b: null },
    },
  ];
  for (const row of rows) {
    const view = onHostView(row.input);
    assert.deepEqual(
      Object.fromEntries(
        [...view.onHost].map(([id, s]) => [id, s.flavor.ramMb]),
      ),
      row.onHost,
      row.name,
    );
    assert.deepEqual(
      Object.fromEntries(
        [...view.departedById].map((
          [id, s],
        ) => [id, s === null ? null : s.host]),
      ),
      row.departed,
      row.name,
    );
  }
});

Deno.test("classifyOnHost: every VM on the host is outstanding, and each lands in one class", () => {
  const rows: Array<{
    name: string;
    input: PlanInput;
    ready?: Array<[string, "live" | "cold", number]>;
    inFlight?: string[];
    waiting?: Array<[string, string]>;
    skipped?: string[];
    failures?: string[];
    summary?: Record<string, number | undefined>;
    nextRetryAtMs?: number;
  }> = [
    {
      name: "ACTIVE and PAUSED are ready live, SHUTOFF cold, first attempt",
      input: input({
        servers: [
          vm("s", 1, { status: "SHUTOFF" }),
          vm("a", 2),
          vm("p", 3, { status: "PAUSED" }),
        ],
      }),
      ready: [["a", "live", 1], ["p", "live", 1], ["s", "cold", 1]],
    },
    {
      name: "a MIGRATING VM is in flight, not ready",
      input: input({
        servers: [vm("m", 1, { status: "MIGRATING", taskState: "migrating" })],
      }),
      ready: [],
      inFlight: ["m"],
    },
    {
      name: "a VM that failed once, past its backoff, is ready for attempt 2",
      input: input({
        servers: [vm("a")],
        status: seen(["a"], { failed: [failure("a", 1, -3600)] }),
      }),
      ready: [["a", "live", 2]],
    },
    {
      name: "a VM that failed just now waits in backoff until its retry",
      input: input({
        servers: [vm("a")],
        status: seen(["a"], { failed: [failure("a", 1, -1)] }),
      }),
      ready: [],
      waiting: [["a", "backoff"]],
      summary: { backoff: 1 },
      nextRetryAtMs: at(-1).getTime() + OPTIONS.retryBaseMs,
    },
    {
      name:
        "unanswered starts hold a ready VM back, uncounted as unanswered below the bound",
      input: input({
        servers: [vm("a")],
        startBackoff: new Map([["a", {
          count: 1,
          retryAtMs: at(30).getTime(),
        }]]),
      }),
      ready: [],
      waiting: [["a", "backoff"]],
      summary: { backoff: 1, unanswered: undefined },
      nextRetryAtMs: at(30).getTime(),
    },
    {
      name: `${UNANSWERED_REPORT_AFTER} unanswered starts count as unanswered`,
      input: input({
        servers: [vm("a")],
        startBackoff: new Map([
          ["a", {
            count: UNANSWERED_REPORT_AFTER,
            retryAtMs: at(30).getTime(),
          }],
        ]),
      }),
      ready: [],
      summary: { backoff: 1, unanswered: 1 },
    },
    {
      name: "an unanswered backoff that ran out leaves the VM ready",
      input: input({
        servers: [vm("a")],
        startBackoff: new Map([["a", { count: 5, retryAtMs: T0.getTime() }]]),
      }),
      ready: [["a", "live", 1]],
      summary: { backoff: 0 },
    },
    {
      name: "a VM being deleted is skipped and needs nobody's start",
      input: input({
        servers: [vm("d", 1, { taskState: "deleting" })],
      }),
      ready: [],
      skipped: ["d"],
      summary: { needsPerson: 1 },
    },
    {
      name: "an ERROR VM is a failure needing a person, not ready",
      input: input({
        servers: [vm("e", 1, { status: "ERROR", fault: { message: "boom" } })],
      }),
      ready: [],
      failures: ["e"],
      summary: { needsPerson: 1 },
    },
  ];
  for (const row of rows) {
    const { prev, view, records, acc } = stages(row.input);
    classifyOnHost(row.input, prev, view, records, acc);
    const ids = [...view.onHost.keys()].sort();
    assert.deepEqual(acc.outstanding, ids, `${row.name}: outstanding`);
    assert.equal(
      acc.outstandingRamMb,
      [...view.onHost.values()].reduce((s, v) => s + v.flavor.ramMb, 0),
      `${row.name}: outstanding RAM`,
    );
    if (row.ready !== undefined) {
      assert.deepEqual(
        acc.ready.map((r) => [r.id, r.kind, r.attempt]),
        row.ready,
        `${row.name}: ready`,
      );
    }
    if (row.inFlight !== undefined) {
      assert.deepEqual(
        acc.inFlight.map((e) => e.id),
        row.inFlight,
        `${row.name}: inFlight`,
      );
    }
    if (row.waiting !== undefined) {
      assert.deepEqual(
        acc.waiting.map((w) => [w.id, w.why]),
        row.waiting,
        `${row.name}: waiting`,
      );
    }
    if (row.skipped !== undefined) {
      assert.deepEqual(
        acc.skipped.map((s) => s.id),
        row.skipped,
        `${row.name}: skipped`,
      );
    }
    if (row.failures !== undefined) {
      assert.deepEqual(
        acc.failures.map((f) => f.id),
        row.failures,
        `${row.name}: failures`,
      );
    }
    for (const [k, v] of Object.entries(row.summary ?? {})) {
      assert.equal(
        acc.summary[k as keyof PlanAcc["summary"]],
        v,
        `${row.name}: summary.${k}`,
      );
    }
    if (row.nextRetryAtMs !== undefined) {
      assert.equal(
        acc.nextRetryAtMs,
        row.nextRetryAtMs,
        `${row.name}: nextRetryAtMs`,
      );
    }
  }
});

Deno.test("arrivals: a VM heading here and not listed yet is outstanding and busy", () => {
  const towards = (id: number, vmId: string, status = "running") =>
    mig(id, vmId, status, { sourceCompute: "node043", destCompute: HOST });
  const rows: Array<{
    name: string;
    input: PlanInput;
    arriving: string[];
    outstanding: string[];
    waiting: Array<[string, string]>;
    failed: string[];
  }> = [
    {
      name: "nothing heading here",
      input: input({ migrations: [mig(1, "x", "running")] }),
      arriving: [],
      outstanding: [],
      waiting: [],
      failed: [],
    },
    {
      name: "an unlisted arrival waits as busy, naming its record",
      input: input({ migrations: [towards(7, "b")] }),
      arriving: ["b"],
      outstanding: ["b"],
      waiting: [["b", "arriving (live-migration 7 from node043 is running)"]],
      failed: [],
    },
    {
      name: "an arrival already listed is reported but not counted again",
      input: input({ servers: [vm("b")], migrations: [towards(7, "b")] }),
      arriving: ["b"],
      outstanding: [],
      waiting: [],
      failed: [],
    },
    {
      name: "a finished arrival is no arrival",
      input: input({ migrations: [towards(7, "b", "completed")] }),
      arriving: [],
      outstanding: [],
      waiting: [],
      failed: [],
    },
    {
      name: "arrivals in id order; an arrival's failure entry is kept",
      input: input({
        status: seen([], { failed: [failure("a", 2, -60)] }),
        migrations: [towards(8, "c"), towards(7, "a")],
      }),
      arriving: ["a", "c"],
      outstanding: ["a", "c"],
      waiting: [
        ["a", "arriving (live-migration 7 from node043 is running)"],
        ["c", "arriving (live-migration 8 from node043 is running)"],
      ],
      failed: ["a"],
    },
  ];
  for (const row of rows) {
    const { prev, view, records, acc } = stages(row.input);
    const got = arrivals(prev, view, records, acc);
    assert.deepEqual(got, row.arriving, `${row.name}: arriving`);
    assert.deepEqual(
      acc.outstanding,
      row.outstanding,
      `${row.name}: outstanding`,
    );
    assert.deepEqual(
      acc.waiting.map((w) => [w.id, w.detail]),
      row.waiting,
      `${row.name}: waiting`,
    );
    assert.ok(acc.waiting.every((w) => w.why === "busy"), `${row.name}: busy`);
    assert.equal(
      acc.summary.busy,
      row.outstanding.length,
      `${row.name}: busy count`,
    );
    assert.deepEqual(
      acc.failed.map((f) => f.id),
      row.failed,
      `${row.name}: failed`,
    );
  }
});

Deno.test("departures: a VM no longer listed is done, moved by others, gone, awaiting confirm, or still ours", () => {
  const elsewhere = (id: string, extra = {}) =>
    vm(id, 1, { host: "node043", ...extra });
  const cold = (id: number, vmId: string, status: string) =>
    mig(id, vmId, status, { migrationType: "migration" });
  const rows: Array<{
    name: string;
    input: PlanInput;
    done?: string[];
    movedByOthers?: string[];
    gone?: string[];
    confirmResize?: string[];
    inFlight?: Array<[string, boolean]>;
    outstanding?: string[];
    skipped?: string[];
    waiting?: Array<[string, string]>;
  }> = [
    {
      name: "our start's VM now ACTIVE elsewhere is done",
      input: input({
        status: seen(["a"], { inFlight: [entry("a", -30)] }),
        departed: [{ id: "a", server: elsewhere("a") }],
      }),
      done: ["a"],
      movedByOthers: [],
      gone: [],
      inFlight: [],
      outstanding: [],
    },
    {
      name: "an outstanding VM we never started that left is moved by others",
      input: input({
        status: seen(["a"]),
        departed: [{ id: "a", server: elsewhere("a") }],
      }),
      done: [],
      movedByOthers: ["a"],
    },
    {
      name: "an adopted entry that left is moved by others, not done",
      input: input({
        status: seen(["a"], { inFlight: [entry("a", -30, { adopted: true })] }),
        departed: [{ id: "a", server: elsewhere("a") }],
      }),
      done: [],
      movedByOthers: ["a"],
    },
    {
      name: "a tracked VM answered 404 is gone; an untracked one is nothing",
      input: input({
        status: seen(["a"]),
        departed: [{ id: "a", server: null }, { id: "z", server: null }],
      }),
      gone: ["a"],
      done: [],
      movedByOthers: [],
    },
    {
      name:
        "a failed lookup keeps the in-flight entry, outstanding, as unknown",
      input: input({
        status: seen(["a"], { inFlight: [entry("a", -30)] }),
      }),
      inFlight: [["a", false]],
      outstanding: ["a"],
      waiting: [["a", "unknown"]],
      done: [],
    },
    {
      name:
        "our cold migration at VERIFY_RESIZE, record finished: confirm, still in flight",
      input: input({
        status: seen(["c"], { inFlight: [entry("c", -30, { kind: "cold" })] }),
        migrations: [cold(5, "c", "finished")],
        departed: [{
          id: "c",
          server: elsewhere("c", { status: "VERIFY_RESIZE" }),
        }],
      }),
      confirmResize: ["c"],
      inFlight: [["c", false]],
      done: [],
    },
    {
      name: "our VERIFY_RESIZE whose record says confirming: no confirm again",
      input: input({
        status: seen(["c"], { inFlight: [entry("c", -30, { kind: "cold" })] }),
        migrations: [cold(5, "c", "confirming")],
        departed: [{
          id: "c",
          server: elsewhere("c", { status: "VERIFY_RESIZE" }),
        }],
      }),
      confirmResize: [],
      inFlight: [["c", false]],
    },
    {
      name:
        "someone else's VERIFY_RESIZE is never confirmed: skipped, outstanding",
      input: input({
        status: seen(["c"]),
        migrations: [mig(5, "c", "finished", { migrationType: "resize" })],
        departed: [{
          id: "c",
          server: elsewhere("c", { status: "VERIFY_RESIZE" }),
        }],
      }),
      confirmResize: [],
      skipped: ["c"],
      outstanding: ["c"],
      done: [],
      movedByOthers: [],
    },
    {
      name: "ACTIVE elsewhere while its record still runs holds its slot",
      input: input({
        status: seen(["a"], { inFlight: [entry("a", -30)] }),
        migrations: [mig(3, "a", "running", { createdAt: novaTime(-30) })],
        departed: [{ id: "a", server: elsewhere("a") }],
      }),
      inFlight: [["a", false]],
      done: [],
    },
    {
      name: "an untracked VM whose record from here still runs is adopted",
      input: input({
        migrations: [mig(3, "u", "running")],
        departed: [{ id: "u", server: elsewhere("u") }],
      }),
      inFlight: [["u", true]],
      done: [],
      movedByOthers: [],
    },
  ];
  for (const row of rows) {
    const { prev, view, records, acc } = stages(row.input);
    const out = departures(row.input, prev, view, records, acc);
    for (
      const k of ["done", "movedByOthers", "gone", "confirmResize"] as const
    ) {
      if (row[k] !== undefined) {
        assert.deepEqual(out[k], row[k], `${row.name}: ${k}`);
      }
    }
    if (row.inFlight !== undefined) {
      assert.deepEqual(
        acc.inFlight.map((e) => [e.id, e.adopted === true]),
        row.inFlight,
        `${row.name}: inFlight`,
      );
    }
    if (row.outstanding !== undefined) {
      assert.deepEqual(
        acc.outstanding,
        row.outstanding,
        `${row.name}: outstanding`,
      );
    }
    if (row.skipped !== undefined) {
      assert.deepEqual(
        acc.skipped.map((s) => s.id),
        row.skipped,
        `${row.name}: skipped`,
      );
    }
    if (row.waiting !== undefined) {
      assert.deepEqual(
        acc.waiting.map((w) => [w.id, w.why]),
        row.waiting,
        `${row.name}: waiting`,
      );
    }
  }
});

Deno.test("confirmNeeded: a confirm is sent again only after a look begun after its answer still shows finished", () => {
  const rows: Array<{
    name: string;
    lookedAtMs?: number;
    note?: { sentAtMs: number; answeredAtMs?: number };
    recordStatus: string | undefined;
    want: boolean;
  }> = [
    {
      name: "never sent, record finished",
      recordStatus: "finished",
      want: true,
    },
    {
      name: "never sent, no record listed",
      recordStatus: undefined,
      want: true,
    },
    {
      name: "record FINISHED in capitals",
      recordStatus: "FINISHED",
      want: true,
    },
    { name: "record confirming", recordStatus: "confirming", want: false },
    { name: "record confirmed", recordStatus: "confirmed", want: false },
    {
      name: "sent, not answered yet",
      note: { sentAtMs: 10 },
      lookedAtMs: 50,
      recordStatus: "finished",
      want: false,
    },
    {
      name: "answered, look begun before the answer",
      note: { sentAtMs: 10, answeredAtMs: 20 },
      lookedAtMs: 15,
      recordStatus: "finished",
      want: false,
    },
    {
      name: "answered, look begun at the answer",
      note: { sentAtMs: 10, answeredAtMs: 20 },
      lookedAtMs: 20,
      recordStatus: "finished",
      want: true,
    },
    {
      name: "answered, no look time: now counts (after the answer)",
      note: { sentAtMs: 10, answeredAtMs: 20 },
      recordStatus: "finished",
      want: true,
    },
  ];
  for (const row of rows) {
    const got = confirmNeeded(
      {
        now: new Date(100),
        ...(row.lookedAtMs === undefined ? {} : { lookedAtMs: row.lookedAtMs }),
        confirms: new Map(row.note === undefined ? [] : [["a", row.note]]),
      },
      "a",
      row.recordStatus,
    );
    assert.equal(got, row.want, row.name);
  }
});

Deno.test("converge (legacy flat timeout): past the timeout a migration is stuck; only our live one with an abortable record is aborted", () => {
  const timeout = { ...OPTIONS, migrationTimeoutSeconds: 600 };
  const aborting = { ...timeout, abortStuckMigrations: true };
  const old = entry("a", -700, { migrationId: "3" });
  const running = mig(3, "a", "running", { createdAt: novaTime(-700) });
  const base = {
    servers: [vm("a", 1, { status: "MIGRATING", taskState: "migrating" })],
    migrations: [running],
  };
  const rows: Array<{
    name: string;
    input: PlanInput;
    inFlight: ReturnType<typeof entry>[];
    stuck: Array<[string, number]>;
    abort: Array<[string, string]>;
  }> = [
    {
      name: "no timeout: nothing is ever stuck",
      input: input({ ...base }),
      inFlight: [old],
      stuck: [],
      abort: [],
    },
    {
      name: "within the timeout: not stuck",
      input: input({ ...base, options: aborting }),
      inFlight: [entry("a", -600, { migrationId: "3" })],
      stuck: [],
      abort: [],
    },
    {
      name: "past the timeout, abort off: stuck, not aborted",
      input: input({ ...base, options: timeout }),
      inFlight: [old],
      stuck: [["a", 700]],
      abort: [],
    },
    {
      name: "past the timeout, abort on: stuck and aborted by its migration id",
      input: input({ ...base, options: aborting }),
      inFlight: [old],
      stuck: [["a", 700]],
      abort: [["a", "3"]],
    },
    {
      name: "a queued record is never stuck",
      input: input({
        ...base,
        migrations: [mig(3, "a", "queued", { createdAt: novaTime(-700) })],
        options: aborting,
      }),
      inFlight: [old],
      stuck: [],
      abort: [],
    },
    {
      name: "the copy's start, when seen, beats the entry's start",
      input: input({
        ...base,
        options: aborting,
        copyStartedAtMs: new Map([["a", at(-100).getTime()]]),
      }),
      inFlight: [old],
      stuck: [],
      abort: [],
    },
    {
      name: "a cold one is stuck but never aborted",
      input: input({ ...base, options: aborting }),
      inFlight: [{ ...old, kind: "cold" }],
      stuck: [["a", 700]],
      abort: [],
    },
    {
      name: "an entry whose migration id is not the record's is not aborted",
      input: input({ ...base, options: aborting }),
      inFlight: [{ ...old, migrationId: "2" }],
      stuck: [["a", 700]],
      abort: [],
    },
    {
      name: "a VM no longer on the host is not aborted",
      input: input({ ...base, servers: [], options: aborting }),
      inFlight: [old],
      stuck: [["a", 700]],
      abort: [],
    },
    {
      name:
        "an abort answered less than a timeout before the look is not sent again",
      input: input({
        ...base,
        options: aborting,
        aborts: new Map([["3", {
          sentAtMs: at(-60).getTime(),
          answeredAtMs: at(-59).getTime(),
        }]]),
      }),
      inFlight: [old],
      stuck: [["a", 700]],
      abort: [],
    },
    {
      name: "an abort answered over a timeout before the look is sent again",
      input: input({
        ...base,
        options: aborting,
        aborts: new Map([["3", {
          sentAtMs: at(-700).getTime(),
          answeredAtMs: at(-650).getTime(),
        }]]),
      }),
      inFlight: [old],
      stuck: [["a", 700]],
      abort: [["a", "3"]],
    },
  ];
  for (const row of rows) {
    const { view, records } = stages(row.input);
    const got = converge(row.input, {
      view,
      records,
      inFlight: row.inFlight,
      prevInFlight: new Map(),
      aborted: new Map(),
      outstanding: [],
    });
    assert.deepEqual(
      got.stuck.map((s) => [s.id, s.elapsedSeconds]),
      row.stuck,
      `${row.name}: stuck`,
    );
    assert.deepEqual(
      got.abort.map((a) => [a.id, a.migrationId]),
      row.abort,
      `${row.name}: abort`,
    );
  }
});

Deno.test("pickStarts: largest first, within the limit, the cluster budget and Nova's live limit", () => {
  const rows: Array<{
    name: string;
    input: Partial<PlanInput>;
    ready: Ready[];
    inFlight?: Array<"live" | "cold">;
    want: string[];
    /** The waiting details of the VMs left, by id. */
    left?: Record<string, string>;
  }> = [
    {
      name: "limit 2 of 4 ready: the two largest",
      input: { limit: 2 },
      ready: [ready("a", 1), ready("b", 4), ready("c", 3), ready("d", 2)],
      want: ["b", "c"],
      left: { a: "no free slot", d: "no free slot" },
    },
    {
      name: "equal RAM: by id",
      input: { limit: 2 },
      ready: [ready("c", 2), ready("a", 2), ready("b", 2)],
      want: ["a", "b"],
    },
    {
      name: "the limit less those in flight",
      input: { limit: 3 },
      ready: [ready("a", 1), ready("b", 2)],
      inFlight: ["live", "cold"],
      want: ["b"],
    },
    {
      name: "more in flight than the limit: none, never negative",
      input: { limit: 1 },
      ready: [ready("a", 1)],
      inFlight: ["live", "live"],
      want: [],
      left: { a: "no free slot" },
    },
    {
      name: "the cluster budget below the limit",
      input: { limit: 4, clusterBudgetLeft: 1 },
      ready: [ready("a", 1), ready("b", 2)],
      want: ["b"],
    },
    {
      name: "no cluster budget: none",
      input: { limit: 4, clusterBudgetLeft: 0 },
      ready: [ready("a", 1)],
      want: [],
    },
    {
      name: "starts held: none, each waiting says why",
      input: { limit: 4, holdStarts: "traits stale" },
      ready: [ready("a", 1), ready("b", 2)],
      want: [],
      left: { a: "starts held: traits stale", b: "starts held: traits stale" },
    },
    {
      name: "Nova's live limit reached: a cold one takes the slot",
      input: { limit: 4, novaLiveLimit: 1 },
      ready: [ready("a", 3), ready("s", 1, "cold")],
      inFlight: ["live"],
      want: ["s"],
      left: { a: "Nova runs 1 live migration(s) at a time from this host" },
    },
    {
      name: "queue ahead adds live slots beyond Nova's limit",
      input: { limit: 4, novaLiveLimit: 1, novaQueueAhead: 1 },
      ready: [ready("a", 3), ready("b", 2), ready("c", 1)],
      want: ["a", "b"],
    },
  ];
  for (const row of rows) {
    const inp = input(row.input);
    const acc = accWith(row.ready, row.inFlight, inp.holdStarts);
    const before = acc.inFlight.length;
    const got = pickStarts(inp, acc);
    assert.deepEqual(got.map((s) => s.id), row.want, `${row.name}: starts`);
    assert.deepEqual(
      acc.inFlight.slice(before).map((e) => [e.id, e.kind, e.startedAt]),
      got.map((s) => [s.id, s.kind, T0.toISOString()]),
      `${row.name}: each start joins in flight, started now`,
    );
    assert.equal(
      acc.summary.ready,
      row.ready.length - got.length,
      `${row.name}: the rest count ready`,
    );
    assert.ok(
      acc.waiting.every((w) => w.why === "ready"),
      `${row.name}: the rest wait as ready`,
    );
    if (row.left !== undefined) {
      assert.deepEqual(
        Object.fromEntries(acc.waiting.map((w) => [w.id, w.detail])),
        row.left,
        `${row.name}: waiting details`,
      );
    }
  }
});

Deno.test("pickStarts: starts carry the ready VM's kind, RAM and attempt", () => {
  const acc = accWith([{ id: "s", kind: "cold", ramMb: 7, attempt: 3 }]);
  assert.deepEqual(pickStarts(input(), acc), [
    { id: "s", kind: "cold", ramMb: 7, attempt: 3 },
  ]);
});

Deno.test("splitStarts: in the order given, at most slots in all and liveSlots live", () => {
  const r = (id: string, kind: "live" | "cold") => ({ id, kind });
  const rows: Array<{
    name: string;
    ready: Array<{ id: string; kind: "live" | "cold" }>;
    slots: number;
    liveSlots: number;
    want: [string, string];
  }> = [
    {
      name: "a cold one takes the slot a live one cannot",
      ready: [r("a", "live"), r("b", "live"), r("c", "cold")],
      slots: 2,
      liveSlots: 1,
      want: ["a,c", "b"],
    },
    {
      name: "no slots: all left, order kept",
      ready: [r("b", "cold"), r("a", "live")],
      slots: 0,
      liveSlots: 5,
      want: ["", "b,a"],
    },
    {
      name: "negative live slots act as none",
      ready: [r("a", "live"), r("b", "cold"), r("c", "live")],
      slots: 3,
      liveSlots: -2,
      want: ["b", "a,c"],
    },
    {
      name: "unbounded live slots: the first `slots`",
      ready: [r("a", "live"), r("b", "live"), r("c", "live")],
      slots: 2,
      liveSlots: Infinity,
      want: ["a,b", "c"],
    },
  ];
  for (const row of rows) {
    const got = splitStarts(row.ready, row.slots, row.liveSlots);
    assert.deepEqual(
      [got.start.map((x) => x.id).join(), got.left.map((x) => x.id).join()],
      row.want,
      row.name,
    );
  }
});

Deno.test("splitStarts: property: a partition in order, bounded, and greedy", () => {
  fc.assert(
    fc.property(
      fc.array(fc.constantFrom<"live" | "cold">("live", "cold"), {
        maxLength: 12,
      }),
      fc.integer({ min: 0, max: 8 }),
      fc.integer({ min: -2, max: 8 }),
      (kinds, slots, liveSlots) => {
        const ready = kinds.map((kind, i) => ({ id: `v${i}`, kind }));
        const { start, left } = splitStarts(ready, slots, liveSlots);
        // Kinds and objects are kept; start and left keep the given order.
        const idx = (x: { id: string }) => ready.findIndex((r) => r === x);
        for (const part of [start, left]) {
          const positions = part.map(idx);
          assert.ok(positions.every((p) => p >= 0), "items are the given ones");
          assert.deepEqual(
            positions,
            [...positions].sort((a, b) => a - b),
            "order kept",
          );
        }
        assert.equal(start.length + left.length, ready.length, "a partition");
        assert.equal(
          new Set([...start, ...left]).size,
          ready.length,
          "no item twice",
        );
        assert.ok(start.length <= slots, "at most slots");
        const live = start.filter((x) => x.kind === "live").length;
        assert.ok(live <= Math.max(0, liveSlots), "at most liveSlots live");
        // Greedy: one left behind had no slot, or was live with no live slot.
        for (const x of left) {
          const before = start.filter((s) => idx(s) < idx(x));
          const liveBefore = before.filter((s) => s.kind === "live").length;
          assert.ok(
            before.length >= slots ||
              (x.kind === "live" && liveBefore >= Math.max(0, liveSlots)),
            `${x.id} left with a slot free`,
          );
        }
      },
    ),
  );
});

Deno.test("pendingStarts: counts pending starts of VMs neither outstanding nor in flight as busy", () => {
  const rows: Array<{
    name: string;
    notes: StartNote[];
    outstanding: string[];
    inFlight: string[];
    want: number;
  }> = [
    { name: "no notes", notes: [], outstanding: [], inFlight: [], want: 0 },
    {
      name: "a pending start of a VM not seen anywhere counts",
      notes: [{ id: "a", state: "pending" }],
      outstanding: [],
      inFlight: [],
      want: 1,
    },
    {
      name: "answered starts do not count",
      notes: [
        { id: "a", state: "accepted" },
        { id: "b", state: "unknown" },
        { id: "c", state: "refused" },
      ],
      outstanding: [],
      inFlight: [],
      want: 0,
    },
    {
      name: "pending starts of outstanding or in-flight VMs are counted there",
      notes: [
        { id: "a", state: "pending" },
        { id: "b", state: "pending" },
        { id: "c", state: "pending" },
      ],
      outstanding: ["a"],
      inFlight: ["b"],
      want: 1,
    },
  ];
  for (const row of rows) {
    const prev = foldNotes(input({ starts: notes(...row.notes) }));
    const acc = newAcc(undefined);
    acc.outstanding.push(...row.outstanding);
    acc.inFlight.push(...row.inFlight.map((id) => entry(id, 0)));
    acc.summary.busy = 2;
    assert.equal(pendingStarts(prev, acc), row.want, row.name);
    assert.equal(acc.summary.busy, 2 + row.want, `${row.name}: busy`);
  }
});

/** A random drain pass built from the fixtures. */
const passArb = fc.record({
  servers: fc.array(
    fc.record({
      id: fc.constantFrom("a", "b", "c", "d", "e", "f", "g", "h"),
      ramMb: fc.integer({ min: 1, max: 8 }).map((n) => n * 512),
      status: fc.constantFrom(
        "ACTIVE",
        "PAUSED",
        "SHUTOFF",
        "MIGRATING",
        "ERROR",
      ),
    }),
    { maxLength: 10 },
  ),
  inFlightIds: fc.subarray(["a", "b", "c", "x", "y"]),
  pendingIds: fc.subarray(["b", "d", "e", "z"]),
  limit: fc.integer({ min: 0, max: 6 }),
  budget: fc.oneof(fc.integer({ min: 0, max: 6 }), fc.constant(Infinity)),
  novaLiveLimit: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
  novaQueueAhead: fc.option(fc.integer({ min: 0, max: 2 }), { nil: undefined }),
  held: fc.boolean(),
});

Deno.test("pickStarts: property: starts never exceed min(limit − in flight, budget left), never twice, never in flight or pending", () => {
  fc.assert(
    fc.property(passArb, (p) => {
      const inp = input({
        servers: p.servers.map((s) =>
          vm(s.id, s.ramMb, {
            status: s.status,
            taskState: s.status === "MIGRATING" ? "migrating" : null,
          })
        ),
        status: seen(p.servers.map((s) => s.id), {
          inFlight: p.inFlightIds.map((id) => entry(id, -5)),
        }),
        starts: notes(
          ...p.pendingIds.map((id): StartNote => ({
            id,
            state: "pending",
            kind: "live",
            issuedAtMs: T0.getTime() - 500,
          })),
        ),
        limit: p.limit,
        clusterBudgetLeft: p.budget,
        ...(p.novaLiveLimit === undefined
          ? {}
          : { novaLiveLimit: p.novaLiveLimit }),
        ...(p.novaQueueAhead === undefined
          ? {}
          : { novaQueueAhead: p.novaQueueAhead }),
        ...(p.held ? { holdStarts: "held" } : {}),
      });
      const { prev, view, records, acc } = stages(inp);
      classifyOnHost(inp, prev, view, records, acc);
      arrivals(prev, view, records, acc);
      departures(inp, prev, view, records, acc);
      const inFlightBefore = acc.inFlight.map((e) => e.id);
      const liveBefore = acc.inFlight.filter((e) => e.kind === "live").length;
      const readyCount = acc.ready.length;
      const start = pickStarts(inp, acc);
      const ids = start.map((s) => s.id);
      const bound = Math.max(
        0,
        Math.min(p.limit - inFlightBefore.length, p.budget),
      );
      assert.ok(
        start.length <= bound,
        `${start.length} starts, bound ${bound}`,
      );
      assert.equal(new Set(ids).size, ids.length, `a VM picked twice: ${ids}`);
      for (const id of ids) {
        assert.ok(!inFlightBefore.includes(id), `${id} already in flight`);
        assert.ok(!p.pendingIds.includes(id), `${id} has a pending start`);
      }
      if (p.held) assert.equal(start.length, 0, "held: no start");
      if (p.novaLiveLimit !== undefined) {
        const live = start.filter((s) => s.kind === "live").length;
        assert.ok(
          live <=
            Math.max(0, p.novaLiveLimit + (p.novaQueueAhead ?? 0) - liveBefore),
          "Nova's live limit",
        );
      } else if (!p.held) {
        assert.equal(
          start.length,
          Math.min(bound, readyCount),
          "every free slot used",
        );
      }
      assert.equal(
        acc.inFlight.length,
        inFlightBefore.length + start.length,
        "starts join in flight",
      );
      for (let i = 1; i < start.length; i++) {
        assert.ok(start[i - 1]!.ramMb >= start[i]!.ramMb, "largest first");
      }
    }),
  );
});
