/**
 * A deleted Eviction's finalizer is bounded, against the real API server and
 * the Nova simulator (20 times faster than real time): it confirms our cold
 * migration that reached VERIFY_RESIZE after the deletion, stops counting a
 * stuck migration record, gives up after its bound with an Event and a
 * metric, waits without warnings, and retries a failed re-enable soon.
 */
import assert from "node:assert/strict";
import { sharedEnvtest } from "./harness/envtest.ts";
import {
  type DrainEnv,
  eventsOf,
  inProgress,
  startDrainEnv,
  uniqueSuffix,
  waitFor,
} from "./harness/eviction_env.ts";
import type { ScenarioInput } from "./harness/nova_sim/mod.ts";
import { EvictionKind } from "../controllers/kinds.ts";

const s = uniqueSuffix();
const H = {
  cold: `fin-cold-${s}`,
  stuck: `fin-stuck-${s}`,
  giveUp: `fin-giveup-${s}`,
};
const DEST = { ramMb: 8_000_000, vcpus: 8192 };

function scenario(hosts: string[], stuck: string[]): ScenarioInput {
  return {
    seed: 23,
    timeScale: 20,
    hosts: [
      { name: `fin-dst1-${s}`, ...DEST },
      { name: `fin-dst2-${s}`, ...DEST },
      ...hosts.map((name) => ({ name, ramMb: 1_000_000, vcpus: 1024 })),
    ],
    servers: [
      ...(hosts.includes(H.cold)
        ? [{
          name: "sleeper",
          host: H.cold,
          ramMb: 16384,
          status: "SHUTOFF" as const,
        }]
        : []),
      ...stuck.map((host) => ({ name: `stucky-${host}`, host, ramMb: 2048 })),
    ],
    faults: {
      stuckMigration: stuck.map((host) => ({ server: `stucky-${host}` })),
    },
  };
}

function idOf(e: DrainEnv, name: string): string {
  const id = e.sim.state().servers.find((x) => x.name === name)?.id;
  assert.ok(id !== undefined, `no server ${name}`);
  return id;
}

async function gone(e: DrainEnv, name: string, timeoutMs: number) {
  await waitFor(
    `Eviction ${name} to be gone`,
    async () => {
      try {
        await e.eviction(name);
        return undefined;
      } catch {
        return true;
      }
    },
    timeoutMs,
    50,
  );
}

async function migrationOf(
  e: DrainEnv,
  server: string,
  status: (s: string) => boolean,
) {
  const id = idOf(e, server);
  return await waitFor(
    `a migration of ${server}`,
    () =>
      e.sim.state().migrations.find((m) =>
        m.serverId === id && status(m.status)
      ),
    60_000,
    5,
  );
}

/** The operator's log lines for one Eviction key. */
function logsOf(e: DrainEnv, key: string): Record<string, unknown>[] {
  return e.logs.map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l["key"] === key);
}

