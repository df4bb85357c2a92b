/**
 * `abortStuckMigrations` with Nova's per-host limit of 1 (a real API
 * server, the simulator over HTTP): a live migration that never finishes
 * and a second one Nova holds `queued` behind it. Only the copying one is
 * aborted, after its own timeout; the queued one is never aborted (no
 * byte of it was copied), it runs once the first is gone, and both VMs
 * leave the host, each moved once. The policy is a cluster singleton, so
 * this file has its own API server.
 */
import assert from "node:assert/strict";
import { drained, withOwnApiServer } from "./harness/eviction_env.ts";

const TIMEOUT_SECONDS = 60; // virtual; 3 s real at time scale 20

Deno.test({
  name:
    "eviction: with Nova's limit 1, only the stuck copying migration is aborted; the one queued behind it never is",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await withOwnApiServer({
      pollIntervalMs: 50,
      scenario: {
        seed: 9,
        timeScale: 20,
        hosts: [
          { name: "src", maxConcurrentLiveMigrations: 1 },
          { name: "dst" },
        ],
        servers: [
          // the larger starts first and copies; the other queues
          { name: "slow", host: "src", ramMb: 8192 },
          { name: "queued", host: "src", ramMb: 2048 },
        ],
        faults: { stuckMigration: [{ server: "slow", times: 1 }] },
      },
    }, async (e) => {
      await e.hypervisor("src");
      await e.policy({
        maxConcurrentMigrations: 2,
        abortStuckMigrations: true,
        migrationTimeoutSeconds: TIMEOUT_SECONDS,
      });
      await e.evict("src", "src");
      const idOf = (name: string) =>
        e.sim.world.listServers().find((s) => s.name === name)?.id ?? "";
      const done = await drained(e, "src", 90_000);
      const records = e.sim.world.migrations.filter((m) => m.source === "src");
      const of = (name: string) =>
        records.filter((m) => m.serverId === idOf(name)).map((m) => m.status);
      assert.deepEqual(of("slow"), ["cancelled", "completed"]);
      assert.deepEqual(of("queued"), ["completed"]);
      const queued = records.find((m) => m.serverId === idOf("queued"))!;
      const aborted = records.find((m) => m.status === "cancelled")!;
      // the queued one waited behind the stuck one past the timeout
      assert.ok(
        aborted.updatedAt - queued.createdAt >= TIMEOUT_SECONDS * 1000,
        `queued for ${aborted.updatedAt - queued.createdAt} virtual ms`,
      );
      assert.deepEqual(
        e.sim.world.listServers().filter((s) => s.host === "src"),
        [],
      );
      assert.equal(done.status?.migratedCount, 2);
    });
  },
});
