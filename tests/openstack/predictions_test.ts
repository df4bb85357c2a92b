/**
 * `kubectl evictor plan`'s prediction against the drain that follows it on
 * the real cloud: a first drain teaches the rate (status
 * `observedMigrationRate`), the plugin predicts the next host's makespan from
 * it, and that host's drain is measured on Nova's records.
 *
 * @module
 */
import assert from "node:assert/strict";
import { laneCloud, type ServerSpec, SIZES } from "./contract_backends.ts";
import {
  available,
  evictingReason,
  evictionYaml,
  planWithPlugin,
  recordsByName,
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
    "lane: kubectl evictor plan predicts the next drain's makespan within 25% from the rate an ended drain observed",
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
      const plan = await planWithPlugin(next, cloud.cloudsYaml());
      await lane.kubectl(
        ["create", "-f", "-"],
        evictionYaml(next, lane.labels, "predicted"),
      );
      await evictingReason(lane, next, "Succeeded");
      const records = [...(await recordsByName(lane, next)).entries()]
        .filter(([name]) => name.startsWith(next)).flatMap(([, rs]) => rs);
      assert.equal(records.length, 3, JSON.stringify(records));
      const actual = makespanOf(records);
      const predicted = plan.makespan.predictedSeconds;
      const error = (predicted - actual) / actual;
      console.log(
        `lane prediction: ${
          predicted.toFixed(1)
        } s predicted, ${actual} s actual (${
          (error * 100).toFixed(0)
        }%), rate ${JSON.stringify(taught.status?.observedMigrationRate)}`,
      );
      assert.ok(
        Math.abs(error) <= 0.25,
        `predicted ${predicted} s, actual ${actual} s`,
      );
    });
  },
});
