import assert from "node:assert/strict";
import { osloTimestamp, SimNotifier } from "./notifier.ts";

Deno.test("osloTimestamp prints Python's str(datetime) in UTC", () => {
  const table: [number, string][] = [
    [0, "1970-01-01 00:00:00"],
    [1500, "1970-01-01 00:00:01.500000"],
    [Date.UTC(2026, 11, 3, 7, 40, 23, 7), "2026-12-03 07:40:23.007000"],
    [Date.UTC(2026, 11, 3, 7, 40, 23, 7) + 0.9, "2026-12-03 07:40:23.007000"],
  ];
  for (const [ms, want] of table) assert.equal(osloTimestamp(ms), want);
});

Deno.test("SimNotifier wraps each message in oslo's 2.0 envelope by priority", () => {
  const n = new SimNotifier();
  const got: [string, Record<string, unknown>][] = [];
  const stop = n.listen((key, env) => {
    assert.deepEqual(Object.keys(env).sort(), ["oslo.message", "oslo.version"]);
    assert.equal(env["oslo.version"], "2.0");
    got.push([key, JSON.parse(env["oslo.message"])]);
  });
  n.computeTaskError(
    "migrate_server",
    "u1",
    "active",
    "NoValidHost",
    "No valid host was found. ",
    0,
  );
  stop();
  n.computeTaskError("migrate_server", "u1", "active", "NoValidHost", "x", 0);
  assert.equal(got.length, 1);
  const [key, msg] = got[0] ?? ["", {}];
  assert.equal(key, "versioned_notifications.error");
  assert.equal(msg["priority"], "ERROR");
  assert.equal(msg["publisher_id"], "nova-conductor:controller");
  assert.equal(msg["event_type"], "compute_task.migrate_server.error");
  assert.match(String(msg["message_id"]), /^[0-9a-f-]{36}$/);
  assert.equal(msg["timestamp"], "1970-01-01 00:00:00");
});
