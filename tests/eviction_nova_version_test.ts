/**
 * Compute microversion negotiation seen from a drain, against the real API
 * server and the Nova simulator: a cloud whose maximum is below evictor's
 * default (Wallaby's 2.88) is drained at its maximum; a cloud below the
 * floor leaves the Eviction with `Evicting=False`, reason
 * `NovaIncompatible`, naming both ranges, and nothing done in Nova.
 */
import assert from "node:assert/strict";
import { drainOutcome } from "../cli/kubectl_plugin.ts";
import { sharedEnvtest } from "./harness/envtest.ts";
import {
  serversOn,
  startDrainEnv,
  uniqueSuffix,
  waitFor,
} from "./harness/eviction_env.ts";
import type { ScenarioInput } from "./harness/nova_sim/mod.ts";

const s = uniqueSuffix();

function scenario(maxMicroversion: string, host: string): ScenarioInput {
  return {
    seed: 31,
    timeScale: 20,
    maxMicroversion,
    hosts: [
      { name: `mv-dst-${s}-${maxMicroversion}`, ramMb: 8_000_000 },
      { name: host, ramMb: 1_000_000 },
    ],
    servers: [
      { name: "a", host, ramMb: 2048 },
      { name: "b", host, ramMb: 4096 },
    ],
  };
}

Deno.test({
  name: "eviction: microversion negotiated against Nova's version document",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const env = await sharedEnvtest();

    await t.step("a cloud at 2.88 (Wallaby) is drained at 2.88", async () => {
      const host = `mv-wallaby-${s}`;
      const e = await startDrainEnv({ env, scenario: scenario("2.88", host) });
      try {
        const seen = new Set<string>();
        const off = e.sim.onCall((c) => seen.add(c.key));
        await e.hypervisor(host);
        await e.evict(host, host);
        const ev = await waitFor(`${host} Succeeded`, async () => {
          const got = await e.eviction(host);
          return drainOutcome(got) === "Succeeded" ? got : undefined;
        }, 60_000);
        off();
        assert.equal(ev.status?.migratedCount, 2);
        assert.deepEqual(serversOn(e.sim, host), []);
        assert.ok(seen.has("GET /compute/v2.1/"), "the version document");
      } finally {
        await e.stop();
      }
    });

    await t.step(
      "a cloud below the floor: NovaIncompatible on the Eviction, nothing done",
      async () => {
        const host = `mv-old-${s}`;
        const e = await startDrainEnv({
          env,
          scenario: scenario("2.53", host),
        });
        try {
          await e.hypervisor(host);
          await e.evict(host, host);
          const c = await waitFor(`${host} NovaIncompatible`, async () => {
            const got = await e.eviction(host);
            const evicting = got.status?.conditions?.find((x) =>
              x.type === "Evicting"
            );
            return evicting?.reason === "NovaIncompatible"
              ? evicting
              : undefined;
          }, 30_000);
          assert.equal(c.status, "False");
          assert.match(
            c.message,
            /supports compute microversions 2\.1 to 2\.53; evictor needs 2\.59 to 2\.90/,
          );
          const computeCalls = Object.keys(e.sim.counters().calls).filter((k) =>
            k.includes("/compute/")
          );
          assert.deepEqual(computeCalls, ["GET /compute/v2.1/"]);
          const st = e.sim.state().hosts.find((h) => h.name === host);
          assert.equal(st?.enabled, true, "the service was not disabled");
          assert.equal(drainOutcome(await e.eviction(host)), "Failed");
        } finally {
          await e.stop();
        }
      },
    );
  },
});
