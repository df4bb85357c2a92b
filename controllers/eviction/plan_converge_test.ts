// The planner's convergence decisions (plan_converge.ts) through planPass:
// each onTimeout, the fallback abort, requests, status.aborted and the
// retry-alone rule.
import assert from "node:assert/strict";
import { type EvictionStatus, EvictionStatusSchema } from "../../models/mod.ts";
import {
  type ConvergenceSpec,
  resolveConvergence,
} from "../../limits/convergence.ts";
import type { CopyProgress } from "../../openstack/informer/progress_types.ts";
import type { ActionNote } from "./once.ts";
import { type Plan, type PlanInput, planPass } from "./plan.ts";
import { ABORTED_PREFIX, abortedOf } from "./plan_converge.ts";
import type {
  AbortedItem,
  ConvergenceRequest,
  InFlightItem,
} from "./plan_types.ts";
import { applyRetry } from "./retry.ts";
import {
  at,
  entry,
  input,
  mig,
  novaTime,
  OPTIONS,
  vm,
} from "../../tests/harness/plan_fixtures.ts";

/** 4 GiB at 200 s per GiB: an 800 s bound; the copy runs since -1000 s. */
const policy = (spec: ConvergenceSpec = {}) =>
  resolveConvergence({
    abortStuckMigrations: false,
    defaults: {
      completionTimeoutPerGiB: 200,
      progressTimeoutSeconds: 150,
      forceCompleteTimeoutSeconds: 300,
      maxAbortedTries: 2,
      ...spec,
    },
  });
const migrating = vm("a", 4096, {
  status: "MIGRATING",
  taskState: "migrating",
});
const running = (status = "running") =>
  mig(7, "a", status, { createdAt: novaTime(-1000) });

function copyInput(
  spec: ConvergenceSpec,
  over: Partial<PlanInput> = {},
  extras: Partial<InFlightItem> = {},
  startedSeconds = -1000,
): PlanInput {
  return input({
    servers: [migrating],
    migrations: [running()],
    status: {
      inFlight: [entry("a", startedSeconds, { migrationId: "7", ...extras })],
      outstandingInstances: ["a"],
    },
    options: { ...OPTIONS, convergence: policy(spec) },
    ...over,
  });
}

const progress = (
  lowestSeconds: number,
  readSeconds: number,
  migrationId = "7",
): ReadonlyMap<string, CopyProgress> =>
  new Map([["a", {
    serverId: "a",
    migrationId,
    totalBytes: 4096 * 1048576,
    remainingBytes: 1_000_000_000,
    readAtMs: at(readSeconds).getTime(),
    lowestRemainingBytes: 900_000_000,
    lowestAtMs: at(lowestSeconds).getTime(),
    bytesPerSecond: 1234.4,
    etaSeconds: 99.6,
  }]]);

const note = (sent: number, answered?: number): ActionNote => ({
  sentAtMs: at(sent).getTime(),
  ...(answered === undefined ? {} : { answeredAtMs: at(answered).getTime() }),
});

const iso = (s: number) => at(s).toISOString();
const entryOf = (plan: Plan, id = "a"): InFlightItem | undefined =>
  (plan.next.inFlight ?? []).find((e) => e.id === id) as
    | InFlightItem
    | undefined;
const actions = (plan: Plan) => ({
  abort: plan.abort.map((a) => `${a.id}/${a.migrationId}/${a.reason}`),
  forceComplete: plan.forceComplete.map((f) =>
    `${f.id}/${f.migrationId}/${f.reason}`
  ),
  notConverging: plan.notConverging.map((n) => `${n.id}/${n.why}`),
});

