import assert from "node:assert/strict";
import fc from "fast-check";
import { SimNotifier } from "../tests/harness/nova_sim/notifier.ts";
import { parseNovaNotification } from "./notification_parse.ts";

const INFO = "versioned_notifications.info";

function wrap(message: unknown): string {
  return JSON.stringify({
    "oslo.version": "2.0",
    "oslo.message": JSON.stringify(message),
  });
}

const UPDATE = {
  message_id: "2b0b0e8a-9a53-4d3f-8d8e-7f3f4c2d9a11",
  event_type: "instance.update",
  publisher_id: "nova-compute:node002",
  priority: "INFO",
  timestamp: "2026-12-03 07:40:23.123456",
  _unique_id: "abc",
  _context_request_id: "req-1",
  payload: {
    "nova_object.name": "InstanceUpdatePayload",
    "nova_object.namespace": "nova",
    "nova_object.version": "2.0",
    "nova_object.data": {
      uuid: "u1",
      host: "node002",
      node: "node002",
      state: "active",
      task_state: null,
      power_state: "running",
      tenant_id: "p1",
      display_name: "vm1",
      flavor: { "nova_object.data": { memory_mb: 4096, vcpus: 2 } },
      extra_field_of_a_newer_version: true,
    },
  },
};

Deno.test("parseNovaNotification: the fields evictor reads", () => {
  const r = parseNovaNotification(wrap(UPDATE), INFO);
  assert.ok(r.ok, r.ok ? "" : r.error);
  assert.deepEqual(r.notification, {
    messageId: UPDATE.message_id,
    eventType: "instance.update",
    publisherId: "nova-compute:node002",
    publisherHost: "node002",
    timestampMs: Date.UTC(2026, 11, 3, 7, 40, 23, 123),
    priority: "info",
    instance: {
      uuid: "u1",
      host: "node002",
      node: "node002",
      vmState: "active",
      taskState: null,
      powerState: 1,
      flavorRamMb: 4096,
      flavorVcpus: 2,
      tenantId: "p1",
      name: "vm1",
    },
  });
});

