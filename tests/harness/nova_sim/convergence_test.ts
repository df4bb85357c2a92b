import assert from "node:assert/strict";
import { Prng } from "./prng.ts";
import { parseScenario, type ScenarioInput } from "./scenario.ts";
import { ManualClock } from "./sim_clock.ts";
import { NovaFault, POST_COPY, type SimMigration, World } from "./world.ts";
import { call, withSim } from "./test_client.ts";
import fc from "fast-check";

const MIB = 1024 * 1024;

function build(input: ScenarioInput) {
  const clock = new ManualClock(1_700_000_000_000);
  const scenario = parseScenario(input);
  const world = new World(scenario, clock, new Prng(scenario.seed));
  const types: string[] = [];
  world.onNotification((_key, env) => {
    types.push(JSON.parse(env["oslo.message"]).event_type);
  });
  const id = (name: string) => world.findServerByRef(name)?.id ?? "";
  const step = (ms: number) => {
    clock.advance(ms);
    world.advance();
  };
  const server = (name: string) => world.servers.get(id(name));
  /** Starts the live migration of `name` and runs until its copy starts. */
  const start = (name: string): SimMigration => {
    const m = world.liveMigrate(id(name), null);
    step(1000);
    assert.equal(m.status, "running");
    return m;
  };
  const progress = (m: SimMigration) => world.memoryProgress(m, world.now());
  return { world, clock, id, step, server, start, progress, types };
}

/** Copies 1000 MiB/s, no jitter, 0.5 s of downtime; the copy starts 1 s after the call. */
const CLOUD: ScenarioInput = {
  seed: 7,
  timing: {
    jitter: 0,
    scheduleSeconds: 0,
    recordDelaySeconds: 0,
    prepareSeconds: 1,
    liveCompleteSeconds: 0.3,
    liveMbPerSecond: 1000,
  },
  hosts: [{ name: "src", maxConcurrentLiveMigrations: 1 }, { name: "dst" }],
  servers: [
    { name: "calm", host: "src", ramMb: 4096 },
    { name: "busy", host: "src", ramMb: 4096, dirtyRateMBps: 500 },
    { name: "hot", host: "src", ramMb: 4096, dirtyRateMBps: 1500 },
    { name: "tiny", host: "src", ramMb: 1024, dirtyRateMBps: 2000 },
  ],
};

const withHost = (over: Record<string, unknown>): ScenarioInput => ({
  ...CLOUD,
  hosts: [{ name: "src", maxConcurrentLiveMigrations: 1, ...over }, {
    name: "dst",
  }],
});

Deno.test("convergence: without a dirty rate a copy takes RAM / copy rate, as before", () => {
  const { start, step, progress, server } = build(CLOUD);
  const m = start("calm");
  assert.equal(m.copyMs, 4096);
  step(2048);
  assert.deepEqual(progress(m), {
    processed: 2048 * MIB,
    remaining: 2048 * MIB,
  });
  step(2047);
  assert.equal(server("calm")?.host, "src");
  step(1);
  assert.equal(server("calm")?.host, "dst");
});

Deno.test("convergence: a copy faster than the guest dirties ends once what remains fits in the downtime", () => {
  const { start, step, progress, server } = build(CLOUD);
  const m = start("busy");
  // remaining falls at 1000 - 500 MiB/s from 4096 MiB to the 500 MiB that
  // fit in 0.5 s, then the switch-over sends those: 7.192 s + 0.5 s.
  const samples: { processed: number; remaining: number }[] = [];
  for (let t = 0; t < 7691; t += 500) {
    samples.push(progress(m));
    step(t + 500 > 7691 ? 7691 - t : 500);
  }
  assert.equal(server("busy")?.host, "src", "still copying at 7.691 s");
  samples.push(progress(m));
  for (let i = 1; i < samples.length; i++) {
    const [a, b] = [samples[i - 1], samples[i]];
    assert.ok(a !== undefined && b !== undefined);
    assert.ok(b.processed > a.processed, `processed grows at ${i}`);
    assert.ok(b.remaining < a.remaining, `remaining falls at ${i}`);
  }
  // every byte sent counts, dirtied pages sent again included
  assert.ok((samples.at(-1)?.processed ?? 0) > m.memoryTotalBytes);
  assert.equal(samples[2]?.remaining, 4096 * MIB - 500 * MIB);
  step(1);
  assert.equal(server("busy")?.host, "dst");
  step(300);
  assert.equal(m.status, "completed");
});

