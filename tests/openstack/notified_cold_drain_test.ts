/**
 * Cold migrations with Nova's notifications on (issue 28): a host of
 * SHUTOFF servers drained on the real cloud while the operator follows
 * the lane's RabbitMQ as the user `evictor`, which holds exactly the
 * permissions docs/configuration.md names. Each cold migration ends in
 * VERIFY_RESIZE, and the operator confirms it: exactly once per server,
 * counted on both sides (Nova's instance actions `confirmResize`, and the
 * operator's own `evictor_nova_calls_total{call="confirmResize"}` of every
 * outcome: a second confirm that Nova refused with 409 records no instance
 * action, so only the operator's count shows it).
 *
 * @module
 */
import assert from "node:assert/strict";
import { metricSum } from "../_monitoring.ts";
import type { ServerSpec } from "./contract_backends.ts";
import {
  available,
  evictingReason,
  evictionYaml,
  type RawMigration,
} from "./lane.ts";
import { withNotifiedLane } from "./notified_lane.ts";

/** The actions Nova recorded on a server (`GET .../os-instance-actions`). */
interface ListedAction {
  action: string;
  request_id: string;
}

Deno.test({
  name:
    "lane: a drain of SHUTOFF servers with Nova's notifications on confirms each cold migration exactly once",
  ignore: !available,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const host = "node001";
    const names = ["c1", "c2", "c3", "c4"];
    const servers: ServerSpec[] = names.map((name, i) => ({
      name,
      host,
      size: i % 2 === 0 ? "small" : "medium",
      status: "SHUTOFF",
    }));
    await withNotifiedLane(servers, host, [
      "--eviction-concurrency=2",
    ], async (lane, scrape) => {
      const { b } = lane;
      const id = (n: string) => b.servers.get(n) as string;
      await lane.kubectl(
        ["create", "-f", "-"],
        evictionYaml(host, lane.labels, "notified cold"),
      );
      const ev = await evictingReason(lane, host, "Succeeded");
      assert.equal(ev.status?.migratedCount, names.length);
      // Nova's side: one cold migration, confirmed, and one confirmResize
      // action per server.
      const per = new Map<string, RawMigration[]>();
      for (const m of await lane.migrationsFrom(host)) {
        per.set(m.instance_uuid, [...(per.get(m.instance_uuid) ?? []), m]);
      }
      const confirmsByServer: Record<string, number> = {};
      for (const n of names) {
        assert.deepEqual(
          (per.get(id(n)) ?? []).map((m) => `${m.migration_type}:${m.status}`),
          ["migration:confirmed"],
          n,
        );
        const r = await b.raw(
          "compute",
          "GET",
          `/servers/${id(n)}/os-instance-actions`,
        );
        assert.equal(r.status, 200, JSON.stringify(r.body));
        const actions =
          (r.body as { instanceActions: ListedAction[] }).instanceActions;
        confirmsByServer[n] = actions.filter((a) =>
          a.action === "confirmResize"
        ).length;
        const s = await b.nova.getServer(id(n));
        assert.equal(s.status, "SHUTOFF", n);
        assert.notEqual(s.host, host, n);
      }
      // The operator's side: every confirm it sent, whatever Nova answered.
      const text = await scrape();
      const sent = metricSum(
        text,
        "evictor_nova_calls_total",
        'call="confirmResize"',
      );
      console.log(
        `lane notified cold drain: confirmResize sent ${sent} for ${names.length} cold migrations; instance actions ${
          JSON.stringify(confirmsByServer)
        }`,
      );
      assert.deepEqual(
        confirmsByServer,
        Object.fromEntries(names.map((n) => [n, 1])),
        "Nova recorded one confirmResize per server",
      );
      assert.equal(
        sent,
        names.length,
        "the operator sent one confirmResize per cold migration",
      );
    });
  },
});
