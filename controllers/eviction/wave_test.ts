import assert from "node:assert/strict";
import fc from "fast-check";
import type { Eviction } from "../../models/mod.ts";
import { pendingMembers, waveCondition, waveGate } from "./wave.ts";

const T0 = "2026-11-29T12:00:00Z";

interface Shape {
  name: string;
  host?: string;
  created?: string;
  disabled?: boolean;
  finished?: boolean;
  deleting?: boolean;
  preflightFailed?: boolean;
}

function ev(s: Shape): Eviction {
  const status: NonNullable<Eviction["status"]> = {};
  if (s.disabled) status.hypervisorServiceId = `svc-${s.name}`;
  if (s.finished) status.finishedAt = T0;
  if (s.preflightFailed) {
    status.conditions = [{
      type: "PreflightChecksSucceeded",
      status: "False",
      reason: "HypervisorNotFound",
      message: "",
      lastTransitionTime: T0,
    }];
  }
  return {
    metadata: {
      name: s.name,
      creationTimestamp: s.created ?? T0,
      ...(s.deleting ? { deletionTimestamp: T0 } : {}),
    },
    spec: { hypervisor: s.host ?? s.name, reason: "r" },
    status,
  };
}

Deno.test("pendingMembers: who holds a drain back", () => {
  const self = ev({ name: "a", disabled: true });
  const cases: Array<[string, Shape[], string[]]> = [
    ["alone", [], []],
    ["an enabled peer", [{ name: "b" }], ["b"]],
    ["a disabled peer (running or not)", [{ name: "b", disabled: true }], []],
    ["a finished peer", [{ name: "b", finished: true }], []],
    ["a peer being deleted", [{ name: "b", deleting: true }], []],
    ["a peer whose preflight failed", [{
      name: "b",
      preflightFailed: true,
    }], []],
    ["a second Eviction of my own host", [{ name: "a2", host: "a" }], []],
    ["a duplicate waiting behind a running one", [
      { name: "b", disabled: true },
      { name: "b2", host: "b", created: "2026-11-29T12:00:05Z" },
    ], []],
    ["several, sorted", [{ name: "d" }, { name: "c" }, {
      name: "e",
      disabled: true,
    }], ["c", "d"]],
  ];
  for (const [what, others, want] of cases) {
    assert.deepEqual(
      pendingMembers(self, [self, ...others.map(ev)]),
      want,
      what,
    );
  }
});

Deno.test("waveGate: waits for pending members, at most the settle bound each", () => {
  const self = ev({ name: "a", disabled: true });
  const b = ev({ name: "b" });
  const c = ev({ name: "c" });
  // [what, evictions, ms since this drain began waiting, first seen (ms
  // after that start) per member, decision]
  const cases: Array<
    [
      string,
      Eviction[],
      number,
      Record<string, number>,
      ReturnType<typeof waveGate>,
    ]
  > = [
    ["all disabled", [self, ev({ name: "b", disabled: true })], 0, {}, {
      go: true,
      reason: "AllDisabled",
      overdue: [],
    }],
    ["one pending, just started", [self, b], 0, { b: 0 }, {
      go: false,
      pending: ["b"],
      overdue: [],
      waitMs: 1000,
    }],
    ["one pending, half way", [self, b], 400, { b: 0 }, {
      go: false,
      pending: ["b"],
      overdue: [],
      waitMs: 600,
    }],
    ["one pending, bound passed", [self, b], 1000, { b: 0 }, {
      go: true,
      reason: "SettleBoundPassed",
      overdue: ["b"],
    }],
    ["a member first seen late waits its own bound", [self, b, c], 1200, {
      b: 0,
      c: 900,
    }, { go: false, pending: ["c"], overdue: ["b"], waitMs: 700 }],
    ["a member not seen before waits the whole bound", [self, b], 5000, {}, {
      go: false,
      pending: ["b"],
      overdue: [],
      waitMs: 1000,
    }],
    [
      "seen before this drain waited: its wait runs from the drain's",
      [
        self,
        b,
      ],
      300,
      { b: -4000 },
      {
        go: false,
        pending: ["b"],
        overdue: [],
        waitMs: 700,
      },
    ],
  ];
  for (const [what, evictions, waited, seen, want] of cases) {
    assert.deepEqual(
      waveGate({
        self,
        evictions,
        waitingSinceMs: 5000,
        firstSeenMs: (name) =>
          seen[name] === undefined ? undefined : 5000 + seen[name],
        nowMs: 5000 + waited,
        settleMs: 1000,
      }),
      want,
      what,
    );
  }
  assert.throws(
    () =>
      waveGate({
        self,
        evictions: [self],
        waitingSinceMs: 0,
        firstSeenMs: () => undefined,
        nowMs: 0,
        settleMs: -1,
      }),
    /settleMs must be a finite number >= 0, got -1/,
  );
});

