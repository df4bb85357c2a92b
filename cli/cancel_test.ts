// cancel's decision per host (pure) and its usage errors: what it changes,
// in which order, and when it refuses (no Eviction, maintenance that would
// bring the drain back).
import assert from "node:assert/strict";
import type { Eviction, Hypervisor } from "../models/mod.ts";
import {
  type CancelOptions,
  cancelPlan,
  type CancelStep,
  runCancel,
  stepLine,
  waitLine,
} from "./cancel.ts";
import { UsageError } from "./usage.ts";

function ev(name: string, host = name, inFlightCount = 0): Eviction {
  return {
    metadata: { name },
    spec: { hypervisor: host, reason: "r" },
    status: { inFlightCount },
  };
}

function hv(maintenance?: string, reason?: string): Hypervisor {
  return {
    metadata: { name: "n1" },
    spec: {
      ...(maintenance === undefined
        ? {}
        : { maintenance: maintenance as "manual" }),
      ...(reason === undefined ? {} : { maintenanceReason: reason }),
    },
  };
}

const PLAIN: CancelOptions = { abortInFlight: false, clearMaintenance: false };

Deno.test("cancelPlan: steps per host, or a refusal that says why and the way out", () => {
  const rows: Array<{
    name: string;
    evictions: Eviction[];
    hypervisor?: Hypervisor | undefined;
    options?: Partial<CancelOptions>;
    steps?: CancelStep[];
    error?: RegExp;
  }> = [
    {
      name: "a drain of our own: delete it",
      evictions: [ev("n1", "n1", 3)],
      steps: [{ kind: "delete", eviction: "n1", host: "n1", inFlight: 3 }],
    },
    {
      name: "no Hypervisor object: the same",
      evictions: [ev("n1")],
      hypervisor: undefined,
      steps: [{ kind: "delete", eviction: "n1", host: "n1", inFlight: 0 }],
    },
    {
      name: "--abort-in-flight: the annotation before the delete",
      evictions: [ev("n1", "n1", 2)],
      options: { abortInFlight: true },
      steps: [
        { kind: "annotate", eviction: "n1" },
        { kind: "delete", eviction: "n1", host: "n1", inFlight: 2 },
      ],
    },
    {
      name: "two Evictions of the host: both",
      evictions: [ev("b", "n1"), ev("a", "n1")],
      options: { abortInFlight: true },
      steps: [
        { kind: "annotate", eviction: "a" },
        { kind: "annotate", eviction: "b" },
        { kind: "delete", eviction: "b", host: "n1", inFlight: 0 },
        { kind: "delete", eviction: "a", host: "n1", inFlight: 0 },
      ],
    },
    {
      name: "no Eviction",
      evictions: [],
      error: /^no Eviction drains n1: nothing to cancel/,
    },
    ...["manual", "auto", "termination"].map((mode) => ({
      name: `maintenance ${mode}: refused, saying what brings it back`,
      evictions: [ev("n1")],
      hypervisor: hv(mode, "kernel"),
      error: new RegExp(
        `^n1: Hypervisor n1 is in maintenance "${mode}" \\("kernel"\\), which recreates its Eviction as soon as it is deleted.*--clear-maintenance.*kubectl patch hypervisor n1`,
      ),
    })),
    {
      name: "maintenance with --clear-maintenance: cleared, then deleted",
      evictions: [ev("n1", "n1", 1)],
      hypervisor: hv("auto"),
      options: { clearMaintenance: true, abortInFlight: true },
      steps: [
        { kind: "annotate", eviction: "n1" },
        { kind: "clearMaintenance", hypervisor: "n1", mode: "auto" },
        { kind: "delete", eviction: "n1", host: "n1", inFlight: 1 },
      ],
    },
    {
      name: "maintenance ha asks no drain: nothing to clear",
      evictions: [ev("n1")],
      hypervisor: hv("ha"),
      options: { clearMaintenance: true },
      steps: [{ kind: "delete", eviction: "n1", host: "n1", inFlight: 0 }],
    },
    {
      name: "maintenance cleared already: delete",
      evictions: [ev("n1")],
      hypervisor: hv(""),
      steps: [{ kind: "delete", eviction: "n1", host: "n1", inFlight: 0 }],
    },
  ];
  for (const r of rows) {
    const d = cancelPlan(
      { host: "n1", evictions: r.evictions, hypervisor: r.hypervisor },
      { ...PLAIN, ...r.options },
    );
    if (r.error !== undefined) {
      assert.ok(!d.ok, r.name);
      assert.match(d.ok ? "" : d.error, r.error, r.name);
      assert.ok(!(d.ok ? "" : d.error).includes("\n"), "one line");
    } else {
      assert.ok(d.ok, `${r.name}: ${d.ok ? "" : d.error}`);
      assert.deepEqual(d.ok ? d.steps : [], r.steps, r.name);
    }
  }
});

