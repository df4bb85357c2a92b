/**
 * Nova's per-host limit learned from its queue (a real API server, the
 * simulator over HTTP with `max_concurrent_live_migrations` 1 on each
 * host): a wave of two hosts under a cluster budget of 2, evictor's limit 2
 * per host. The wave's drains share the budget from their first starts (a
 * member about to start counts as waiting for budget, budget_share.ts
 * aboutToStart): one copy per host at once, not one copy and one queued
 * record on the first host while the second waits. Once the smaller host
 * is empty the other drain may take both slots; Nova queues its second
 * migration, and from then on the drain starts no more live migrations
 * than Nova runs and says so (novaLiveMigrationLimit, condition
 * NovaLimited, an Event). The policy is a cluster singleton, so this file
 * has its own API server.
 */
import assert from "node:assert/strict";
import { EVENTS } from "../framework/events.ts";
import { drained, withOwnApiServer } from "./harness/eviction_env.ts";

const HOSTS = ["na", "nb"];
/** VMs per host: the second host empties first, and the first then queues. */
const VMS: Record<string, number> = { na: 7, nb: 4 };
const COPYING = new Set(["preparing", "running", "post-migrating"]);

Deno.test({
  name:
    "eviction: at Nova's limit 1, a wave of two hosts under a budget of 2 copies one VM per host at once; the drain names Nova's limit",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await withOwnApiServer({
      pollIntervalMs: 50,
      scenario: {
        seed: 21,
        timeScale: 10,
        timing: {
          liveMbPerSecond: 1000,
          coldMbPerSecond: 500,
          jitter: 0,
          scheduleSeconds: 0.5,
          prepareSeconds: 1,
          postSeconds: 0.5,
        },
        hosts: [
          ...HOSTS.map((name) => ({ name, maxConcurrentLiveMigrations: 1 })),
          { name: "dst1", ramMb: 524288 },
          { name: "dst2", ramMb: 524288 },
        ],
        servers: HOSTS.flatMap((host) =>
          Array.from({ length: VMS[host] ?? 0 }, (_, i) => ({
            name: `${host}-${i}`,
            host,
            ramMb: 8192,
          }))
        ),
      },
    }, async (e) => {
      for (const h of HOSTS) await e.hypervisor(h);
      await e.policy({
        maxConcurrentMigrations: 2,
        clusterMaxConcurrentMigrations: 2,
      });
      await Promise.all(HOSTS.map((h) => e.evict(h, h)));

      // Sample who copies while both hosts still have VMs to move.
      let both = 0;
      let samples = 0;
      const left = (h: string) =>
        e.sim.world.listServers().filter((s) => s.host === h).length;
      const copying = (h: string) =>
        e.sim.world.migrations.filter((m) =>
          m.source === h && COPYING.has(m.status)
        ).length;
      while (HOSTS.every((h) => left(h) > 1)) {
        if (HOSTS.some((h) => copying(h) > 0)) {
          samples++;
          if (HOSTS.every((h) => copying(h) > 0)) both++;
        }
        await new Promise((r) => setTimeout(r, 20));
      }
      for (const h of HOSTS) {
        await drained(e, h, 120_000);
      }
      assert.ok(samples >= 20, `${samples} samples`);
      // Without sharing the first host takes both slots (one copying, one
      // queued) and the hosts never copy at once (0 of 185 samples in one
      // run); the rest of the samples are the gaps between two copies,
      // which load widens.
      assert.ok(
        both / samples >= 0.15,
        `both hosts copied in ${both} of ${samples} samples`,
      );
      const learned = [];
      for (const h of HOSTS) {
        const ev = await e.eviction(h);
        const c = ev.status?.conditions?.find((x) => x.type === "NovaLimited");
        if (c === undefined) continue;
        learned.push(h);
        assert.equal(c.status, "True");
        assert.equal(ev.status?.novaLiveMigrationLimit, 1);
        assert.match(c.message, /max_concurrent_live_migrations/);
      }
      assert.ok(learned.length >= 1, "no drain learned Nova's limit");
      const events = await e.client.list(EVENTS, { namespace: "default" });
      assert.ok(
        (events.items as Array<{ reason?: string }>).some((x) =>
          x.reason === "NovaLimited"
        ),
      );
      const moved = new Map<string, number>();
      for (const m of e.sim.world.migrations) {
        if (m.status === "completed") {
          moved.set(m.serverId, (moved.get(m.serverId) ?? 0) + 1);
        }
      }
      assert.deepEqual([...moved.values()].filter((n) => n > 1), []);
      assert.equal(moved.size, Object.values(VMS).reduce((a, b) => a + b));
    });
  },
});