Deno.test("convergence: a guest that dirties as fast as the copy runs keeps its copy running, remaining hovering", () => {
  const { world, start, step, progress, server } = build(CLOUD);
  const m = start("hot");
  const before = progress(m);
  for (let i = 0; i < 6; i++) {
    step(600_000);
    const now = progress(m);
    assert.equal(now.remaining, m.memoryTotalBytes, "never falls");
    assert.ok(now.processed > before.processed, "the copy keeps sending");
    before.processed = now.processed;
  }
  assert.equal(m.status, "running");
  assert.equal(server("hot")?.taskState, "migrating");
  assert.equal(m.phaseEndsAt, undefined, "nothing is due");
  assert.equal(world.nextDueAt(), undefined);
});

Deno.test("convergence: what fits in the downtime converges whatever the dirty rate", () => {
  const { step, server, world, id } = build(withHost({
    copyMbPerSecond: 4000,
  }));
  // 1024 MiB at 4000 MiB/s: 0.5 s of downtime holds 2000 MiB, more than it.
  world.liveMigrate(id("tiny"), null);
  step(1000 + 256);
  assert.equal(server("tiny")?.host, "dst");
});

Deno.test("convergence: force_complete without post-copy pauses the guest until the copy converges, then it runs on the destination", () => {
  const { world, start, step, progress, server, id, types } = build(CLOUD);
  const m = start("hot");
  step(10_000);
  types.length = 0;
  world.forceCompleteLiveMigration(id("hot"), m.id, "req-fc");
  assert.equal(m.switchedTo, "paused");
  // Nova's power-state sync skips a migrating instance: it still shows 1
  assert.equal(server("hot")?.powerState, 1);
  assert.equal(server("hot")?.taskState, "migrating");
  assert.equal(m.status, "running");
  assert.deepEqual(types, [
    "instance.live_migration_force_complete.start",
    "instance.live_migration_force_complete.end",
  ]);
  const action = world.instanceActions.get(`${id("hot")} req-fc`);
  assert.equal(action?.action, "live_migration_force_complete");
  assert.deepEqual(action?.events.map((e) => e.event), [
    "compute_live_migration_force_complete",
  ]);
  // paused, it dirties nothing: 4096 MiB at 1000 MiB/s
  step(2000);
  assert.equal(progress(m).remaining, 2096 * MIB);
  // a second force_complete changes nothing (Nova's status is still running)
  world.forceCompleteLiveMigration(id("hot"), m.id);
  step(2095);
  assert.equal(server("hot")?.host, "src");
  step(1);
  assert.equal(server("hot")?.host, "dst");
});

Deno.test("convergence: force_complete with post-copy permitted runs the VM on the destination, and it can no longer be aborted", () => {
  const { world, start, step, server, id } = build(withHost({
    permitPostCopy: true,
  }));
  const m = start("hot");
  step(5000);
  world.forceCompleteLiveMigration(id("hot"), m.id);
  assert.equal(m.status, POST_COPY);
  assert.throws(
    () => world.abortLiveMigration(id("hot"), m.id, 90),
    (e: unknown) =>
      e instanceof NovaFault && e.status === 400 &&
      e.message ===
        `Migration ${m.id} state of instance ${
          id("hot")
        } is running (post-copy). Cannot abort live migration while the migration is in this state.`,
  );
  assert.throws(
    () => world.forceCompleteLiveMigration(id("hot"), m.id),
    (e: unknown) =>
      e instanceof NovaFault && e.status === 400 &&
      e.message.endsWith(
        "is running (post-copy). Cannot force complete while the migration is in this state.",
      ),
  );
  // the destination pulls the 4096 MiB left at the copy rate; the slot is held
  assert.equal(world.activeLiveMigrations("src"), 1);
  step(4095);
  assert.equal(m.status, POST_COPY);
  step(1);
  assert.equal(server("hot")?.host, "dst");
  step(300);
  assert.equal(m.status, "completed");
});

