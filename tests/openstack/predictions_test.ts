/**
 * `kubectl evictor plan`'s prediction against the drain that follows it on
 * the real cloud: a first drain teaches the rate and its time per drain,
 * kept in its Hypervisor's `status.lastDrain`; its Eviction is deleted (as
 * clearing maintenance does); the plugin predicts the next host's makespan
 * from what was kept, and that host's drain is measured from its start to
 * its settled end, as an operator planning a maintenance window counts it.
 *
 * @module
 */
import assert from "node:assert/strict";
import { HypervisorKind } from "../../controllers/kinds.ts";
import type { Hypervisor } from "../../models/mod.ts";
import { laneCloud, type ServerSpec, SIZES } from "./contract_backends.ts";
import {
  available,
  evictingReason,
  evictionYaml,
  planWithPlugin,
  recordsByName,
  until,
  withLane,
} from "./lane.ts";

/** Seconds from the first record's creation to the last one's end. */
function makespanOf(
  records: { created_at: string; updated_at: string | null }[],
) {
  const at = (s: string | null) => Date.parse(`${s}Z`);
  const start = Math.min(...records.map((m) => at(m.created_at)));
  const end = Math.max(...records.map((m) => at(m.updated_at)));
  return (end - start) / 1000;
}

Deno.test({
  name:
    "lane: after a drain ended and its Eviction was deleted, kubectl evictor plan predicts the next drain's makespan within 25% from what it learned",
  ignore: !available,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const cloud = await laneCloud();
    const [first, next] = ["node001", "node002"];
    // Copies that take longer with more memory, as real ones do (the
    // controller fits a rate only to durations that grow with RAM): 3 s
    // plus 1 s per GiB.
    const sizes = ["small", "medium", "large"] as const;
    const servers: ServerSpec[] = [first, next].flatMap((host) =>
      sizes.map((size) => ({
        name: `${host}-${size}`,
        host,
        size,
        migration: { lane_copy_seconds: String(3 + SIZES[size] / 1024) },
      }))
    );
    await withLane(servers, [first, next], [
      "--eviction-concurrency=1",
    ], async (lane) => {
      await lane.kubectl(
        ["create", "-f", "-"],
        evictionYaml(first, lane.labels, "teach"),
      );
      const taught = await evictingReason(lane, first, "Succeeded");
      assert.ok(
        taught.status?.observedMigrationRate,
        `no rate observed: ${JSON.stringify(taught.status)}`,
      );
      const kept = await until(
        `${first}'s Hypervisor keeps what its drain learned`,
        async () => {
          const hv = await lane.client.get<Hypervisor>(HypervisorKind, first);
          const d = hv.status?.lastDrain;
          return d?.eviction === first && d.fixedMs !== undefined
            ? d
            : undefined;
        },
        60_000,
        lane.diagnostics,
      );
      await lane.kubectl(["delete", "eviction", first, "--timeout=120s"]);
      await until(
        `Eviction ${first} gone`,
        async () =>
          (await lane.eviction(first)) === undefined ? true : undefined,
        120_000,
        lane.diagnostics,
      );
      const plan = await planWithPlugin(next, cloud.cloudsYaml());
      assert.equal(
        plan.makespan.rateSource,
        `observed by the latest 1 ended drain (${first}); time per drain measured`,
      );
      assert.equal(plan.makespan.mbPerSecond, kept.migrationRate?.mbPerSecond);
      assert.equal(plan.makespan.fixedSeconds, (kept.fixedMs ?? 0) / 1000);
      await lane.kubectl(
        ["create", "-f", "-"],
        evictionYaml(next, lane.labels, "predicted"),
      );
      const done = await evictingReason(lane, next, "Succeeded");
      const records = [...(await recordsByName(lane, next)).entries()]
        .filter(([name]) => name.startsWith(next)).flatMap(([, rs]) => rs);
      assert.equal(records.length, 3, JSON.stringify(records));
      // The drain's makespan on evictor's clock: from its start to its
      // settled end (the capacity check, disabling, confirms and settling
      // included, which the prediction now pays).
      const actual = (Date.parse(done.status?.finishedAt ?? "") -
        Date.parse(done.status?.startedAt ?? "")) / 1000;
      const predicted = plan.makespan.predictedSeconds;
      const error = (predicted - actual) / actual;
      console.log(
        `lane prediction: ${predicted} s predicted, ${actual} s actual (${
          (error * 100).toFixed(0)
        }%; the migrations alone ${
          makespanOf(records)
        } s on Nova's records), cost ${JSON.stringify(kept)}`,
      );
      assert.ok(
        Math.abs(error) <= 0.25,
        `predicted ${predicted} s, actual ${actual} s`,
      );
    });
  },
});