Deno.test("converge: each onTimeout and the force-complete fallback", () => {
  const rows: Array<{
    name: string;
    in: PlanInput;
    abort?: string[];
    forceComplete?: string[];
    notConverging?: string[];
    /** The in-flight entry's convergence fields. */
    fields?: Partial<InFlightItem>;
    check?: (plan: Plan) => void;
  }> = [
    {
      name: "within its bound: nothing, the deadline is start + 800 s",
      in: copyInput({ onTimeout: "Abort" }, {}, {}, -700),
      fields: { deadlineAt: iso(100) },
    },
    {
      name: "Report: past the bound it is reported, nothing is sent",
      in: copyInput({ onTimeout: "Report" }),
      notConverging: ["a/completion"],
      fields: { notConverging: true, deadlineAt: iso(-200) },
      check: (p) => {
        assert.equal(p.notConverging[0]?.sinceSeconds, 200);
        assert.equal(p.notConverging[0]?.actAt, undefined);
        assert.equal(p.notConverging[0]?.onTimeout, "Report");
        assert.deepEqual(p.stuck.map((s) => s.id), ["a"]);
      },
    },
    {
      name: "Abort: past the bound it is aborted and counted in status.aborted",
      in: copyInput({ onTimeout: "Abort" }),
      abort: ["a/7/timeout"],
      notConverging: ["a/completion"],
      check: (p) =>
        assert.deepEqual([...abortedOf(p.next).values()], [
          { id: "a", tries: 1, lastAbortedAt: iso(0), reason: "timeout" },
        ]),
    },
    {
      name: "Abort: an abort awaiting Nova's answer is not sent again",
      in: copyInput({ onTimeout: "Abort" }, {
        aborts: new Map([["7", note(-5)]]),
      }),
      notConverging: ["a/completion"],
    },
    {
      name: "Abort: answered less than a progress interval before: not again",
      in: copyInput({ onTimeout: "Abort" }, {
        aborts: new Map([["7", note(-100, -99)]]),
      }),
      notConverging: ["a/completion"],
    },
    {
      name:
        "Abort: answered a progress interval before the look and still running: again, counted once",
      in: copyInput({ onTimeout: "Abort" }, {
        aborts: new Map([["7", note(-200, -199)]]),
        status: {
          inFlight: [entry("a", -1000, { migrationId: "7" })],
          outstandingInstances: ["a"],
          aborted: [{
            id: "a",
            tries: 1,
            lastAbortedAt: iso(-200),
            reason: "timeout",
          }],
        } as EvictionStatus,
      }),
      abort: ["a/7/timeout"],
      notConverging: ["a/completion"],
      check: (p) => assert.equal(abortedOf(p.next).get("a")?.tries, 1),
    },
    {
      name: "ForceComplete: sent once, the fallback due 300 s later",
      in: copyInput({ onTimeout: "ForceComplete" }),
      forceComplete: ["a/7/timeout"],
      notConverging: ["a/completion"],
      fields: {
        notConverging: true,
        forceCompleteSentAt: iso(0),
        deadlineAt: iso(300),
      },
      check: (p) => assert.equal(p.notConverging[0]?.actAt, iso(300)),
    },
    {
      name: "ForceComplete: sent (status) 100 s ago: nothing more yet",
      in: copyInput({ onTimeout: "ForceComplete" }, {}, {
        forceCompleteSentAt: iso(-100),
      }),
      notConverging: ["a/completion"],
      fields: {
        notConverging: true,
        forceCompleteSentAt: iso(-100),
        deadlineAt: iso(200),
      },
    },
    {
      name:
        "ForceComplete: still running 300 s after it was sent: the fallback abort",
      in: copyInput({ onTimeout: "ForceComplete" }, {}, {
        forceCompleteSentAt: iso(-300),
      }),
      abort: ["a/7/timeout"],
      notConverging: ["a/completion"],
    },
    {
      name: "ForceComplete: the fallback abort also under the once rule",
      in: copyInput({ onTimeout: "ForceComplete" }, {
        aborts: new Map([["7", note(-10)]]),
      }, { forceCompleteSentAt: iso(-400) }),
      notConverging: ["a/completion"],
    },
    {
      name:
        "ForceComplete: a note of this process (status write lost) counts as sent",
      in: copyInput({ onTimeout: "ForceComplete" }, {
        forceCompletes: new Map([["7", note(-50, -49)]]),
      }),
      notConverging: ["a/completion"],
      fields: {
        notConverging: true,
        forceCompleteSentAt: iso(-50),
        deadlineAt: iso(250),
      },
    },
    {
      name: "ForceComplete: a mark of an earlier migration does not count",
      in: copyInput({ onTimeout: "ForceComplete" }, {
        status: {
          inFlight: [entry("a", -1000, {
            migrationId: "6",
            forceCompleteSentAt: iso(-2000),
          } as Partial<InFlightItem>)],
          outstandingInstances: ["a"],
        },
      }),
      forceComplete: ["a/7/timeout"],
      notConverging: ["a/completion"],
    },
    {
      name:
        "ForceComplete: a migration still preparing has not begun to copy: not past its bound, nothing sent",
      in: copyInput({ onTimeout: "ForceComplete" }, {
        migrations: [running("preparing")],
      }),
    },
    {
      name: "limit 0 (a deleted drain): reported, nothing sent, no action due",
      in: copyInput({ onTimeout: "ForceComplete" }, { limit: 0 }),
      notConverging: ["a/completion"],
      check: (p) => assert.equal(p.notConverging[0]?.actAt, undefined),
    },
    {
      name: "progress: no new low for the progress timeout, by a read: aborted",
      in: copyInput(
        { onTimeout: "Abort" },
        { progress: progress(-200, -20) },
        {},
        -300,
      ),
      abort: ["a/7/timeout"],
      notConverging: ["a/progress"],
      fields: {
        notConverging: true,
        memoryTotalBytes: 4096 * 1048576,
        memoryRemainingBytes: 1_000_000_000,
        bytesPerSecond: 1234,
        etaSeconds: 100,
        deadlineAt: iso(-50),
      },
      check: (p) => {
        assert.equal(p.notConverging[0]?.remainingBytes, 1_000_000_000);
        assert.equal(p.notConverging[0]?.sinceSeconds, 50);
        assert.deepEqual(p.stuck, [], "within its completion bound");
      },
    },
    {
      name:
        "progress: the last read is within the progress timeout: never assumed",
      in: copyInput(
        { onTimeout: "Abort" },
        { progress: progress(-200, -60) },
        {},
        -300,
      ),
      fields: {
        memoryTotalBytes: 4096 * 1048576,
        memoryRemainingBytes: 1_000_000_000,
        bytesPerSecond: 1234,
        etaSeconds: 100,
        deadlineAt: iso(-50),
      },
    },
    {
      name: "progress: a read of another migration is not this copy's",
      in: copyInput(
        { onTimeout: "Abort" },
        {
          progress: progress(-200, -20, "6"),
        },
        {},
        -300,
      ),
      fields: { deadlineAt: iso(500) },
    },
    {
      name:
        "the bound runs from the copy's start, not the drain's; that start is written for a restart",
      in: copyInput({ onTimeout: "Abort" }, {
        copyStartedAtMs: new Map([["a", at(-500).getTime()]]),
      }),
      fields: { deadlineAt: iso(300), copyStartedAt: iso(-500) },
    },
    {
      name: "a copy Nova still holds queued has no bound",
      in: copyInput({ onTimeout: "Abort" }, {
        migrations: [running("queued")],
      }),
    },
    {
      name: "someone else's copy (adopted) is reported, never acted on",
      in: copyInput({ onTimeout: "Abort" }, {}, { adopted: true }),
      notConverging: ["a/completion"],
      check: (p) => assert.equal(p.notConverging[0]?.actAt, undefined),
    },
    {
      name: "without convergence (legacy): progress shown, no new report",
      in: input({
        servers: [migrating],
        migrations: [running()],
        status: {
          inFlight: [entry("a", -1000, { migrationId: "7" })],
          outstandingInstances: ["a"],
        },
        options: {
          ...OPTIONS,
          migrationTimeoutSeconds: 600,
          abortStuckMigrations: true,
        },
        progress: progress(-900, -10),
      }),
      abort: ["a/7/stuck"],
      fields: {
        memoryTotalBytes: 4096 * 1048576,
        memoryRemainingBytes: 1_000_000_000,
        bytesPerSecond: 1234,
        etaSeconds: 100,
      },
      check: (p) => assert.equal(abortedOf(p.next).size, 0, "no requeue"),
    },
  ];
  for (const row of rows) {
    const plan = planPass(row.in);
    assert.deepEqual(actions(plan), {
      abort: row.abort ?? [],
      forceComplete: row.forceComplete ?? [],
      notConverging: row.notConverging ?? [],
    }, row.name);
    if (row.fields !== undefined) {
      const { id: _i, kind: _k, startedAt: _s, migrationId: _m, ...fields } =
        entryOf(plan) ?? { id: "", kind: "live", startedAt: "" };
      assert.deepEqual(fields, row.fields, `${row.name}: fields`);
    }
    row.check?.(plan);
  }
});

