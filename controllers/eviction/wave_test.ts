import assert from "node:assert/strict";
import fc from "fast-check";
import type { Eviction } from "../../models/mod.ts";
import { pendingMembers, waveGate } from "./wave.ts";

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

Deno.test("waveGate: waits for pending members, at most the settle bound", () => {
  const self = ev({ name: "a", disabled: true });
  const b = ev({ name: "b" });
  const cases: Array<
    [string, Eviction[], number, ReturnType<typeof waveGate>]
  > = [
    ["all disabled", [self, ev({ name: "b", disabled: true })], 0, {
      go: true,
      reason: "AllDisabled",
      pending: [],
    }],
    ["one pending, just started", [self, b], 0, {
      go: false,
      pending: ["b"],
      waitMs: 1000,
    }],
    ["one pending, half way", [self, b], 400, {
      go: false,
      pending: ["b"],
      waitMs: 600,
    }],
    ["one pending, bound passed", [self, b], 1000, {
      go: true,
      reason: "SettleBoundPassed",
      pending: ["b"],
    }],
  ];
  for (const [what, evictions, waited, want] of cases) {
    assert.deepEqual(
      waveGate({
        self,
        evictions,
        waitingSinceMs: 5000,
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
        nowMs: 0,
        settleMs: -1,
      }),
    /settleMs must be a finite number >= 0, got -1/,
  );
});

const shapeArb = fc.record({
  host: fc.constantFrom("h1", "h2", "h3", "h4", "h5"),
  created: fc.integer({ min: 0, max: 3 }),
  disabled: fc.boolean(),
  finished: fc.boolean(),
  deleting: fc.boolean(),
  preflightFailed: fc.boolean(),
});

Deno.test("waveGate: go means every member is disabled or the bound passed; waiting is bounded (property)", () => {
  fc.assert(
    fc.property(
      fc.array(shapeArb, { minLength: 1, maxLength: 8 }),
      fc.integer({ min: 0, max: 5000 }),
      fc.integer({ min: 0, max: 5000 }),
      (shapes, settleMs, waited) => {
        const evictions = shapes.map((s, i) =>
          ev({
            ...s,
            name: `e${i}`,
            created: new Date(Date.parse(T0) + s.created * 1000).toISOString(),
          })
        );
        const self = evictions[0]!;
        const d = waveGate({
          self,
          evictions,
          waitingSinceMs: 0,
          nowMs: waited,
          settleMs,
        });
        const live = (e: Eviction) =>
          e !== self && e.spec.hypervisor !== self.spec.hypervisor &&
          e.metadata?.deletionTimestamp === undefined &&
          e.status?.finishedAt === undefined &&
          e.status?.conditions === undefined;
        if (d.go && d.reason === "AllDisabled") {
          // an enabled live member is let through only behind another
          // Eviction of its own hypervisor (which drains first)
          for (const e of evictions.filter(live)) {
            if (e.status?.hypervisorServiceId !== undefined) continue;
            assert.ok(
              evictions.some((x) =>
                x !== e && x.spec.hypervisor === e.spec.hypervisor &&
                x.metadata?.deletionTimestamp === undefined &&
                x.status?.finishedAt === undefined
              ),
            );
          }
        }
        if (d.go) assert.ok(d.pending.length === 0 || waited >= settleMs);
        else {
          assert.ok(d.pending.length > 0 && waited < settleMs);
          assert.ok(d.waitMs > 0 && d.waitMs <= settleMs);
          assert.equal(d.waitMs, settleMs - waited);
        }
        // members already disabled never hold anyone
        for (const name of d.pending) {
          const e = evictions.find((x) => x.metadata?.name === name)!;
          assert.equal(e.status?.hypervisorServiceId, undefined);
          assert.ok(live(e));
        }
        // once the bound passed, it always goes
        assert.ok(
          waveGate({
            self,
            evictions,
            waitingSinceMs: 0,
            nowMs: settleMs,
            settleMs,
          }).go,
        );
      },
    ),
  );
});
