// Randomized drains of VMs that dirty memory against the copy rate (some
// never converge, some barely), under random convergence policies (every
// field, on the EvictionPolicy and the Eviction, and the legacy flat
// timeout), post-copy permitted or not, and a random progress interval:
// the real pass against the Nova simulator's World, whose force_complete
// pauses the guest or switches to post-copy and whose abort rolls back.
// `tests/harness/drain_world.ts` checks after every pass and at the end:
// no VM moved twice, no copy past its policy's bound (Abort,
// ForceComplete) plus a progress interval plus a stated slack, no
// force_complete or abort sent twice, every aborted VM started again or
// left for a person, never Succeeded with a VM on the host or a copy
// running.
import assert from "node:assert/strict";
import fc from "fast-check";
import { runWorld, type WorldSpec } from "../../tests/harness/drain_world.ts";
import { convergenceWorldArb } from "../../tests/harness/drain_world_arbs.ts";
import { ABORTED_PREFIX } from "./plan_converge.ts";

const RUNS = Number(Deno.env.get("EVICTOR_SIM_CONVERGENCE_WORLDS") ?? "400");
const SEED = Number(Deno.env.get("EVICTOR_SIM_SEED") ?? "20261207");

Deno.test("world convergence: invariants hold over random dirty rates and policies", async () => {
  let acted = 0;
  let read = 0;
  await fc.assert(
    fc.asyncProperty(convergenceWorldArb, async (spec) => {
      const run = await runWorld(spec);
      if (run.aborts + run.forceCompletes > 0) acted++;
      if (run.progressReads > 0) read++;
    }),
    { numRuns: RUNS, seed: SEED, endOnFailure: true },
  );
  // The worlds exercise the policy, not only calm copies.
  assert.ok(acted > RUNS / 10, `the policy acted in ${acted} of ${RUNS}`);
  assert.ok(read > RUNS / 10, `progress read in ${read} of ${RUNS}`);
});

/** One host's VMs, each with its memory (MB) and dirty rate (MB/s; copy rate 1000). */
function world(
  vms: Array<[ramMb: number, dirtyRateMBps: number]>,
  more: Partial<WorldSpec>,
): WorldSpec {
  return {
    seed: 17,
    vms: vms.map(([ramMb, dirtyRateMBps]) => ({
      ramMb,
      dirtyRateMBps,
      status: "ACTIVE" as const,
      blocker: false,
      migrationFault: "none" as const,
    })),
    limit: 2,
    novaHostLimit: 2,
    startFaults: ["ok"],
    events: [],
    retryWindowMs: 0,
    progressIntervalMs: 10_000,
    ...more,
  };
}

Deno.test("world convergence: a copy that never converges under Report is reported, the drain does not end Succeeded", async () => {
  const run = await runWorld(world([[4096, 1500], [1024, 0]], {
    convergence: { completionTimeoutPerGiB: 10, onTimeout: "Report" },
  }));
  assert.notEqual(run.finalReason, "Succeeded");
  assert.equal(run.hostEmpty, false);
  assert.equal(run.aborts + run.forceCompletes, 0);
  const nc = run.status.conditions?.find((c) => c.type === "NotConverging");
  assert.equal(nc?.status, "True");
  assert.equal(run.status.inFlight?.length, 1);
  assert.equal(run.status.inFlight?.[0]?.notConverging, true);
  assert.equal(run.status.migratedCount, 1);
  assert.ok(run.progressReads > 0);
});

Deno.test("world convergence: under Abort with maxAbortedTries 2 a copy is aborted twice, then left for a person; the others migrate", async () => {
  const run = await runWorld(world([[2048, 1500], [1024, 0], [2048, 100]], {
    convergence: {
      completionTimeoutPerGiB: 10,
      onTimeout: "Abort",
      maxAbortedTries: 2,
    },
  }));
  assert.equal(run.aborts, 2);
  assert.equal(run.forceCompletes, 0);
  assert.equal(run.status.migratedCount, 2);
  const failed = run.status.failed ?? [];
  assert.equal(failed.length, 1);
  assert.ok(
    failed[0]?.reason?.startsWith(ABORTED_PREFIX),
    String(failed[0]?.reason),
  );
  assert.notEqual(run.finalReason, "Succeeded");
  assert.equal(run.status.inFlightCount, 0);
});

for (const permitPostCopy of [true, false]) {
  Deno.test(
    `world convergence: under ForceComplete ${
      permitPostCopy ? "with" : "without"
    } post-copy one force_complete ends the copy on another host`,
    async () => {
      const run = await runWorld(world([[4096, 1500], [1024, 0]], {
        permitPostCopy,
        convergence: {
          completionTimeoutPerGiB: 10,
          onTimeout: "ForceComplete",
          forceCompleteTimeoutSeconds: 300,
        },
      }));
      assert.equal(run.forceCompletes, 1);
      assert.equal(run.aborts, 0);
      assert.equal(run.finalReason, "Succeeded");
      assert.ok(run.hostEmpty);
      assert.equal(run.status.migratedCount, 2);
    },
  );
}

Deno.test("world convergence: a controller restart mid-copy does not restart the copy's bound", async () => {
  // bound 40 s (4 GiB at 10 s/GiB); the progress timeout is longer, so
  // only the completion bound acts; the restart comes ~30 s into the copy
  const run = await runWorld(world([[4096, 1500]], {
    convergence: {
      completionTimeoutPerGiB: 10,
      progressTimeoutSeconds: 600,
      onTimeout: "Abort",
      maxAbortedTries: 1,
    },
    events: [{ atPass: 15, what: "restart", pick: 0 }],
  }));
  assert.equal(run.aborts, 1);
  assert.equal(run.status.failed?.length, 1);
});

Deno.test("world convergence: a start whose record Nova has not shown yet is looked at by its bound, not at the pace's expected end", async () => {
  // Nova writes each record 8 s after its 202 and runs one copy at a time:
  // the third start's copy began unseen while the pace, timed by the
  // aborted copies before it, waited a minute (its bound is 8 s).
  const run = await runWorld({
    ...world([[8192, 1500], [8192, 1500], [1024, 0]], {
      convergence: {
        completionTimeoutPerGiB: 1,
        progressTimeoutSeconds: 600,
        onTimeout: "Abort",
        maxAbortedTries: 3,
      },
      progressIntervalMs: 6000,
      recordDelaySeconds: 8,
    }),
    seed: 5,
    novaHostLimit: 1,
  });
  // runWorld checked every copy against its bound; the two that never
  // converge are aborted three times each, then left for a person (the
  // calm 1 GiB VM's ~1 s copy may beat its 1 s bound, timed from when it
  // was seen leaving Nova's queue)
  const failed = new Set((run.status.failed ?? []).map((f) => f.id));
  assert.ok(run.aborts >= 6 && run.aborts <= 9, `${run.aborts} aborts`);
  assert.ok(failed.size >= 2, JSON.stringify(run.status.failed));
});
