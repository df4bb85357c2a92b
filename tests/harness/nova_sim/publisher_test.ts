import assert from "node:assert/strict";
import {
  assertLiveMigrationNotifications,
  assertNoValidHostNotifications,
  liveMigrationEnded,
  recordNotifications,
} from "../notification_contract.ts";
import amqp from "amqplib";
import { rabbitMqMissing, sharedRabbitMq, startRabbitMq } from "../rabbitmq.ts";
import { SimNotifier } from "./notifier.ts";
import { startNotificationPublisher } from "./publisher.ts";
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

Deno.test({
  name:
    "the publisher holds what Nova sends while the broker is away and sends it, in order, once it is back",
  ignore: missing !== undefined,
  async fn() {
    const mq = await startRabbitMq();
    const pub = await startNotificationPublisher(mq.url, { retryMs: 100 });
    const n = new SimNotifier();
    n.listen((key, env) => pub.publish(key, env));
    try {
      n.computeTaskError(
        "migrate_server",
        "u0",
        "active",
        "NoValidHost",
        "0",
        0,
      );
      await pub.flushed();
      assert.equal(pub.published, 1);
      await mq.stopBroker();
      for (let i = 1; i <= 3; i++) {
        n.computeTaskError(
          "migrate_server",
          `u${i}`,
          "active",
          "NoValidHost",
          String(i),
          0,
        );
      }
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(
        pub.published,
        1,
        "nothing is sent while the broker is away",
      );
      await mq.startBroker();
      // Nova's default queue keeps what was published without a consumer.
      await pub.flushed();
      assert.equal(pub.published, 4);
      const conn = await amqp.connect(mq.url);
      const ch = await conn.createChannel();
      const got: string[] = [];
      for (;;) {
        const m = await ch.get("versioned_notifications.error", {
          noAck: true,
        });
        if (m === false) break;
        const env = JSON.parse(m.content.toString());
        got.push(
          JSON.parse(env["oslo.message"]).payload["nova_object.data"]
            .instance_uuid,
        );
      }
      await conn.close();
      // The queue is not durable: what it held before the restart is gone.
      assert.deepEqual(got, ["u1", "u2", "u3"]);
    } finally {
      await pub.close();
      await mq.stop();
    }
  },
});
