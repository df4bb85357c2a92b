import assert from "node:assert/strict";
import type { EvictionStatus } from "../../models/mod.ts";
import {
  changeCondition,
  drainedCondition,
  type DrainSummary,
  evictingCondition,
  migratingInstanceCondition,
  notConvergingCondition,
  notificationsCondition,
  setCondition,
  withDrained,
} from "./conditions.ts";
import type { NotificationStanding } from "../../openstack/informer/informer.ts";

const t0 = new Date("2026-01-01T00:00:00Z");
const t1 = new Date("2026-01-01T00:05:00Z");
const none: DrainSummary = {
  ready: 0,
  busy: 0,
  backoff: 0,
  needsPerson: 0,
  held: undefined,
};

Deno.test("setCondition: appends a new condition with the current time", () => {
  const c = setCondition(
    [],
    { type: "Evicting", status: "True", reason: "Running", message: "m" },
    t0,
    3,
  );
  assert.deepEqual(c, [{
    type: "Evicting",
    status: "True",
    observedGeneration: 3,
    lastTransitionTime: t0.toISOString(),
    reason: "Running",
    message: "m",
  }]);
});

Deno.test("setCondition: same status keeps lastTransitionTime, updates reason and message", () => {
  const a = setCondition([], {
    type: "Evicting",
    status: "True",
    reason: "Running",
    message: "1",
  }, t0);
  const b = setCondition(a, {
    type: "Evicting",
    status: "True",
    reason: "Waiting",
    message: "2",
  }, t1);
  assert.equal(b[0]?.lastTransitionTime, t0.toISOString());
  assert.equal(b[0]?.reason, "Waiting");
  assert.equal(b[0]?.message, "2");
});

Deno.test("setCondition: a status change moves lastTransitionTime", () => {
  const a = setCondition([], {
    type: "Evicting",
    status: "True",
    reason: "Running",
    message: "",
  }, t0);
  const b = setCondition(a, {
    type: "Evicting",
    status: "False",
    reason: "Succeeded",
    message: "",
  }, t1);
  assert.equal(b[0]?.lastTransitionTime, t1.toISOString());
});

Deno.test("setCondition: other conditions and their order are kept", () => {
  const other = {
    type: "HypervisorDisabled",
    status: "True" as const,
    reason: "Disabled",
    message: "",
    lastTransitionTime: t0.toISOString(),
  };
  const c = setCondition([other], {
    type: "Evicting",
    status: "True",
    reason: "Running",
    message: "",
  }, t1);
  assert.deepEqual(c.map((x) => x.type), ["HypervisorDisabled", "Evicting"]);
  assert.deepEqual(c[0], other);
});

Deno.test("setCondition: very long messages are truncated to the CRD's bound", () => {
  const c = setCondition([], {
    type: "MigratingInstance",
    status: "False",
    reason: "Failed",
    message: "x".repeat(40_000),
  }, t0);
  assert.equal(c[0]?.message.length, 32_768);
});

const evictingRows: Array<
  [string, EvictionStatus, DrainSummary, [string, string]]
> = [
  [
    "empty host, nothing in flight: Succeeded",
    { outstandingCount: 0, inFlightCount: 0 },
    none,
    [
      "False",
      "Succeeded",
    ],
  ],
  ["in flight: Running", { outstandingCount: 3, inFlightCount: 1 }, none, [
    "True",
    "Running",
  ]],
  ["in flight though some need a person: Running", {
    outstandingCount: 3,
    inFlightCount: 1,
  }, {
    ...none,
    needsPerson: 2,
  }, ["True", "Running"]],
  ["ready but no slot: Waiting", { outstandingCount: 1, inFlightCount: 0 }, {
    ...none,
    ready: 1,
  }, [
    "True",
    "Waiting",
  ]],
  ["backoff: Waiting", { outstandingCount: 1, inFlightCount: 0 }, {
    ...none,
    backoff: 1,
  }, [
    "True",
    "Waiting",
  ]],
  ["busy: Waiting", { outstandingCount: 1, inFlightCount: 0 }, {
    ...none,
    busy: 1,
  }, ["True", "Waiting"]],
  ["only VMs needing a person, some failed: Failed", {
    outstandingCount: 2,
    inFlightCount: 0,
    failed: [{
      id: "e",
      reason: "ERROR: boom",
      attempts: 3,
      lastAttemptAt: "2026-12-01T00:00:00Z",
    }],
    skipped: [{ id: "s", reason: "SUSPENDED needs a person" }],
  }, {
    ...none,
    needsPerson: 2,
  }, ["False", "Failed"]],
  ["only a SUSPENDED VM left, none failed: WaitingForPerson", {
    outstandingCount: 1,
    inFlightCount: 0,
    skipped: [{ id: "s", reason: "SUSPENDED needs a person" }],
  }, {
    ...none,
    needsPerson: 1,
  }, ["False", "WaitingForPerson"]],
];

