/**
 * Nova's versioned notifications, consumed through evictor's own feed
 * (openstack/notifications.ts) from both Novas: real Zed's RabbitMQ in the
 * lane and the simulator's publisher. One set of assertions
 * (tests/harness/notification_contract.ts) on a live migration and on a
 * NoValidHost; every notification about the server is printed, so the two
 * sequences can be compared line by line. Where they differ, the simulator
 * changes.
 *
 * @module
 */
import {
  assertLiveMigrationNotifications,
  assertNoValidHostNotifications,
  assertRollbackNotifications,
  describe,
  liveMigrationEnded,
  recordNotifications,
} from "../harness/notification_contract.ts";
import { rabbitMqMissing } from "../harness/rabbitmq.ts";
import {
  type Backend,
  backendKinds,
  openBackend,
  type ServerSpec,
  SIZES,
} from "./contract_backends.ts";

const kinds = await backendKinds();
const noBroker = await rabbitMqMissing();
if (noBroker !== undefined) {
  console.error(`tests/openstack/notifications_test.ts: skipped: ${noBroker}`);
}

function notifications(
  name: string,
  servers: ServerSpec[],
  fn: (b: Backend) => Promise<void>,
) {
  Deno.test({
    name: `notifications: ${name}`,
    ignore: noBroker !== undefined,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async (t) => {
      for (const kind of kinds) {
        await t.step(kind, async () => {
          const b = await openBackend(kind, servers, { notifications: true });
          try {
            await fn(b);
          } catch (error) {
            if (kind === "nova" && error instanceof Error) {
              error.message += `\n${await b.logTails()}`;
            }
            throw error;
          } finally {
            await b.close();
          }
        });
      }
    },
  });
}

notifications("a live migration, in Nova's order and shapes", [
  { name: "mover", host: "node001", size: "medium" },
], async (b) => {
  const rec = await recordNotifications(b.amqpUrl ?? "");
  try {
    const id = b.servers.get("mover") as string;
    // Only node002 can take it, so both Novas pick the same destination.
    await b.setHostEnabled("node003", false);
    await b.nova.liveMigrate(id);
    await rec.until(
      "the migration's post.end",
      () => liveMigrationEnded(rec.about(id)),
    );
    console.log(
      `${b.kind}: live migration:\n  ${
        rec.all.filter((n) =>
          n.instance === undefined
            ? n.task === undefined
            : n.instance.uuid === id
        ).map(describe).join("\n  ")
      }`,
    );
    assertLiveMigrationNotifications(rec.about(id), {
      uuid: id,
      source: "node001",
      dest: "node002",
      ramMb: SIZES.medium,
    });
  } finally {
    await rec.close();
  }
});

notifications("NoValidHost: compute_task.migrate_server.error", [
  { name: "stuck", host: "node001", size: "small" },
], async (b) => {
  const rec = await recordNotifications(b.amqpUrl ?? "");
  try {
    for (const h of b.hosts.filter((h) => h !== "node001")) {
      await b.setHostEnabled(h, false);
    }
    const id = b.servers.get("stuck") as string;
    await b.nova.liveMigrate(id);
    await rec.until(
      "the compute task error",
      () => rec.about(id).some((n) => n.task !== undefined),
    );
    console.log(
      `${b.kind}: NoValidHost:\n  ${
        rec.all.filter((n) =>
          n.instance === undefined ? true : n.instance.uuid === id
        ).map(describe).join("\n  ")
      }`,
    );
    assertNoValidHostNotifications(rec.about(id), {
      uuid: id,
      source: "node001",
    });
  } finally {
    await rec.close();
  }
});

notifications("a failed copy rolled back on the source", [
  {
    name: "failing",
    host: "node001",
    size: "small",
    migration: { lane_fail: "failed", lane_copy_seconds: "1" },
  },
], async (b) => {
  const rec = await recordNotifications(b.amqpUrl ?? "");
  try {
    const id = b.servers.get("failing") as string;
    await b.setHostEnabled("node003", false);
    await b.nova.liveMigrate(id);
    await rec.until(
      "the rollback's end",
      () =>
        rec.about(id).some((n) =>
          n.eventType === "instance.live_migration_rollback.end"
        ),
    );
    // The destination's clean-up is a cast: give it a moment to arrive.
    await new Promise((r) => setTimeout(r, 3000));
    console.log(
      `${b.kind}: rollback:\n  ${rec.about(id).map(describe).join("\n  ")}`,
    );
    assertRollbackNotifications(rec.about(id), {
      uuid: id,
      source: "node001",
      dest: "node002",
    });
  } finally {
    await rec.close();
  }
});
