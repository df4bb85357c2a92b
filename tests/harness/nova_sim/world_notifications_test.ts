import assert from "node:assert/strict";
import type { NotificationRoutingKey, OsloEnvelope } from "./notifier.ts";
import { Prng } from "./prng.ts";
import { parseScenario, type ScenarioInput } from "./scenario.ts";
import { ManualClock } from "./sim_clock.ts";
import { World } from "./world.ts";

interface Seen {
  key: NotificationRoutingKey;
  type: string;
  publisher: string;
  data: Record<string, unknown>;
  timestamp: string;
}

function build(input: ScenarioInput) {
  const clock = new ManualClock(1_700_000_000_000);
  const scenario = parseScenario(input);
  const world = new World(scenario, clock, new Prng(scenario.seed));
  const seen: Seen[] = [];
  world.onNotification((key, env: OsloEnvelope) => {
    const msg = JSON.parse(env["oslo.message"]);
    seen.push({
      key,
      type: msg.event_type,
      publisher: msg.publisher_id,
      data: msg.payload["nova_object.data"],
      timestamp: msg.timestamp,
    });
  });
  const id = (name: string) => world.findServerByRef(name)?.id ?? "";
  const step = (ms: number) => {
    clock.advance(ms);
    world.advance();
  };
  const take = () => seen.splice(0);
  /** `type@publisher host:host task:task_state` per notification. */
  const summary = () =>
    take().map((n) =>
      `${n.type}@${n.publisher.split(":")[1]} ${
        n.data["host"] === undefined
          ? ""
          : `host:${n.data["host"]} task:${n.data["task_state"]}`
      }`.trim()
    );
  return { world, id, step, seen, take, summary };
}

const CLOUD: ScenarioInput = {
  seed: 5,
  timing: {
    jitter: 0,
    scheduleSeconds: 0.5,
    recordDelaySeconds: 0,
    prepareSeconds: 1,
    postSeconds: 1,
    liveCompleteSeconds: 0.3,
    liveMbPerSecond: 1000,
    coldMbPerSecond: 1000,
  },
  hosts: [{ name: "src" }, { name: "dst" }],
  servers: [
    { name: "v1", host: "src", ramMb: 4096 },
    { name: "v2", host: "src", ramMb: 2048, status: "SHUTOFF" },
  ],
};

Deno.test("notifications: a live migration, as real Zed sends them", () => {
  const { world, id, step, summary, seen } = build(CLOUD);
  world.liveMigrate(id("v1"), null);
  assert.deepEqual(summary(), [
    "instance.update@controller host:src task:migrating",
  ]);
  step(600);
  assert.deepEqual(summary(), [
    "scheduler.select_destinations.start@controller",
    "scheduler.select_destinations.end@controller",
    "instance.live_migration_pre.start@dst host:src task:migrating",
  ]);
  step(1000);
  assert.deepEqual(summary(), [
    "instance.live_migration_pre.end@dst host:src task:migrating",
  ]);
  step(4096);
  assert.deepEqual(summary(), [
    "instance.live_migration_post.start@src host:src task:migrating",
    "instance.live_migration_post_dest.start@dst host:src task:migrating",
    "instance.update@controller host:dst task:null",
    "instance.live_migration_post_dest.end@dst host:dst task:null",
  ]);
  assert.equal(world.migrations[0]?.status, "running");
  step(300);
  // A snapshot: the source still sees itself and migrating.
  assert.deepEqual(summary(), [
    "instance.live_migration_post.end@src host:src task:migrating",
  ]);
  assert.equal(world.migrations[0]?.status, "completed");
  assert.equal(seen.length, 0);
});

