/**
 * Nova's clock behind ours, against the real API server and the simulator
 * (whose Nova stamps its records, filters `changes-since` and dates its
 * answers on a clock 30 s or 5 min behind the world's): a VM whose live
 * migrations always fail is charged each attempt and given up on after
 * the last, not retried uncharged forever (its failed records looked older
 * than the starts they followed, and `changes-since` hid them).
 */
import assert from "node:assert/strict";
import { sharedEnvtest } from "./harness/envtest.ts";
import {
  startDrainEnv,
  uniqueSuffix,
  waitFor,
} from "./harness/eviction_env.ts";
import type { ScenarioInput } from "./harness/nova_sim/mod.ts";

for (
  const [label, offsetMs] of [["30 s", -30_000], ["5 min", -300_000]] as const
) {
  Deno.test({
    name:
      `eviction: with Nova's clock ${label} behind, a VM whose migrations fail is charged each attempt and given up on`,
    sanitizeOps: false,
    sanitizeResources: false,
    async fn() {
      const env = await sharedEnvtest();
      const s = uniqueSuffix();
      const host = `clock-${s}`;
      const scenario: ScenarioInput = {
        seed: 41,
        timeScale: 20,
        hosts: [
          { name: `dst-${s}`, ramMb: 1_000_000, vcpus: 1024 },
          { name: host, ramMb: 1_000_000, vcpus: 1024 },
        ],
        servers: [
          { name: "breaks", host, ramMb: 2048 },
          { name: "fine", host, ramMb: 2048 },
        ],
        faults: { liveMigrationFailure: [{ server: "breaks", times: 100 }] },
      };
      const e = await startDrainEnv({
        env,
        scenario,
        // simulator time: retried after 20 s, 3 attempts, then given up
        planOptions: {
          maxAttempts: 3,
          retryBaseMs: 20_000,
          retryCapMs: 40_000,
          retryWindowMs: 1_000,
        },
      });
      e.sim.world.novaClockOffsetMs = offsetMs;
      try {
        const name = `clock-${s}`;
        await e.hypervisor(host);
        await e.evict(name, host);
        const ev = await waitFor("the drain to give the VM up", async () => {
          const x = await e.eviction(name);
          const c = x.status?.conditions?.find((c) => c.type === "Evicting");
          return c?.reason === "Failed" ? x : undefined;
        }, 60_000);
        const breaks = e.sim.state().servers.find((x) => x.name === "breaks");
        const failed = ev.status?.failed ?? [];
        assert.deepEqual(failed.map((f) => f.id), [breaks?.id]);
        assert.equal(failed[0]?.attempts, 3);
        // one attempt may go uncharged before Nova's clock is learned
        const tries = e.sim.state().migrations.filter((m) =>
          m.serverId === breaks?.id
        ).length;
        assert.ok(tries >= 3 && tries <= 4, `${tries} migrations of it`);
        assert.equal(ev.status?.migratedCount, 1);
      } finally {
        await e.stop();
      }
    },
  });
}