Deno.test("stepLine: kubectl's words, (dry run), what happens to the copies", () => {
  const del: CancelStep = {
    kind: "delete",
    eviction: "n1",
    host: "n1",
    inFlight: 4,
  };
  assert.equal(
    stepLine(del, false, false),
    "eviction.kvm.cloud.sap/n1 deleted: no new migration starts; its 4 migrations in flight finish, then the compute service of n1 is re-enabled unless someone else disabled it",
  );
  assert.match(
    stepLine(del, true, true),
    /^eviction\.kvm\.cloud\.sap\/n1 deleted \(dry run\): .*4 migrations in flight are aborted/,
  );
  assert.match(
    stepLine({ ...del, inFlight: 0 }, true, false),
    /nothing in flight, then/,
  );
  assert.equal(
    stepLine(
      { kind: "clearMaintenance", hypervisor: "n1", mode: "manual" },
      false,
      true,
    ),
    'hypervisor.kvm.cloud.sap/n1 maintenance "manual" cleared (dry run)',
  );
  assert.equal(
    stepLine({ kind: "annotate", eviction: "n1" }, true, false),
    "eviction.kvm.cloud.sap/n1 annotated evictor.kvm.cloud.sap/abort-in-flight=true",
  );
});

Deno.test("runCancel: usage mistakes name the bad value, before any cluster call", async () => {
  const io = {
    kubeConfig: () => Promise.reject(new Error("no cluster in this test")),
    out: () => {},
    err: () => {},
    interactive: false,
  };
  const rows: Array<[string[], RegExp]> = [
    [[], /^cancel needs a HOST name$/],
    [
      ["Node_1"],
      /^HOST "Node_1" is not valid: expected a Kubernetes object name/,
    ],
    [
      ["n1", "--timeout", "soon"],
      /^--timeout "soon" is not valid: expected a duration such as 90s, 5m or 1h30m/,
    ],
    [["n1", "--abort"], /^cancel: Unknown option '--abort'/],
  ];
  for (const [args, want] of rows) {
    await assert.rejects(
      () => runCancel(args, io, () => {}),
      (e: unknown) => {
        assert.ok(e instanceof UsageError, String(e));
        assert.equal(e.command, "cancel");
        assert.match(e.message, want);
        return true;
      },
      args.join(" "),
    );
  }
});

Deno.test("waitLine: progress, created again and the deadline, each naming the Eviction", () => {
  const e = (inFlightCount: number) => ({
    metadata: { name: "n1" },
    spec: { hypervisor: "node042", reason: "r" },
    status: { inFlightCount },
  });
  const cases: [Parameters<typeof waitLine>, string][] = [
    [
      ["cancelling", e(2)],
      "n1: cancelling: 2 migrations in flight settle first",
    ],
    [
      ["cancelling", e(0)],
      "n1: cancelling: 0 migrations in flight (re-enabling the compute service)",
    ],
    [
      ["recreated", e(0)],
      "error: eviction.kvm.cloud.sap/n1 was created again (someone or the maintenance controller drains node042 anew): see kubectl get hypervisor node042",
    ],
    [
      ["timedOut", e(3), 90_000],
      "error: timed out waiting for the deletion of eviction.kvm.cloud.sap/n1 after 90 s: 3 migrations in flight (the cancel goes on)",
    ],
  ];
  for (const [args, want] of cases) assert.equal(waitLine(...args), want);
});