Deno.test("notifications: payload fields evictor reads, with Nova's names", () => {
  const { world, id, step, take } = build(CLOUD);
  world.liveMigrate(id("v1"), null);
  step(10_000);
  const update = take().find((n) =>
    n.type === "instance.update" && n.data["host"] === "dst"
  );
  assert.ok(update);
  const d = update.data;
  assert.equal(d["uuid"], id("v1"));
  assert.equal(d["node"], "dst");
  assert.equal(d["state"], "active");
  assert.equal(d["power_state"], "running");
  assert.equal(d["display_name"], "v1");
  assert.equal(d["tenant_id"], "demo-project");
  const flavor =
    (d["flavor"] as { "nova_object.data": Record<string, unknown> })[
      "nova_object.data"
    ];
  assert.equal(flavor["memory_mb"], 4096);
  assert.equal(flavor["vcpus"], 1);
  const su =
    (d["state_update"] as { "nova_object.data": Record<string, unknown> })[
      "nova_object.data"
    ];
  assert.deepEqual(su, {
    old_state: "active",
    state: "active",
    old_task_state: "migrating",
    new_task_state: null,
  });
  assert.match(update.timestamp, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{6})?$/);
});

Deno.test("notifications: NoValidHost ends in compute_task.migrate_server.error", () => {
  const { world, id, step, take } = build({
    ...CLOUD,
    hosts: [{ name: "src" }, { name: "dst", enabled: false }],
  });
  world.liveMigrate(id("v1"), null);
  step(600);
  const got = take();
  assert.deepEqual(got.map((n) => `${n.key} ${n.type}`), [
    "versioned_notifications.info instance.update",
    "versioned_notifications.info scheduler.select_destinations.start",
    "versioned_notifications.info instance.update",
    "versioned_notifications.error compute_task.migrate_server.error",
  ]);
  const err = got[3]?.data ?? {};
  assert.equal(err["instance_uuid"], id("v1"));
  assert.equal(err["state"], "active");
  const reason =
    (err["reason"] as { "nova_object.data": Record<string, unknown> })[
      "nova_object.data"
    ];
  assert.equal(reason["exception"], "NoValidHost");
  // As on real Zed: the message, then the scheduler's remote traceback.
  assert.match(
    String(reason["exception_message"]),
    /^No valid host was found\. There are not enough hosts available\.\nTraceback \(most recent call last\):\n/,
  );
  assert.equal(got[2]?.data["task_state"], null);
  assert.equal(world.migrations[0]?.status, "error");
});

Deno.test("notifications: an async failure rolls back on the source", () => {
  const { world, id, step, summary } = build(CLOUD);
  world.injectMigrationFault(id("v1"), "fail");
  world.liveMigrate(id("v1"), null);
  step(1600);
  summary();
  step(4096);
  assert.deepEqual(summary(), [
    "instance.live_migration_rollback.start@src host:src task:migrating",
    "instance.update@controller host:src task:null",
    "instance.live_migration_rollback.end@src host:src task:null",
  ]);
});

Deno.test("notifications: abort of a running and of a queued migration", () => {
  const { world, id, step, summary } = build({
    ...CLOUD,
    servers: [
      { name: "v1", host: "src", ramMb: 4096 },
      { name: "v3", host: "src", ramMb: 4096 },
    ],
  });
  world.liveMigrate(id("v1"), null);
  world.liveMigrate(id("v3"), null);
  step(2000);
  summary();
  const [m1, m3] = world.migrations;
  assert.equal(m1?.status, "running");
  assert.equal(m3?.status, "queued");
  world.abortLiveMigration(id("v3"), m3?.id ?? 0, 65);
  assert.deepEqual(summary(), [
    "instance.live_migration_abort.start@src host:src task:migrating",
    "instance.update@controller host:src task:null",
    "instance.live_migration_abort.end@src host:src task:null",
  ]);
  world.abortLiveMigration(id("v1"), m1?.id ?? 0, 65);
  assert.deepEqual(summary(), [
    "instance.live_migration_abort.start@src host:src task:migrating",
    "instance.live_migration_abort.end@src host:src task:migrating",
    "instance.live_migration_rollback.start@src host:src task:migrating",
    "instance.update@controller host:src task:null",
    "instance.live_migration_rollback.end@src host:src task:null",
  ]);
});

