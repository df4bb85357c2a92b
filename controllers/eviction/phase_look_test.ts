import assert from "node:assert/strict";
import { TemporaryError } from "../../framework/errors.ts";
import type { LookNeed } from "../../openstack/informer/informer.ts";
import { copiesToWatch, lookAtHost, plansFromSnapshot } from "./phase_look.ts";
import type { Planned } from "./plan_types.ts";
import type { ProgressNeed } from "../../openstack/informer/progress_reads.ts";
import type { Server } from "../../openstack/mod.ts";
import { DEFAULT_PLAN_OPTIONS } from "./plan_options.ts";
import { resolveConvergence } from "../../limits/convergence.ts";
import { planInputFor } from "./phase_budget.ts";
import { limitOfDrain } from "./pass.ts";
import { eviction, passFixture } from "../../tests/harness/pass_fixture.ts";

Deno.test("a plan from a snapshot may only start, count completions and wait", () => {
  const starts = {
    finished: false,
    settleAtMs: undefined,
    confirmResize: [],
    abort: [],
    failed: [],
    stuck: [],
  };
  assert.equal(plansFromSnapshot(starts), true);
  const needFresh: Array<[string, Parameters<typeof plansFromSnapshot>[0]]> = [
    ["finish", { ...starts, finished: true }],
    ["settle", { ...starts, settleAtMs: 1 }],
    ["confirm", { ...starts, confirmResize: ["a"] }],
    ["abort", {
      ...starts,
      abort: [{ id: "a", migrationId: "7", reason: "stuck" }],
    }],
    ["force-complete", {
      ...starts,
      forceComplete: [{ id: "a", migrationId: "7", reason: "timeout" }],
    }],
    ["failure", {
      ...starts,
      failed: [{
        id: "a",
        reason: "r",
        attempts: 1,
        exhausted: false,
        transient: true,
      }],
    }],
    ["stuck", {
      ...starts,
      stuck: [{ id: "a", kind: "live", startedAt: "t", elapsedSeconds: 9 }],
    }],
  ];
  for (const [why, plan] of needFresh) {
    assert.equal(plansFromSnapshot(plan), false, why);
  }
});

Deno.test("lookAtHost: a view whose plan only starts is the pass's; one it cannot act on is looked at again, fresh since that view's list", async () => {
  const asked: LookNeed[] = [];
  const view = { servers: [], migrations: [], departed: [], listedAtMs: 7 };
  const f = passFixture(eviction("ev", "h", { inFlightCount: 2 }), {
    informer: {
      look: (_key, need) => {
        asked.push(need);
        return Promise.resolve(
          need.freshSince === undefined
            ? { ...view, fromView: true }
            : { ...view, listedAtMs: 9 },
        );
      },
    },
  });
  const plan = (finished: boolean) => () =>
    ({
      plan: {
        finished,
        settleAtMs: undefined,
        confirmResize: [],
        abort: [],
        failed: [],
        stuck: [],
        next: {},
      },
      input: { options: { clockSkewMs: 0 } },
    }) as unknown as Planned;
  const since = new Date(5);
  const starting = await lookAtHost(f.pass, plan(false), since);
  assert.ok(starting.planned, "planned from the view");
  assert.deepEqual(
    asked.map((n) => [n.host, n.since, n.freshSince]),
    [
      ["h", since, undefined],
    ],
  );
  const finishing = await lookAtHost(f.pass, plan(true), since);
  assert.equal(finishing.planned, undefined);
  assert.equal(finishing.seen.listedAtMs, 9);
  assert.deepEqual(asked.slice(1).map((n) => n.freshSince), [undefined, 7]);
  const looks = await f.pass.deps.metrics.looks.get();
  assert.deepEqual(
    Object.fromEntries(looks.values.map((v) => [v.labels.source, v.value])),
    { view: 1, nova: 1 },
  );
});