const ask = (
  action: ConvergenceRequest["action"],
  server = "a",
): ConvergenceRequest => ({
  server,
  action,
  requestedBy: "alice",
  requestedAt: iso(-1),
});

Deno.test("converge: a person's requests, each with one outcome", () => {
  const report = { onTimeout: "Report" as const };
  const rows: Array<{
    name: string;
    in: PlanInput;
    outcomes: string[];
    abort?: string[];
    forceComplete?: string[];
  }> = [
    {
      name: "force-complete a running copy, within its bound",
      in: copyInput(report, { requests: [ask("ForceComplete")] }, {}, -10),
      outcomes: ["a/ForceComplete/Sent"],
      forceComplete: ["a/7/requested"],
    },
    {
      name: "force-complete twice in one pass: the second is refused",
      in: copyInput(report, {
        requests: [ask("ForceComplete"), ask("ForceComplete")],
      }),
      outcomes: ["a/ForceComplete/Sent", "a/ForceComplete/Refused"],
      forceComplete: ["a/7/requested"],
    },
    {
      name: "force-complete a migration already force-completed: refused",
      in: copyInput(report, { requests: [ask("ForceComplete")] }, {
        forceCompleteSentAt: iso(-30),
      }),
      outcomes: ["a/ForceComplete/Refused"],
    },
    {
      name:
        "a request and the policy in one pass: one force_complete, the person's",
      in: copyInput({ onTimeout: "ForceComplete" }, {
        requests: [ask("ForceComplete")],
      }),
      outcomes: ["a/ForceComplete/Sent"],
      forceComplete: ["a/7/requested"],
    },
    {
      name:
        "a person's force_complete and the policy's abort in one pass: only the person's",
      in: copyInput({ onTimeout: "Abort" }, {
        requests: [ask("ForceComplete")],
      }),
      outcomes: ["a/ForceComplete/Sent"],
      forceComplete: ["a/7/requested"],
    },
    {
      name:
        "a person's abort and the policy's force_complete in one pass: only the abort",
      in: copyInput({ onTimeout: "ForceComplete" }, {
        requests: [ask("Abort")],
      }),
      outcomes: ["a/Abort/Sent"],
      abort: ["a/7/requested"],
    },
    {
      name: "abort: sent and counted as a try",
      in: copyInput(report, { requests: [ask("Abort")] }, {}, -10),
      outcomes: ["a/Abort/Sent"],
      abort: ["a/7/requested"],
    },
    {
      name: "abort while one awaits Nova's answer: refused",
      in: copyInput(report, {
        requests: [ask("Abort")],
        aborts: new Map([["7", note(-3)]]),
      }),
      outcomes: ["a/Abort/Refused"],
    },
    {
      name:
        "a request and the policy's abort in one pass: one abort, the person's",
      in: copyInput({ onTimeout: "Abort" }, { requests: [ask("Abort")] }),
      outcomes: ["a/Abort/Sent"],
      abort: ["a/7/requested"],
    },
    {
      name: "a VM not in flight",
      in: copyInput(report, { requests: [ask("Abort", "zz")] }),
      outcomes: ["zz/Abort/NotInFlight"],
    },
    {
      name: "a cold migration cannot be force-completed",
      in: copyInput(report, { requests: [ask("ForceComplete")] }, {
        kind: "cold",
      }),
      outcomes: ["a/ForceComplete/NotInFlight"],
    },
    {
      name: "a deleted drain (limit 0) sends nothing",
      in: copyInput(report, {
        limit: 0,
        requests: [ask("ForceComplete"), ask("Abort")],
      }),
      outcomes: ["a/ForceComplete/Refused", "a/Abort/Refused"],
    },
  ];
  for (const row of rows) {
    const plan = planPass(row.in);
    assert.deepEqual(
      plan.requestOutcomes.map((o) => `${o.server}/${o.action}/${o.outcome}`),
      row.outcomes,
      row.name,
    );
    for (const o of plan.requestOutcomes) {
      assert.equal(o.requestedBy, "alice", row.name);
      assert.ok(o.message.length > 0, row.name);
    }
    assert.deepEqual(actions(plan).abort, row.abort ?? [], row.name);
    assert.deepEqual(
      actions(plan).forceComplete,
      row.forceComplete ?? [],
      row.name,
    );
    for (const a of [...plan.abort, ...plan.forceComplete]) {
      assert.equal(a.requestedBy, "alice", row.name);
    }
    if (row.abort?.length) {
      assert.equal(abortedOf(plan.next).get("a")?.reason, "requested");
    }
  }
});