Deno.test("convergence: abort rolls a force-completed, non-converging copy back and frees the slot", () => {
  const { world, start, step, server, id, types } = build(CLOUD);
  const m = start("hot");
  const next = world.liveMigrate(id("calm"), null);
  step(20_000);
  assert.equal(next.status, "queued");
  world.forceCompleteLiveMigration(id("hot"), m.id);
  step(100);
  types.length = 0;
  world.abortLiveMigration(id("hot"), m.id, 90, "req-abort");
  assert.equal(m.status, "cancelled");
  assert.equal(server("hot")?.host, "src");
  assert.equal(server("hot")?.taskState, null);
  assert.equal(server("hot")?.powerState, 1);
  assert.deepEqual(types, [
    "instance.live_migration_abort.start",
    "instance.live_migration_abort.end",
    "instance.live_migration_rollback.start",
    "instance.update",
    "instance.live_migration_rollback.end",
    "instance.live_migration_pre.start",
  ]);
  assert.equal(
    world.instanceActions.get(`${id("hot")} req-abort`)?.action,
    "live_migration_cancel",
  );
  assert.equal(next.status, "preparing", "the slot went to the next");
  assert.equal(m.novaTimeoutAt, undefined);
});

Deno.test("convergence: Nova's own completion timeout aborts a copy after its seconds per GiB (at least 2 GiB)", () => {
  const { world, start, step, server, types, id } = build(withHost({
    completionTimeoutPerGiB: 10,
  }));
  const m = start("hot");
  // 4 GiB x 10 s: acts at the monitor's first look past 40 s
  step(40_000);
  assert.equal(m.status, "running");
  types.length = 0;
  step(500);
  assert.equal(m.status, "cancelled");
  assert.equal(server("hot")?.host, "src");
  assert.equal(server("hot")?.taskState, null);
  // the driver aborted the job: a rollback, none of the API's abort
  assert.deepEqual(types, [
    "instance.live_migration_rollback.start",
    "instance.update",
    "instance.live_migration_rollback.end",
  ]);
  assert.equal(
    [...world.instanceActions.values()].some((a) =>
      a.action === "live_migration_cancel"
    ),
    false,
  );
  // a 1 GiB VM counts as 2 GiB
  const tiny = start("tiny");
  step(19_999);
  assert.equal(tiny.status, "running");
  step(501);
  assert.equal(tiny.status, "cancelled");
  assert.equal(world.migrations.length, 2);
  assert.equal(id("tiny"), tiny.serverId);
});

Deno.test("convergence: Nova's timeout action force_complete pauses, or switches to post-copy where permitted", () => {
  for (const permitPostCopy of [false, true]) {
    const { start, step, server, types } = build(withHost({
      completionTimeoutPerGiB: 10,
      timeoutAction: "force_complete",
      permitPostCopy,
    }));
    const m = start("hot");
    step(40_500);
    assert.equal(m.switchedTo, permitPostCopy ? "post-copy" : "paused");
    assert.equal(m.status, permitPostCopy ? POST_COPY : "running");
    assert.equal(
      types.some((t) => t.includes("force_complete")),
      false,
      "the driver's own task: no API notifications",
    );
    step(4096);
    assert.equal(server("hot")?.host, "dst");
  }
});