for (const [name, status, summary, expected] of evictingRows) {
  Deno.test(`evictingCondition: ${name}`, () => {
    const c = evictingCondition(status, summary);
    assert.deepEqual([c.status, c.reason], expected);
  });
}

Deno.test("evictingCondition: WaitingForPerson names the VMs left alone, five at most", () => {
  const skipped = ["a", "b", "c", "d", "e", "f", "g"].map((id) => ({
    id,
    reason: `${id === "a" ? "SUSPENDED" : "SHELVED"} needs a person`,
  }));
  const rows: [number, string][] = [
    [
      1,
      "waiting for a person: 1 VMs left on the host, none failed: a (SUSPENDED needs a person)",
    ],
    [
      7,
      "waiting for a person: 7 VMs left on the host, none failed: a (SUSPENDED needs a person), " +
      "b (SHELVED needs a person), c (SHELVED needs a person), d (SHELVED needs a person), " +
      "e (SHELVED needs a person), and 2 more (status.skipped)",
    ],
  ];
  for (const [n, message] of rows) {
    const c = evictingCondition(
      { outstandingCount: n, inFlightCount: 0, skipped: skipped.slice(0, n) },
      { ...none, needsPerson: n },
    );
    assert.equal(c.reason, "WaitingForPerson");
    assert.equal(c.message, message);
  }
});

Deno.test("migratingInstanceCondition: Failed wins over in flight (sticky)", () => {
  const c = migratingInstanceCondition({
    inFlight: [{ id: "b", kind: "live", startedAt: t0.toISOString() }],
    failed: [{
      id: "a",
      reason: "ERROR: x",
      attempts: 0,
      lastAttemptAt: t0.toISOString(),
    }],
    outstandingCount: 2,
  });
  assert.deepEqual([c.status, c.reason], ["False", "Failed"]);
  assert.match(c.message, /a \(0 attempts\): ERROR: x/);
});

Deno.test("migratingInstanceCondition: Migrating, Succeeded, Idle", () => {
  const flying = migratingInstanceCondition({
    inFlight: [{ id: "b", kind: "cold", startedAt: t0.toISOString() }],
    outstandingCount: 1,
  });
  assert.deepEqual([flying.status, flying.reason, flying.message], [
    "True",
    "Migrating",
    "migrating b (cold)",
  ]);
  const done = migratingInstanceCondition({
    outstandingCount: 0,
    migratedCount: 4,
  });
  assert.deepEqual([done.status, done.reason], ["False", "Succeeded"]);
  const idle = migratingInstanceCondition({ outstandingCount: 2 });
  assert.deepEqual([idle.status, idle.reason], ["False", "Idle"]);
});