Deno.test("parseNovaNotification: table of good and bad messages", () => {
  const data = UPDATE.payload["nova_object.data"];
  const withData = (d: Record<string, unknown>, over = {}) =>
    wrap({ ...UPDATE, ...over, payload: { "nova_object.data": d } });
  const table: {
    name: string;
    body: string | Uint8Array;
    key?: string;
    ok?: (n: Record<string, unknown>) => void;
    error?: RegExp;
  }[] = [
    {
      name: "bytes",
      body: new TextEncoder().encode(wrap(UPDATE)),
      ok: (n) => assert.equal(n["eventType"], "instance.update"),
    },
    {
      name: "error routing key gives priority error",
      body: wrap(UPDATE),
      key: "versioned_notifications.error",
      ok: (n) => assert.equal(n["priority"], "error"),
    },
    {
      name: "paused power state and missing flavor",
      body: withData({ uuid: "u", power_state: "paused" }),
      ok: (n) =>
        assert.deepEqual(n["instance"], {
          uuid: "u",
          host: null,
          node: null,
          vmState: null,
          taskState: null,
          powerState: 3,
        }),
    },
    {
      name: "scheduler event carries no instance",
      body: wrap({
        ...UPDATE,
        event_type: "scheduler.select_destinations.start",
        publisher_id: "nova-scheduler:ctl",
        payload: { "nova_object.data": { instance_uuid: "u" } },
      }),
      ok: (n) => {
        assert.equal(n["instance"], undefined);
        assert.equal(n["task"], undefined);
        assert.equal(n["publisherHost"], "ctl");
      },
    },
    {
      name: "compute_task error names the instance and reason",
      body: wrap({
        ...UPDATE,
        event_type: "compute_task.migrate_server.error",
        priority: "ERROR",
        payload: {
          "nova_object.data": {
            instance_uuid: "u9",
            state: "active",
            reason: {
              "nova_object.data": {
                exception: "NoValidHost",
                exception_message:
                  "No valid host was found. \nTraceback (most recent call last):\n  File x\nnova.exception.NoValidHost: No valid host was found. \n",
              },
            },
          },
        },
      }),
      key: "versioned_notifications.error",
      ok: (n) =>
        assert.deepEqual(n["task"], {
          instanceUuid: "u9",
          reason: "No valid host was found.",
        }),
    },
    {
      name: "publisher without host",
      body: wrap({ ...UPDATE, publisher_id: "nova-api" }),
      ok: (n) => assert.equal(n["publisherHost"], undefined),
    },
    { name: "not JSON", body: "{", error: /body is not JSON/ },
    {
      name: "v1 driver (no envelope)",
      body: JSON.stringify(UPDATE),
      error: /not an oslo 2.0 envelope \(is Nova's driver messagingv2\?\)/,
    },
    {
      name: "envelope of another version",
      body: JSON.stringify({ "oslo.version": "1.0", "oslo.message": "{}" }),
      error: /envelope\.oslo\.version/,
    },
    {
      name: "inner message not JSON",
      body: JSON.stringify({ "oslo.version": "2.0", "oslo.message": "x" }),
      error: /oslo.message is not JSON/,
    },
    {
      name: "no message id",
      body: wrap({ ...UPDATE, message_id: "" }),
      error: /message\.message_id/,
    },
    {
      name: "bad timestamp",
      body: wrap({ ...UPDATE, timestamp: "07:40" }),
      error:
        /message\.timestamp: expected YYYY-MM-DD hh:mm:ss\[\.ffffff\], got "07:40"/,
    },
    {
      name: "instance event without uuid",
      body: withData({ ...data, uuid: undefined }),
      error: /instance\.update: payload\.nova_object\.data\.uuid/,
    },
    {
      name: "host of the wrong type",
      body: withData({ ...data, host: 7 }),
      error: /payload\.nova_object\.data\.host/,
    },
    {
      name: "compute_task without instance",
      body: wrap({
        ...UPDATE,
        event_type: "compute_task.migrate_server.error",
        payload: { "nova_object.data": {} },
      }),
      error:
        /compute_task\.migrate_server\.error: payload\.nova_object\.data\.instance_uuid/,
    },
    {
      name: "unknown routing key",
      body: wrap(UPDATE),
      key: "notifications.info",
      error: /unexpected routing key "notifications.info"/,
    },
  ];
  for (const t of table) {
    const r = parseNovaNotification(t.body, t.key ?? INFO);
    if (t.error !== undefined) {
      assert.ok(!r.ok, t.name);
      assert.match(r.error, t.error, t.name);
    } else {
      assert.ok(r.ok, `${t.name}: ${r.ok ? "" : r.error}`);
      t.ok?.(r.notification as unknown as Record<string, unknown>);
    }
  }
});

Deno.test("parseNovaNotification reads every message the simulator sends", () => {
  const n = new SimNotifier();
  const got: ReturnType<typeof parseNovaNotification>[] = [];
  n.listen((key, env) =>
    got.push(parseNovaNotification(JSON.stringify(env), key))
  );
  const snap = {
    uuid: "u1",
    name: "vm",
    projectId: "p",
    userId: "u",
    flavor: { name: "f", ramMb: 2048, vcpus: 2, disk: 20 },
    host: "a",
    vmState: "active",
    taskState: "migrating",
    powerState: 1,
    created: 0,
    updated: 1500,
    locked: false,
  };
  n.instanceUpdate(
    snap,
    { vmState: "active", taskState: null },
    "controller",
    1500,
  );
  n.instanceAction("live_migration_post", "end", snap, "a", 2000);
  n.selectDestinations("start", snap, 2000);
  n.computeTaskError(
    "migrate_server",
    "u1",
    "active",
    "NoValidHost",
    "No valid host",
    0,
  );
  assert.equal(got.length, 4);
  for (const r of got) assert.ok(r.ok, r.ok ? "" : r.error);
  const [update, post, , error] = got.map((r) =>
    r.ok ? r.notification : undefined
  );
  assert.equal(update?.instance?.taskState, "migrating");
  assert.equal(update?.instance?.flavorRamMb, 2048);
  assert.equal(update?.timestampMs, 1500);
  assert.equal(post?.publisherHost, "a");
  assert.equal(error?.priority, "error");
  assert.equal(error?.task?.reason, "No valid host");
});

Deno.test("parseNovaNotification never throws, whatever the body", () => {
  fc.assert(
    fc.property(
      fc.oneof(
        fc.string(),
        fc.json().map((j) => wrap(JSON.parse(j))),
        fc.json().map((j) =>
          JSON.stringify({ "oslo.version": "2.0", "oslo.message": j })
        ),
      ),
      fc.constantFrom(INFO, "versioned_notifications.error", "x"),
      (body, key) => {
        const r = parseNovaNotification(body, key);
        assert.equal(typeof r.ok, "boolean");
      },
    ),
    { numRuns: 500 },
  );
});
