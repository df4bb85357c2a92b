/**
 * The random worlds of the drain simulations (fast-check arbitraries):
 * polling worlds (controllers/eviction/world_simulation_test.ts) and
 * worlds whose drain plans from Nova's notifications through a lossy feed
 * (controllers/eviction/world_notified_test.ts).
 *
 * @module
 */
import fc from "fast-check";
import type { NotifiedSpec, WorldSpec } from "./drain_world.ts";

const vmArb = fc.record({
  ramMb: fc.constantFrom(512, 1024, 2048, 4096, 8192),
  status: fc.constantFrom<WorldSpec["vms"][number]["status"]>(
    "ACTIVE",
    "ACTIVE",
    "ACTIVE",
    "SHUTOFF",
    "PAUSED",
    "SUSPENDED",
    "ERROR",
  ),
  blocker: fc.constantFrom(false, false, false, false, false, true),
  migrationFault: fc.constantFrom<WorldSpec["vms"][number]["migrationFault"]>(
    "none",
    "none",
    "none",
    "fail",
    "error",
    "delete",
  ),
});

/** A random drain world: VMs, limits, start faults and events. */
export const worldSpecArb: fc.Arbitrary<WorldSpec> = fc.record({
  seed: fc.integer({ min: 1, max: 2 ** 30 }),
  vms: fc.array(vmArb, { minLength: 0, maxLength: 8 }),
  limit: fc.integer({ min: 1, max: 4 }),
  novaHostLimit: fc.integer({ min: 1, max: 3 }),
  startFaults: fc.array(
    fc.constantFrom<WorldSpec["startFaults"][number]>(
      "ok",
      "ok",
      "ok",
      "slow",
      "lost_processed",
      "lost_unprocessed",
      "unavailable",
    ),
    { minLength: 0, maxLength: 6 },
  ).map((faults) => ["ok" as const, ...faults]),
  events: fc.array(
    fc.record({
      atPass: fc.integer({ min: 0, max: 30 }),
      what: fc.constantFrom<WorldSpec["events"][number]["what"]>(
        "arrive",
        "arrive_incoming",
        "arrive_during_pass",
        "incoming_during_pass",
        "delete",
        "power",
        "user_resize",
        "lower_policy",
        "fault_next",
        "owner_confirms",
        "write_fails",
        "restart",
        "forced_after_succeeded",
      ),
      pick: fc.nat(20),
    }),
    { maxLength: 8 },
  ),
  retryWindowMs: fc.constantFrom(0, 60_000),
  queuedBeforeStart: fc.constantFrom(false, false, false, true),
  recordDelaySeconds: fc.constantFrom(0.2, 0.2, 1, 3, 8),
});

/**
 * A feed that drops, duplicates, delays (reorders), goes silent or drops its
 * connection, forges arrivals, replays events as new, names wrong hosts and
 * loses the ends of migrations.
 */
export const notifiedArb: fc.Arbitrary<NotifiedSpec> = fc.record({
  drop: fc.constantFrom(0, 0, 0.05, 0.2, 0.5, 1),
  duplicate: fc.constantFrom(0, 0.1, 0.5),
  delayMaxMs: fc.constantFrom(0, 500, 3000, 20_000),
  silentFromPass: fc.option(fc.integer({ min: 0, max: 20 }), {
    nil: undefined,
  }),
  downAtPass: fc.option(fc.integer({ min: 0, max: 30 }), { nil: undefined }),
  forge: fc.constantFrom(0, 0, 0.02, 0.1),
  replay: fc.constantFrom(0, 0, 0.02, 0.1),
  misattribute: fc.constantFrom(0, 0, 0.02, 0.1),
  dropEnds: fc.constantFrom(0, 0, 0.2, 1),
}, { requiredKeys: ["drop", "duplicate", "delayMaxMs"] });

/** The drain's poll (1-10 s), relist (10-600 s), settle and time scale (1-40). */
export const timingArb: fc.Arbitrary<NonNullable<WorldSpec["timing"]>> = fc
  .record({
    pollMs: fc.integer({ min: 1, max: 10 }).map((s) => s * 1000),
    relistMs: fc.integer({ min: 10, max: 600 }).map((s) => s * 1000),
    settleMs: fc.constantFrom(0, 2000, 6000, 30_000),
    rate: fc.constantFrom(1, 1, 5, 10, 40),
  });

/** A world drained from a notified view: {@linkcode worldSpecArb} with a feed and timing. */
export const notifiedWorldArb: fc.Arbitrary<WorldSpec> = fc.record({
  world: worldSpecArb,
  notified: notifiedArb,
  timing: timingArb,
}).map(({ world, notified, timing }) => ({ ...world, notified, timing }));
