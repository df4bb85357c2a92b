/**
 * The capacity check in the drain, against a real API server and the Nova
 * simulator's Placement: CapacityChecked True when the VMs fit, False
 * naming a VM too large for any other host (Warn drains anyway), and with
 * `capacityCheck: Hold` the compute service stays enabled and nothing
 * migrates until capacity is added. The policy is a cluster singleton, so
 * this file has its own API server.
 */
import assert from "node:assert/strict";
import type { Eviction } from "../models/mod.ts";
import { EvictionKind } from "../controllers/kinds.ts";
import { EVENTS } from "../framework/events.ts";
import { startEnvtest } from "./harness/envtest.ts";
import {
  type DrainEnv,
  startDrainEnv,
  waitFor,
} from "./harness/eviction_env.ts";

async function warned(env: DrainEnv, name: string, reason: string) {
  return await waitFor(`${reason} event of ${name}`, async () => {
    const list = await env.client.list(EVENTS, { namespace: "default" });
    return (list.items as Array<
      {
        involvedObject?: { name?: string };
        reason?: string;
        type?: string;
        message?: string;
      }
    >).find((x) =>
      x.involvedObject?.name === name && x.reason === reason &&
      x.type === "Warning"
    );
  });
}

function condition(e: Eviction, type: string) {
  return e.status?.conditions?.find((c) => c.type === type);
}

async function checked(env: DrainEnv, name: string) {
  return await waitFor(`CapacityChecked on ${name}`, async () => {
    const ev = await env.eviction(name);
    return condition(ev, "CapacityChecked") === undefined ? undefined : ev;
  });
}

Deno.test({
  name: "eviction: the capacity check before a host is disabled",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const api = await startEnvtest();
    let env: DrainEnv | undefined;
    try {
      env = await startDrainEnv({
        env: api,
        capacityCheck: true,
        pollIntervalMs: 50,
        scenario: {
          seed: 3,
          timeScale: 20,
          hosts: [
            { name: "fits", ramMb: 65536 },
            { name: "toolarge", ramMb: 262144 },
            { name: "held", ramMb: 262144 },
            { name: "dst", ramMb: 65536 },
            // Disabled: they take no VM of the other steps.
            { name: "wa", ramMb: 1_000_000, enabled: false },
            { name: "wb", ramMb: 1_000_000, enabled: false },
            { name: "spare", ramMb: 600_000, enabled: false },
          ],
          servers: [
            { name: "fits-a", host: "fits", ramMb: 8192 },
            { name: "fits-b", host: "fits", ramMb: 4096 },
            { name: "big", host: "toolarge", ramMb: 131072 },
            { name: "ok", host: "toolarge", ramMb: 2048 },
            { name: "held-big", host: "held", ramMb: 131072 },
            { name: "held-small", host: "held", ramMb: 2048 },
            { name: "wave-a", host: "wa", ramMb: 400_000 },
            { name: "wave-b", host: "wb", ramMb: 400_000 },
          ],
        },
      });
      const e = env;
      for (const h of ["fits", "toolarge", "held", "dst", "wa", "wb"]) {
        await e.hypervisor(h);
      }
      const sim = e.sim;
      const host = (name: string) =>
        sim.state().hosts.find((h) => h.name === name);

      await t.step(
        "a host whose VMs fit gets CapacityChecked=True",
        async () => {
          await e.evict("fits", "fits");
          const ev = await checked(e, "fits");
          const c = condition(ev, "CapacityChecked");
          assert.equal(c?.status, "True");
          assert.match(c?.message ?? "", /^all 2 VMs fit on other hosts/);
          assert.match(
            c?.message ?? "",
            /Placement's view, a necessary condition/,
          );
          assert.ok((ev.status?.predictedMakespanSeconds ?? 0) > 0);
          await waitFor(
            "fits drained",
            async () => (await e.eviction("fits")).status?.finishedAt,
            60_000,
          );
          await e.client.delete(EvictionKind, "fits");
        },
      );

      await t.step(
        "one VM too large for any other host: False naming it; Warn drains anyway",
        async () => {
          await e.evict("toolarge", "toolarge");
          const ev = await checked(e, "toolarge");
          const c = condition(ev, "CapacityChecked");
          assert.equal(c?.status, "False");
          assert.equal(c?.reason, "NoTarget");
          assert.match(
            c?.message ?? "",
            /^1 of \d+ VMs have no target: big \(/,
          );
          const event = await warned(e, "toolarge", "CapacityInsufficient");
          assert.match(event.message ?? "", /no target: big/);
          await waitFor(
            "toolarge disabled",
            () => host("toolarge")?.enabled === false ? true : undefined,
          );
        },
      );

      await t.step(
        "Hold: the service stays enabled and nothing migrates until capacity is added",
        async () => {
          await e.policy({ maxConcurrentMigrations: 4, capacityCheck: "Hold" });
          const migrationsBefore = sim.world.migrations.filter((m) =>
            m.source === "held"
          ).length;
          assert.equal(migrationsBefore, 0);
          await e.evict("held", "held");
          const ev = await checked(e, "held");
          assert.equal(condition(ev, "CapacityChecked")?.status, "False");
          assert.match(
            condition(ev, "CapacityChecked")?.message ?? "",
            /held-big .*capacityCheck is Hold/,
          );
          await warned(e, "held", "CapacityHold");
          // Several slow passes (10 x 50 ms each) later: still nothing.
          await new Promise((r) => setTimeout(r, 2_000));
          assert.equal(host("held")?.enabled, true);
          assert.equal(
            sim.world.migrations.filter((m) => m.source === "held").length,
            0,
          );
          assert.equal(
            (await e.eviction("held")).status?.hypervisorServiceId,
            undefined,
          );
          // Capacity arrives: dst grows to take held-big.
          const dst = sim.world.hosts.get("dst");
          assert.ok(dst !== undefined);
          dst.ramMb = 524288;
          const done = await waitFor("held drained", async () => {
            const x = await e.eviction("held");
            return x.status?.finishedAt === undefined ? undefined : x;
          }, 60_000);
          assert.equal(condition(done, "CapacityChecked")?.status, "True");
          assert.equal(host("held")?.enabled, false);
          assert.deepEqual(
            sim.world.listServers().filter((s) => s.host === "held"),
            [],
          );
        },
      );

      await t.step(
        "two hosts of a wave never count the same free capacity twice",
        async () => {
          // Only spare can take a 400000 MB VM, and only one of them.
          const spare = sim.world.hosts.get("spare");
          assert.ok(spare !== undefined);
          sim.world.setService(spare, "enabled", undefined, undefined);
          await Promise.all([e.evict("wa", "wa"), e.evict("wb", "wb")]);
          const [a, b] = await Promise.all([
            checked(e, "wa"),
            checked(e, "wb"),
          ]);
          const verdicts = [a, b].map((x) =>
            condition(x, "CapacityChecked")?.status
          );
          assert.ok(
            verdicts.filter((v) => v === "True").length <= 1,
            `both fit: ${verdicts}`,
          );
          assert.ok(verdicts.includes("False"), `${verdicts}`);
          await new Promise((r) => setTimeout(r, 1_000));
          const moved = sim.world.migrations.filter((m) =>
            m.source === "wa" || m.source === "wb"
          );
          assert.ok(moved.length <= 1, `${moved.length} migrations`);
        },
      );
    } finally {
      await env?.stop();
      await api.stop();
    }
  },
});