Deno.test("convergence: with Nova's timeout off a non-converging copy runs on", () => {
  const { start, step } = build(withHost({ completionTimeoutPerGiB: 0 }));
  const m = start("hot");
  step(24 * 3_600_000);
  assert.equal(m.status, "running");
  assert.equal(m.novaTimeoutAt, undefined);
});

Deno.test("convergence: a scenario refuses a negative dirty rate and an unknown timeout action", () => {
  assert.throws(
    () =>
      parseScenario({
        ...CLOUD,
        servers: [{ name: "x", host: "src", dirtyRateMBps: -1 }],
      }),
    /dirtyRateMBps/,
  );
  assert.throws(
    () => parseScenario(withHost({ timeoutAction: "pause" })),
    /timeoutAction/,
  );
});

Deno.test("convergence: the API's progress fields, microversion gates and errors", async () => {
  const clock = new ManualClock(1_700_000_000_000);
  await withSim(
    async (sim, token) => {
      const id = (n: string) => sim.world.findServerByRef(n)?.id ?? "";
      const hot = id("hot");
      const r = await call(sim, token, "POST", `/servers/${hot}/action`, {
        "os-migrateLive": { host: null, block_migration: "auto" },
      });
      assert.equal(r.status, 202);
      clock.advance(1000);
      const mid = sim.world.migrations[0]?.id;
      const path = `/servers/${hot}/migrations`;
      for (
        const [mv, method, sub, body] of [
          ["2.22", "GET", "", undefined],
          ["2.22", "GET", `/${mid}`, undefined],
          ["2.23", "DELETE", `/${mid}`, undefined],
          ["2.21", "POST", `/${mid}/action`, { force_complete: null }],
        ] as const
      ) {
        const x = await call(sim, token, method, `${path}${sub}`, body, mv);
        assert.equal(x.status, 404, `${method} ${sub} at ${mv}`);
        assert.deepEqual(x.json, {
          itemNotFound: {
            code: 404,
            message: "The resource could not be found.",
          },
        });
      }
      clock.advance(60_000);
      const shown = await call(
        sim,
        token,
        "GET",
        `${path}/${mid}`,
        undefined,
        "2.23",
      );
      assert.equal(shown.status, 200);
      const mig =
        (shown.json as { migration: Record<string, number> }).migration;
      assert.equal(mig["memory_total_bytes"], 4096 * MIB);
      assert.equal(mig["memory_remaining_bytes"], 4096 * MIB);
      assert.equal(mig["memory_processed_bytes"], 60_000 * MIB);
      // saved every 5 s: 3 s later the record shows the same
      clock.advance(3000);
      const again = await call(
        sim,
        token,
        "GET",
        `${path}/${mid}`,
        undefined,
        "2.80",
      );
      assert.equal(
        (again.json as { migration: Record<string, number> }).migration[
          "memory_processed_bytes"
        ],
        60_000 * MIB,
      );
      // a queued copy: nothing saved yet
      const calm = id("calm");
      await call(sim, token, "POST", `/servers/${calm}/action`, {
        "os-migrateLive": { host: null, block_migration: "auto" },
      });
      const queued = await call(
        sim,
        token,
        "GET",
        `/servers/${calm}/migrations`,
        undefined,
        "2.23",
      );
      const q = (queued.json as { migrations: Record<string, unknown>[] })
        .migrations[0];
      assert.equal(q?.["status"], "queued");
      assert.equal(q?.["memory_total_bytes"], null);
      assert.equal(q?.["memory_remaining_bytes"], null);
      const listed = await call(sim, token, "GET", path, undefined, "2.23");
      assert.equal(
        (listed.json as { migrations: unknown[] }).migrations.length,
        1,
      );
      const missing = await call(sim, token, "POST", `${path}/999/action`, {
        force_complete: null,
      }, "2.22");
      assert.equal(missing.status, 400);
      assert.deepEqual(missing.json, {
        badRequest: {
          code: 400,
          message: `Migration 999 not found for instance ${hot}`,
        },
      });
      const fc = await call(sim, token, "POST", `${path}/${mid}/action`, {
        force_complete: null,
      }, "2.22");
      assert.equal(fc.status, 202);
      const rid = fc.headers.get("x-compute-request-id");
      const act = await call(
        sim,
        token,
        "GET",
        `/servers/${hot}/os-instance-actions/${rid}`,
        undefined,
        "2.51",
      );
      assert.equal(
        (act.json as { instanceAction: { action: string } }).instanceAction
          .action,
        "live_migration_force_complete",
      );
      // post-copy: Nova no longer lists the copy as in progress
      const gone = await call(
        sim,
        token,
        "GET",
        `${path}/${mid}`,
        undefined,
        "2.23",
      );
      assert.deepEqual(gone.json, {
        itemNotFound: {
          code: 404,
          message:
            `Live migration ${mid} for server ${hot} is not in progress.`,
        },
      });
      const none = await call(sim, token, "GET", path, undefined, "2.23");
      assert.deepEqual(none.json, { migrations: [] });
      const all = await call(
        sim,
        token,
        "GET",
        `/os-migrations?instance_uuid=${hot}`,
        undefined,
        "2.23",
      );
      const rec = (all.json as { migrations: Record<string, unknown>[] })
        .migrations[0];
      assert.equal(rec?.["status"], POST_COPY);
      assert.equal(rec?.["links"], undefined);
      const abort = await call(
        sim,
        token,
        "DELETE",
        `${path}/${mid}`,
        undefined,
        "2.24",
      );
      assert.equal(abort.status, 400);
      assert.deepEqual(abort.json, {
        badRequest: {
          code: 400,
          message:
            `Migration ${mid} state of instance ${hot} is running (post-copy). Cannot abort live migration while the migration is in this state.`,
        },
      });
      const st = sim.state();
      assert.equal(st.migrations[0]?.switchedTo, "post-copy");
      assert.equal(st.migrations[0]?.slotAt, 1_700_000_000_000);
      assert.equal(st.servers.find((x) => x.id === hot)?.dirtyRateMBps, 1500);
    },
    withHost({ permitPostCopy: true }),
    { clock },
  );
});

