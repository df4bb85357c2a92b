/**
 * Waves that cannot leak, against a real API server and the simulator: an
 * Eviction created while another drain runs stops that drain's new starts
 * while its own host is still enabled (Nova could place the running
 * drain's VMs there, and they would move twice). A member that never
 * disables (`capacityCheck: Hold`) holds it for the settle bound only,
 * and is then named on the running drain's WaveSettled condition. The
 * policy is a cluster singleton, so this file has its own API server.
 */
import assert from "node:assert/strict";
import type { Eviction } from "../models/mod.ts";
import { EVENTS } from "../framework/events.ts";
import {
  drained,
  type DrainEnv,
  waitFor,
  withOwnApiServer,
} from "./harness/eviction_env.ts";

const WAVE_SETTLE_MS = 3_000;

function waveSettled(e: Eviction) {
  return e.status?.conditions?.find((c) => c.type === "WaveSettled");
}

async function eventReasons(env: DrainEnv, name: string): Promise<string[]> {
  const list = await env.client.list(EVENTS, { namespace: "default" });
  return (list.items as Array<
    { involvedObject?: { name?: string }; reason?: string }
  >).filter((x) => x.involvedObject?.name === name).map((x) => x.reason ?? "");
}

Deno.test({
  name:
    "wave: an Eviction created mid-drain holds the running drain's starts while its host is enabled; a Hold peer only for the bound, then named",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await withOwnApiServer({
      capacityCheck: true,
      pollIntervalMs: 50,
      waveSettleMs: WAVE_SETTLE_MS,
      scenario: {
        seed: 11,
        timeScale: 10,
        hosts: [
          { name: "run", ramMb: 262144 },
          { name: "late", ramMb: 262144 },
          { name: "dst", ramMb: 98304 },
        ],
        servers: [
          ...Array.from({ length: 10 }, (_, i) => ({
            name: `run-${i}`,
            host: "run",
            ramMb: 4096,
          })),
          // fits nowhere: late's capacity check holds it enabled
          { name: "late-big", host: "late", ramMb: 131072 },
        ],
      },
    }, async (e) => {
      for (const h of ["run", "late", "dst"]) await e.hypervisor(h);
      await e.policy({ maxConcurrentMigrations: 1, capacityCheck: "Hold" });
      const fromRun = () =>
        e.sim.world.migrations.filter((m) => m.source === "run");

      await e.evict("run", "run");
      await waitFor(
        "run's first migration",
        () => fromRun().length > 0 ? true : undefined,
      );
      await e.evict("late", "late");

      const held = await waitFor("run held by its wave", async () => {
        const c = waveSettled(await e.eviction("run"));
        return c?.status === "False" ? c : undefined;
      }, 30_000);
      assert.equal(held.reason, "WaitingForWave");
      assert.match(
        held.message,
        /^host run is disabled; migrations start once these are disabled too: late( \(held by its capacity check\))?$/,
      );
      // once late's capacity check has held it, the reason is named
      const named = await waitFor("the hold named", async () => {
        const c = waveSettled(await e.eviction("run"));
        return c?.message.includes("held by its capacity check")
          ? c
          : undefined;
      }, 30_000);
      assert.equal(named.status, "False");
      assert.equal(named.lastTransitionTime, held.lastTransitionTime);
      const released = await waitFor(
        "run released after the bound",
        async () => {
          const c = waveSettled(await e.eviction("run"));
          return c?.status === "True" ? c : undefined;
        },
        30_000,
      );
      assert.equal(released.reason, "SettleBoundPassed");
      assert.equal(
        released.message,
        "waited the settle bound; still enabled, so Nova may place VMs there: late (held by its capacity check)",
      );
      const heldAt = Date.parse(held.lastTransitionTime);
      const releasedAt = Date.parse(released.lastTransitionTime);
      // the bound, on the drain's clock (simulator ms; whole seconds)
      assert.ok(
        releasedAt - heldAt >= WAVE_SETTLE_MS * 10 - 2_000,
        `held ${releasedAt - heldAt} virtual ms`,
      );
      // no start while held (a second of slack for a pass under way)
      const startedWhileHeld = fromRun().filter((m) =>
        m.createdAt >= heldAt + 2_000 && m.createdAt < releasedAt
      );
      assert.deepEqual(startedWhileHeld.map((m) => m.serverId), []);
      assert.equal(
        e.sim.state().hosts.find((h) => h.name === "late")?.enabled,
        true,
      );

      const done = await drained(e, "run", 60_000);
      assert.equal(done.status?.migratedCount, 10);
      assert.deepEqual(
        e.sim.world.listServers().filter((s) => s.host === "run"),
        [],
      );
      const reasons = await eventReasons(e, "run");
      assert.ok(reasons.includes("WaitingForWave"), reasons.join());
      assert.ok(reasons.includes("WaveSettled"), reasons.join());
    });
  },
});
