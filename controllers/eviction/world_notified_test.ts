// The randomized world simulation of drains planned from Nova's
// notifications (issue 28): the real pass with a host view fed by the
// simulator's own notifications through a feed that drops, duplicates,
// delays (reorders) or stops delivering events while staying connected,
// over random poll (1-10 s), relist (10-600 s) and settle settings and
// time scales (1-40), with restarts, arrivals and every fault of the
// polling simulation. `tests/harness/drain_world.ts` checks after every
// pass and at every Nova call: no VM completes two migrations of ours,
// none is left, never Succeeded with a server on or bound for the host,
// never more of ours in flight than the limit.
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  runWorld,
  type WorldRun,
  type WorldSpec,
} from "../../tests/harness/drain_world.ts";
import { notifiedWorldArb } from "../../tests/harness/drain_world_arbs.ts";

const RUNS = Number(Deno.env.get("EVICTOR_NOTIFIED_WORLDS") ?? "400");
const SEED = Number(Deno.env.get("EVICTOR_SIM_SEED") ?? "20261204");

Deno.test("notified world simulation: no VM moved twice, none left, whatever the feed does", async () => {
  let succeeded = 0;
  await fc.assert(
    fc.asyncProperty(notifiedWorldArb, async (spec) => {
      const run = await runWorld(spec);
      if (run.finalReason === "Succeeded") succeeded++;
      assert.ok(run.maxMovesPerVm <= 1);
    }),
    { numRuns: RUNS, seed: SEED, endOnFailure: true },
  );
  assert.ok(
    succeeded > RUNS / 5,
    `only ${succeeded} of ${RUNS} worlds drained`,
  );
});

const calm = (ramMbs: number[]): WorldSpec["vms"] =>
  ramMbs.map((ramMb) => ({
    ramMb,
    status: "ACTIVE" as const,
    blocker: false,
    migrationFault: "none" as const,
  }));

for (
  const [label, timing] of [
    ["poll 3 s (relist 90 s)", {
      pollMs: 3000,
      relistMs: 90_000,
      settleMs: 9000,
      rate: 1,
    }],
    ["relist 600 s", {
      pollMs: 2000,
      relistMs: 600_000,
      settleMs: 6000,
      rate: 1,
    }],
    ["a 40x clock", {
      pollMs: 2000,
      relistMs: 60_000,
      settleMs: 6000,
      rate: 40,
    }],
  ] as const
) {
  Deno.test(`notified world simulation: a feed silent from the start moves each VM once (${label})`, async () => {
    const run = await runWorld({
      seed: 17,
      vms: calm([4096, 2048, 1024, 8192]),
      limit: 2,
      novaHostLimit: 2,
      startFaults: ["ok"],
      events: [],
      retryWindowMs: 0,
      notified: { drop: 0, duplicate: 0, delayMaxMs: 0, silentFromPass: 0 },
      timing,
    });
    assert.equal(run.finalReason, "Succeeded");
    assert.ok(run.hostEmpty);
    assert.equal(run.maxMovesPerVm, 1);
    assert.equal(run.status.migratedCount, 4);
  });
}

/** How long the drain took to say Succeeded (simulated ms). */
const drainedMs = (run: WorldRun): number =>
  Date.parse(run.status.finishedAt ?? "") -
  Date.parse(run.status.startedAt ?? "");

Deno.test("notified world simulation: a feed that loses migrations' ends drains within 1.3 times the polling drain", async () => {
  const timing = { pollMs: 2000, relistMs: 300_000, settleMs: 6000, rate: 1 };
  const world = (seed: number, notified?: WorldSpec["notified"]) =>
    runWorld({
      seed,
      vms: calm(
        Array.from({ length: 14 }, (_, i) => [1024, 2048, 4096, 8192][i % 4]!),
      ),
      limit: 2,
      novaHostLimit: 2,
      startFaults: ["ok"],
      events: [],
      retryWindowMs: 0,
      timing,
      ...(notified === undefined ? {} : { notified }),
    });
  for (const seed of [3, 11, 29, 47]) {
    const polled = await world(seed);
    for (const dropEnds of [0.05, 0.2, 1]) {
      const run = await world(seed, {
        drop: 0,
        duplicate: 0,
        delayMaxMs: 0,
        dropEnds,
      });
      assert.equal(run.finalReason, "Succeeded");
      assert.equal(run.maxMovesPerVm, 1);
      const ratio = drainedMs(run) / drainedMs(polled);
      assert.ok(
        ratio <= 1.3,
        `seed ${seed}, ${dropEnds * 100}% of ends lost: ${
          drainedMs(run)
        } ms against polling ${drainedMs(polled)} ms (${ratio.toFixed(2)}x)`,
      );
    }
  }
});
