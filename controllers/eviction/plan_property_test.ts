import assert from "node:assert/strict";
import fc from "fast-check";
import {
  type EvictionStatus,
  type EvictionStatusFailedItem,
  type EvictionStatusInFlightItem,
  EvictionStatusSchema,
} from "../../models/mod.ts";
import type { PlanOptions } from "./plan_options.ts";
import { resolveConvergence } from "../../limits/convergence.ts";
import type {
  DepartedServer,
  ObservedMigration,
  ObservedServer,
} from "../../openstack/informer/snapshot.ts";
import { type PlanInput, planPass } from "./plan.ts";
import { at, HOST, novaTime, T0 } from "../../tests/harness/plan_fixtures.ts";
import { departedIds } from "../../openstack/informer/nova_records.ts";
import { deletedPlan } from "./finalize.ts";
import { settleLook } from "./settle.ts";

const IDS = Array.from(
  { length: 14 },
  (_, i) => `vm${String(i).padStart(2, "0")}`,
);

const STATUSES = [
  "ACTIVE",
  "ACTIVE",
  "ACTIVE",
  "ACTIVE",
  "ACTIVE",
  "SHUTOFF",
  "PAUSED",
  "SHUTOFF",
  "SHUTOFF",
  "MIGRATING",
  "RESIZE",
  "VERIFY_RESIZE",
  "ERROR",
  "SUSPENDED",
  "RESCUE",
  "SHELVED",
  "BUILD",
];
const TASK_STATES = [
  null,
  null,
  null,
  null,
  null,
  null,
  null,
  null,
  "migrating",
  "resize_prep",
  "resize_migrating",
  "deleting",
  "image_snapshot",
];
const RECORD_STATUSES = [
  "queued",
  "preparing",
  "running",
  "post-migrating",
  "accepted",
  "pre-migrating",
  "migrating",
  "completed",
  "finished",
  "confirmed",
  "error",
  "failed",
  "cancelled",
  "done",
  "something-new",
];

const serverArb = (id: string, host: string) =>
  fc.record({
    status: fc.constantFrom(...STATUSES),
    taskState: fc.constantFrom(...TASK_STATES),
    ramMb: fc.constantFrom(512, 1024, 2048, 4096, 8192, 16384, 3000),
    fault: fc.boolean(),
  }).map(({ status, taskState, ramMb, fault }): ObservedServer => ({
    id,
    status,
    host,
    taskState,
    flavor: { ramMb },
    ...(fault && status === "ERROR"
      ? { fault: { message: `fault of ${id}` } }
      : {}),
  }));

const optionsArb: fc.Arbitrary<PlanOptions> = fc.record({
  gracePeriodMs: fc.integer({ min: 0, max: 120_000 }),
  retryBaseMs: fc.integer({ min: 6_000, max: 60_000 }),
  retryCapMs: fc.integer({ min: 60_000, max: 600_000 }),
  maxAttempts: fc.integer({ min: 1, max: 4 }),
  retryWindowMs: fc.constantFrom(0, 600_000, 3_600_000),
  migrationTimeoutSeconds: fc.option(fc.integer({ min: 1, max: 4000 }), {
    nil: undefined,
  }),
  abortStuckMigrations: fc.boolean(),
  clockSkewMs: fc.integer({ min: 0, max: 5_000 }),
  // The convergence policy (plan_converge.ts), absent on every other pass.
  convergence: fc.option(
    fc.record({
      completionTimeoutPerGiB: fc.option(fc.integer({ min: 1, max: 900 }), {
        nil: undefined,
      }),
      onTimeout: fc.constantFrom(
        "Report" as const,
        "Abort" as const,
        "ForceComplete" as const,
      ),
      progressTimeoutSeconds: fc.integer({ min: 1, max: 600 }),
      forceCompleteTimeoutSeconds: fc.integer({ min: 1, max: 600 }),
    }),
    { nil: undefined },
  ),
}).map((o): PlanOptions => {
  const { migrationTimeoutSeconds, convergence, ...rest } = o;
  const policy = convergence === undefined ? undefined : resolveConvergence({
    abortStuckMigrations: rest.abortStuckMigrations,
    ...(migrationTimeoutSeconds === undefined
      ? {}
      : { migrationTimeoutSeconds }),
    defaults: Object.fromEntries(
      Object.entries(convergence).filter(([, v]) => v !== undefined),
    ),
  });
  return {
    ...rest,
    ...(migrationTimeoutSeconds === undefined
      ? {}
      : { migrationTimeoutSeconds }),
    ...(policy === undefined ? {} : { convergence: policy }),
  };
});

