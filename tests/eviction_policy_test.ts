/**
 * The eviction controller obeys the EvictionPolicy `default`: the cluster
 * budget across drains, and a lowered limit from the next pass on. The
 * policy is a cluster singleton, so this file has its own API server.
 */
import assert from "node:assert/strict";
import { EvictionPolicyKind } from "../controllers/kinds.ts";
import { startEnvtest } from "./harness/envtest.ts";
import {
  type DrainEnv,
  inProgress,
  maxOverlap,
  migratedTwice,
  sampleInFlight,
  serversOn,
  startDrainEnv,
  waitFor,
} from "./harness/eviction_env.ts";

const BUDGET_HOSTS = ["budget-a", "budget-b", "budget-c"];
const LOWER = "lower";

async function finished(e: DrainEnv, name: string, timeoutMs = 90_000) {
  return await waitFor(`Eviction ${name} finished`, async () => {
    const ev = await e.eviction(name);
    return ev.status?.finishedAt === undefined ? undefined : ev;
  }, timeoutMs);
}

Deno.test({
  name: "eviction: the EvictionPolicy limits running drains",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const env = await startEnvtest();
    let e: DrainEnv | undefined;
    try {
      e = await startDrainEnv({
        env,
        concurrency: "1",
        scenario: {
          seed: 7,
          timeScale: 20,
          hosts: [
            { name: "dst1", ramMb: 8_000_000, vcpus: 8192 },
            { name: "dst2", ramMb: 8_000_000, vcpus: 8192 },
            ...[...BUDGET_HOSTS, LOWER].map((name) => ({
              name,
              ramMb: 1_000_000,
              vcpus: 1024,
              maxConcurrentLiveMigrations: 8,
            })),
          ],
          serverGroups: [
            ...BUDGET_HOSTS.map((host) => ({
              host,
              count: 8,
              namePrefix: host,
              ramMb: [4096, 8192],
            })),
            { host: LOWER, count: 30, namePrefix: "lower", ramMb: [4096] },
          ],
        },
      });
      const d = e;

      await t.step(
        "three Evictions at once stay under a cluster budget of 5",
        async () => {
          await d.policy({
            maxConcurrentMigrations: 4,
            clusterMaxConcurrentMigrations: 5,
          });
          for (const h of BUDGET_HOSTS) await d.hypervisor(h);
          // The policy must be in the operator's cache before the drains start.
          await waitFor(
            "the policy in the cache",
            () =>
              d.operator.cache(EvictionPolicyKind).get("default") === undefined
                ? undefined
                : true,
          );
          const sampler = sampleInFlight(d.sim, BUDGET_HOSTS);
          await Promise.all(BUDGET_HOSTS.map((h) => d.evict(h, h)));
          const done = await Promise.all(
            BUDGET_HOSTS.map((h) => finished(d, h)),
          );
          const sampled = sampler.stop();
          const exact = maxOverlap(d.sim, BUDGET_HOSTS);
          assert.ok(sampled.max <= 5, `sampled ${sampled.max} in flight`);
          assert.ok(exact <= 5, `${exact} in flight at once (records)`);
          assert.ok(exact >= 4, `only ${exact} at once: budget unused`);
          for (const ev of done) {
            assert.equal(ev.status?.migratedCount, 8);
            assert.equal(ev.status?.effectiveLimit, 4);
            assert.equal(ev.status?.limitSource, "policy");
          }
          for (const h of BUDGET_HOSTS) {
            assert.deepEqual(serversOn(d.sim, h), []);
          }
          assert.deepEqual(migratedTwice(d.sim, BUDGET_HOSTS), []);
        },
      );

      await t.step(
        "lowering the policy limit mid-drain is obeyed from the next pass",
        async () => {
          await d.policy({ maxConcurrentMigrations: 4 });
          await d.hypervisor(LOWER);
          await d.evict(LOWER, LOWER);
          await waitFor(
            "the drain under limit 4",
            () =>
              d.sim.state().migrations.filter((m) => m.source === LOWER)
                  .length >=
                  6
                ? true
                : undefined,
          );
          await d.policy({ maxConcurrentMigrations: 1 });
          await waitFor("the lowered limit in status", async () => {
            const ev = await d.eviction(LOWER);
            return ev.status?.effectiveLimit === 1 ? true : undefined;
          });
          // Every pass from here on resolved limit 1.
          const seen = d.sim.state().now;
          const ev = await finished(d, LOWER);
          assert.equal(ev.status?.migratedCount, 30);
          const recs = d.sim.state().migrations.filter((m) =>
            m.source === LOWER
          );
          const after = recs.filter((m) => m.createdAt > seen);
          assert.ok(after.length > 0, "nothing started after the change");
          for (const m of after) {
            const others = recs.filter((o) =>
              o !== m && o.createdAt <= m.createdAt &&
              (inProgress(o.status) || o.updatedAt > m.createdAt)
            );
            assert.equal(
              others.length,
              0,
              `migration ${m.id} started with ${others.length} others in flight`,
            );
          }
          const before = recs.filter((m) => m.createdAt <= seen);
          assert.ok(before.length >= 6);
          assert.deepEqual(serversOn(d.sim, LOWER), []);
          assert.deepEqual(migratedTwice(d.sim, [LOWER]), []);
        },
      );
    } finally {
      await e?.stop();
      await env.stop();
    }
  },
});
