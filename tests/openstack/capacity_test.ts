/**
 * The capacity check on real Placement with `capacityCheck: Hold`: while
 * every other host is disabled (Nova marks their providers
 * `COMPUTE_STATUS_DISABLED`) the drained host stays enabled, nothing
 * migrates, and `CapacityChecked` is False naming the VM; once a host is
 * enabled again the check passes at its next look and the host drains.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  available,
  condition,
  evictingReason,
  evictionYaml,
  until,
  withLane,
  withPolicy,
} from "./lane.ts";

Deno.test({
  name:
    "lane: capacityCheck Hold on real Placement: no room elsewhere keeps the host enabled with CapacityChecked False naming the VM; a host enabled again lets it drain",
  ignore: !available,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const host = "node002";
    await withLane(
      [{ name: "held-vm", host, size: "medium" }],
      [host],
      ["--eviction-concurrency=2"],
      async (lane) => {
        const { b } = lane;
        const others = b.hosts.filter((h) => h !== host);
        for (const h of others) await b.setHostEnabled(h, false);
        // Nova turns a disabled service into its provider's trait (the
        // compute does it): the check reads Placement, so wait for it.
        for (const h of others) {
          const rp = await b.placement.findResourceProvider(h);
          assert.ok(rp, `Placement knows ${h}`);
          await until(
            `COMPUTE_STATUS_DISABLED on ${h}`,
            async () =>
              (await b.placement.getTraits(rp)).traits.includes(
                  "COMPUTE_STATUS_DISABLED",
                )
                ? true
                : undefined,
            60_000,
            lane.diagnostics,
          );
        }
        await withPolicy(
          lane,
          { maxConcurrentMigrations: 2, capacityCheck: "Hold" },
          async () => {
            await lane.kubectl(
              ["create", "-f", "-"],
              evictionYaml(host, lane.labels, "capacity-hold"),
            );
            const held = await until(
              "CapacityChecked False",
              async () => {
                const e = await lane.eviction(host);
                return condition(e, "CapacityChecked")?.status === "False"
                  ? e
                  : undefined;
              },
              120_000,
              lane.diagnostics,
            );
            const c = condition(held, "CapacityChecked");
            console.log(`lane capacity hold: ${c?.reason}: ${c?.message}`);
            assert.equal(c?.reason, "NoTarget", c?.message ?? "");
            assert.match(c?.message ?? "", /held-vm .*capacityCheck is Hold/);
            // Past a slow interval (10 s at --poll-interval=1s): still held.
            await new Promise((r) => setTimeout(r, 12_000));
            assert.equal(
              (await b.nova.findComputeService(host))?.status,
              "enabled",
            );
            assert.deepEqual(await lane.migrationsFrom(host), []);
            const still = await lane.eviction(host);
            assert.equal(
              condition(still, "CapacityChecked")?.status,
              "False",
            );
            assert.notEqual(
              condition(still, "Evicting")?.reason,
              "Succeeded",
            );

            // Room again: the next look finds it and the host drains.
            const t0 = Date.now();
            await b.setHostEnabled("node003", true);
            const done = await evictingReason(lane, host, "Succeeded", 300_000);
            console.log(
              `lane capacity hold: drained ${
                ((Date.now() - t0) / 1000).toFixed(1)
              } s after node003 was enabled`,
            );
            assert.equal(condition(done, "CapacityChecked")?.status, "True");
            assert.equal(
              (await b.nova.findComputeService(host))?.status,
              "disabled",
            );
            const vm = await b.nova.getServer(
              b.servers.get("held-vm") as string,
            );
            assert.equal(vm.host, "node003");
            const records = await lane.migrationsFrom(host);
            assert.deepEqual(records.map((m) => m.status), ["completed"]);
          },
        );
      },
    );
  },
});