/** One pass's observation with a plausible (and often odd) history. */
const inputArb: fc.Arbitrary<PlanInput> = fc.record({
  onHost: fc.subarray(IDS),
  tracked: fc.subarray(IDS),
  firstPass: fc.boolean(),
  seeds: fc.array(fc.integer({ min: 0, max: 1_000_000 }), { minLength: 1 }),
  options: optionsArb,
  limit: fc.integer({ min: 0, max: 8 }),
  budget: fc.oneof(fc.integer({ min: 0, max: 8 }), fc.constant(Infinity)),
  // One pass in eight has its starts held.
  hold: fc.integer({ min: 0, max: 7 }).map((n) =>
    n === 0 ? "TraitsUpdated is False" : undefined
  ),
}).chain((base) => {
  const departed = base.tracked.filter((id) => !base.onHost.includes(id));
  return fc.record({
    servers: fc.tuple(...base.onHost.map((id) => serverArb(id, HOST))),
    migrations: fc.array(
      fc.record({
        id: fc.integer({ min: 1, max: 10_000 }),
        instanceUuid: fc.constantFrom(...IDS),
        migrationType: fc.constantFrom("live-migration", "migration"),
        status: fc.constantFrom(...RECORD_STATUSES),
        source: fc.constantFrom(HOST, HOST, HOST, "node007"),
        createdSeconds: fc.integer({ min: -5000, max: 10 }),
        progress: fc.option(fc.integer({ min: 0, max: 100 }), {
          nil: undefined,
        }),
      }),
      { maxLength: 6 },
    ).map((records) =>
      // Nova's ids are unique.
      records.filter((r, i) => records.findIndex((x) => x.id === r.id) === i)
        .map((r): ObservedMigration => ({
          id: r.id,
          instanceUuid: r.instanceUuid,
          migrationType: r.migrationType,
          status: r.status,
          sourceCompute: r.source,
          createdAt: novaTime(r.createdSeconds),
          updatedAt: novaTime(r.createdSeconds + 1),
          ...(r.progress === undefined
            ? {}
            : { memoryProcessedBytes: r.progress, memoryTotalBytes: 100 }),
        }))
    ),
    inFlight: fc.subarray(IDS, { maxLength: 3 }).chain((ids) =>
      fc.tuple(...ids.map((id) =>
        fc.record({
          startedSeconds: fc.integer({ min: -5000, max: 0 }),
          kind: fc.constantFrom("live" as const, "cold" as const),
          migrationId: fc.option(fc.integer({ min: 1, max: 10_000 }), {
            nil: undefined,
          }),
        }).map((e): EvictionStatusInFlightItem => ({
          id,
          kind: e.kind,
          startedAt: at(e.startedSeconds).toISOString(),
          ...(e.migrationId === undefined
            ? {}
            : { migrationId: String(e.migrationId) }),
        }))
      ))
    ),
    failed: fc.subarray(IDS, { maxLength: 3 }).chain((ids) =>
      fc.tuple(...ids.map((id) =>
        fc.record({
          attempts: fc.integer({ min: 0, max: 5 }),
          lastSeconds: fc.integer({ min: -5000, max: 0 }),
        }).map((f): EvictionStatusFailedItem => ({
          id,
          reason: "earlier failure",
          attempts: f.attempts,
          lastAttemptAt: at(f.lastSeconds).toISOString(),
        }))
      ))
    ),
    departed: fc.tuple(...departed.map((id) =>
      fc.oneof(
        fc.constant<DepartedServer | undefined>(undefined),
        fc.constant<DepartedServer | undefined>({ id, server: null }),
        serverArb(id, "node007").map((server): DepartedServer | undefined => ({
          id,
          server,
        })),
        serverArb(id, HOST).map((server): DepartedServer | undefined => ({
          id,
          server,
        })),
      )
    )),
  }).map((drawn): PlanInput => {
    const status: EvictionStatus = {
      startedAt: at(-6000).toISOString(),
      inFlight: drawn.inFlight,
      failed: drawn.failed,
      migratedCount: 3,
      ...(base.firstPass ? {} : { outstandingInstances: base.tracked }),
    };
    return {
      host: HOST,
      servers: drawn.servers,
      migrations: drawn.migrations,
      departed: drawn.departed.filter((d): d is DepartedServer =>
        d !== undefined
      ),
      status,
      limit: base.limit,
      limitSource: "policy",
      clusterBudgetLeft: base.budget,
      now: T0,
      options: base.options,
      ...(base.hold === undefined ? {} : { holdStarts: base.hold }),
    };
  });
});

