import assert from "node:assert/strict";
import fc from "fast-check";
import {
  conflictKind,
  inFlightKindOfServer,
  isAbortable,
  isBeingDeleted,
  isTransientRefusal,
  kindOfMigrationType,
  migrationPhase,
  needsPerson,
  startKindOfStatus,
} from "./nova_states.ts";

const phases: Array<[string, string]> = [
  ["queued", "in_progress"],
  ["preparing", "in_progress"],
  ["running", "in_progress"],
  ["post-migrating", "in_progress"],
  ["accepted", "in_progress"],
  ["pre-migrating", "in_progress"],
  ["migrating", "in_progress"],
  ["confirming", "in_progress"],
  ["reverting", "in_progress"],
  ["completed", "done"],
  ["finished", "done"],
  ["confirmed", "done"],
  ["done", "done"],
  ["error", "failed"],
  ["failed", "failed"],
  ["cancelled", "failed"],
  ["reverted", "failed"],
  ["ERROR", "failed"],
  ["a-status-nova-adds-later", "in_progress"],
];
for (const [status, phase] of phases) {
  Deno.test(`migrationPhase: ${status} is ${phase}`, () => {
    assert.equal(migrationPhase(status), phase);
  });
}

Deno.test("isAbortable: only queued, preparing and running live migrations", () => {
  assert.deepEqual(
    ["queued", "preparing", "running", "post-migrating", "completed", "error"]
      .map(isAbortable),
    [true, true, true, false, false, false],
  );
});

Deno.test("kindOfMigrationType: only live-migration is live", () => {
  assert.deepEqual(
    ["live-migration", "migration", "resize", "evacuation"].map(
      kindOfMigrationType,
    ),
    ["live", "cold", "cold", "cold"],
  );
});

const serverRows: Array<[string, string | null, "live" | "cold" | undefined]> =
  [
    ["MIGRATING", "migrating", "live"],
    ["MIGRATING", null, "live"],
    ["ACTIVE", "migrating", "live"],
    ["RESIZE", "resize_prep", "cold"],
    ["RESIZE", null, "cold"],
    ["SHUTOFF", "resize_migrated", "cold"],
    ["ACTIVE", "resize_finish", "cold"],
    ["ACTIVE", null, undefined],
    ["ACTIVE", "image_snapshot", undefined],
    ["VERIFY_RESIZE", null, undefined],
  ];
for (const [status, task, kind] of serverRows) {
  Deno.test(`inFlightKindOfServer: ${status}/${task ?? "none"} is ${kind ?? "not in flight"}`, () => {
    assert.equal(inFlightKindOfServer(status, task), kind);
  });
}

Deno.test("isBeingDeleted: task_state deleting or soft-deleting, status DELETED/SOFT_DELETED", () => {
  assert.ok(isBeingDeleted("ACTIVE", "deleting"));
  assert.ok(isBeingDeleted("ERROR", "deleting"));
  assert.ok(isBeingDeleted("SHUTOFF", "soft-deleting"));
  assert.ok(isBeingDeleted("SOFT_DELETED", null));
  assert.ok(isBeingDeleted("DELETED", null));
  assert.ok(!isBeingDeleted("ACTIVE", "migrating"));
});

Deno.test("needsPerson: SUSPENDED, RESCUE, SHELVED(_OFFLOADED), UNKNOWN, VERIFY_RESIZE", () => {
  for (
    const s of [
      "SUSPENDED",
      "RESCUE",
      "SHELVED",
      "SHELVED_OFFLOADED",
      "UNKNOWN",
      "VERIFY_RESIZE",
    ]
  ) {
    assert.ok(needsPerson(s), s);
  }
  for (
    const s of ["ACTIVE", "PAUSED", "SHUTOFF", "ERROR", "BUILD", "MIGRATING"]
  ) {
    assert.ok(!needsPerson(s), s);
  }
});

Deno.test("startKindOfStatus: ACTIVE and PAUSED live, SHUTOFF cold, others none", () => {
  assert.deepEqual(
    ["ACTIVE", "PAUSED", "SHUTOFF", "SUSPENDED", "ERROR", "BUILD"].map(
      startKindOfStatus,
    ),
    ["live", "live", "cold", undefined, undefined, undefined],
  );
});

Deno.test("conflictKind: Nova's 409 messages", () => {
  const rows: Array<[string, string]> = [
    [
      "Cannot 'os-migrateLive' instance a while it is in task_state migrating",
      "busy",
    ],
    [
      "Cannot 'migrate' instance a while it is in task_state resize_prep",
      "busy",
    ],
    [
      "Cannot 'os-migrateLive' instance a while it is in vm_state stopped",
      "wrong_state",
    ],
    [
      "Operation 'live-migration' not supported for SEV-enabled instance (a).",
      "unsupported",
    ],
    ["Instance a is locked", "unsupported"],
  ];
  for (const [message, want] of rows) {
    assert.equal(conflictKind(message), want, message);
  }
});

Deno.test("isTransientRefusal: only no valid host", () => {
  assert.ok(
    isTransientRefusal(
      "No valid host was found. There are not enough hosts available.",
    ),
  );
  assert.ok(!isTransientRefusal("Compute host x could not be found."));
});

Deno.test("property: conflictKind — a task_state message is busy, a vm_state one (without task_state) a wrong state, anything else unsupported", () => {
  fc.assert(fc.property(fc.string(), fc.string(), (a, b) => {
    const m = `${a}${b}`;
    const kind = conflictKind(m);
    const lower = m.toLowerCase();
    if (lower.includes("task_state")) assert.equal(kind, "busy");
    else if (lower.includes("vm_state")) assert.equal(kind, "wrong_state");
    else assert.equal(kind, "unsupported");
    assert.equal(conflictKind(`${a} task_state ${b}`), "busy");
  }));
});