/** After our abort: the record cancelled, the VM back to ACTIVE on the host. */
function afterAbort(
  tries: number,
  over: Partial<PlanInput> = {},
  status: EvictionStatus = {},
): PlanInput {
  const aborted: AbortedItem = {
    id: "a",
    tries,
    lastAbortedAt: iso(-60),
    reason: "timeout",
  };
  return input({
    servers: [vm("a", 4096)],
    migrations: [mig(7, "a", "cancelled", { createdAt: novaTime(-1000) })],
    status: {
      inFlight: [entry("a", -1000, { migrationId: "7" })],
      outstandingInstances: ["a"],
      aborted: [aborted],
      ...status,
    } as EvictionStatus,
    options: { ...OPTIONS, convergence: policy({ onTimeout: "Abort" }) },
    ...over,
  });
}

Deno.test("converge: an aborted VM is retried alone and last, or left for a person", () => {
  const rows: Array<{
    name: string;
    in: PlanInput;
    start: string[];
    waiting?: Record<string, string>;
    check?: (plan: Plan) => void;
  }> = [
    {
      name: "alone on the host: started again, the aborted copy no failure",
      in: afterAbort(1),
      start: ["a"],
      check: (p) => {
        assert.deepEqual(p.failed, []);
        assert.deepEqual(p.next.failed, []);
        assert.equal(abortedOf(p.next).get("a")?.tries, 1, "kept while here");
      },
    },
    {
      name: "another VM ready: it starts, the retried one waits",
      in: afterAbort(1, { servers: [vm("a", 4096), vm("b", 512)] }),
      start: ["b"],
      waiting: { a: "ready" },
    },
    {
      name: "another copy in flight: the retried one waits",
      in: afterAbort(1, {
        servers: [
          vm("a", 4096),
          vm("c", 512, { status: "MIGRATING", taskState: "migrating" }),
        ],
        migrations: [
          mig(7, "a", "cancelled", { createdAt: novaTime(-1000) }),
          mig(8, "c", "running"),
        ],
      }, {
        inFlight: [
          entry("a", -1000, { migrationId: "7" }),
          entry("c", -10, { migrationId: "8" }),
        ],
      }),
      start: [],
      waiting: { a: "ready" },
    },
    {
      name: "two retried VMs: the earlier aborted goes first, alone",
      in: afterAbort(1, { servers: [vm("a", 4096), vm("b", 8192)] }, {
        aborted: [
          { id: "a", tries: 1, lastAbortedAt: iso(-60), reason: "timeout" },
          { id: "b", tries: 1, lastAbortedAt: iso(-30), reason: "requested" },
        ],
      } as EvictionStatus),
      start: ["a"],
      waiting: { b: "ready" },
    },
    {
      name: "a retried copy in flight: nothing starts beside it",
      in: afterAbort(1, {
        servers: [
          vm("a", 4096, { status: "MIGRATING", taskState: "migrating" }),
          vm("b", 512),
        ],
        migrations: [mig(9, "a", "running", { createdAt: novaTime(-20) })],
      }, { inFlight: [entry("a", -20, { migrationId: "9" })] }),
      start: [],
      waiting: { b: "ready" },
    },
    {
      name: "at maxAbortedTries: left for a person, exhausted, never started",
      in: afterAbort(2),
      start: [],
      check: (p) => {
        assert.equal(p.failed.length, 1);
        assert.equal(p.failed[0]?.exhausted, true);
        assert.ok(p.failed[0]?.reason.startsWith(ABORTED_PREFIX));
        assert.equal(p.next.failed?.[0]?.id, "a");
        assert.equal(p.summary.needsPerson, 1);
        assert.equal(p.finished, false, "never Succeeded with it on the host");
        assert.deepEqual(p.next.outstandingInstances, ["a"]);
      },
    },
    {
      name: "left for a person: reported once, not on every pass",
      in: (() => {
        const first = planPass(afterAbort(2));
        return afterAbort(2, { now: at(30) }, {
          inFlight: [],
          failed: first.next.failed ?? [],
        });
      })(),
      start: [],
      check: (p) => {
        assert.deepEqual(p.failed, []);
        assert.equal(p.next.failed?.length, 1);
      },
    },
    {
      name: "a VM that left the host drops its aborted entry",
      in: afterAbort(1, {
        servers: [],
        departed: [{ id: "a", server: null }],
      }),
      start: [],
      check: (p) =>
        assert.deepEqual((p.next as { aborted?: unknown }).aborted, []),
    },
  ];
  for (const row of rows) {
    const plan = planPass(row.in);
    assert.deepEqual(plan.start.map((s) => s.id), row.start, row.name);
    for (const [id, why] of Object.entries(row.waiting ?? {})) {
      assert.equal(
        plan.waiting.find((w) => w.id === id)?.why,
        why,
        `${row.name}: ${id}`,
      );
    }
    row.check?.(plan);
  }
});

