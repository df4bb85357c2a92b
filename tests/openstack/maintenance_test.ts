/**
 * The Hypervisor's maintenance field on the real cloud: `kubectl patch
 * hypervisor` to `manual` creates the Eviction (owned by the Hypervisor,
 * with its reason), which disables the real compute service and drains the
 * host; clearing maintenance deletes the Eviction and re-enables the
 * service.
 *
 * @module
 */
import assert from "node:assert/strict";
import { HypervisorKind } from "../../controllers/kinds.ts";
import type { Hypervisor } from "../../models/mod.ts";
import {
  available,
  condition,
  evictingReason,
  recordsByName,
  until,
  withLane,
} from "./lane.ts";

Deno.test({
  name:
    "lane: Hypervisor maintenance manual (kubectl patch) creates the Eviction that drains the real host; clearing it re-enables the compute service",
  ignore: !available,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const host = "node003";
    await withLane(
      [
        { name: "mt-a", host, size: "small" },
        { name: "mt-b", host, size: "medium" },
      ],
      [host],
      [
        "--controllers=eviction,hypervisor-sync,maintenance",
        "--eviction-concurrency=2",
      ],
      async (lane) => {
        const { b } = lane;
        const patch = (spec: Record<string, string>) =>
          lane.kubectl([
            "patch",
            "hypervisor",
            host,
            "--type",
            "merge",
            "-p",
            JSON.stringify({ spec }),
          ]);
        assert.equal(
          (await b.nova.findComputeService(host))?.status,
          "enabled",
        );
        await patch({ maintenance: "manual", maintenanceReason: "kernel" });
        const created = await until(
          "the Eviction of the maintenance",
          () => lane.eviction(host),
          60_000,
          lane.diagnostics,
        );
        const hv = await lane.client.get<Hypervisor>(HypervisorKind, host);
        assert.equal(created.spec.hypervisor, host);
        assert.equal(created.spec.reason, "kernel");
        assert.equal(
          created.metadata?.ownerReferences?.[0]?.uid,
          hv.metadata?.uid,
        );

        const done = await evictingReason(lane, host, "Succeeded", 300_000);
        assert.equal(condition(done, "HypervisorDisabled")?.status, "True");
        const svc = await b.nova.findComputeService(host);
        assert.equal(svc?.status, "disabled");
        assert.equal(svc?.disabledReason, "evictor: kernel");
        for (const [name, rs] of await recordsByName(lane, host)) {
          assert.deepEqual(rs.map((m) => m.status), ["completed"], name);
          const s = await b.nova.getServer(b.servers.get(name) as string);
          assert.notEqual(s.host, host, name);
        }
        const mirrored = await until(
          "status.evicted on the Hypervisor",
          async () => {
            const h = await lane.client.get<Hypervisor>(HypervisorKind, host);
            return h.status?.evicted === true ? h : undefined;
          },
          60_000,
          lane.diagnostics,
        );
        assert.equal(
          mirrored.status?.conditions?.find((c) => c.type === "Evicting")
            ?.reason,
          "Succeeded",
        );
        // Drained, still in maintenance: the service stays disabled.
        assert.equal(
          (await b.nova.findComputeService(host))?.status,
          "disabled",
        );

        await patch({ maintenance: "" });
        await until(
          "the Eviction deleted",
          async () => (await lane.eviction(host)) === undefined || undefined,
          120_000,
          lane.diagnostics,
        );
        const enabled = await until(
          "the compute service re-enabled",
          async () => {
            const s = await b.nova.findComputeService(host);
            return s?.status === "enabled" ? s : undefined;
          },
          120_000,
          lane.diagnostics,
        );
        assert.equal(enabled.disabledReason ?? null, null);
      },
    );
  },
});
