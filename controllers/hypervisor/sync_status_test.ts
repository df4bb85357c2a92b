import assert from "node:assert/strict";
import fc from "fast-check";
import {
  nextSyncDelay,
  sameStatus,
  syncedStatus,
  type SyncObservation,
} from "./sync_status.ts";

const T1 = new Date("2026-01-01T00:01:00Z");
const T2 = new Date("2026-01-01T00:02:00Z");

const known: SyncObservation = {
  host: "n1",
  hypervisor: { id: "hv-1", serviceId: "svc-from-hv", numInstances: 3 },
  service: { id: "svc-1", status: "enabled", disabledReason: null },
  traits: { ok: true, traits: ["CUSTOM_A", "HW_CPU_X86_AVX"] },
};

function cond(s: ReturnType<typeof syncedStatus>, type: string) {
  return s.conditions?.find((c) => c.type === type);
}

Deno.test("syncedStatus: a known host", () => {
  const s = syncedStatus({ evicted: true }, known, T1, 4);
  assert.equal(s.hypervisorId, "hv-1");
  assert.equal(s.serviceId, "svc-1");
  assert.equal(s.numInstances, 3);
  assert.deepEqual(s.traits, ["CUSTOM_A", "HW_CPU_X86_AVX"]);
  assert.equal(s.evicted, true, "fields of others are kept");
  assert.equal(cond(s, "TraitsUpdated")?.status, "True");
  assert.equal(cond(s, "TraitsUpdated")?.observedGeneration, 4);
  assert.equal(cond(s, "HypervisorDisabled")?.reason, "Enabled");
  assert.equal(cond(s, "Onboarding"), undefined);
  // the same observation again changes nothing, not even the times
  assert.ok(sameStatus(syncedStatus(s, known, T2, 4), s));
});

Deno.test("syncedStatus: Placement failed keeps the old traits", () => {
  const before = syncedStatus({}, known, T1, 1);
  const s = syncedStatus(
    before,
    {
      ...known,
      traits: { ok: false, reason: "PlacementError", message: "500" },
    },
    T2,
    1,
  );
  assert.deepEqual(s.traits, before.traits);
  assert.equal(cond(s, "TraitsUpdated")?.status, "False");
  assert.equal(cond(s, "TraitsUpdated")?.reason, "PlacementError");
  assert.equal(cond(s, "TraitsUpdated")?.lastTransitionTime, T2.toISOString());
});

Deno.test("syncedStatus: unknown host reported; removed once Nova knows it", () => {
  const missing = syncedStatus(
    {},
    {
      host: "ghost",
      hypervisor: undefined,
      service: undefined,
      traits: undefined,
    },
    T1,
    1,
  );
  assert.equal(cond(missing, "Onboarding")?.reason, "NotInNova");
  assert.match(cond(missing, "Onboarding")?.message ?? "", /"ghost"/);
  assert.equal(cond(missing, "TraitsUpdated")?.reason, "HypervisorNotFound");
  const found = syncedStatus(missing, known, T2, 1);
  assert.equal(cond(found, "Onboarding"), undefined);
  // an Onboarding condition of someone else (upstream) is left alone
  const theirs = syncedStatus(
    {
      conditions: [{
        type: "Onboarding",
        status: "False",
        reason: "Completed",
        message: "",
        lastTransitionTime: T1.toISOString(),
      }],
    },
    known,
    T2,
    1,
  );
  assert.equal(cond(theirs, "Onboarding")?.reason, "Completed");
});

Deno.test("nextSyncDelay: doubles from 1 s after failures, capped by the interval", () => {
  assert.deepEqual(
    [0, 1, 2, 3, 10, 100].map((f) => nextSyncDelay(f, 60_000)),
    [60_000, 1_000, 2_000, 4_000, 60_000, 60_000],
  );
  // after failures the delay never shrinks and never exceeds the interval
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 1000 }),
      fc.integer({ min: 1, max: 1e7 }),
      (f, i) => {
        const d = nextSyncDelay(f, i);
        assert.ok(d > 0 && d <= i);
        assert.ok(nextSyncDelay(f + 1, i) >= d);
      },
    ),
  );
});