Deno.test("drainedCondition: True only for a drained host, settled; False with why", () => {
  const evicting = (status: "True" | "False", reason: string) => ({
    type: "Evicting",
    status,
    reason,
    message: `evicting says ${reason}`,
    lastTransitionTime: t0.toISOString(),
  });
  const settled: EvictionStatus = {
    outstandingCount: 0,
    inFlightCount: 0,
    migratedCount: 76,
    finishedAt: "2026-01-01T00:04:00Z",
  };
  const rows: Array<{
    name: string;
    status: EvictionStatus;
    want: [string, string, RegExp];
  }> = [
    {
      name: "no pass yet",
      status: {},
      want: ["False", "Pending", /no pass has looked/],
    },
    {
      name: "Succeeded and settled",
      status: { ...settled, conditions: [evicting("False", "Succeeded")] },
      want: ["True", "Succeeded", /empty and settled since .*: 76 VMs/],
    },
    {
      name: "Succeeded but not settled (no finishedAt)",
      status: {
        ...settled,
        finishedAt: undefined,
        conditions: [evicting("False", "Succeeded")],
      },
      want: ["False", "Draining", /not yet settled/],
    },
    {
      name: "Succeeded with a VM outstanding (a stale condition)",
      status: {
        ...settled,
        outstandingCount: 1,
        conditions: [evicting("False", "Succeeded")],
      },
      want: ["False", "Draining", /not yet settled/],
    },
    {
      name: "Settling: seen empty once",
      status: { ...settled, conditions: [evicting("True", "Settling")] },
      want: ["False", "Draining", /^Settling: evicting says Settling/],
    },
    {
      name: "Running",
      status: { inFlightCount: 3, conditions: [evicting("True", "Running")] },
      want: ["False", "Draining", /^Running: /],
    },
    {
      name: "Waiting for budget",
      status: { conditions: [evicting("True", "WaitingForBudget")] },
      want: ["False", "Draining", /^WaitingForBudget: /],
    },
    {
      name: "NotInNova: nothing drained, even with finishedAt",
      status: { ...settled, conditions: [evicting("False", "NotInNova")] },
      want: ["False", "NotInNova", /evicting says NotInNova/],
    },
    {
      name: "Failed",
      status: { conditions: [evicting("False", "Failed")] },
      want: ["False", "Failed", /evicting says Failed/],
    },
    {
      name: "WaitingForPerson",
      status: { conditions: [evicting("False", "WaitingForPerson")] },
      want: ["False", "WaitingForPerson", /evicting says/],
    },
    {
      name: "PreflightFailed",
      status: { conditions: [evicting("False", "PreflightFailed")] },
      want: ["False", "PreflightFailed", /evicting says/],
    },
  ];
  for (const r of rows) {
    const c = drainedCondition(r.status);
    assert.equal(c.type, "Drained", r.name);
    assert.deepEqual([c.status, c.reason], r.want.slice(0, 2), r.name);
    assert.match(c.message, r.want[2], r.name);
  }
});

Deno.test("withDrained: set from Evicting with its generation; nothing without it", () => {
  assert.deepEqual(withDrained({ inFlightCount: 2 }, t0), {
    inFlightCount: 2,
  });
  const running = withDrained({
    inFlightCount: 2,
    observedGeneration: 4,
    conditions: [{
      type: "Evicting",
      status: "True",
      reason: "Running",
      message: "2 in flight",
      observedGeneration: 3,
      lastTransitionTime: t0.toISOString(),
    }],
  }, t0);
  const drained = running.conditions?.find((c) => c.type === "Drained");
  assert.deepEqual(drained, {
    type: "Drained",
    status: "False",
    observedGeneration: 3,
    lastTransitionTime: t0.toISOString(),
    reason: "Draining",
    message: "Running: 2 in flight",
  });
  // a later write keeps the transition time while it stays False
  const later = withDrained(running, t1);
  assert.equal(
    later.conditions?.find((c) => c.type === "Drained")?.lastTransitionTime,
    t0.toISOString(),
  );
});

Deno.test("notificationsCondition: True while trusted, False Deaf or ViewWrong while demoted, naming what was found", () => {
  const rows: Array<{
    standing: NotificationStanding;
    status: string;
    reason: string;
    message: RegExp;
  }> = [
    {
      standing: { trusted: true },
      status: "True",
      reason: "Trusted",
      message: /plans from Nova's notifications/,
    },
    {
      standing: {
        trusted: false,
        reason: "deaf",
        scope: "host",
        detail: "ev: no event about the start of a within 10 s of its answer",
      },
      status: "False",
      reason: "Deaf",
      message:
        /^Nova's notifications about this host are not heard \(ev: no event about the start of a within 10 s of its answer\); the drain polls Nova$/,
    },
    {
      standing: {
        trusted: false,
        reason: "wrong",
        scope: "host",
        detail: "ev: 1 VM differing",
      },
      status: "False",
      reason: "ViewWrong",
      message: /^the notified view of this host was found wrong/,
    },
    {
      standing: {
        trusted: false,
        reason: "deaf",
        scope: "feed",
        detail: "3 host views demoted within 300 s",
      },
      status: "False",
      reason: "Deaf",
      message: /^Nova's notification feed is demoted for every host/,
    },
  ];
  for (const row of rows) {
    const c = notificationsCondition(row.standing);
    assert.equal(c.type, "NovaNotifications");
    assert.equal(c.status, row.status, row.reason);
    assert.equal(c.reason, row.reason);
    assert.match(c.message, row.message);
  }
});