Deno.test("converge: without a convergence policy a person's force_complete is still sent once", () => {
  const legacy = (
    over: Partial<PlanInput>,
    extras: Partial<InFlightItem> = {},
  ) =>
    input({
      servers: [migrating],
      migrations: [running()],
      status: {
        inFlight: [entry("a", -10, { migrationId: "7", ...extras })],
        outstandingInstances: ["a"],
      },
      requests: [ask("ForceComplete")],
      ...over,
    });
  const first = planPass(legacy({}));
  assert.deepEqual(actions(first).forceComplete, ["a/7/requested"]);
  assert.equal(entryOf(first)?.forceCompleteSentAt, iso(0));
  // A restart: no note, the mark in status refuses a second request.
  const again = planPass(legacy({ now: at(5) }, {
    forceCompleteSentAt: iso(0),
  }));
  assert.deepEqual(actions(again).forceComplete, []);
  assert.equal(again.requestOutcomes[0]?.outcome, "Refused");
  assert.equal(entryOf(again)?.forceCompleteSentAt, iso(0));
});

Deno.test("converge: kubectl evictor retry re-arms a VM left after its aborted tries", () => {
  const left = planPass(afterAbort(2)).next;
  const { status } = applyRetry(left, "a");
  assert.equal(abortedOf(status).size, 0);
  const plan = planPass(afterAbort(0, { now: at(60) }, {
    ...status,
    inFlight: [],
  }));
  assert.deepEqual(plan.start.map((s) => s.id), ["a"]);
});