const RUNS = { numRuns: 400 };

/** What the input shows, judged independently of the planner's code. */
function oracle(input: PlanInput) {
  const nowMs = input.now.getTime();
  const onHost = new Map<string, ObservedServer>();
  for (const s of input.servers) if (!onHost.has(s.id)) onHost.set(s.id, s);
  for (const d of input.departed) {
    if (d.server !== null && d.server.host === HOST && !onHost.has(d.id)) {
      onHost.set(d.id, d.server);
    }
  }
  const finished = new Set([
    "completed",
    "finished",
    "confirmed",
    "done",
    "error",
    "failed",
    "cancelled",
    "reverted",
  ]);
  const fromHost = (id: string) =>
    input.migrations.filter((m) =>
      m.instanceUuid === id &&
      (m.sourceCompute === HOST || m.sourceCompute === null)
    );
  const showsTask = (s: ObservedServer): boolean =>
    s.status === "MIGRATING" || s.status === "RESIZE" ||
    s.taskState === "migrating" || (s.taskState ?? "").startsWith("resize_");
  // A task that outlived its (ended) latest record past the bound: Nova is
  // not moving it, a person must reset it (stalled.ts).
  const stalled = (s: ObservedServer): boolean => {
    const records = fromHost(s.id);
    if (!showsTask(s) || records.some((m) => !finished.has(m.status))) {
      return false;
    }
    const latest =
      records.sort((a, b) =>
        Date.parse(`${b.createdAt}Z`) - Date.parse(`${a.createdAt}Z`) ||
        Number(b.id) - Number(a.id)
      )[0];
    if (latest === undefined) return false;
    const live = s.status === "MIGRATING" || s.taskState === "migrating";
    if ((latest.migrationType === "live-migration") !== live) return false;
    const ended = Date.parse(`${latest.updatedAt ?? latest.createdAt}Z`);
    return nowMs - ended >
      input.options.clockSkewMs + (input.options.settleMs ?? 0);
  };
  const novaInFlight = (s: ObservedServer): boolean =>
    !stalled(s) &&
    (showsTask(s) || fromHost(s.id).some((m) => !finished.has(m.status)));
  const entries = new Map((input.status?.inFlight ?? []).map((e) => [e.id, e]));
  const failed = new Map((input.status?.failed ?? []).map((f) => [f.id, f]));
  // A start without a record is released once a look at least the grace
  // period after it shows nothing (once.ts startReleasableFromMs).
  const inGrace = (id: string): boolean => {
    const e = entries.get(id);
    return e !== undefined &&
      nowMs - Date.parse(e.startedAt) < input.options.gracePeriodMs;
  };
  const blockedByFailure = (id: string): boolean => {
    const f = failed.get(id);
    if (f === undefined || f.attempts === 0) return false;
    if (f.attempts >= input.options.maxAttempts) return true;
    const delay = Math.min(
      input.options.retryCapMs,
      input.options.retryBaseMs * 2 ** (f.attempts - 1),
    );
    return nowMs < Date.parse(f.lastAttemptAt) + delay;
  };
  const startable = (id: string): boolean => {
    const s = onHost.get(id);
    if (s === undefined) return false;
    return ["ACTIVE", "PAUSED", "SHUTOFF"].includes(s.status) &&
      s.taskState === null &&
      !novaInFlight(s) && !inGrace(id) && !blockedByFailure(id);
  };
  return { onHost, novaInFlight, startable, stalled };
}

