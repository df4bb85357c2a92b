import { allow, deny } from "../framework/admission.ts";
import assert from "node:assert/strict";
import fc from "fast-check";
import { freezeSettings, policySettings } from "../limits/resolve.ts";
import { type EvictionContext, validateEviction } from "./eviction.ts";
import { FORCE_COMPLETE_EFFECT } from "../limits/convergence_validation.ts";

const HANA = "CUSTOM_HANA_EXCLUSIVE_HOST";
const HOSTS = new Map<string, readonly string[]>([
  ["node001", []],
  ["node002", [HANA, "HW_CPU_X86_AVX2"]],
  ["node003", []],
]);
const CONTEXT: EvictionContext = {
  evictions: [
    { name: "node001", hypervisor: "node001", finished: false },
    { name: "node003-old", hypervisor: "node003", finished: true },
    {
      name: "node004",
      hypervisor: "node004",
      finished: false,
      deleting: true,
    },
  ],
  hypervisorTraits: (name) => HOSTS.get(name),
  settings: policySettings({
    maxConcurrentMigrations: 4,
    traitLimits: [{ trait: HANA, maxConcurrentMigrations: 1 }],
    abortStuckMigrations: false,
  }),
};

const FC =
  `spec.convergence.onTimeout: ForceComplete: ${FORCE_COMPLETE_EFFECT}; a force-completed copy still running after forceCompleteTimeoutSeconds is aborted`;
const ABOVE_NOVA = (n: number) =>
  `spec.convergence.completionTimeoutPerGiB: ${n} is above Nova's default live_migration_completion_timeout (800 s per GiB): unless the hosts' nova.conf raises it, Nova acts first (its live_migration_timeout_action, abort by default)`;
const NO_PAUSE: EvictionContext = {
  ...CONTEXT,
  settings: policySettings({
    maxConcurrentMigrations: 4,
    traitLimits: [{ trait: HANA, maxConcurrentMigrations: 1 }],
    abortStuckMigrations: false,
    noPauseTraits: [HANA],
  }),
};

function eviction(
  name: string,
  spec: Record<string, unknown>,
  meta: Record<string, unknown> = {},
): unknown {
  return {
    apiVersion: "kvm.cloud.sap/v1",
    kind: "Eviction",
    metadata: { name, ...meta },
    spec,
  };
}