Deno.test("convergence: over random sizes and rates, processed never falls, remaining falls while the copy outruns the guest, and it ends exactly when it converges", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 512, max: 65536 }),
      fc.integer({ min: 100, max: 4000 }),
      fc.integer({ min: 0, max: 5000 }),
      fc.array(fc.integer({ min: 1, max: 30_000 }), {
        minLength: 1,
        maxLength: 12,
      }),
      (ramMb, copy, dirty, steps) => {
        const { world, id, step } = build({
          ...withHost({ copyMbPerSecond: copy }),
          servers: [{ name: "v", host: "src", ramMb, dirtyRateMBps: dirty }],
        });
        const m = world.liveMigrate(id("v"), null);
        step(1000);
        const fits = copy * 0.5 >= ramMb;
        let last = world.memoryProgress(m, world.now());
        for (const ms of steps) {
          step(ms);
          if (m.status !== "running") break;
          const now = world.memoryProgress(m, world.now());
          assert.ok(now.processed >= last.processed);
          assert.ok(now.remaining <= m.memoryTotalBytes);
          if (dirty < copy) assert.ok(now.remaining <= last.remaining);
          last = now;
        }
        const ends = dirty > 0 && !fits && dirty >= copy
          ? undefined
          : 1000 + (dirty === 0 || fits
            ? (ramMb / copy) * 1000
            : ((ramMb - copy * 0.5) / (copy - dirty) + 0.5) * 1000);
        const elapsed = steps.reduce((a, b) => a + b, 0) + 1000;
        if (ends === undefined) assert.equal(m.status, "running");
        else if (elapsed >= ends + 300 + 1) {
          assert.equal(m.status, "completed");
        } else if (elapsed < ends - 1) {
          assert.equal(m.status, "running");
        }
      },
    ),
    { numRuns: 200 },
  );
});