Deno.test("converge: a live start Nova shows no copy of yet (no record, accepted, preparing; not queued) is looked at by its bound from the start (lookByMs), under Abort and ForceComplete, not Report", () => {
  const unseen = (
    spec: ConvergenceSpec,
    migrations = [] as ReturnType<typeof mig>[],
  ) =>
    planPass(input({
      servers: [migrating],
      migrations,
      status: {
        inFlight: [entry("a", -100)],
        outstandingInstances: ["a"],
      },
      options: { ...OPTIONS, convergence: policy(spec) },
    }));
  // 4 GiB at 200 s per GiB from a start 100 s ago: due in 700 s
  assert.equal(unseen({ onTimeout: "Abort" }).lookByMs, at(700).getTime());
  assert.equal(
    unseen({ onTimeout: "ForceComplete" }, [
      mig(7, "a", "accepted", { createdAt: novaTime(-100) }),
    ]).lookByMs,
    at(700).getTime(),
  );
  assert.equal(unseen({ onTimeout: "Report" }).lookByMs, undefined);
  // preparing is no copy yet either; a queued one waits for Nova's queue
  assert.equal(
    unseen({ onTimeout: "Abort" }, [
      mig(7, "a", "preparing", { createdAt: novaTime(-100) }),
    ]).lookByMs,
    at(700).getTime(),
  );
  assert.equal(
    unseen({ onTimeout: "Abort" }, [
      mig(7, "a", "queued", { createdAt: novaTime(-100) }),
    ]).lookByMs,
    undefined,
  );
  // once Nova shows the copy, its progress reads pace the looks
  assert.equal(
    unseen({ onTimeout: "Abort" }, [
      mig(7, "a", "running", { createdAt: novaTime(-100) }),
    ]).lookByMs,
    undefined,
  );
});

Deno.test("converge: a copy whose remaining bytes rose is shown at 0 B/s, and the status stays valid for the API server's schema", () => {
  // Real Zed (lane): the remaining bytes hovered up; a net rate of
  // -235408 B/s was refused by the CRD (minimum 0) on every status write.
  const rose = new Map([["a", {
    ...progress(-100, -10).get("a")!,
    bytesPerSecond: -235_408,
    etaSeconds: -12,
  }]]);
  const plan = planPass(copyInput({}, { progress: rose }));
  const e = entryOf(plan);
  assert.equal(e?.bytesPerSecond, 0);
  assert.equal(e?.etaSeconds, undefined);
  assert.equal(EvictionStatusSchema.safeParse(plan.next).success, true);
});