Deno.test({
  name:
    "eviction finalizer: confirms our resize, stops counting a stuck record, waits quietly, retries soon",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const env = await sharedEnvtest();
    const e = await startDrainEnv({
      env,
      scenario: scenario([H.cold, H.stuck], [H.stuck]),
      // 120 s of simulator time without progress (6 s real): longer than
      // the cold copy, shorter than the test's patience.
      finalizer: { stalledAfterMs: 120_000, giveUpAfterMs: 3_600_000 },
    });
    try {
      await t.step(
        "a cold migration that reaches VERIFY_RESIZE after the deletion is confirmed; waiting logs no warning; a failed re-enable is retried within maxPollMs",
        async () => {
          const name = `fin-cold-${s}`;
          await e.hypervisor(H.cold);
          await e.evict(name, H.cold);
          await migrationOf(e, "sleeper", (st) => st === "migrating");
          // The re-enable fails three times (a 500 each): a plain error of
          // the finalizer, retried at the poll's pace, not the long backoff.
          e.sim.injectHttpFault({
            method: "PUT",
            path: "/os-services/{id}",
            status: 500,
            count: 3,
          });
          await e.client.delete(EvictionKind, name);
          await gone(e, name, 60_000);
          const id = idOf(e, "sleeper");
          const records = e.sim.state().migrations.filter((m) =>
            m.serverId === id
          );
          assert.deepEqual(
            records.map((m) => m.status),
            ["confirmed"],
            "our cold migration confirmed by the finalizer",
          );
          const host = e.sim.state().hosts.find((h) => h.name === H.cold);
          assert.equal(host?.enabled, true, "service re-enabled");
          const reasons = (await eventsOf(e, name)).map((x) => x.reason);
          assert.ok(reasons.includes("ResizeConfirmed"), reasons.join());
          assert.ok(reasons.includes("HypervisorReEnabled"), reasons.join());
          const lines = logsOf(e, name);
          const failures = lines.filter((l) =>
            typeof l["msg"] === "string" &&
            (l["msg"] as string).startsWith("reconcile failed")
          );
          assert.equal(failures.length, 3, JSON.stringify(failures));
          for (const f of failures) {
            assert.match(String(f["err"]), /re-enabling compute service/);
            assert.ok(
              Number(f["delayMs"]) <= 3_000,
              `retried after ${f["delayMs"]} ms (maxPollMs 3000)`,
            );
          }
          assert.ok(
            lines.some((l) =>
              l["msg"] === "deleted drain: migrations settling"
            ),
            "the wait is logged as waiting",
          );
        },
      );

      await t.step(
        "a stuck migration stops counting after the stall bound",
        async () => {
          const name = `fin-stuck-${s}`;
          await e.hypervisor(H.stuck);
          await e.evict(name, H.stuck);
          const m = await migrationOf(
            e,
            `stucky-${H.stuck}`,
            (st) => st === "running",
          );
          await e.client.delete(EvictionKind, name);
          const deletedAt = Date.now();
          await gone(e, name, 60_000);
          const stillRunning = e.sim.state().migrations.find((x) =>
            x.id === m.id
          );
          assert.ok(
            stillRunning !== undefined && inProgress(stillRunning.status),
            "the record is still in progress in Nova",
          );
          assert.ok(
            Date.now() - deletedAt >= 120_000 / 20 - 500,
            "not before the stall bound",
          );
          const events = await eventsOf(e, name);
          const stalled = events.find((x) => x.reason === "MigrationsStalled");
          assert.ok(stalled !== undefined, JSON.stringify(events));
          assert.match(stalled.message ?? "", new RegExp(`migration ${m.id}`));
        },
      );
    } finally {
      await e.stop();
    }

    await t.step(
      "after its bound the finalizer gives up with an Event and a metric",
      async () => {
        const g = await startDrainEnv({
          env,
          scenario: scenario([H.giveUp], [H.giveUp]),
          finalizer: { stalledAfterMs: 3_600_000, giveUpAfterMs: 40_000 },
        });
        try {
          const name = `fin-giveup-${s}`;
          await g.hypervisor(H.giveUp);
          await g.evict(name, H.giveUp);
          await migrationOf(g, `stucky-${H.giveUp}`, (st) => st === "running");
          await g.client.delete(EvictionKind, name);
          await gone(g, name, 30_000);
          const events = await eventsOf(g, name);
          const gaveUp = events.find((x) => x.reason === "FinalizerGaveUp");
          assert.ok(gaveUp !== undefined, JSON.stringify(events));
          assert.equal(gaveUp.type, "Warning");
          const metric = await g.operator.metrics.registry.getSingleMetric(
            "evictor_eviction_finalizer_gave_up_total",
          )?.get();
          assert.equal(
            metric?.values.find((v) => v.labels["hypervisor"] === H.giveUp)
              ?.value,
            1,
          );
        } finally {
          await g.stop();
        }
      },
    );
  },
});