Deno.test("validateEviction: every rule, each message exact", async (t) => {
  const cases: Array<{
    name: string;
    obj: unknown;
    old?: unknown;
    context?: EvictionContext;
    message?: string;
    warnings?: string[];
  }> = [
    {
      name: "a good Eviction is allowed without warnings",
      obj: eviction("node002", {
        hypervisor: "node002",
        reason: "kernel 6.12",
      }),
    },
    {
      name: "a second unfinished Eviction for a hypervisor: deny, naming it",
      obj: eviction("node001-b", { hypervisor: "node001", reason: "again" }),
      message:
        'spec.hypervisor: got "node001", which already has the unfinished Eviction "node001"; expected at most one unfinished Eviction per hypervisor (wait until "node001" is finished, or delete it)',
    },
    {
      name:
        "an Eviction for a hypervisor whose old Eviction is being deleted: deny",
      obj: eviction("node004-b", { hypervisor: "node004", reason: "again" }),
      message:
        'spec.hypervisor: got "node004", which already has the Eviction "node004" that is being deleted; expected at most one unfinished Eviction per hypervisor (wait until "node004" is gone)',
      warnings: [
        'spec.hypervisor: no Hypervisor named "node004" exists, so its traits and trait limits are unknown; check the name',
      ],
    },
    {
      name: "an Eviction for a hypervisor whose old one is finished: allow",
      obj: eviction("node003", { hypervisor: "node003", reason: "again" }),
    },
    {
      name: "an update of the unfinished Eviction itself: allow",
      obj: eviction("node001", {
        hypervisor: "node001",
        reason: "kernel 6.13",
      }),
      old: eviction("node001", { hypervisor: "node001", reason: "kernel" }),
    },
    {
      name: "a reason that is only whitespace: deny",
      obj: eviction("node002", { hypervisor: "node002", reason: " \t " }),
      message:
        'spec.reason: got " \\t "; expected a reason that is not only whitespace (it becomes the compute service\'s disabled reason)',
    },
    {
      name: "an update to a whitespace reason: deny",
      obj: eviction("node002", { hypervisor: "node002", reason: "  " }),
      old: eviction("node002", { hypervisor: "node002", reason: "kernel" }),
      message:
        'spec.reason: got "  "; expected a reason that is not only whitespace (it becomes the compute service\'s disabled reason)',
    },
    {
      name:
        "an update keeping an old whitespace reason (finalizer removal): allow",
      obj: eviction("node002", { hypervisor: "node002", reason: "  " }),
      old: eviction("node002", { hypervisor: "node002", reason: "  " }),
    },
    {
      name: "an empty reason: deny",
      obj: eviction("node002", { hypervisor: "node002", reason: "" }),
      message:
        'spec.reason: got ""; expected a reason of 1 to 255 characters that says why the host is drained',
    },
    {
      name: "a hypervisor with no Hypervisor object: allow, warn",
      obj: eviction("node999", { hypervisor: "node999", reason: "r" }),
      warnings: [
        'spec.hypervisor: no Hypervisor named "node999" exists, so its traits and trait limits are unknown; check the name',
      ],
    },
    {
      name:
        "maxConcurrentMigrations above the trait limit: allow, warn clamped",
      obj: eviction("node002", {
        hypervisor: "node002",
        reason: "r",
        maxConcurrentMigrations: 3,
      }),
      warnings: [
        `spec.maxConcurrentMigrations: 3 is above the limit 1 that the EvictionPolicy gives hypervisor "node002" (trait ${HANA}), so it is clamped to 1`,
      ],
    },
    {
      name: "maxConcurrentMigrations above the default: allow, warn clamped",
      obj: eviction("node003", {
        hypervisor: "node003",
        reason: "r",
        maxConcurrentMigrations: 8,
      }),
      warnings: [
        'spec.maxConcurrentMigrations: 8 is above the limit 4 that the EvictionPolicy gives hypervisor "node003" (the default), so it is clamped to 4',
      ],
    },
    {
      name: "maxConcurrentMigrations above the flags' default, host unknown",
      obj: eviction("node999", {
        hypervisor: "node999",
        reason: "r",
        maxConcurrentMigrations: 8,
      }),
      context: {
        ...CONTEXT,
        settings: freezeSettings("flags", {
          maxConcurrentMigrations: 2,
          abortStuckMigrations: false,
        }),
      },
      warnings: [
        'spec.hypervisor: no Hypervisor named "node999" exists, so its traits and trait limits are unknown; check the name',
        `spec.maxConcurrentMigrations: 8 is above the limit 2 that the start-up flags give hypervisor "node999" (the default; the host's traits are unknown), so it is clamped to 2`,
      ],
    },
    {
      name: "maxConcurrentMigrations at or below the limit: no warning",
      obj: eviction("node003", {
        hypervisor: "node003",
        reason: "r",
        maxConcurrentMigrations: 4,
      }),
    },
    {
      name: "maxConcurrentMigrations out of bounds: deny",
      obj: eviction("node003", {
        hypervisor: "node003",
        reason: "r",
        maxConcurrentMigrations: 0,
      }),
      message:
        "spec.maxConcurrentMigrations: got 0; expected an integer from 1 to 64, which can only lower the limit",
    },
    {
      name: "no spec: deny",
      obj: { metadata: { name: "x" } },
      message:
        "spec: got nothing; expected an object with hypervisor and reason",
    },
    {
      name: "hypervisor missing: deny",
      obj: eviction("x", { reason: "r" }),
      message:
        "spec.hypervisor: got nothing; expected the name of a Hypervisor, 1 to 255 characters",
    },
    {
      name: "not an object: deny",
      obj: 42,
      message: "object: got 42; expected an Eviction object",
    },
    {
      name: "several refusals: one line",
      obj: eviction("node001-b", { hypervisor: "node001", reason: " " }),
      message:
        'spec.reason: got " "; expected a reason that is not only whitespace (it becomes the compute service\'s disabled reason) | spec.hypervisor: got "node001", which already has the unfinished Eviction "node001"; expected at most one unfinished Eviction per hypervisor (wait until "node001" is finished, or delete it)',
    },
    {
      name: "convergence: bad bounds and an unknown action, one line",
      obj: eviction("node003", {
        hypervisor: "node003",
        reason: "r",
        convergence: { progressTimeoutSeconds: 0, onTimeout: "pause" },
      }),
      message:
        'spec.convergence.progressTimeoutSeconds: got 0; expected an integer from 1 to 86400 (seconds) | spec.convergence.onTimeout: got "pause"; expected one of Report, Abort, ForceComplete',
    },
    {
      name: "convergence: not an object",
      obj: eviction("node003", {
        hypervisor: "node003",
        reason: "r",
        convergence: "Abort",
      }),
      message:
        'spec.convergence: got "Abort"; expected an object with any of completionTimeoutPerGiB, progressTimeoutSeconds, maxAbortedTries, forceCompleteTimeoutSeconds, onTimeout',
    },
    {
      name: "convergence: ForceComplete and a bound above Nova's warn",
      obj: eviction("node003", {
        hypervisor: "node003",
        reason: "r",
        convergence: {
          onTimeout: "ForceComplete",
          completionTimeoutPerGiB: 801,
        },
      }),
      warnings: [FC, ABOVE_NOVA(801)],
    },
    {
      name: "convergence: ForceComplete on a noPauseTraits host warns louder",
      obj: eviction("node002", {
        hypervisor: "node002",
        reason: "r",
        convergence: { onTimeout: "ForceComplete" },
      }),
      context: NO_PAUSE,
      warnings: [
        FC,
        `spec.convergence: VMs on this host must never be paused (EvictionPolicy spec.noPauseTraits: ${HANA}), but its drain resolves to onTimeout ForceComplete from spec.convergence.onTimeout: ${FORCE_COMPLETE_EFFECT}; set spec.convergence.onTimeout to Abort or Report`,
      ],
    },
    {
      name:
        "convergence: the policy's ForceComplete reaching a noPauseTraits host",
      obj: eviction("node002", { hypervisor: "node002", reason: "r" }),
      context: {
        ...NO_PAUSE,
        settings: policySettings({
          maxConcurrentMigrations: 4,
          abortStuckMigrations: false,
          convergence: { onTimeout: "ForceComplete" },
          noPauseTraits: [HANA],
        }),
      },
      warnings: [
        `spec.convergence: VMs on this host must never be paused (EvictionPolicy spec.noPauseTraits: ${HANA}), but its drain resolves to onTimeout ForceComplete from the EvictionPolicy (policy): ${FORCE_COMPLETE_EFFECT}; set spec.convergence.onTimeout to Abort or Report`,
      ],
    },
    {
      name: "convergence: the Eviction's Abort protects a noPauseTraits host",
      obj: eviction("node002", {
        hypervisor: "node002",
        reason: "r",
        convergence: { onTimeout: "Abort" },
      }),
      context: {
        ...NO_PAUSE,
        settings: policySettings({
          maxConcurrentMigrations: 4,
          abortStuckMigrations: false,
          convergence: { onTimeout: "ForceComplete" },
          noPauseTraits: [HANA],
        }),
      },
    },
    {
      name: "convergence: ForceComplete on a host without a noPauseTrait",
      obj: eviction("node003", {
        hypervisor: "node003",
        reason: "r",
        convergence: { onTimeout: "ForceComplete" },
      }),
      context: NO_PAUSE,
      warnings: [FC],
    },
    {
      name:
        "convergence: an update that leaves it as it was repeats no warning",
      obj: eviction("node003", {
        hypervisor: "node003",
        reason: "r2",
        convergence: { onTimeout: "ForceComplete" },
      }),
      old: eviction("node003", {
        hypervisor: "node003",
        reason: "r",
        convergence: { onTimeout: "ForceComplete" },
      }),
    },
    {
      name: "convergence: an update that changes it is checked",
      obj: eviction("node003", {
        hypervisor: "node003",
        reason: "r",
        convergence: { maxAbortedTries: -1 },
      }),
      old: eviction("node003", { hypervisor: "node003", reason: "r" }),
      message:
        "spec.convergence.maxAbortedTries: got -1; expected an integer from 1 to 100 (tries)",
    },
    {
      name: "an object being deleted is allowed",
      obj: eviction("node001-b", { hypervisor: "node001", reason: " " }, {
        deletionTimestamp: "2026-11-29T00:00:00Z",
      }),
      old: eviction("node001-b", { hypervisor: "node001", reason: " " }),
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const v = validateEviction(c.obj, c.old, c.context ?? CONTEXT);
      assert.deepEqual(
        v,
        c.message === undefined
          ? allow(c.warnings)
          : deny(c.message, { warnings: c.warnings ?? [] }),
      );
    });
  }
});

Deno.test("property: validateEviction never throws and messages are one line", () => {
  fc.assert(fc.property(
    fc.oneof(
      fc.record({
        metadata: fc.record({ name: fc.string() }, { requiredKeys: [] }),
        spec: fc.record({
          hypervisor: fc.oneof(
            fc.constantFrom("node001", "node002", "node999"),
            fc.anything(),
          ),
          reason: fc.oneof(fc.string({ unit: "binary" }), fc.anything()),
          maxConcurrentMigrations: fc.oneof(
            fc.integer({ min: -1, max: 70 }),
            fc.anything(),
          ),
        }, { requiredKeys: [] }),
      }),
      fc.anything(),
    ),
    fc.option(fc.anything(), { nil: undefined }),
    (obj, old) => {
      const v = validateEviction(obj, old, CONTEXT);
      if (!v.allowed) assert.ok(!/[\n\r\u2028\u2029]/.test(v.message));
      for (const w of v.warnings ?? []) {
        assert.ok(!/[\n\r\u2028\u2029]/.test(w));
      }
    },
  ));
});
