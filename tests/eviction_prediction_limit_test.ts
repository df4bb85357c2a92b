/**
 * The controller predicts a drain at the limit Nova runs (a real API
 * server, the simulator over HTTP, Placement for the capacity check).
 * Host `pa` drains at evictor's limit 4 under a cluster budget of 4, but
 * Nova runs one live migration at a time from it
 * (`max_concurrent_live_migrations` 1): its drain learns that and shows
 * it (status.novaLiveMigrationLimit). A drain of host `pb` that starts
 * then shares the budget with it: predicted at `pa`'s limit 4, `pa` would
 * hold the whole budget and `pb`'s small VMs would wait for one of `pa`'s
 * long copies; at Nova's limit 1, `pa` holds one slot and `pb`'s VMs
 * take the other three at once, as the drains then do. `kubectl evictor
 * plan` predicts the same way (cli/plan_test.ts). The policy is a cluster
 * singleton, so this file has its own API server.
 */
import assert from "node:assert/strict";
import { SLOW_COST } from "../capacity/history.ts";
import { waitFor, withOwnApiServer } from "./harness/eviction_env.ts";

/** A VM of `pa`: 64 GiB, a long copy at any rate. */
const BIG_MB = 65536;
/** A VM of `pb`: 1 GiB. */
const SMALL_MB = 1024;

Deno.test({
  name:
    "eviction: a drain's predicted makespan uses Nova's learned limit of the hosts it shares the budget with",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await withOwnApiServer({
      pollIntervalMs: 50,
      capacityCheck: true,
      scenario: {
        seed: 17,
        timeScale: 20,
        hosts: [
          { name: "pa", maxConcurrentLiveMigrations: 1 },
          { name: "pb" },
          { name: "dst", ramMb: 2_097_152 },
        ],
        servers: [
          ...Array.from({ length: 10 }, (_, i) => ({
            name: `pa-${i}`,
            host: "pa",
            ramMb: BIG_MB,
          })),
          ...Array.from({ length: 3 }, (_, i) => ({
            name: `pb-${i}`,
            host: "pb",
            ramMb: SMALL_MB,
          })),
        ],
      },
    }, async (e) => {
      for (const h of ["pa", "pb", "dst"]) await e.hypervisor(h);
      await e.policy({
        maxConcurrentMigrations: 4,
        clusterMaxConcurrentMigrations: 4,
      });
      await e.evict("pa", "pa");
      await waitFor(
        "pa learned Nova's limit",
        async () => (await e.eviction("pa")).status?.novaLiveMigrationLimit,
        60_000,
      );
      // VMs on pa not moving yet (the capacity check counts those): more
      // than the budget, so at evictor's limit pa would take all of it
      const left = e.sim.state().servers.filter((s) =>
        s.host === "pa" && !s.deleted && s.taskState === null
      ).length;
      assert.ok(left >= 4, `${left} VMs left on pa`);
      await e.evict("pb", "pb");
      const predicted = await waitFor(
        "pb's prediction",
        async () =>
          (await e.eviction("pb")).status?.predictedMakespanSeconds,
        60_000,
      );
      // at Nova's limit 1 on pa: pb's three VMs on three slots at once,
      // plus the time per drain (no drain has ended, no default rate set:
      // the slow end of the range a prediction without history spans)
      const { mbPerSecond, overheadSeconds, fixedSeconds } = SLOW_COST;
      const one = SMALL_MB / mbPerSecond + overheadSeconds + fixedSeconds;
      const longest = BIG_MB / mbPerSecond + overheadSeconds + fixedSeconds;
      assert.ok(
        predicted < longest,
        `pb predicted ${predicted} s: it waited for one of pa's copies (${longest} s), as if pa ran 4 at once`,
      );
      assert.equal(predicted, Math.ceil(one));
    });
  },
});
