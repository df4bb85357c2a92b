// The randomized world simulation over the real pass: thousands of drains
// (deterministic seeds) against the Nova simulator's World with incoming
// migrations and admin-forced arrivals at any moment (also between the
// server list and the migration list of a pass), deletions mid-migration,
// power on/off, 409s of each kind, slow and lost start answers, 503s,
// NoValidHost and failed migrations, a lowered policy, a migration queued
// towards the host before the drain started, and a VM forced onto the host
// 1 s after Succeeded. `tests/harness/drain_world.ts`
// checks the invariants after every pass and at every Nova call.
import assert from "node:assert/strict";
import fc from "fast-check";
import { runWorld, type WorldSpec } from "../../tests/harness/drain_world.ts";
import { worldSpecArb as specArb } from "../../tests/harness/drain_world_arbs.ts";
import { stoppedForPerson } from "../conditions.ts";

const RUNS = Number(Deno.env.get("EVICTOR_SIM_WORLDS") ?? "1000");
const SEED = Number(Deno.env.get("EVICTOR_SIM_SEED") ?? "20261201");

Deno.test("world simulation: invariants hold after every pass of thousands of drains", async () => {
  let succeeded = 0;
  let settled = 0;
  await fc.assert(
    fc.asyncProperty(specArb, async (spec) => {
      const run = await runWorld(spec);
      if (run.finalReason === "Succeeded") succeeded++;
      // Failed or WaitingForPerson: what is left needs a person (SUSPENDED,
      // ERROR, vTPM, ...).
      if (
        run.finalReason === "Succeeded" || stoppedForPerson(run.finalReason)
      ) {
        settled++;
      }
    }),
    { numRuns: RUNS, seed: SEED, endOnFailure: true },
  );
  // The simulation exercises whole drains: many end empty, and nearly all
  // settle (the rest are worlds whose Nova keeps losing answers).
  assert.ok(
    succeeded > RUNS / 5,
    `only ${succeeded} of ${RUNS} worlds drained`,
  );
  assert.ok(settled > RUNS * 0.9, `only ${settled} of ${RUNS} worlds settled`);
});

Deno.test("world simulation: a user's resize from the host waits for its owner, then the drain ends", async () => {
  const run = await runWorld({
    seed: 11,
    vms: [2048, 1024].map((ramMb) => ({
      ramMb,
      status: "ACTIVE" as const,
      blocker: false,
      migrationFault: "none" as const,
    })),
    limit: 2,
    novaHostLimit: 2,
    startFaults: ["ok"],
    events: [
      { atPass: 0, what: "user_resize", pick: 0 },
      { atPass: 12, what: "owner_confirms", pick: 0 },
    ],
    retryWindowMs: 0,
  });
  assert.equal(run.finalReason, "Succeeded");
  assert.ok(run.hostEmpty);
  // the resized VM left with its owner's confirm: not migrated by the drain
  assert.equal(run.status.migratedCount, 1);
});

Deno.test("world simulation: a calm world drains every VM once", async () => {
  const run = await runWorld({
    seed: 7,
    vms: [1024, 2048, 4096, 8192, 512].map((ramMb) => ({
      ramMb,
      status: "ACTIVE" as const,
      blocker: false,
      migrationFault: "none" as const,
    })),
    limit: 2,
    novaHostLimit: 2,
    startFaults: ["ok"],
    events: [],
    retryWindowMs: 0,
  });
  assert.equal(run.finalReason, "Succeeded");
  assert.ok(run.hostEmpty);
});

const calm = (ramMbs: number[]): WorldSpec["vms"] =>
  ramMbs.map((ramMb) => ({
    ramMb,
    status: "ACTIVE" as const,
    blocker: false,
    migrationFault: "none" as const,
  }));

Deno.test("world simulation: a migration queued towards the host before the start is waited for, then drained", async () => {
  const run = await runWorld({
    seed: 5,
    vms: calm([1024, 2048]),
    limit: 2,
    novaHostLimit: 2,
    startFaults: ["ok"],
    events: [],
    retryWindowMs: 0,
    queuedBeforeStart: true,
  });
  assert.equal(run.finalReason, "Succeeded");
  assert.ok(run.hostEmpty);
  // the two VMs and the one that was queued towards the host
  assert.equal(run.status.migratedCount, 3);
});

Deno.test("world simulation: a VM forced onto the host 1 s after Succeeded reopens the drain", async () => {
  const run = await runWorld({
    seed: 9,
    vms: calm([1024]),
    limit: 1,
    novaHostLimit: 1,
    startFaults: ["ok"],
    events: [{ atPass: 0, what: "forced_after_succeeded", pick: 0 }],
    retryWindowMs: 0,
  });
  assert.equal(run.finalReason, "Succeeded");
  assert.ok(run.hostEmpty);
  assert.equal(run.status.migratedCount, 2);
});

Deno.test("world simulation: every start answered 503 backs off (no hot loop), charges nothing, and says so", async () => {
  const run = await runWorld({
    seed: 3,
    vms: calm([1024, 2048]),
    limit: 2,
    novaHostLimit: 2,
    startFaults: ["unavailable"],
    events: [],
    retryWindowMs: 0,
  });
  // the passes-per-second invariant held (runWorld throws otherwise)
  assert.equal(run.hostEmpty, false);
  assert.deepEqual(run.status.failed ?? [], []);
  assert.equal(run.status.inFlightCount, 0);
  const evicting = run.status.conditions?.find((c) => c.type === "Evicting");
  assert.equal(evicting?.reason, "StartsUnanswered");
  // 2 s doubling to 2 min: a few Nova calls per simulated minute
  const minutes = run.simulatedMs / 60_000;
  assert.ok(minutes > 60, `${minutes} simulated minutes`);
  assert.ok(
    run.novaCalls / minutes <= 10,
    `${run.novaCalls} Nova calls in ${minutes.toFixed(1)} simulated minutes`,
  );
});

for (
  const [label, offsetMs] of [["30 s", -30_000], ["5 min", -300_000]] as const
) {
  Deno.test(`world simulation: with Nova's clock ${label} behind, failed migrations are charged and the VM given up on`, async () => {
    const run = await runWorld({
      seed: 13,
      vms: [{
        ramMb: 1024,
        status: "ACTIVE",
        blocker: false,
        migrationFault: "fail",
        faultTimes: 1_000,
      }],
      limit: 1,
      novaHostLimit: 1,
      startFaults: ["ok"],
      events: [],
      retryWindowMs: 0,
      novaClockOffsetMs: offsetMs,
    });
    // maxAttempts 3: charged, then exhausted (before, its records looked
    // older than its starts, and it was retried uncharged until the end)
    assert.equal(run.finalReason, "Failed");
    const failed = run.status.failed ?? [];
    assert.equal(failed.length, 1);
    assert.equal(failed[0]?.attempts, 3);
    assert.ok(run.passes < 100, `${run.passes} passes`);
  });
}
