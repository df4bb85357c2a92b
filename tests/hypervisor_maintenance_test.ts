/**
 * Maintenance-driven drains against the real API server (with the real
 * kubectl) and the Nova simulator: the Eviction and the compute service
 * across the sequences of the re-enable rule, and one drain end to end
 * with the eviction controller.
 */
import assert from "node:assert/strict";
import {
  registerHypervisorSync,
  registerMaintenance,
} from "../controllers/hypervisor/mod.ts";
import { registerEvictionController } from "../controllers/eviction/mod.ts";
import { parseConcurrencyFlags } from "../limits/flags.ts";
import { EvictionKind } from "../controllers/kinds.ts";
import type { Eviction, Hypervisor } from "../models/mod.ts";
import {
  type HvHarness,
  INTEGRATION,
  startHvHarness,
  uniq,
  waitFor,
} from "./_hypervisor_util.ts";

const T0 = "2026-01-01T00:00:00Z";

function condition(hv: Hypervisor, type: string) {
  return hv.status?.conditions?.find((c) => c.type === type);
}

async function kubectlPatch(h: HvHarness, name: string, spec: unknown) {
  const out = await h.env.kubectl([
    "patch",
    "hypervisor",
    name,
    "--type",
    "merge",
    "-p",
    JSON.stringify({ spec }),
  ]);
  assert.equal(out.code, 0, out.stderr);
}

/** Waits until the sync part has seen the Hypervisor's current generation. */
async function synced(h: HvHarness, name: string): Promise<Hypervisor> {
  return await waitFor(`${name} synced`, async () => {
    const hv = await h.hypervisor(name);
    return condition(hv, "TraitsUpdated")?.observedGeneration ===
        hv.metadata?.generation && hv;
  });
}

Deno.test({
  name:
    "maintenance: Eviction and compute service across set, drained, cleared; ha; disabled by others; Eviction alone",
  ...INTEGRATION,
  fn: async (t) => {
    const prefix = uniq("hm");
    const [m1, m2, m3, m4] = [
      `${prefix}-1`,
      `${prefix}-2`,
      `${prefix}-3`,
      `${prefix}-4`,
    ];
    const h = await startHvHarness({
      hosts: [
        { name: m1 },
        { name: m2 },
        { name: m3, enabled: false, disabledReason: "hardware broken" },
        { name: m4 },
      ],
      servers: [{ name: "vm1", host: m1 }],
    });
    try {
      const op = h.operator();
      registerHypervisorSync(op, {
        nova: h.nova,
        placement: h.placement,
        resyncIntervalMs: 1000,
        discover: false,
      });
      registerMaintenance(op, { nova: h.nova });
      for (const m of [m1, m2, m3, m4]) await h.createHypervisor(m);
      await op.start();

      await t.step(
        "kubectl patch maintenance=manual: Eviction created, service disabled",
        async () => {
          await kubectlPatch(h, m1, {
            maintenance: "manual",
            maintenanceReason: "kernel",
          });
          const ev = await waitFor("the Eviction", () => h.eviction(m1));
          const hv = await h.hypervisor(m1);
          assert.equal(ev.spec.hypervisor, m1);
          assert.equal(ev.spec.reason, "kernel");
          assert.equal(ev.metadata?.labels?.["evictor-test"], h.label);
          const owner = ev.metadata?.ownerReferences?.[0];
          assert.equal(owner?.kind, "Hypervisor");
          assert.equal(owner?.uid, hv.metadata?.uid);
          assert.equal(owner?.controller, true);
          await waitFor("service disabled", () => !h.host(m1).enabled);
          assert.equal(h.host(m1).disabledReason, "evictor: kernel");
          const pending = await waitFor("Evicting mirrored", async () => {
            const hv = await h.hypervisor(m1);
            return condition(hv, "Evicting") !== undefined && hv;
          });
          assert.equal(condition(pending, "Evicting")?.reason, "Pending");
          assert.equal(pending.status?.evicted, false);
        },
      );

      await t.step(
        "the Eviction's progress is mirrored; drained keeps it disabled",
        async () => {
          await h.client.patch(
            EvictionKind,
            m1,
            {
              status: {
                conditions: [{
                  type: "Evicting",
                  status: "False",
                  reason: "Succeeded",
                  message: "the host is empty: 1 VMs migrated",
                  lastTransitionTime: T0,
                }],
              },
            },
            "merge",
            "status",
          );
          const hv = await waitFor("evicted", async () => {
            const hv = await h.hypervisor(m1);
            return hv.status?.evicted === true && hv;
          });
          const c = condition(hv, "Evicting");
          assert.equal(c?.status, "False");
          assert.equal(c?.reason, "Succeeded");
          assert.match(c?.message ?? "", /^Eviction .*: the host is empty/);
          assert.equal(h.host(m1).enabled, false);
        },
      );

      await t.step(
        "clearing maintenance deletes the Eviction and re-enables the service",
        async () => {
          await kubectlPatch(h, m1, { maintenance: "" });
          await waitFor(
            "Eviction deleted",
            async () => (await h.eviction(m1)) === undefined,
          );
          await waitFor("service enabled", () => h.host(m1).enabled);
          assert.equal(h.host(m1).disabledReason, null);
          const hv = await waitFor("mirror cleared", async () => {
            const hv = await h.hypervisor(m1);
            return condition(hv, "Evicting") === undefined && hv;
          });
          assert.equal(hv.status?.evicted, undefined);
        },
      );

      await t.step("ha leaves everything alone", async () => {
        await kubectlPatch(h, m2, { maintenance: "ha" });
        const hv = await synced(h, m2);
        assert.equal(hv.spec?.maintenance, "ha");
        // The reconcile of this generation has run (sync saw it); give the
        // maintenance part, which runs right after, a moment too.
        await new Promise((r) => setTimeout(r, 300));
        assert.equal(await h.eviction(m2), undefined);
        assert.equal(h.host(m2).enabled, true);
        assert.equal(condition(hv, "Evicting"), undefined);
      });

      await t.step(
        "someone else disabled it first: it stays disabled",
        async () => {
          await kubectlPatch(h, m3, { maintenance: "auto" });
          const ev = await waitFor("the Eviction", () => h.eviction(m3));
          assert.equal(ev.spec.reason, "hypervisor maintenance auto");
          assert.equal(h.host(m3).disabledReason, "hardware broken");
          await kubectlPatch(h, m3, { maintenance: "" });
          await waitFor(
            "Eviction deleted",
            async () => (await h.eviction(m3)) === undefined,
          );
          await waitFor(
            "mirror cleared",
            async () =>
              condition(await h.hypervisor(m3), "Evicting") === undefined,
          );
          assert.equal(h.host(m3).enabled, false);
          assert.equal(h.host(m3).disabledReason, "hardware broken");
        },
      );

      await t.step(
        "an Eviction alone: mirrored; its deletion re-enables what evictor disabled",
        async () => {
          await h.client.create<Eviction>(EvictionKind, {
            metadata: { name: m4, labels: { "evictor-test": h.label } },
            spec: { hypervisor: m4, reason: "manual drain" },
          });
          // what the eviction controller's preflight does
          await h.nova.setComputeServiceStatus(
            h.host(m4).serviceId,
            false,
            "evictor: manual drain",
          );
          await waitFor(
            "Evicting mirrored",
            async () =>
              condition(await h.hypervisor(m4), "Evicting")?.reason ===
                "Pending",
          );
          assert.equal(
            h.host(m4).enabled,
            false,
            "not re-enabled while it stands",
          );
          await h.client.delete(EvictionKind, m4);
          await waitFor("service enabled", () => h.host(m4).enabled);
          await waitFor(
            "mirror cleared",
            async () =>
              condition(await h.hypervisor(m4), "Evicting") === undefined,
          );
        },
      );
    } finally {
      await h.close();
    }
  },
});

