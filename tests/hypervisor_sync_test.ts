/**
 * The Hypervisor status sync against the real API server and the Nova
 * simulator: ids and traits, resync, customTraits, a generation conflict,
 * a failing Placement, a host Nova does not know; and discovery.
 */
import assert from "node:assert/strict";
import { registerHypervisorSync } from "../controllers/hypervisor/mod.ts";
import { MANAGED_TRAITS_ANNOTATION } from "../controllers/hypervisor/traits.ts";
import { HypervisorKind } from "../controllers/kinds.ts";
import type { Hypervisor } from "../models/mod.ts";
import {
  INTEGRATION,
  startHvHarness,
  uniq,
  waitFor,
} from "./_hypervisor_util.ts";

const RESYNC_MS = 500;
const TRAITS_PATH = "/resource_providers/{uuid}/traits";
const PUT_TRAITS = `PUT /placement${TRAITS_PATH}`;
const HV_LOOKUP = "GET /compute/v2.1/os-hypervisors/detail";

function condition(hv: Hypervisor, type: string) {
  return hv.status?.conditions?.find((c) => c.type === type);
}

Deno.test({
  name:
    "hypervisor sync: ids and traits, resync, customTraits, generation conflict, failing Placement, unknown host",
  ...INTEGRATION,
  fn: async (t) => {
    const prefix = uniq("hs");
    const a = `${prefix}-a`;
    const b = `${prefix}-b`;
    const ghost = `${prefix}-ghost`;
    const h = await startHvHarness({
      hosts: [
        { name: a, traits: ["CUSTOM_THEIRS", "HW_CPU_X86_AVX"] },
        { name: b },
      ],
      servers: [
        { name: "vm1", host: a },
        { name: "vm2", host: a },
      ],
    });
    try {
      const op = h.operator();
      registerHypervisorSync(op, {
        nova: h.nova,
        placement: h.placement,
        resyncIntervalMs: RESYNC_MS,
        discover: false,
      });
      await h.createHypervisor(a, { customTraits: ["CUSTOM_MINE"] });
      await op.start();

      await t.step(
        "ids, instances and traits; customTraits applied",
        async () => {
          const host = h.host(a);
          const hv = await waitFor("status filled", async () => {
            const hv = await h.hypervisor(a);
            return condition(hv, "TraitsUpdated")?.status === "True" &&
              hv.status?.traits?.includes("CUSTOM_MINE") && hv;
          });
          assert.equal(hv.status?.hypervisorId, host.hypervisorId);
          assert.equal(hv.status?.serviceId, host.serviceId);
          assert.equal(hv.status?.numInstances, 2);
          assert.deepEqual(hv.status?.traits, [
            "CUSTOM_MINE",
            "CUSTOM_THEIRS",
            "HW_CPU_X86_AVX",
          ]);
          assert.deepEqual(h.host(a).traits, hv.status?.traits);
          assert.equal(
            hv.metadata?.annotations?.[MANAGED_TRAITS_ANNOTATION],
            "CUSTOM_MINE",
          );
          assert.equal(condition(hv, "HypervisorDisabled")?.reason, "Enabled");
        },
      );

      await t.step(
        "a trait added in Placement shows after the next resync",
        async () => {
          const rp = h.host(a).hypervisorId;
          await h.placement.ensureCustomTrait("CUSTOM_ADDED_ELSEWHERE");
          await h.placement.setTraits(rp, (cur) => [
            ...cur,
            "CUSTOM_ADDED_ELSEWHERE",
          ]);
          await waitFor(
            "the new trait in status",
            async () =>
              (await h.hypervisor(a)).status?.traits?.includes(
                "CUSTOM_ADDED_ELSEWHERE",
              ),
          );
        },
      );

      await t.step(
        "customTraits changes reach Placement; others' traits stay",
        async () => {
          await h.client.patch(HypervisorKind, a, {
            spec: { customTraits: ["CUSTOM_OTHER"] },
          });
          await waitFor("Placement updated", () => {
            const traits = h.host(a).traits;
            return traits.includes("CUSTOM_OTHER") &&
              !traits.includes("CUSTOM_MINE");
          });
          assert.deepEqual(h.host(a).traits, [
            "CUSTOM_ADDED_ELSEWHERE",
            "CUSTOM_OTHER",
            "CUSTOM_THEIRS",
            "HW_CPU_X86_AVX",
          ]);
          const hv = await waitFor("annotation and status", async () => {
            const hv = await h.hypervisor(a);
            return hv.metadata?.annotations?.[MANAGED_TRAITS_ANNOTATION] ===
                "CUSTOM_OTHER" &&
              hv.status?.traits?.includes("CUSTOM_OTHER") && hv;
          });
          assert.equal(condition(hv, "TraitsUpdated")?.status, "True");
        },
      );

      await t.step(
        "a generation conflict (Nova writes a trait meanwhile) is retried",
        async () => {
          const before = h.sim.counters().calls[PUT_TRAITS] ?? 0;
          // Hold our next PUT long enough for Nova to write its own trait.
          h.sim.injectHttpFault({
            method: "PUT",
            path: TRAITS_PATH,
            latencyMs: 600,
            count: 1,
          });
          await h.client.patch(HypervisorKind, a, {
            spec: { customTraits: ["CUSTOM_OTHER", "CUSTOM_RACE"] },
          });
          await waitFor(
            "our PUT in flight",
            () => (h.sim.counters().calls[PUT_TRAITS] ?? 0) > before,
          );
          const svc = h.host(a).serviceId;
          await h.nova.setComputeServiceStatus(svc, false, "ops: firmware");
          await waitFor("both traits in Placement", () => {
            const traits = h.host(a).traits;
            return traits.includes("CUSTOM_RACE") &&
              traits.includes("COMPUTE_STATUS_DISABLED");
          });
          assert.equal(
            (h.sim.counters().calls[PUT_TRAITS] ?? 0) - before,
            2,
            "one PUT refused with 409, one accepted",
          );
          const hv = await waitFor("status shows both", async () => {
            const hv = await h.hypervisor(a);
            return hv.status?.traits?.includes("CUSTOM_RACE") &&
              hv.status.traits.includes("COMPUTE_STATUS_DISABLED") &&
              condition(hv, "HypervisorDisabled")?.status === "True" && hv;
          });
          assert.equal(
            condition(hv, "HypervisorDisabled")?.reason,
            "DisabledByOthers",
          );
          assert.equal(condition(hv, "TraitsUpdated")?.status, "True");
          await h.nova.setComputeServiceStatus(svc, true);
        },
      );

      await t.step(
        "a failing Placement sets TraitsUpdated=False, then recovers",
        async () => {
          const remove = h.sim.injectHttpFault({
            path: TRAITS_PATH,
            status: 500,
          });
          await h.createHypervisor(b, { customTraits: ["CUSTOM_B"] });
          const failed = await waitFor("TraitsUpdated=False", async () => {
            const hv = await h.hypervisor(b);
            return condition(hv, "TraitsUpdated")?.status === "False" && hv;
          });
          const c = condition(failed, "TraitsUpdated");
          assert.equal(c?.reason, "PlacementError");
          assert.match(c?.message ?? "", /500|Unexpected API Error/);
          // ids come from Nova, which works
          assert.equal(failed.status?.hypervisorId, h.host(b).hypervisorId);
          remove();
          await waitFor("TraitsUpdated=True again", async () => {
            const hv = await h.hypervisor(b);
            return condition(hv, "TraitsUpdated")?.status === "True" &&
              hv.status?.traits?.includes("CUSTOM_B");
          });
        },
      );

      await t.step(
        "a host Nova does not know is reported, without a hot loop",
        async () => {
          await h.createHypervisor(ghost);
          const hv = await waitFor("Onboarding reported", async () => {
            const hv = await h.hypervisor(ghost);
            return condition(hv, "Onboarding")?.status === "True" && hv;
          });
          assert.equal(condition(hv, "Onboarding")?.reason, "NotInNova");
          assert.equal(
            condition(hv, "TraitsUpdated")?.reason,
            "HypervisorNotFound",
          );
          assert.equal(hv.status?.hypervisorId, undefined);
          const start = h.sim.counters().calls[HV_LOOKUP] ?? 0;
          const windowMs = 4 * RESYNC_MS;
          await new Promise((r) => setTimeout(r, windowMs));
          const lookups = (h.sim.counters().calls[HV_LOOKUP] ?? 0) - start;
          // three Hypervisors, one lookup each per resync (plus slack for
          // timer skew); a retry loop would make hundreds
          assert.ok(
            lookups <= 3 * (windowMs / RESYNC_MS + 2),
            `${lookups} lookups`,
          );
          assert.ok(
            !h.lines.some((l) =>
              l.includes(ghost) && l.includes("reconcile failed")
            ),
            "no error retries for the unknown host",
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
    "hypervisor discovery: creates exactly the missing Hypervisors, never touches existing ones",
  ...INTEGRATION,
  fn: async () => {
    const prefix = uniq("hd");
    const [d1, d2, d3] = [`${prefix}-1`, `${prefix}-2`, `${prefix}-3`];
    const h = await startHvHarness({
      hosts: [{ name: d1 }, { name: d2 }, { name: d3 }, { name: "Not_A_Name" }],
    });
    // d1 exists already, outside this operator's label selector: discovery
    // must neither recreate nor change it.
    const existing = await h.client.create<Hypervisor>(HypervisorKind, {
      metadata: { name: d1, annotations: { owner: "someone else" } },
      spec: { customTraits: ["CUSTOM_KEEP"] },
    });
    try {
      const op = h.operator();
      registerHypervisorSync(op, {
        nova: h.nova,
        placement: h.placement,
        resyncIntervalMs: RESYNC_MS,
        discover: true,
        discoverLabels: { "evictor-test": h.label },
      });
      await op.start();
      const created = await waitFor("d2 and d3 created", async () => {
        const list = await h.client.list(HypervisorKind, {
          labelSelector: h.selector,
        });
        const names = list.items.map((i) =>
          (i as Hypervisor).metadata?.name ?? ""
        ).sort();
        return names.length === 2 && names;
      });
      assert.deepEqual(created, [d2, d3]);
      const uid2 = (await h.hypervisor(d2)).metadata?.uid;
      // a few more passes change nothing
      await new Promise((r) => setTimeout(r, 3 * RESYNC_MS));
      assert.equal((await h.hypervisor(d2)).metadata?.uid, uid2);
      const after = await h.hypervisor(d1);
      assert.equal(
        after.metadata?.resourceVersion,
        existing.metadata?.resourceVersion,
        "the existing Hypervisor was not touched",
      );
      assert.ok(
        h.lines.some((l) => l.includes("Not_A_Name")),
        "a host name that cannot name a Hypervisor is logged",
      );
      // the discovered ones are synced like any other
      await waitFor(
        "discovered Hypervisor synced",
        async () =>
          (await h.hypervisor(d3)).status?.hypervisorId ===
            h.host(d3).hypervisorId,
      );
    } finally {
      await h.client.delete(HypervisorKind, d1).catch(() => {});
      await h.close();
    }
  },
});
