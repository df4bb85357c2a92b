/**
 * A drain on the real cloud with Nova's notifications on (issue 23): the
 * operator subscribes to the lane's RabbitMQ, where real Zed publishes its
 * versioned notifications, through `--nova-notifications-url-file` (as a
 * mounted Secret would give it). The host is drained with no VM moved
 * twice; passes were planned from the host's notified view, and no relist
 * found the view wrong about any VM.
 *
 * @module
 */
import assert from "node:assert/strict";
import { NOTIFICATIONS_RECEIVED_METRIC } from "../../app/notification_metrics.ts";
import { metricSum } from "../_monitoring.ts";
import type { ServerSpec } from "./contract_backends.ts";
import {
  available,
  evictingReason,
  evictionYaml,
  type RawMigration,
} from "./lane.ts";
import { withNotifiedLane } from "./notified_lane.ts";

Deno.test({
  name:
    "lane: a drain with Nova's notifications on: planned from the host's notified view, no view difference, no VM moved twice",
  ignore: !available,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const host = "node001";
    const names = ["n1", "n2", "n3", "n4", "n5", "n6"];
    const servers: ServerSpec[] = names.map((name, i) => ({
      name,
      host,
      size: i % 2 === 0 ? "small" : "medium",
    }));
    await withNotifiedLane(servers, host, [
      "--eviction-concurrency=2",
    ], async (lane, scrape) => {
      const { b } = lane;
      const id = (n: string) => b.servers.get(n) as string;
      const t0 = Date.now();
      await lane.kubectl(
        ["create", "-f", "-"],
        evictionYaml(host, lane.labels, "notified"),
      );
      const ev = await evictingReason(lane, host, "Succeeded");
      const text = await scrape();
      console.log(
        `lane notified drain: ${((Date.now() - t0) / 1000).toFixed(1)} s, ${
          metricSum(text, "evictor_drain_looks_total", 'source="view"')
        } passes from the view, ${
          metricSum(text, "evictor_drain_looks_total", 'source="nova"')
        } from Nova, ${
          metricSum(text, "evictor_nova_calls_total")
        } Nova calls for ${names.length} VMs`,
      );
      console.log(
        text.split("\n").filter((l) => l.startsWith("evictor_nova_calls_total"))
          .join("\n"),
      );
      assert.equal(ev.status?.migratedCount, names.length);
      // Nova held a start queued behind a copy (its limit 1 here): the
      // informer lists what no event tells, so the drain learns it as a
      // polling one does.
      assert.equal(ev.status?.novaLiveMigrationLimit, 1);
      const left = (await b.nova.listServersOnHost(host)).filter((s) =>
        names.map(id).includes(s.id)
      );
      assert.deepEqual(left.map((s) => s.name), [], "no server left");
      // Real Nova's events reached the operator and drove its passes.
      assert.ok(
        metricSum(
          text,
          NOTIFICATIONS_RECEIVED_METRIC,
          'event_type="instance.live_migration_post.end"',
        ) >= names.length,
        "every migration's post.end was received",
      );
      assert.ok(
        metricSum(text, "evictor_drain_looks_total", 'source="view"') > 0,
        "passes were planned from the view",
      );
      assert.equal(
        metricSum(text, "evictor_notification_view_diffs_total"),
        0,
        "a relist found the view wrong",
      );
      // One completed live migration per server.
      const per = new Map<string, RawMigration[]>();
      for (const m of await lane.migrationsFrom(host)) {
        per.set(m.instance_uuid, [...(per.get(m.instance_uuid) ?? []), m]);
      }
      for (const n of names) {
        const mine = per.get(id(n)) ?? [];
        assert.deepEqual(
          mine.map((m) => `${m.migration_type}:${m.status}`),
          ["live-migration:completed"],
          n,
        );
      }
    });
  },
});
