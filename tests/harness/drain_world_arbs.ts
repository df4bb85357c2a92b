/**
 * The random worlds of the drain simulations (fast-check arbitraries):
 * polling worlds (controllers/eviction/world_simulation_test.ts) and
 * worlds whose drain plans from Nova's notifications through a lossy feed
 * (controllers/eviction/world_notified_test.ts), and worlds of copies that
 * do not converge under random policies
 * (controllers/eviction/world_convergence_test.ts).
 *
 * @module
 */
import fc from "fast-check";
import type { NotifiedSpec, WorldSpec } from "./drain_world.ts";
import type { ConvergenceSpec } from "../../limits/convergence.ts";

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

const convergenceSpecArb: fc.Arbitrary<ConvergenceSpec> = fc.record({
  completionTimeoutPerGiB: fc.integer({ min: 1, max: 60 }),
  progressTimeoutSeconds: fc.integer({ min: 1, max: 200 }),
  onTimeout: fc.constantFrom<ConvergenceSpec["onTimeout"]>(
    "Report",
    "Abort",
    "ForceComplete",
  ),
  maxAbortedTries: fc.integer({ min: 1, max: 3 }),
  forceCompleteTimeoutSeconds: fc.integer({ min: 1, max: 120 }),
}, { requiredKeys: [] });

/**
 * A VM's dirty rate against the host's copy rate (1000 MB/s): none, some,
 * near it (converges slowly or not at all once the copy's jitter is
 * against it), at it or above it (never converges).
 */
const dirtyArb = fc.constantFrom(0, 0, 0, 200, 900, 980, 1000, 1500);

/**
 * A drain world whose VMs dirty memory at random rates against the copy
 * rate, with a random convergence policy (every field optional: on the
 * EvictionPolicy, the Eviction, or both), the legacy flat policy, post-copy
 * permitted or not, and a progress interval.
 */
export const convergenceWorldArb: fc.Arbitrary<WorldSpec> = fc.record({
  world: worldSpecArb,
  dirty: fc.array(dirtyArb, { minLength: 8, maxLength: 8 }),
  permitPostCopy: fc.boolean(),
  convergence: fc.option(convergenceSpecArb, { nil: undefined }),
  evictionConvergence: fc.option(convergenceSpecArb, { nil: undefined }),
  legacy: fc.option(
    fc.record({
      migrationTimeoutSeconds: fc.integer({ min: 1, max: 600 }),
      abortStuckMigrations: fc.boolean(),
    }, { requiredKeys: ["abortStuckMigrations"] }),
    { nil: undefined },
  ),
  progressIntervalMs: fc.option(
    fc.integer({ min: 1, max: 60 }).map((s) => s * 1000),
    { nil: undefined },
  ),
}).map(({ world, dirty, ...rest }) => {
  const out: WorldSpec = {
    ...world,
    vms: world.vms.map((v, i) => ({ ...v, dirtyRateMBps: dirty[i] ?? 0 })),
    permitPostCopy: rest.permitPostCopy,
  };
  if (rest.convergence !== undefined) out.convergence = rest.convergence;
  if (rest.evictionConvergence !== undefined) {
    out.evictionConvergence = rest.evictionConvergence;
  }
  if (rest.legacy !== undefined) out.legacy = rest.legacy;
  if (rest.progressIntervalMs !== undefined) {
    out.progressIntervalMs = rest.progressIntervalMs;
  }
  return out;
});