Deno.test("changeCondition: the Event only when the condition's status or reason changed", () => {
  const event = { type: "Normal", reason: "Told" } as const;
  const at = (status: string, reason: string, message: string) => ({
    conditions: [{
      type: "WaveSettled",
      status: status as "True" | "False",
      reason,
      message,
      lastTransitionTime: t0.toISOString(),
    }],
  });
  const update = {
    type: "WaveSettled",
    status: "False",
    reason: "WaitingForWave",
    message: "2 hosts enabled",
  } as const;
  const cases: [string, EvictionStatus, boolean][] = [
    ["absent before", {}, true],
    ["status changed", at("True", "WaitingForWave", "2 hosts enabled"), true],
    ["reason changed", at("False", "SettleBoundPassed", "x"), true],
    ["message alone changed", at("False", "WaitingForWave", "3 hosts"), false],
    ["the same", at("False", "WaitingForWave", "2 hosts enabled"), false],
  ];
  for (const [name, before, told] of cases) {
    const r = changeCondition(before, update, t1, 4, event);
    assert.deepEqual(
      r.event,
      told ? { ...event, message: "2 hosts enabled" } : undefined,
      name,
    );
    const c = r.status.conditions?.find((x) => x.type === "WaveSettled");
    assert.equal(c?.message, "2 hosts enabled", name);
    assert.equal(c?.observedGeneration, 4, name);
  }
  assert.equal(changeCondition({}, update, t1, 4).event, undefined);
  assert.equal(
    changeCondition({}, update, t1, 4, { ...event, message: "own" }).event
      ?.message,
    "own",
  );
});

Deno.test("notConvergingCondition: the reason by the bounds passed; each VM named with what its policy does and when", () => {
  const gib = 1024 ** 3;
  const r = (
    id: string,
    why: "progress" | "completion",
    onTimeout: "Report" | "Abort" | "ForceComplete",
  ) => ({
    id,
    migrationId: `m-${id}`,
    why,
    remainingBytes: 3 * gib,
    totalBytes: 64 * gib,
    sinceSeconds: 40,
    onTimeout,
    actAt: "2026-01-01T01:00:00Z",
  });
  const rows: Array<[string, ReturnType<typeof r>[], string, RegExp[]]> = [
    ["none", [], "Converging", [/every live copy in flight converges/]],
    ["progress", [r("a", "progress", "Abort")], "ProgressStalled", [
      /a \(migration m-a\): remaining memory not falling/,
      /3\.0 GiB of 64\.0 GiB left/,
      /aborts it at 2026-01-01T01:00:00Z \(onTimeout Abort\)/,
    ]],
    [
      "completion wins",
      [r("a", "progress", "Report"), r("b", "completion", "ForceComplete")],
      "CompletionTimeout",
      [
        /^2 live copies/,
        /only reports it \(onTimeout Report\)/,
        /b \(migration m-b\): past its completion timeout by 40 s/,
        /force-completes it at 2026-01-01T01:00:00Z/,
      ],
    ],
  ];
  for (const [name, reports, reason, texts] of rows) {
    const c = notConvergingCondition(reports);
    assert.equal(c.reason, reason, name);
    assert.equal(c.status, reports.length > 0 ? "True" : "False", name);
    for (const t of texts) assert.match(c.message, t, name);
  }
  const many = notConvergingCondition(
    Array.from({ length: 12 }, (_, i) => r(`vm${i}`, "progress", "Abort")),
  );
  assert.match(many.message, /and 2 more$/);
});
