/**
 * A finished drain while another host drains, with Nova's notifications
 * on (issue 29): the VMs that left the finished host are moved again by
 * the other drain, and their events reach the finished drain's view; they
 * wake nobody there. The finished drain looks at Nova only when its own
 * pacing asks (no more calls than it makes alone).
 *
 * @module
 */
import assert from "node:assert/strict";
import { callsNaming, passesOf, wokenEarly } from "../harness/pass_log.ts";
import type { ServerSpec } from "./contract_backends.ts";
import { available, evictingReason, evictionYaml } from "./lane.ts";
import { withNotifiedLane } from "./notified_lane.ts";

Deno.test({
  name:
    "lane (notified): a finished drain makes no Nova call beyond its own pacing while another host drains the VMs that left it",
  ignore: !available,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const [done, other, spare] = ["node001", "node002", "node003"];
    const servers: ServerSpec[] = [
      { name: "f1", host: done, size: "small" },
      { name: "f2", host: done, size: "small" },
      { name: "o1", host: other, size: "small" },
      { name: "o2", host: other, size: "small" },
    ];
    await withNotifiedLane(servers, [done, other], [
      "--eviction-concurrency=2",
      "--log-level=debug",
    ], async (lane) => {
      const { b } = lane;
      // The finished host's VMs go to the other host, which drains them again.
      await b.setHostEnabled(spare, false);
      try {
        await lane.kubectl(
          ["create", "-f", "-"],
          evictionYaml(done, lane.labels, "finished"),
        );
        await evictingReason(lane, done, "Succeeded");
      } finally {
        await b.setHostEnabled(spare, true);
      }
      const moved = await b.nova.listServersOnHost(other);
      const ours = new Set(["f1", "f2"].map((n) => b.servers.get(n)));
      assert.equal(
        moved.filter((s) => ours.has(s.id)).length,
        2,
        "the finished host's VMs are on the other host",
      );
      const fromMs = Date.now();
      await lane.kubectl(
        ["create", "-f", "-"],
        evictionYaml(other, lane.labels, "other"),
      );
      const ev = await evictingReason(lane, other, "Succeeded");
      const toMs = Date.now();
      assert.equal(ev.status?.migratedCount, 4);
      const log = await lane.op.log();
      const passes = passesOf(log, done).filter((p) =>
        p.atMs >= fromMs && p.atMs <= toMs
      );
      const calls = callsNaming(log, `host=${done}`, fromMs, toMs);
      console.log(
        `lane finished drain beside another: ${passes.length} passes, ${calls} Nova calls naming its host in ${
          ((toMs - fromMs) / 1000).toFixed(1)
        } s`,
      );
      // Each look at an empty host is at most 3 calls (its servers, its
      // recent records, its records still in progress): no more looks than
      // its pacing asked for.
      const due = passes.length - wokenEarly(passes).length;
      assert.ok(
        calls <= 3 * due,
        `${calls} calls for ${due} passes its pacing asked for (${
          wokenEarly(passes).length
        } woken early)`,
      );
    });
  },
});