Deno.test("notifications: force-complete pauses a stuck copy, which then ends", () => {
  const { world, id, step, summary } = build(CLOUD);
  world.injectMigrationFault(id("v1"), "stuck");
  world.liveMigrate(id("v1"), null);
  step(100_000);
  summary();
  world.forceCompleteLiveMigration(id("v1"), world.migrations[0]?.id ?? 0);
  assert.deepEqual(summary(), [
    "instance.live_migration_force_complete.start@src host:src task:migrating",
    "instance.live_migration_force_complete.end@src host:src task:migrating",
  ]);
  assert.equal(world.migrations[0]?.switchedTo, "paused");
  // The stuck copy stopped at 90 % of 4096 MB: the rest takes 0.41 s at
  // 1000 MB/s; the pause sends no notification.
  step(400);
  assert.deepEqual(summary(), []);
  step(10);
  assert.deepEqual(summary(), [
    "instance.live_migration_post.start@src host:src task:migrating",
    "instance.live_migration_post_dest.start@dst host:src task:migrating",
    "instance.update@controller host:dst task:null",
    "instance.live_migration_post_dest.end@dst host:dst task:null",
  ]);
  step(300);
  assert.deepEqual(summary(), [
    "instance.live_migration_post.end@src host:src task:migrating",
  ]);
});

Deno.test("notifications: an admin-forced arrival skips the scheduler", () => {
  const { world, id, step, summary } = build({
    ...CLOUD,
    hosts: [{ name: "src" }, { name: "dst", enabled: false }],
  });
  world.liveMigrate(id("v1"), "dst", true);
  step(10_000);
  const got = summary();
  assert.ok(!got.some((s) => s.startsWith("scheduler.")));
  assert.ok(got.includes("instance.update@controller host:dst task:null"));
});

Deno.test("notifications: create, delete and a cold migration", () => {
  const { world, id, step, summary } = build(CLOUD);
  world.addServer({ name: "new", host: "dst", ramMb: 1024 });
  assert.deepEqual(summary(), [
    "instance.create.start@dst host:dst task:spawning",
    "instance.update@controller host:dst task:null",
    "instance.create.end@dst host:dst task:null",
  ]);
  world.deleteServer(id("new"));
  assert.deepEqual(summary(), [
    "instance.update@controller host:dst task:deleting",
    "instance.delete.start@dst host:dst task:deleting",
    "instance.shutdown.start@dst host:dst task:deleting",
    "instance.shutdown.end@dst host:dst task:deleting",
    "instance.update@controller host:dst task:null",
    "instance.delete.end@dst host:dst task:null",
  ]);
  world.coldMigrate(id("v2"), null);
  step(0);
  assert.deepEqual(summary(), [
    "instance.update@controller host:src task:resize_prep",
    "scheduler.select_destinations.start@controller",
    "scheduler.select_destinations.end@controller",
    "instance.resize_prep.start@dst host:src task:resize_prep",
    "instance.resize_prep.end@dst host:src task:resize_prep",
  ]);
  step(10_000);
  assert.deepEqual(summary(), [
    "instance.update@controller host:src task:resize_migrating",
    "instance.resize.start@src host:src task:resize_migrating",
    "instance.resize.end@src host:src task:resize_migrating",
    "instance.update@controller host:src task:resize_finish",
    "instance.resize_finish.start@dst host:src task:resize_finish",
    "instance.update@controller host:dst task:null",
    "instance.resize_finish.end@dst host:dst task:null",
  ]);
  world.confirmResize(id("v2"));
  assert.deepEqual(summary(), [
    "instance.resize_confirm.start@src host:dst task:null",
    "instance.update@controller host:dst task:null",
    "instance.resize_confirm.end@src host:dst task:null",
  ]);
});

Deno.test("notifications: a service enabled or disabled sends service.update from its host", () => {
  const { world, take } = build(CLOUD);
  const host = world.hosts.get("dst");
  assert.ok(host);
  world.setService(host, "disabled", "maintenance", undefined);
  world.setService(host, "disabled", "maintenance", undefined);
  world.setService(host, undefined, undefined, undefined);
  const got = take();
  // Every call that sets the status sends one, even to the same value.
  assert.deepEqual(got.map((n) => `${n.type}@${n.publisher}`), [
    "service.update@nova-compute:dst",
    "service.update@nova-compute:dst",
  ]);
  assert.equal(got[0]?.data["disabled"], true);
  assert.equal(got[0]?.data["disabled_reason"], "maintenance");
  assert.equal(got[0]?.data["binary"], "nova-compute");
});
