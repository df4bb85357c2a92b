/**
 * Every start answered 503, against the real API server and the Nova
 * simulator (20 times faster than real time): the drain backs off per VM
 * (2 s doubling to 2 min on its clock) instead of asking again at once,
 * charges no attempt, shows no VM in flight, says in an Event and its
 * condition that Nova is not taking starts, and drains once Nova answers.
 */
import assert from "node:assert/strict";
import { sharedEnvtest } from "./harness/envtest.ts";
import {
  serversOn,
  startDrainEnv,
  uniqueSuffix,
  waitFor,
} from "./harness/eviction_env.ts";
import type { ScenarioInput } from "./harness/nova_sim/mod.ts";

const EVENTS = {
  group: "",
  version: "v1",
  plural: "events",
  kind: "Event",
  namespaced: true,
} as const;

const TIME_SCALE = 20;
const s = uniqueSuffix();
const HOST = `unanswered-${s}`;

const scenario: ScenarioInput = {
  seed: 29,
  timeScale: TIME_SCALE,
  hosts: [
    { name: `dst-${s}`, ramMb: 8_000_000, vcpus: 8192 },
    {
      name: HOST,
      ramMb: 1_000_000,
      vcpus: 1024,
      maxConcurrentLiveMigrations: 4,
    },
  ],
  servers: [
    { name: "a", host: HOST, ramMb: 2048 },
    { name: "b", host: HOST, ramMb: 2048 },
    { name: "c", host: HOST, ramMb: 4096 },
  ],
};

Deno.test({
  name:
    "every start answered 503: bounded Nova calls per minute, an Event, no false in-flight count",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const env = await sharedEnvtest();
    const e = await startDrainEnv({ env, scenario, concurrency: "4" });
    try {
      const clear = e.sim.injectActionFault("*", {
        action: "os-migrateLive",
        mode: "status",
        status: 503,
        processed: false,
        times: 1_000_000,
      });
      const calls: number[] = [];
      const off = e.sim.onCall((c) => {
        if (!c.key.startsWith("GET /") && !c.key.startsWith("POST /")) return;
        if (c.key.includes("/auth/") || c.key.includes("/v3")) return;
        calls.push(c.atMs);
      });
      await e.hypervisor(HOST);
      await e.evict(HOST, HOST);
      const started = await waitFor(
        "the drain started",
        async () => {
          const ev = await e.eviction(HOST);
          return ev.status?.startedAt;
        },
        10_000,
        10,
      );
      // Four simulated minutes of Nova answering every start with 503.
      await new Promise((r) => setTimeout(r, (4 * 60_000) / TIME_SCALE));
      const ev = await e.eviction(HOST);
      const startMs = Date.parse(started);
      const perMinute = [0, 1, 2, 3].map((m) =>
        calls.filter((t) =>
          t >= startMs + m * 60_000 && t < startMs + (m + 1) * 60_000
        ).length
      );
      console.log(`Nova calls per simulated minute: ${perMinute.join(", ")}`);
      // Without the backoff: hundreds of passes at once (a hot loop).
      for (const n of perMinute) assert.ok(n <= 60, `${n} calls in a minute`);
      // At the 2 min cap: 3 starts and a few lists per 2 minutes.
      assert.ok(
        (perMinute[3] ?? 0) <= 15,
        `${perMinute[3]} calls in the 4th minute`,
      );
      assert.deepEqual(ev.status?.failed ?? [], []);
      assert.equal(ev.status?.inFlightCount, 0);
      const evicting = ev.status?.conditions?.find((c) =>
        c.type === "Evicting"
      );
      assert.equal(evicting?.reason, "StartsUnanswered");
      assert.match(evicting?.message ?? "", /Nova is not taking starts/);
      const list = await e.client.list(EVENTS, { namespace: "default" });
      const reasons = (list.items as Array<
        { involvedObject?: { name?: string }; reason?: string }
      >).filter((x) => x.involvedObject?.name === HOST).map((x) => x.reason);
      assert.ok(reasons.includes("StartsUnanswered"), reasons.join());
      assert.ok(!reasons.includes("MigrationFailed"));
      // Nova takes starts again: the drain finishes (at the next retry).
      clear();
      off();
      await waitFor(
        "the host drained",
        async () => {
          const done = await e.eviction(HOST);
          return done.status?.finishedAt !== undefined &&
              serversOn(e.sim, HOST).length === 0
            ? true
            : undefined;
        },
        30_000,
        50,
      );
    } finally {
      await e.stop();
    }
  },
});
