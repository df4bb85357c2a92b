/**
 * The Hypervisor status sync against real Nova and Placement: the operator
 * as a separate process fills a Hypervisor's ids and traits from the real
 * cloud and applies its customTraits to the real resource provider, and
 * takes them away again. Skipped (ignored) where the lane cannot run.
 *
 * @module
 */
import assert from "node:assert/strict";
import { KubeClient } from "../../framework/client.ts";
import { HypervisorKind } from "../../controllers/kinds.ts";
import type { Hypervisor } from "../../models/mod.ts";
import { sharedEnvtest } from "../harness/envtest.ts";
import {
  operatorLogTail,
  startOperatorProcess,
} from "../harness/operator_process.ts";
import { openStackAvailable } from "../harness/openstack.ts";
import { laneCloud, openBackend } from "./contract_backends.ts";

const available = await openStackAvailable();
const TRAIT = "CUSTOM_EVICTOR_LANE";

Deno.test({
  name:
    "lane: Hypervisor status sync from real Nova and Placement: ids, traits, customTraits applied and removed",
  ignore: !available,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const env = await sharedEnvtest();
    const cloud = await laneCloud();
    const b = await openBackend("nova", []);
    const client = await KubeClient.fromKubeConfig(env.kubeConfig());
    const host = "node003";
    const suffix = crypto.randomUUID().slice(0, 8);
    const op = await startOperatorProcess({
      kubeconfigPath: env.kubeconfigPath,
      cloudsYaml: cloud.cloudsYaml(),
      cloud: "lane-appcred",
      args: [
        "--controllers=hypervisor-sync",
        `--label-selector=evictor-lane=${suffix}`,
        "--webhook-bind-address=0",
        "--metrics-bind-address=0",
      ],
    });
    const rp = await b.placement.findResourceProvider(host);
    assert.ok(rp);
    const wait = async <T>(what: string, fn: () => Promise<T | undefined>) => {
      const deadline = Date.now() + 180_000;
      while (Date.now() < deadline) {
        const v = await fn().catch(() => undefined);
        if (v !== undefined) return v;
        await new Promise((r) => setTimeout(r, 500));
      }
      throw new Error(
        `timed out waiting for ${what}\n${await operatorLogTail(
          op,
          60,
        )}\n${await b
          .logTails()}`,
      );
    };
    try {
      await client.create<Hypervisor>(HypervisorKind, {
        metadata: { name: host, labels: { "evictor-lane": suffix } },
        spec: { customTraits: [TRAIT] },
      });
      const hv = await wait(
        "the status filled from Nova and Placement",
        async () => {
          const h = await client.get<Hypervisor>(HypervisorKind, host);
          const updated = h.status?.conditions?.find((c) =>
            c.type === "TraitsUpdated"
          );
          return updated?.status === "True" && h.status?.traits?.includes(TRAIT)
            ? h
            : undefined;
        },
      );
      const nova = await b.nova.findHypervisorByHostname(host);
      assert.equal(hv.status?.hypervisorId, nova?.id);
      assert.equal(hv.status?.serviceId, nova?.serviceId);
      const real = await b.placement.getTraits(rp);
      assert.ok(real.traits.includes(TRAIT), real.traits.join());
      // The fake driver's own traits come through too.
      assert.ok(hv.status?.traits?.includes("COMPUTE_NODE"));
      assert.deepEqual(hv.status?.traits, real.traits);

      await client.patch(HypervisorKind, host, {
        spec: { customTraits: [] },
      }, "merge");
      await wait("the custom trait removed from the provider", async () => {
        const t = await b.placement.getTraits(rp);
        return t.traits.includes(TRAIT) ? undefined : t;
      });
    } finally {
      await op.stop();
      await client.delete(HypervisorKind, host).catch(() => {});
      await b.placement.setTraits(rp, (t) => t.filter((x) => x !== TRAIT))
        .catch(() => {});
      await b.close();
    }
  },
});
