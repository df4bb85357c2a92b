/**
 * A drain on the real cloud while the world changes under it: a server an
 * admin live-migrates onto the draining host by force (past its disabled
 * service) is drained before the Eviction says Succeeded, and a policy
 * lowered mid-drain holds from then on.
 *
 * @module
 */
import assert from "node:assert/strict";
import { EvictionPolicyKind } from "../../controllers/kinds.ts";
import { laneCloud, type ServerSpec, waitServer } from "./contract_backends.ts";
import {
  available,
  condition,
  evictingReason,
  evictionYaml,
  IN_PROGRESS,
  recordsByName,
  sampleMigrations,
  until,
  withLane,
  withPolicy,
} from "./lane.ts";

Deno.test({
  name:
    "lane: a server live-migrated onto the draining host by admin force (2.30, past the disabled service) is drained before Succeeded",
  ignore: !available,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const host = "node001";
    const servers: ServerSpec[] = [
      // Keeps the drain busy while the arrival comes.
      {
        name: "slow",
        host,
        size: "small",
        migration: { lane_copy_seconds: "20" },
      },
      { name: "arrival", host: "node002", size: "small" },
    ];
    await withLane(servers, [host], [
      "--eviction-concurrency=1",
    ], async (lane) => {
      const { b } = lane;
      const id = (n: string) => b.servers.get(n) as string;
      const cloud = await laneCloud();
      await lane.kubectl(
        ["create", "-f", "-"],
        evictionYaml(host, lane.labels, "arrival"),
      );
      await until(
        "the slow server's copy under way",
        async () =>
          (await recordsByName(lane, host)).get("slow")?.some((m) =>
              m.status === "running"
            )
            ? true
            : undefined,
        120_000,
        lane.diagnostics,
      );
      assert.equal((await b.nova.findComputeService(host))?.status, "disabled");
      // Watch for a Succeeded while the arrival is on the host.
      let watching = true;
      const violations: string[] = [];
      let arrived = false;
      const watcher = (async () => {
        while (watching) {
          const [ev, s] = await Promise.all([
            lane.eviction(host),
            b.nova.getServer(id("arrival")).catch(() => undefined),
          ]);
          if (s?.host === host) arrived = true;
          if (
            arrived && s?.host === host &&
            condition(ev, "Evicting")?.reason === "Succeeded"
          ) violations.push(`Succeeded with the arrival on ${host}`);
          await new Promise((r) => setTimeout(r, 300));
        }
      })();
      const forced = await b.raw(
        "compute",
        "POST",
        `/servers/${id("arrival")}/action`,
        {
          microversion: "2.30",
          body: {
            "os-migrateLive": { host, block_migration: "auto", force: true },
          },
        },
      );
      assert.equal(forced.status, 202, JSON.stringify(forced.body));
      const t0 = Date.now();
      const done = await evictingReason(lane, host, "Succeeded");
      watching = false;
      await watcher;
      console.log(
        `lane arrival: Succeeded ${
          ((Date.now() - t0) / 1000).toFixed(1)
        } s after the forced migration`,
      );
      assert.ok(arrived, "the arrival was never seen on the draining host");
      assert.deepEqual(violations, []);
      // It came (node002 -> node001) and left again, each once.
      const to = (await b.raw(
        "compute",
        "GET",
        `/os-migrations?instance_uuid=${id("arrival")}`,
        { microversion: "2.80" },
      )).body as {
        migrations: {
          source_compute: string;
          dest_compute: string;
          status: string;
        }[];
      };
      const legs = to.migrations.map((m) =>
        `${m.source_compute}->${m.dest_compute}:${m.status}`
      ).sort();
      assert.equal(legs.length, 2, legs.join(", "));
      assert.ok(legs.includes(`node002->${host}:completed`), legs.join(", "));
      assert.ok(
        legs.some((l) => l.startsWith(`${host}->`) && l.endsWith(":completed")),
        legs.join(", "),
      );
      const arrival = await waitServer(cloud, id("arrival"), "ACTIVE");
      assert.notEqual(arrival["OS-EXT-SRV-ATTR:host"], host);
      assert.deepEqual(
        (await b.nova.listServersOnHost(host)).filter((s) =>
          [...b.servers.values()].includes(s.id)
        ),
        [],
      );
      assert.equal(condition(done, "Evicting")?.status, "False");
    });
  },
});

Deno.test({
  name:
    "lane: a policy lowered mid-drain (3 to 1 at a host whose Nova limit is 3): no start beyond the new limit once the operator has seen it",
  ignore: !available,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const cloud = await laneCloud();
    const host = "node003";
    assert.ok(
      (cloud.liveMigrationLimits[host] ?? 1) >= 3,
      `${host}: Nova's limit ${
        cloud.liveMigrationLimits[host]
      } (the lane sets 3)`,
    );
    const servers: ServerSpec[] = ["a", "b", "c", "d", "e"].map((x) => ({
      name: `p${x}`,
      host,
      size: "small" as const,
      migration: { lane_copy_seconds: "8" },
    }));
    await withLane(servers, [host], [
      "--eviction-concurrency=3",
    ], async (lane) => {
      await withPolicy(lane, { maxConcurrentMigrations: 3 }, async () => {
        const sampler = sampleMigrations(lane, [host]);
        await lane.kubectl(
          ["create", "-f", "-"],
          evictionYaml(host, lane.labels, "lowered"),
        );
        // Three at once under the first policy...
        const before = await until(
          "three migrations in flight",
          async () => {
            const rs = (await lane.migrationsFrom(host)).filter((m) =>
              IN_PROGRESS.includes(m.status)
            );
            return rs.length >= 3 ? rs : undefined;
          },
          120_000,
          lane.diagnostics,
        );
        // ...then the policy says 1.
        await lane.client.patch(
          EvictionPolicyKind,
          "default",
          { spec: { maxConcurrentMigrations: 1 } },
          "merge",
        );
        const lowered = Date.now();
        await evictingReason(lane, host, "Succeeded");
        const samples = await sampler.stop();
        const oldIds = new Set(before.map((m) => m.id));
        // From 2 s after the change (the operator's watch) on, a migration
        // started after it is alone in flight.
        const crowded = samples.filter((s) => s.at > lowered + 2_000)
          .filter((s) => {
            const flying = s.records.filter((m) =>
              IN_PROGRESS.includes(m.status)
            );
            return flying.some((m) => !oldIds.has(m.id)) && flying.length > 1;
          });
        assert.deepEqual(
          crowded.map((s) =>
            s.records.filter((m) => IN_PROGRESS.includes(m.status)).map((m) =>
              `${m.id}:${m.status}`
            )
          ),
          [],
        );
        const records = await recordsByName(lane, host);
        for (const [name, rs] of records) {
          assert.deepEqual(rs.map((m) => m.status), ["completed"], name);
        }
      });
    });
  },
});
