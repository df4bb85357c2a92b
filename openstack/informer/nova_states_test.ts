import assert from "node:assert/strict";
import fc from "fast-check";
import {
  conflictKind,
  inFlightKindOfServer,
  isAbortable,
  isBeingDeleted,
  isOurKind,
  isTransientRefusal,
  kindOfMigrationType,
  migrationPhase,
  needsPerson,
  startKindOfStatus,
  waitingInNova,
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

Deno.test("waitingInNova: accepted and queued wait before the copy; every copying or finished status does not", () => {
  const rows: Array<[string, boolean]> = [
    ["accepted", true],
    ["queued", true],
    ["QUEUED", true],
    ["Accepted", true],
    ["preparing", false],
    ["running", false],
    ["post-migrating", false],
    ["completed", false],
    ["error", false],
    ["", false],
  ];
  for (const [status, want] of rows) {
    assert.equal(waitingInNova(status), want, status);
  }
});

Deno.test("isOurKind: a live start makes live-migration records, a cold one migration records; resize and evacuation are never ours", () => {
  const rows: Array<[string, "live" | "cold" | undefined, boolean]> = [
    ["live-migration", "live", true],
    ["LIVE-MIGRATION", "live", true],
    ["migration", "live", false],
    ["migration", "cold", true],
    ["Migration", "cold", true],
    ["live-migration", "cold", false],
    ["resize", "cold", false],
    ["resize", "live", false],
    ["evacuation", "cold", false],
    ["evacuation", "live", false],
    // Without a known kind, only a cold start's record (migration) is ours.
    ["migration", undefined, true],
    ["live-migration", undefined, false],
  ];
  for (const [type, kind, want] of rows) {
    assert.equal(isOurKind(type, kind), want, `${type}/${kind}`);
  }
});

Deno.test("isBeingDeleted and inFlightKindOfServer: absent and mixed-case task states", () => {
  assert.ok(isBeingDeleted("active", "Deleting"));
  assert.ok(isBeingDeleted("soft_deleted", undefined));
  assert.ok(!isBeingDeleted("ACTIVE", undefined));
  assert.ok(
    !isBeingDeleted("ERROR", "delete"),
    "only the task states Nova uses",
  );
  assert.equal(inFlightKindOfServer("migrating", undefined), "live");
  assert.equal(inFlightKindOfServer("ACTIVE", "RESIZE_PREP"), "cold");
  assert.equal(inFlightKindOfServer("ACTIVE", "resize"), undefined, "no _");
  assert.equal(inFlightKindOfServer("ACTIVE", undefined), undefined);
});

Deno.test("property: every status decision ignores case", () => {
  const statuses = fc.constantFrom(
    ...phases.map(([s]) => s),
    "ACTIVE",
    "PAUSED",
    "SHUTOFF",
    "SUSPENDED",
    "VERIFY_RESIZE",
    "SOFT_DELETED",
    "MIGRATING",
    "RESIZE",
  );
  const cased = fc.tuple(statuses, fc.array(fc.boolean(), { maxLength: 30 }))
    .map(([s, flips]) =>
      [...s].map((c, i) => flips[i] ? c.toUpperCase() : c.toLowerCase()).join(
        "",
      )
    );
  fc.assert(fc.property(cased, (s) => {
    const lower = s.toLowerCase();
    const upper = s.toUpperCase();
    assert.equal(migrationPhase(s), migrationPhase(lower));
    assert.equal(waitingInNova(s), waitingInNova(lower));
    assert.equal(isAbortable(s), isAbortable(lower));
    assert.equal(needsPerson(s), needsPerson(upper));
    assert.equal(startKindOfStatus(s), startKindOfStatus(upper));
    assert.equal(isBeingDeleted(s, null), isBeingDeleted(upper, null));
    assert.equal(
      inFlightKindOfServer(s, s),
      inFlightKindOfServer(upper, lower),
    );
  }));
});

Deno.test("property: an abortable status is in progress and copying; a waiting one is in progress and never done", () => {
  fc.assert(
    fc.property(
      fc.constantFrom(...phases.map(([s]) => s)),
      fc.string(),
      (known, any) => {
        for (const s of [known, any]) {
          if (isAbortable(s)) assert.equal(migrationPhase(s), "in_progress", s);
          if (waitingInNova(s)) {
            assert.equal(
              migrationPhase(s),
              "in_progress",
              s,
            );
          }
          if (migrationPhase(s) !== "in_progress") {
            assert.ok(!isAbortable(s) && !waitingInNova(s), s);
          }
        }
      },
    ),
  );
});

Deno.test("property: a startable status never needs a person, is never deleted, and live and cold follow the status alone", () => {
  const status = fc.oneof(
    fc.constantFrom(
      "ACTIVE",
      "PAUSED",
      "SHUTOFF",
      "SUSPENDED",
      "RESCUE",
      "SHELVED",
      "DELETED",
      "ERROR",
      "BUILD",
    ),
    fc.string(),
  );
  fc.assert(fc.property(status, (s) => {
    const kind = startKindOfStatus(s);
    if (kind === undefined) return;
    assert.ok(!needsPerson(s), s);
    assert.ok(!isBeingDeleted(s, null), s);
    assert.equal(kind, s.toUpperCase() === "SHUTOFF" ? "cold" : "live", s);
  }));
});

Deno.test("property: isTransientRefusal finds `no valid host` anywhere, in any case", () => {
  fc.assert(fc.property(fc.string(), fc.string(), fc.boolean(), (a, b, up) => {
    const phrase = up ? "NO VALID HOST" : "No valid host";
    assert.ok(isTransientRefusal(`${a}${phrase}${b}`));
  }));
});