Deno.test("waveGate: a running drain (no wait of its own) is held by an Eviction created after it", () => {
  const self = ev({ name: "a", disabled: true });
  const late = ev({ name: "late" });
  const at = (nowMs: number) =>
    waveGate({
      self,
      evictions: [self, late],
      waitingSinceMs: Number.NEGATIVE_INFINITY,
      firstSeenMs: () => 60_000,
      nowMs,
      settleMs: 15_000,
    });
  assert.deepEqual(at(60_000), {
    go: false,
    pending: ["late"],
    overdue: [],
    waitMs: 15_000,
  });
  assert.deepEqual(at(75_000), {
    go: true,
    reason: "SettleBoundPassed",
    overdue: ["late"],
  });
});

Deno.test("waveCondition: names the hosts, marks a capacity hold, says what the bound let through", () => {
  const held = ev({ name: "h" });
  held.status = {
    conditions: [{
      type: "CapacityChecked",
      status: "False",
      reason: "NoTarget",
      message: "",
      lastTransitionTime: T0,
    }],
  };
  const all = [held, ev({ name: "b" })];
  const cases: Array<
    [string, Parameters<typeof waveCondition>[1], string, string]
  > = [
    [
      "settled",
      { go: true, reason: "AllDisabled", overdue: [] },
      "True",
      "every other pending Eviction's compute service is disabled",
    ],
    [
      "bound passed",
      { go: true, reason: "SettleBoundPassed", overdue: ["h"] },
      "True",
      "waited the settle bound; still enabled, so Nova may place VMs there: h (held by its capacity check)",
    ],
    [
      "waiting",
      { go: false, pending: ["b"], overdue: [], waitMs: 1 },
      "False",
      "host a is disabled; migrations start once these are disabled too: b",
    ],
    [
      "waiting, one overdue",
      { go: false, pending: ["b"], overdue: ["h"], waitMs: 1 },
      "False",
      "host a is disabled; migrations start once these are disabled too: b; past the settle bound, still enabled: h (held by its capacity check)",
    ],
    [
      "many",
      {
        go: false,
        pending: ["b", "c", "d", "e", "f", "g"],
        overdue: [],
        waitMs: 1,
      },
      "False",
      "host a is disabled; migrations start once these are disabled too: b, c, d, e, f, ... (6)",
    ],
  ];
  for (const [what, decision, status, message] of cases) {
    const c = waveCondition("a", decision, all);
    assert.equal(c.status, status, what);
    assert.equal(c.message, message, what);
    assert.equal(c.type, "WaveSettled");
  }
});

const shapeArb = fc.record({
  host: fc.constantFrom("h1", "h2", "h3", "h4", "h5"),
  created: fc.integer({ min: 0, max: 3 }),
  disabled: fc.boolean(),
  finished: fc.boolean(),
  deleting: fc.boolean(),
  preflightFailed: fc.boolean(),
});

Deno.test("waveGate: go means every member is disabled or waited the bound; each wait is bounded (property)", () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.record({
          shape: shapeArb,
          seenAt: fc.integer({ min: 0, max: 5000 }),
        }),
        { minLength: 1, maxLength: 8 },
      ),
      fc.integer({ min: 0, max: 5000 }),
      fc.integer({ min: 0, max: 10_000 }),
      (members, settleMs, nowMs) => {
        const evictions = members.map(({ shape }, i) =>
          ev({
            ...shape,
            name: `e${i}`,
            created: new Date(Date.parse(T0) + shape.created * 1000)
              .toISOString(),
          })
        );
        const seenAt = new Map(
          members.map(({ seenAt }, i) => [`e${i}`, Math.min(seenAt, nowMs)]),
        );
        const self = evictions[0]!;
        const decide = (at: number) =>
          waveGate({
            self,
            evictions,
            waitingSinceMs: 0,
            firstSeenMs: (name) => seenAt.get(name),
            nowMs: at,
            settleMs,
          });
        const d = decide(nowMs);
        const waited = (name: string) => nowMs - (seenAt.get(name) ?? nowMs);
        const members_ = pendingMembers(self, evictions);
        // every enabled member is either holding or past its bound
        const holding = d.go ? [] : d.pending;
        assert.deepEqual([...holding, ...d.overdue].sort(), members_);
        for (const name of d.overdue) assert.ok(waited(name) >= settleMs);
        for (const name of holding) assert.ok(waited(name) < settleMs);
        if (d.go) {
          assert.equal(
            d.reason,
            d.overdue.length === 0 ? "AllDisabled" : "SettleBoundPassed",
          );
        } else {
          assert.ok(d.waitMs > 0 && d.waitMs <= settleMs);
          assert.equal(
            d.waitMs,
            Math.min(...d.pending.map((n) => settleMs - waited(n))),
          );
        }
        // members already disabled never hold anyone
        for (const name of members_) {
          const e = evictions.find((x) => x.metadata?.name === name)!;
          assert.equal(e.status?.hypervisorServiceId, undefined);
        }
        // once the last member seen has waited the bound, it always goes
        assert.ok(decide(Math.max(0, ...seenAt.values()) + settleMs).go);
      },
    ),
  );
});
