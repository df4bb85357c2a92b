import assert from "node:assert/strict";
import fc from "fast-check";
import {
  apiStatusOf,
  byEventOrder,
  isDeletion,
  isSnapshot,
  MIGRATE_SERVER_ERROR,
  migrationStepOf,
  recordEnded,
  statusRank,
  subjectOf,
} from "./notified_events.ts";
import {
  instance,
  liveMigration,
  notification,
} from "../../tests/harness/notified_fixtures.ts";

Deno.test("migrationStepOf: each step's record status, where it runs and whose host its payload names", () => {
  const cases: Array<
    [
      string,
      boolean,
      [string, string | undefined, boolean, boolean] | undefined,
    ]
  > = [
    ["instance.live_migration_pre.start", false, [
      "live-migration",
      "preparing",
      true,
      true,
    ]],
    ["instance.live_migration_pre.end", false, [
      "live-migration",
      "running",
      true,
      true,
    ]],
    ["instance.live_migration_post_dest.end", false, [
      "live-migration",
      "running",
      true,
      false,
    ]],
    ["instance.live_migration_post.end", false, [
      "live-migration",
      "completed",
      false,
      true,
    ]],
    ["instance.live_migration_rollback.start", false, [
      "live-migration",
      undefined,
      false,
      true,
    ]],
    ["instance.live_migration_rollback.end", false, [
      "live-migration",
      "failed",
      false,
      true,
    ]],
    ["instance.live_migration_abort.end", false, [
      "live-migration",
      "cancelled",
      false,
      true,
    ]],
    ["instance.resize_prep.start", false, [
      "migration",
      "pre-migrating",
      true,
      true,
    ]],
    ["instance.resize.end", false, [
      "migration",
      "post-migrating",
      false,
      true,
    ]],
    ["instance.resize_finish.end", false, [
      "migration",
      "finished",
      true,
      false,
    ]],
    ["instance.resize_confirm.end", false, [
      "migration",
      "confirmed",
      false,
      true,
    ]],
    ["instance.resize_revert.end", false, [
      "migration",
      "reverted",
      false,
      true,
    ]],
    [MIGRATE_SERVER_ERROR, false, ["live-migration", "error", false, true]],
    [MIGRATE_SERVER_ERROR, true, ["migration", "error", false, true]],
    ["instance.update", false, undefined],
    ["instance.delete.end", false, undefined],
  ];
  for (const [eventType, cold, want] of cases) {
    const s = migrationStepOf(eventType, cold);
    assert.deepEqual(
      s === undefined
        ? undefined
        : [s.migrationType, s.status, s.onDestination, s.payloadIsSource],
      want,
      `${eventType} (cold ${cold})`,
    );
  }
});

Deno.test("statusRank and recordEnded: later steps rank higher, every end highest, unknown lowest", () => {
  const order = ["queued", "preparing", "running", "post-migrating"];
  for (const [i, later] of order.slice(1).entries()) {
    assert.ok(statusRank(later) > statusRank(order[i] ?? ""), later);
  }
  for (const end of ["completed", "failed", "error", "cancelled"]) {
    assert.ok(recordEnded(end), end);
    assert.equal(statusRank(end.toUpperCase()), statusRank("completed"));
  }
  for (const open of ["finished", "confirming", "running", "weird"]) {
    assert.ok(!recordEnded(open), open);
  }
  assert.equal(statusRank("weird"), 0);
});

Deno.test("isSnapshot, isDeletion and subjectOf: which payloads tell the VM's host and states, and whose", () => {
  const update = notification("instance.update", 0, "nova-compute:h", {
    instance: instance("a"),
  });
  assert.ok(isSnapshot("instance.update"));
  assert.ok(isSnapshot("instance.live_migration_post_dest.end"));
  assert.ok(!isSnapshot("instance.live_migration_post.end"), "source's view");
  assert.equal(subjectOf(update), "a");
  assert.ok(!isDeletion(update));
  assert.ok(isDeletion({ ...update, eventType: "instance.delete.end" }));
  assert.ok(
    isDeletion({ ...update, instance: instance("a", { vmState: "DELETED" }) }),
  );
  const task = notification(MIGRATE_SERVER_ERROR, 0, "nova-conductor:c", {
    task: { instanceUuid: "b", reason: "No valid host was found." },
  });
  assert.equal(subjectOf(task), "b");
});

Deno.test("apiStatusOf: Nova's API status of vm_state and task_state", () => {
  const cases: Array<[string | null, string | null, string]> = [
    ["active", null, "ACTIVE"],
    ["active", "migrating", "MIGRATING"],
    ["paused", "migrating", "MIGRATING"],
    ["active", "resize_migrating", "RESIZE"],
    ["stopped", "resize_prep", "RESIZE"],
    ["stopped", null, "SHUTOFF"],
    ["resized", null, "VERIFY_RESIZE"],
    ["resized", "resize_reverting", "REVERT_RESIZE"],
    ["error", "rebuilding", "REBUILD"],
    ["active", "reboot_started_hard", "HARD_REBOOT"],
    ["active", "rebooting", "REBOOT"],
    ["shelved_offloaded", null, "SHELVED_OFFLOADED"],
    ["deleted", null, "DELETED"],
    [null, null, "UNKNOWN"],
    ["ACTIVE", null, "ACTIVE"],
  ];
  for (const [vm, task, want] of cases) {
    assert.equal(apiStatusOf(vm, task), want, `${vm}/${task}`);
  }
});

Deno.test("byEventOrder: one order whatever the arrival order; same time, the later step last (property)", () => {
  const events = [
    ...liveMigration("a", 5, "completed"),
    ...liveMigration("b", 5, "failed"),
  ];
  const same = [...liveMigration("c", 0, "completed")].map((n) => ({
    ...n,
    timestampMs: 0,
  }));
  const sorted = [...same].sort(byEventOrder).map((n) => n.eventType);
  assert.ok(
    sorted.indexOf("instance.live_migration_pre.start") <
      sorted.indexOf("instance.live_migration_post.end"),
  );
  fc.assert(fc.property(
    fc.shuffledSubarray(events, { minLength: events.length }),
    (shuffled) => {
      const a = [...shuffled].sort(byEventOrder).map((n) => n.messageId);
      const b = [...events].sort(byEventOrder).map((n) => n.messageId);
      assert.deepEqual(a, b);
    },
  ));
});
