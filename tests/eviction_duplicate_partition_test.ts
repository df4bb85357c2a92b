/**
 * The Duplicate check reads every partition: an older Eviction of the same
 * hypervisor that another process (label selector) owns keeps this one
 * waiting, against the real API server and the Nova simulator.
 */
import assert from "node:assert/strict";
import { EvictionKind } from "../controllers/kinds.ts";
import type { Eviction } from "../models/mod.ts";
import { sharedEnvtest } from "./harness/envtest.ts";
import {
  startDrainEnv,
  uniqueSuffix,
  waitFor,
} from "./harness/eviction_env.ts";
import type { ScenarioInput } from "./harness/nova_sim/mod.ts";

const s = uniqueSuffix();
const HOST = `dup-part-${s}`;
const scenario: ScenarioInput = {
  seed: 31,
  timeScale: 20,
  hosts: [
    { name: `dst-${s}`, ramMb: 8_000_000, vcpus: 8192 },
    { name: HOST, ramMb: 1_000_000, vcpus: 1024 },
  ],
  servers: [{ name: "vm", host: HOST, ramMb: 2048 }],
};

Deno.test({
  name:
    "Duplicate: an older Eviction of the host in another partition holds this one",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const env = await sharedEnvtest();
    // every partition's Evictions, as in production
    const e = await startDrainEnv({ env, scenario, cloudSelector: null });
    // Names order the two when their creation seconds are equal.
    const older = `dup-a-${s}`;
    const mine = `dup-b-${s}`;
    try {
      await e.client.create<Eviction>(EvictionKind, {
        metadata: { name: older, labels: { "evictor-test": `elsewhere-${s}` } },
        spec: { hypervisor: HOST, reason: "another partition's" },
      });
      await e.hypervisor(HOST);
      await e.evict(mine, HOST);
      const ev = await waitFor("the Duplicate condition", async () => {
        const x = await e.eviction(mine);
        const c = x.status?.conditions?.find((c) => c.type === "Evicting");
        return c?.reason === "Duplicate" ? x : undefined;
      }, 20_000);
      assert.match(
        ev.status?.conditions?.find((c) => c.type === "Evicting")?.message ??
          "",
        new RegExp(older),
      );
      // A second of drain time at 20x: nothing was started from the host.
      await new Promise((r) => setTimeout(r, 1000));
      assert.deepEqual(
        e.sim.state().migrations.filter((m) => m.source === HOST),
        [],
      );
    } finally {
      await e.client.delete(EvictionKind, older).catch(() => {});
      await e.client.delete(EvictionKind, mine).catch(() => {});
      await e.stop();
    }
  },
});