Deno.test("property: never more than the limit in flight because of a start", () => {
  fc.assert(
    fc.property(inputArb, (input) => {
      const plan = planPass(input);
      const before = plan.inFlightCount - plan.start.length;
      const slots = input.holdStarts === undefined
        ? Math.max(0, Math.min(input.limit - before, input.clusterBudgetLeft))
        : 0;
      assert.ok(
        plan.start.length <= slots,
        `${plan.start.length} starts, ${slots} slots`,
      );
      assert.ok(plan.inFlightCount <= Math.max(input.limit, before));
      // Work-conserving: a slot is left empty only when nothing is ready.
      const readyLeft = plan.waiting.filter((w) => w.why === "ready").length;
      assert.ok(readyLeft === 0 || plan.start.length === slots);
    }),
    RUNS,
  );
});

Deno.test("property: never start a VM in flight, in backoff, exhausted, skipped or deleting", () => {
  fc.assert(
    fc.property(inputArb, (input) => {
      const plan = planPass(input);
      const { startable } = oracle(input);
      for (const s of plan.start) assert.ok(startable(s.id), `started ${s.id}`);
      assert.equal(
        new Set(plan.start.map((s) => s.id)).size,
        plan.start.length,
      );
    }),
    RUNS,
  );
});

Deno.test("property: whatever Nova shows in flight is counted in flight", () => {
  fc.assert(
    fc.property(inputArb, (input) => {
      const plan = planPass(input);
      const { onHost, novaInFlight } = oracle(input);
      const counted = new Set((plan.next.inFlight ?? []).map((e) => e.id));
      for (const s of onHost.values()) {
        const deleting = s.taskState === "deleting";
        if (!deleting && novaInFlight(s)) {
          assert.ok(counted.has(s.id), `${s.id} not counted`);
        }
      }
    }),
    RUNS,
  );
});

Deno.test("property: largest first (every start has RAM >= every ready VM left)", () => {
  fc.assert(
    fc.property(inputArb, (input) => {
      const plan = planPass(input);
      const { onHost } = oracle(input);
      const ram = (id: string) => onHost.get(id)?.flavor.ramMb ?? -1;
      const left = plan.waiting.filter((w) => w.why === "ready").map((w) =>
        ram(w.id)
      );
      for (const s of plan.start) {
        for (const r of left) {
          assert.ok(s.ramMb >= r, `${s.id} (${s.ramMb}) before ${r}`);
        }
      }
      for (let i = 1; i < plan.start.length; i++) {
        const a = plan.start[i - 1];
        const b = plan.start[i];
        assert.ok(a !== undefined && b !== undefined);
        assert.ok(a.ramMb > b.ramMb || (a.ramMb === b.ramMb && a.id < b.id));
      }
    }),
    RUNS,
  );
});

Deno.test("property: the cluster budget holds over several Evictions planned in turn", () => {
  fc.assert(
    fc.property(
      fc.array(inputArb, { minLength: 1, maxLength: 4 }),
      fc.integer({ min: 0, max: 6 }),
      (inputs, budget) => {
        let left = budget;
        let started = 0;
        for (const input of inputs) {
          const plan = planPass({ ...input, clusterBudgetLeft: left });
          started += plan.start.length;
          left -= plan.start.length;
          assert.ok(left >= 0);
        }
        assert.ok(started <= budget);
      },
    ),
    { numRuns: 200 },
  );
});

Deno.test("property: the plan is deterministic and ignores input order", () => {
  fc.assert(
    fc.property(inputArb, (input) => {
      const a = planPass(input);
      const b = planPass(structuredClone(input));
      assert.deepEqual(a, b);
      const reordered: PlanInput = {
        ...input,
        servers: [...input.servers].reverse(),
        migrations: [...input.migrations].reverse(),
        departed: [...input.departed].reverse(),
        status: {
          ...input.status,
          inFlight: [...(input.status?.inFlight ?? [])].reverse(),
          failed: [...(input.status?.failed ?? [])].reverse(),
        },
      };
      assert.deepEqual(planPass(reordered), a);
    }),
    RUNS,
  );
});

