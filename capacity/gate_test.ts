import { strict as assert } from "node:assert";
import { setCondition } from "../controllers/conditions.ts";
import type { Eviction } from "../models/mod.ts";
import { applyGate, type CapacityGateResult, waveOf } from "./gate.ts";

const NOW = new Date("2026-01-01T00:00:00Z");

function gate(
  status: "True" | "False" | "Unknown",
  hold: boolean,
  message = `m-${status}`,
): CapacityGateResult {
  return {
    condition: {
      type: "CapacityChecked",
      status,
      reason: status === "True"
        ? "Fits"
        : status === "False"
        ? "NoTarget"
        : "CheckFailed",
      message,
    },
    hold,
    ...(status === "Unknown" ? {} : { predictedMakespanSeconds: 42 }),
  };
}

Deno.test("applyGate: condition, prediction, and an event only for a new non-True verdict", () => {
  const cases: {
    name: string;
    before?: CapacityGateResult;
    now: CapacityGateResult;
    event?: string;
  }[] = [
    { name: "fits: no event", now: gate("True", false) },
    {
      name: "no target under Warn",
      now: gate("False", false),
      event: "CapacityInsufficient",
    },
    {
      name: "no target under Hold",
      now: gate("False", true),
      event: "CapacityHold",
    },
    {
      name: "same verdict again: no second event",
      before: gate("False", true),
      now: gate("False", true),
    },
    {
      name: "a changed message is a new event",
      before: gate("False", true, "one"),
      now: gate("False", true, "two"),
      event: "CapacityHold",
    },
    {
      name: "check failed",
      now: gate("Unknown", false),
      event: "CapacityInsufficient",
    },
  ];
  for (const c of cases) {
    const start = c.before === undefined
      ? {}
      : applyGate({}, c.before, NOW, 1, setCondition).status;
    const out = applyGate(start, c.now, NOW, 1, setCondition);
    const cond = out.status.conditions?.find((x) =>
      x.type === "CapacityChecked"
    );
    assert.equal(cond?.status, c.now.condition.status, c.name);
    assert.equal(cond?.message, c.now.condition.message, c.name);
    assert.equal(out.hold, c.now.hold, c.name);
    assert.equal(out.event?.reason, c.event, c.name);
    assert.equal(
      out.status.predictedMakespanSeconds,
      c.now.predictedMakespanSeconds ?? start.predictedMakespanSeconds,
      c.name,
    );
  }
});

Deno.test("waveOf: this host and every unfinished Eviction not being deleted", () => {
  const ev = (host: string, extra: Partial<Eviction> = {}): Eviction => ({
    metadata: { name: host },
    spec: { hypervisor: host, reason: "r" },
    ...extra,
  });
  const wave = waveOf(
    "a",
    [
      ev("b"),
      ev("done", { status: { finishedAt: "2026-01-01T00:00:00Z" } }),
      ev("gone", {
        metadata: { name: "gone", deletionTimestamp: "2026-01-01T00:00:00Z" },
      }),
      ev("a"),
    ],
    (name) =>
      name === "b"
        ? { metadata: { name }, spec: {}, status: { hypervisorId: "rp-b" } }
        : undefined,
  );
  assert.deepEqual(wave, [{ name: "a" }, { name: "b", providerUuid: "rp-b" }]);
});