Deno.test({
  name:
    "maintenance end to end with the eviction controller: waits for traits, drains, clears",
  ...INTEGRATION,
  fn: async () => {
    const prefix = uniq("he");
    const [src, dst] = [`${prefix}-src`, `${prefix}-dst`];
    const h = await startHvHarness({
      timeScale: 50,
      hosts: [{ name: src }, { name: dst }],
      servers: [
        { name: "vm1", host: src, ramMb: 2048 },
        { name: "vm2", host: src, ramMb: 4096 },
        { name: "vm3", host: src, ramMb: 1024, status: "SHUTOFF" },
      ],
    });
    try {
      const flags = parseConcurrencyFlags("2", undefined);
      if (!flags.ok) throw new Error(flags.error.message);
      const op = h.operator();
      registerHypervisorSync(op, {
        nova: h.nova,
        placement: h.placement,
        resyncIntervalMs: 500,
        discover: false,
      });
      registerMaintenance(op, { nova: h.nova });
      registerEvictionController(op, {
        nova: h.nova,
        flagSettings: flags.settings,
        pollIntervalMs: 100,
        clock: { now: () => h.sim.world.now(), rate: h.sim.scenario.timeScale },
      });
      // Placement fails: the traits are stale, the drain must wait.
      const heal = h.sim.injectHttpFault({
        path: "/resource_providers/{uuid}/traits",
        status: 500,
      });
      await h.createHypervisor(src);
      await h.createHypervisor(dst);
      await op.start();
      await waitFor(
        "TraitsUpdated=False",
        async () =>
          condition(await h.hypervisor(src), "TraitsUpdated")?.status ===
            "False",
      );

      await kubectlPatch(h, src, {
        maintenance: "manual",
        maintenanceReason: "kernel",
      });
      const held = await waitFor("the drain held", async () => {
        const ev = await h.eviction(src);
        const c = ev?.status?.conditions?.find((x) => x.type === "Evicting");
        return c?.reason === "Waiting" && c;
      });
      assert.match(held.message, /TraitsUpdated/);
      assert.deepEqual(h.sim.counters().migrationRequests, {});
      assert.equal(h.host(src).disabledReason, "evictor: kernel");

      heal();
      const drained = await waitFor("drained and mirrored", async () => {
        const hv = await h.hypervisor(src);
        return hv.status?.evicted === true && hv;
      }, 60_000);
      assert.equal(condition(drained, "Evicting")?.reason, "Succeeded");
      assert.deepEqual(h.host(src).servers, []);
      assert.equal(h.host(dst).servers.length, 3);
      assert.equal(h.host(src).enabled, false, "stays disabled in maintenance");

      await kubectlPatch(h, src, { maintenance: "" });
      await waitFor(
        "Eviction gone (finalizer ran)",
        async () => (await h.eviction(src)) === undefined,
      );
      await waitFor("service enabled", () => h.host(src).enabled);
      const hv = await waitFor("mirror cleared", async () => {
        const hv = await h.hypervisor(src);
        return condition(hv, "Evicting") === undefined && hv;
      });
      assert.equal(hv.status?.evicted, undefined);
    } finally {
      await h.close();
    }
  },
});
