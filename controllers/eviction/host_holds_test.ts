import assert from "node:assert/strict";
import type { Eviction, Hypervisor } from "../../models/mod.ts";
import {
  drainingAhead,
  keepDisabledBecause,
  traitsHold,
} from "./host_holds.ts";

const T = "2026-11-29T12:00:00Z";

function hv(
  traits?: "True" | "False",
  maintenance?: "manual" | "auto" | "ha" | "termination" | "",
): Hypervisor {
  return {
    metadata: { name: "node042" },
    spec: maintenance === undefined ? {} : { maintenance },
    status: traits === undefined ? {} : {
      conditions: [{
        type: "TraitsUpdated",
        status: traits,
        reason: traits === "True" ? "Updated" : "Failed",
        message: "",
        lastTransitionTime: T,
      }],
    },
  };
}

function ev(
  name: string,
  created: string,
  extra: Partial<Eviction> = {},
): Eviction {
  return {
    metadata: { name, creationTimestamp: created },
    spec: { hypervisor: "node042", reason: "r" },
    ...extra,
  };
}

Deno.test("traitsHold: waits without a Hypervisor and while TraitsUpdated is not True", () => {
  assert.match(traitsHold("node042", undefined) ?? "", /no Hypervisor node042/);
  assert.match(traitsHold("node042", hv()) ?? "", /TraitsUpdated is missing/);
  assert.match(
    traitsHold("node042", hv("False")) ?? "",
    /TraitsUpdated is False \(Failed\)/,
  );
  assert.equal(traitsHold("node042", hv("True")), undefined);
});

Deno.test("drainingAhead: only the oldest unfinished, undeleted Eviction drains", () => {
  const a = ev("a", "2026-11-29T12:00:00Z");
  const b = ev("b", "2026-11-29T12:00:05Z");
  const c = ev("c", "2026-11-29T12:00:05Z");
  assert.equal(drainingAhead(a, [a, b, c]), undefined);
  assert.equal(drainingAhead(b, [a, b, c])?.metadata?.name, "a");
  // Same second: the name decides.
  assert.equal(drainingAhead(c, [b, c])?.metadata?.name, "b");
  const aDone = { ...a, status: { finishedAt: T } };
  assert.equal(drainingAhead(b, [aDone, b]), undefined);
  const aGoing = {
    ...a,
    metadata: { ...a.metadata, deletionTimestamp: T },
  };
  assert.equal(drainingAhead(b, [aGoing, b]), undefined);
  const other = { ...a, spec: { hypervisor: "node043", reason: "r" } };
  assert.equal(drainingAhead(b, [other, b]), undefined);
});

Deno.test("keepDisabledBecause: maintenance, someone else's reason, another Eviction", () => {
  assert.equal(keepDisabledBecause(hv("True"), "evictor: x", false), undefined);
  assert.equal(keepDisabledBecause(undefined, "evictor: x", false), undefined);
  assert.equal(
    keepDisabledBecause(hv("True", "ha"), "evictor: x", false),
    undefined,
  );
  for (const m of ["manual", "auto", "termination"] as const) {
    assert.match(
      keepDisabledBecause(hv("True", m), "evictor: x", false) ?? "",
      /maintenance/,
    );
  }
  assert.match(
    keepDisabledBecause(undefined, "broken PSU", false) ?? "",
    /someone else \("broken PSU"\)/,
  );
  assert.match(
    keepDisabledBecause(undefined, null, false) ?? "",
    /someone else/,
  );
  assert.match(
    keepDisabledBecause(undefined, "evictor: x", true) ?? "",
    /another Eviction/,
  );
});
