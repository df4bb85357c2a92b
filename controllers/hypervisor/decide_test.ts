import assert from "node:assert/strict";
import fc from "fast-check";
import {
  disableFor,
  drainRequested,
  type MaintenanceMode,
  maintenanceReason,
  type ServiceState,
  shouldReEnable,
} from "./decide.ts";
import { disabledByUs } from "../compute_service.ts";
import { keepDisabledBecause } from "../eviction/host_holds.ts";

const MODES: Array<MaintenanceMode | undefined> = [
  undefined,
  "",
  "manual",
  "auto",
  "ha",
  "termination",
];
const enabled: ServiceState = { status: "enabled", disabledReason: null };
const ours: ServiceState = {
  status: "disabled",
  disabledReason: "evictor: kernel",
};
const theirs: ServiceState = {
  status: "disabled",
  disabledReason: "hardware replacement",
};

Deno.test("drainRequested and maintenanceReason: table", () => {
  assert.deepEqual(
    MODES.map(drainRequested),
    [false, false, true, true, false, true],
  );
  assert.equal(maintenanceReason("manual", "kernel 6.12"), "kernel 6.12");
  assert.equal(maintenanceReason("auto", "  "), "hypervisor maintenance auto");
  assert.equal(
    maintenanceReason("termination", undefined),
    "hypervisor maintenance termination",
  );
});

Deno.test("disableFor: table", () => {
  assert.equal(disableFor("manual", "kernel", enabled), "evictor: kernel");
  assert.equal(
    disableFor("auto", undefined, enabled),
    "evictor: hypervisor maintenance auto",
  );
  assert.equal(disableFor("ha", "x", enabled), undefined);
  assert.equal(disableFor("", "x", enabled), undefined);
  assert.equal(disableFor("manual", "x", undefined), undefined);
  assert.equal(disableFor("manual", "x", ours), undefined, "already ours");
  assert.equal(disableFor("manual", "x", theirs), undefined, "not ours");
});

Deno.test("shouldReEnable: table of the sequences", () => {
  const rows: Array<[string, Parameters<typeof shouldReEnable>[0], boolean]> = [
    ["maintenance set, Eviction draining", {
      service: ours,
      maintenance: "manual",
      evictionsLeft: 1,
    }, false],
    ["maintenance set, drained, Eviction kept", {
      service: ours,
      maintenance: "manual",
      evictionsLeft: 1,
    }, false],
    ["maintenance cleared, Eviction being deleted", {
      service: ours,
      maintenance: "",
      evictionsLeft: 1,
    }, false],
    ["maintenance cleared, Eviction gone", {
      service: ours,
      maintenance: "",
      evictionsLeft: 0,
    }, true],
    ["Eviction alone deleted (its finalizer)", {
      service: ours,
      maintenance: undefined,
      evictionsLeft: 0,
    }, true],
    ["Eviction deleted while the Hypervisor is in maintenance", {
      service: ours,
      maintenance: "auto",
      evictionsLeft: 0,
    }, false],
    ["someone else disabled it first", {
      service: theirs,
      maintenance: "",
      evictionsLeft: 0,
    }, false],
    ["already enabled", {
      service: enabled,
      maintenance: "",
      evictionsLeft: 0,
    }, false],
    ["host unknown to Nova", {
      service: undefined,
      maintenance: "",
      evictionsLeft: 0,
    }, false],
    ["ha does not hold it", {
      service: ours,
      maintenance: "ha",
      evictionsLeft: 0,
    }, true],
  ];
  for (const [name, input, expected] of rows) {
    assert.equal(shouldReEnable(input), expected, name);
  }
});

Deno.test("shouldReEnable: re-enables exactly when nothing wants it disabled", () => {
  const service = fc.oneof(
    fc.constant(undefined),
    fc.record({
      status: fc.constantFrom("enabled" as const, "disabled" as const),
      disabledReason: fc.oneof(
        fc.constant(null),
        fc.string(),
        fc.string().map((s) => `evictor: ${s}`),
      ),
    }),
  );
  fc.assert(fc.property(
    service,
    fc.constantFrom(...MODES),
    fc.nat(3),
    (svc, maintenance, evictionsLeft) => {
      const wanted = drainRequested(maintenance) || evictionsLeft > 0 ||
        (svc?.status === "disabled" && !disabledByUs(svc.disabledReason));
      const expected = svc?.status === "disabled" && !wanted;
      assert.equal(
        shouldReEnable({ service: svc, maintenance, evictionsLeft }),
        expected,
      );
      // never both disable and re-enable for one observation
      if (disableFor(maintenance, "r", svc) !== undefined) {
        assert.equal(
          shouldReEnable({ service: svc, maintenance, evictionsLeft }),
          false,
        );
      }
    },
  ));
});

Deno.test("shouldReEnable agrees with the eviction finalizer's keepDisabledBecause", () => {
  // The two controllers re-enable under the same rule: for a disabled
  // service, the finalizer (counting the other Evictions still standing)
  // re-enables exactly when shouldReEnable says so.
  fc.assert(fc.property(
    fc.oneof(
      fc.constant(null),
      fc.string(),
      fc.string().map((s) => `evictor: ${s}`),
    ),
    fc.constantFrom(...MODES),
    fc.nat(2),
    (reason, maintenance, others) => {
      const hv = maintenance === undefined
        ? undefined
        : { spec: { maintenance } };
      assert.equal(
        shouldReEnable({
          service: { status: "disabled", disabledReason: reason },
          maintenance,
          evictionsLeft: others,
        }),
        keepDisabledBecause(hv, reason, others > 0) === undefined,
      );
    },
  ));
});
