import assert from "node:assert/strict";
import {
  assertLiveMigrationNotifications,
  assertNoValidHostNotifications,
  liveMigrationEnded,
  recordNotifications,
} from "../notification_contract.ts";
import { rabbitMqMissing, sharedRabbitMq } from "../rabbitmq.ts";
import { call, withSim } from "./test_client.ts";

const missing = await rabbitMqMissing();
if (missing !== undefined) {
  console.error(`nova_sim/publisher_test.ts: skipped: ${missing}`);
}

Deno.test({
  name:
    "the simulator publishes Nova's notifications to RabbitMQ: a live migration and a NoValidHost, as real Zed",
  ignore: missing !== undefined,
  async fn() {
    const mq = await sharedRabbitMq();
    await withSim(async (sim, token) => {
      const rec = await recordNotifications(mq.url);
      try {
        const id = (name: string) =>
          sim.state().servers.find((s) => s.name === name)?.id ?? "";
        const vm = id("vm1");
        const r = await call(sim, token, "POST", `/servers/${vm}/action`, {
          "os-migrateLive": { host: null, block_migration: "auto" },
        });
        assert.equal(r.status, 202);
        await rec.until(
          "the end of vm1's migration",
          () => liveMigrationEnded(rec.about(vm)),
        );
        assertLiveMigrationNotifications(rec.about(vm), {
          uuid: vm,
          source: "node001",
          dest: "node002",
          ramMb: 2048,
        });
        // vm2 (8 GiB) fits on no other enabled host.
        const vm2 = id("vm2");
        const r2 = await call(sim, token, "POST", `/servers/${vm2}/action`, {
          "os-migrateLive": { host: null, block_migration: "auto" },
        });
        assert.equal(r2.status, 202);
        await rec.until(
          "vm2's compute task error",
          () => rec.about(vm2).some((n) => n.task !== undefined),
        );
        assertNoValidHostNotifications(rec.about(vm2), {
          uuid: vm2,
          source: "node002",
        });
        // Everything went through the broker, not in process.
        assert.ok((sim.publisher?.published ?? 0) >= rec.all.length);
      } finally {
        await rec.close();
      }
    }, {
      timeScale: 5,
      timing: { jitter: 0, liveMbPerSecond: 1024 },
      hosts: [
        { name: "node001", ramMb: 4096 },
        { name: "node002", ramMb: 16384 },
        { name: "node003", enabled: false },
      ],
      servers: [
        { name: "vm1", host: "node001", ramMb: 2048 },
        { name: "vm2", host: "node002", ramMb: 8192 },
      ],
    }, { amqpUrl: mq.url });
  },
});
