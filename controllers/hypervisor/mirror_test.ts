import assert from "node:assert/strict";
import fc from "fast-check";
import type { Eviction } from "../../models/mod.ts";
import {
  applyMirror,
  mirrorEviction,
  serviceCondition,
  withCondition,
} from "./mirror.ts";

const T0 = "2026-01-01T00:00:00Z";

function eviction(
  conditions: NonNullable<Eviction["status"]>["conditions"],
): Eviction {
  return {
    metadata: { name: "node042" },
    spec: { hypervisor: "node042", reason: "kernel" },
    ...(conditions === undefined ? {} : { status: { conditions } }),
  };
}

Deno.test("mirrorEviction: table", () => {
  const rows: Array<
    [
      string,
      Eviction | undefined,
      boolean,
      string | undefined,
      boolean | undefined,
    ]
  > = [
    ["no drain, no Eviction: nothing", undefined, false, undefined, undefined],
    [
      "drain asked, Eviction not there yet",
      undefined,
      true,
      "True/Pending",
      false,
    ],
    [
      "Eviction without conditions",
      eviction(undefined),
      true,
      "True/Pending",
      false,
    ],
    [
      "running",
      eviction([{
        type: "Evicting",
        status: "True",
        reason: "Running",
        message: "2 in flight",
        lastTransitionTime: T0,
      }]),
      true,
      "True/Running",
      false,
    ],
    [
      "succeeded: evicted",
      eviction([{
        type: "Evicting",
        status: "False",
        reason: "Succeeded",
        message: "the host is empty",
        lastTransitionTime: T0,
      }]),
      true,
      "False/Succeeded",
      true,
    ],
    [
      "failed: not evicted",
      eviction([{
        type: "Evicting",
        status: "False",
        reason: "Failed",
        message: "2 VMs need a person",
        lastTransitionTime: T0,
      }]),
      true,
      "False/Failed",
      false,
    ],
    [
      "preflight failed",
      eviction([{
        type: "PreflightChecksSucceeded",
        status: "False",
        reason: "HypervisorGone",
        message: "Nova no longer knows node042",
        lastTransitionTime: T0,
      }]),
      true,
      "False/PreflightFailed",
      false,
    ],
    [
      "an Eviction alone is mirrored too",
      eviction([{
        type: "Evicting",
        status: "True",
        reason: "Waiting",
        message: "held",
        lastTransitionTime: T0,
      }]),
      false,
      "True/Waiting",
      false,
    ],
  ];
  for (const [name, ev, wanted, expected, evicted] of rows) {
    const m = mirrorEviction(ev, wanted);
    assert.equal(
      m.evicting === undefined
        ? undefined
        : `${m.evicting.status}/${m.evicting.reason}`,
      expected,
      name,
    );
    assert.equal(m.evicted, evicted, `${name}: evicted`);
  }
  const running = mirrorEviction(
    eviction([{
      type: "Evicting",
      status: "True",
      reason: "Running",
      message: "2 in flight",
      lastTransitionTime: T0,
    }]),
    true,
  );
  assert.equal(running.evicting?.message, "Eviction node042: 2 in flight");
});

Deno.test("mirrorEviction: evicted exactly when the Eviction Succeeded or Nova knows no such host", () => {
  fc.assert(fc.property(
    fc.constantFrom("True" as const, "False" as const, "Unknown" as const),
    fc.constantFrom("Running", "Waiting", "Succeeded", "Failed", "NotInNova"),
    fc.boolean(),
    (status, reason, wanted) => {
      const m = mirrorEviction(
        eviction([{
          type: "Evicting",
          status,
          reason,
          message: "m",
          lastTransitionTime: T0,
        }]),
        wanted,
      );
      assert.equal(m.evicting?.status, status);
      assert.equal(m.evicting?.reason, reason);
      assert.equal(
        m.evicted,
        status === "False" &&
          (reason === "Succeeded" || reason === "NotInNova"),
      );
    },
  ));
});

Deno.test("applyMirror: sets, keeps the transition time, removes", () => {
  const t1 = new Date("2026-01-01T00:01:00Z");
  const t2 = new Date("2026-01-01T00:02:00Z");
  const a = applyMirror({ traits: ["X"] }, mirrorEviction(undefined, true), t1);
  assert.equal(a.evicted, false);
  assert.equal(a.conditions?.[0]?.lastTransitionTime, t1.toISOString());
  const b = applyMirror(a, mirrorEviction(eviction(undefined), true), t2);
  assert.equal(b.conditions?.[0]?.lastTransitionTime, t1.toISOString());
  const c = applyMirror(b, mirrorEviction(undefined, false), t2);
  assert.deepEqual(c, { traits: ["X"] });
  const other = withCondition(
    c,
    serviceCondition({ status: "enabled", disabledReason: null }),
    "HypervisorDisabled",
    t2,
  );
  const d = applyMirror(other, mirrorEviction(undefined, false), t2);
  assert.deepEqual(d.conditions?.map((x) => x.type), ["HypervisorDisabled"]);
});

Deno.test("serviceCondition: table", () => {
  const c = (status: "enabled" | "disabled", reason: string | null) => {
    const x = serviceCondition({ status, disabledReason: reason });
    return `${x.status}/${x.reason}`;
  };
  assert.equal(c("enabled", null), "False/Enabled");
  assert.equal(c("disabled", "evictor: kernel"), "True/DisabledByEvictor");
  assert.equal(c("disabled", "broken disk"), "True/DisabledByOthers");
  assert.equal(c("disabled", null), "True/DisabledByOthers");
});
