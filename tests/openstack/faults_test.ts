/**
 * Failures of real Nova's live migrations, injected by the lane's compute
 * driver (hack/openstack/driver/lane_driver.py), met by the operator as a
 * separate process: an asynchronous failure (the record `error`, the
 * server ACTIVE on its source) retried, and a failure that leaves the server
 * in ERROR reported and never retried.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { ServerSpec } from "./contract_backends.ts";
import {
  available,
  evictingReason,
  evictionYaml,
  recordsByName,
  withLane,
} from "./lane.ts";

Deno.test({
  name:
    "lane: an asynchronous live-migration failure (record error, server ACTIVE on its source) is retried and moves; one that leaves the server ERROR is reported, never retried",
  ignore: !available,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const host = "node001";
    const servers: ServerSpec[] = [
      {
        name: "flaky",
        host,
        size: "small",
        migration: {
          lane_fail: "error",
          lane_fail_times: "1",
          lane_copy_seconds: "2",
        },
      },
      {
        name: "doomed",
        host,
        size: "small",
        migration: { lane_fail: "instance-error", lane_copy_seconds: "1" },
      },
      { name: "plain", host, size: "small" },
    ];
    await withLane(servers, [host], [
      "--eviction-concurrency=2",
    ], async (lane) => {
      const { b } = lane;
      const id = (n: string) => b.servers.get(n) as string;
      const t0 = Date.now();
      await lane.kubectl(
        ["create", "-f", "-"],
        evictionYaml(host, lane.labels, "faults"),
      );
      // The ERROR server stays: the drain ends Failed once the rest moved.
      const ev = await evictingReason(lane, host, "Failed");
      console.log(
        `lane faults drain: ${((Date.now() - t0) / 1000).toFixed(1)} s`,
      );
      const records = await recordsByName(lane, host);
      const statuses = (n: string) =>
        (records.get(n) ?? []).map((m) => m.status);
      // Retried after its asynchronous failure, then moved.
      assert.deepEqual(statuses("flaky"), ["error", "completed"]);
      const flaky = await b.nova.getServer(id("flaky"));
      assert.equal(flaky.status, "ACTIVE");
      assert.notEqual(flaky.host, host);
      // ERROR after its failure: reported, and never tried again.
      assert.deepEqual(statuses("doomed"), ["error"]);
      const doomed = await b.nova.getServer(id("doomed"));
      assert.equal(doomed.status, "ERROR");
      assert.equal(doomed.host, host);
      const failed = (ev.status?.failed ?? []).find((f) =>
        f.id === id("doomed")
      );
      assert.ok(failed, JSON.stringify(ev.status?.failed));
      console.log(`lane faults: doomed reported as ${failed.reason}`);
      assert.ok(
        !(ev.status?.failed ?? []).some((f) => f.id === id("flaky")),
        `the retried server is not left failed: ${
          JSON.stringify(ev.status?.failed)
        }`,
      );
      assert.deepEqual(statuses("plain"), ["completed"]);
      const left = (await b.nova.listServersOnHost(host)).filter((s) =>
        [...b.servers.values()].includes(s.id)
      ).map((s) => s.name);
      assert.deepEqual(left, ["doomed"]);
    });
  },
});