Deno.test("property: the next status is valid and its counts agree", () => {
  fc.assert(
    fc.property(inputArb, (input) => {
      const plan = planPass(input);
      const next = plan.next;
      EvictionStatusSchema.parse(next);
      const { onHost, stalled } = oracle(input);
      const outstanding = next.outstandingInstances ?? [];
      const unresolved = outstanding.filter((id) => !onHost.has(id));
      assert.equal(next.outstandingCount, outstanding.length);
      assert.equal(outstanding.length, onHost.size + unresolved.length);
      for (const id of onHost.keys()) assert.ok(outstanding.includes(id));
      for (const id of unresolved) {
        // Unresolved: its lookup failed, or it sits in someone else's
        // VERIFY_RESIZE elsewhere (a revert would bring it back).
        // Or it shows a migration task elsewhere that outlived its record.
        const looked = input.departed.find((d) => d.id === id);
        assert.ok(
          looked === undefined ||
            looked.server?.status.toUpperCase() === "VERIFY_RESIZE" ||
            (looked.server != null && stalled(looked.server)),
          `${id} was looked up`,
        );
      }
      assert.equal(next.inFlightCount, next.inFlight?.length);
      assert.equal(plan.inFlightCount, next.inFlightCount);
      assert.equal(
        next.outstandingRamMb,
        [...onHost.values()].reduce((sum, s) => sum + s.flavor.ramMb, 0),
      );
      assert.equal(
        next.migratedCount,
        (input.status?.migratedCount ?? 0) + plan.done.length,
      );
      assert.equal(
        plan.finished,
        outstanding.length === 0 && next.inFlightCount === 0,
      );
      assert.equal(plan.finished, next.finishedAt !== undefined);
      for (const f of next.failed ?? []) assert.ok(outstanding.includes(f.id));
      for (const s of next.skipped ?? []) assert.ok(outstanding.includes(s.id));
      for (const id of [...plan.done, ...plan.gone]) {
        assert.ok(!outstanding.includes(id));
        assert.ok(!(next.inFlight ?? []).some((e) => e.id === id));
      }
      assert.deepEqual(
        departedIds(next, [], [], HOST).length,
        new Set([...outstanding, ...(next.inFlight ?? []).map((e) => e.id)])
          .size,
      );
      assert.equal(next.effectiveLimit, input.limit);
    }),
    RUNS,
  );
});

Deno.test("property: a deleted drain (finalize.ts, limit 0) and the drain agree on what is in flight, on settled and on confirms", () => {
  fc.assert(
    fc.property(inputArb, (input) => {
      const { limit: _l, limitSource: _s, clusterBudgetLeft: _b, ...rest } =
        input;
      const drain = planPass(input);
      const deleted = deletedPlan(rest);
      assert.deepEqual(deleted.start, [], "no starts");
      assert.deepEqual(deleted.abort, [], "no aborts");
      assert.deepEqual(deleted.forceComplete, [], "no force-completes");
      // The same copies past their bound; only the drain has an action due.
      const due = (p: typeof drain) =>
        p.notConverging.map(({ actAt: _a, ...n }) => n);
      assert.deepEqual(due(deleted), due(drain));
      const started = new Set(drain.start.map((s) => s.id));
      const ids = (p: typeof drain) =>
        (p.next.inFlight ?? []).map((e) => e.id).filter((id) =>
          !started.has(id)
        ).sort();
      assert.deepEqual(ids(deleted), ids(drain), "the same VMs in flight");
      assert.equal(
        deleted.inFlightCount,
        drain.inFlightCount - drain.start.length,
      );
      assert.deepEqual(deleted.confirmResize, drain.confirmResize);
      assert.deepEqual(deleted.stuck, drain.stuck);
      // Settled for the finalizer (its first look: nothing stalled yet)
      // exactly when the drain holds nothing but its own new starts.
      const look = settleLook({
        host: HOST,
        inFlight: deleted.next.inFlight ?? [],
        migrations: input.migrations,
        marks: new Map(),
        nowMs: input.now.getTime(),
        stalledAfterMs: 60_000,
      });
      assert.equal(
        look.counted.length === 0,
        drain.inFlightCount - drain.start.length === 0,
      );
    }),
    RUNS,
  );
});