Deno.test("lookAtHost: a failed look retries after the poll interval, and what the informer found wrong is said on the Eviction", async () => {
  const f = passFixture(eviction("ev", "h"), {
    informer: {
      look: () => Promise.reject(new Error("Nova is away")),
      takeWarnings: () => [{ reason: "NotificationViewDemoted", message: "m" }],
    },
  });
  await assert.rejects(
    lookAtHost(f.pass, () => {
      throw new Error("nothing to plan");
    }, new Date(0)),
    (err: unknown) => {
      assert.ok(err instanceof TemporaryError);
      assert.match(err.message, /observing host h failed: .*Nova is away/);
      assert.equal(err.delayMs, f.pass.deps.pollIntervalMs);
      return true;
    },
  );
  assert.deepEqual(f.events, [
    { type: "Warning", reason: "NotificationViewDemoted", message: "m" },
  ]);
});

Deno.test("lookAtHost: the pass states its live copies past Nova's queue (migration id, since when, the policy's bound and progress timeout) and plans with the informer's progress", async () => {
  const NOW = Date.parse("2026-01-01T01:00:00Z");
  const rec = (
    id: number,
    vm: string,
    status: string,
    type = "live-migration",
  ) => ({
    id,
    instanceUuid: vm,
    migrationType: type,
    status,
    sourceCompute: "h",
    destCompute: "d",
    createdAt: "2026-01-01T00:59:00",
  });
  const server = (id: string, ram: number) =>
    ({ id, flavor: { ramMb: ram } }) as unknown as Server;
  const entry = (id: string, kind: "live" | "cold" = "live") => ({
    id,
    kind,
    startedAt: "2026-01-01T00:59:00Z",
  });
  const progress = new Map([["a", {
    serverId: "a",
    migrationId: "7",
    totalBytes: 4096,
    remainingBytes: 100,
    readAtMs: NOW,
    lowestRemainingBytes: 100,
    lowestAtMs: NOW,
  }]]);
  const needs: ProgressNeed[] = [];
  const f = passFixture(
    eviction("ev", "h", {
      inFlight: [entry("a"), entry("q"), entry("c", "cold"), entry("n")],
    }),
    {
      nowMs: NOW,
      informer: {
        look: () =>
          Promise.resolve({
            servers: [server("a", 4096), server("q", 1024)],
            migrations: [
              rec(7, "a", "running"),
              rec(8, "q", "queued"),
              rec(9, "c", "migrating", "migration"),
            ],
            departed: [],
            listedAtMs: NOW,
          }),
        progress: (_key, need) => {
          needs.push(need);
          return Promise.resolve(progress);
        },
      },
    },
  );
  f.pass.state.copyStarted.set("a", NOW - 90_000);
  const options = {
    ...DEFAULT_PLAN_OPTIONS,
    convergence: resolveConvergence({
      abortStuckMigrations: false,
      defaults: { completionTimeoutPerGiB: 100, progressTimeoutSeconds: 60 },
    }),
  };
  const { seen } = await lookAtHost(
    f.pass,
    () => assert.fail("a list is planned by the pass"),
    new Date(5),
    options,
  );
  assert.equal(seen.progress, progress);
  assert.deepEqual(needs.map((n) => [n.copies, n.intervalMs, n.nowMs]), [[
    [{
      serverId: "a",
      migrationId: "7",
      sinceMs: NOW - 90_000,
      decideAtMs: NOW - 90_000 + 400_000,
      stallMs: 60_000,
      acts: false, // Report: no reads before it is overdue
    }],
    30_000,
    NOW,
  ]]);
  // without a policy: the flat timeout bounds it, no progress timeout
  const flat = copiesToWatch(f.pass, seen, {
    ...DEFAULT_PLAN_OPTIONS,
    migrationTimeoutSeconds: 3600,
  });
  assert.deepEqual(flat.map((c) => [c.decideAtMs, c.stallMs]), [[
    NOW - 90_000 + 3_600_000,
    undefined,
  ]]);
  const input = planInputFor(
    f.pass,
    seen,
    f.pass.deps.flagSettings,
    options,
    limitOfDrain(f.pass.deps.flagSettings, new Map(), f.pass.ev.spec),
  );
  assert.equal(input.progress, progress);
});
