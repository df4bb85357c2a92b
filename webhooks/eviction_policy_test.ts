import { allow, deny } from "../framework/admission.ts";
import assert from "node:assert/strict";
import fc from "fast-check";
import { EvictionPolicySpecSchema } from "../models/mod.ts";
import { FORCE_COMPLETE_EFFECT } from "../limits/convergence_validation.ts";
import { policySettings, resolveLimit } from "../limits/resolve.ts";
import {
  type PolicyContext,
  validateEvictionPolicy,
} from "./eviction_policy.ts";

const NAME =
  "a placement trait name: upper-case letters, digits and underscore (^[A-Z0-9_]+$), 1 to 255 characters";
const NONE: PolicyContext = { runningEvictions: [] };

function policy(
  spec: unknown,
  name: unknown = "default",
): Record<string, unknown> {
  return {
    apiVersion: "kvm.cloud.sap/v1alpha1",
    kind: "EvictionPolicy",
    metadata: { name },
    spec,
  };
}

function tl(trait: unknown, max: unknown) {
  return { trait, maxConcurrentMigrations: max };
}

const DRAINS: PolicyContext = {
  runningEvictions: [
    { name: "node001", hypervisor: "node001", traits: [], effectiveLimit: 4 },
    {
      name: "node002",
      hypervisor: "node002",
      traits: ["CUSTOM_HANA_EXCLUSIVE_HOST"],
      effectiveLimit: 1,
    },
    {
      name: "node003",
      hypervisor: "node003",
      traits: ["HW_GPU_API_CUDA"],
      effectiveLimit: 2,
      maxConcurrentMigrations: 2,
    },
  ],
};

Deno.test("validateEvictionPolicy: every rule, each message exact", async (t) => {
  const cases: Array<{
    name: string;
    obj: unknown;
    old?: unknown;
    context?: PolicyContext;
    message?: string;
    warnings?: string[];
  }> = [
    {
      name: "a good policy is allowed without warnings",
      obj: policy({
        maxConcurrentMigrations: 4,
        traitLimits: [
          tl("CUSTOM_HANA_EXCLUSIVE_HOST", 1),
          tl("HW_GPU_API_CUDA", 2),
        ],
        clusterMaxConcurrentMigrations: 20,
        migrationTimeoutSeconds: 3600,
        abortStuckMigrations: false,
      }),
    },
    {
      name: "name other than default: deny",
      obj: policy({ maxConcurrentMigrations: 4 }, "fast"),
      message:
        'metadata.name: got "fast"; expected "default", because there is one EvictionPolicy per cluster',
    },
    {
      name: "no name: deny",
      obj: { spec: { maxConcurrentMigrations: 4 } },
      message:
        'metadata.name: got nothing; expected "default", because there is one EvictionPolicy per cluster',
    },
    {
      name: "not an object: deny",
      obj: "policy",
      message: 'object: got "policy"; expected an EvictionPolicy object',
    },
    {
      name: "trait name not in placement syntax: deny",
      obj: policy({
        maxConcurrentMigrations: 4,
        traitLimits: [tl("custom_hana", 1)],
      }),
      message: `spec.traitLimits[0].trait: got "custom_hana"; expected ${NAME}`,
    },
    {
      name: "trait name longer than 255: deny",
      obj: policy({
        maxConcurrentMigrations: 4,
        traitLimits: [tl(`CUSTOM_${"X".repeat(250)}`, 1)],
      }),
      message: `spec.traitLimits[0].trait: got "CUSTOM_${
        "X".repeat(73)
      }"… (257 characters); expected ${NAME}`,
    },
    {
      name: "trait outside CUSTOM_ and the standard namespaces: allow, warn",
      obj: policy({
        maxConcurrentMigrations: 4,
        traitLimits: [tl("HANA_EXCLUSIVE_HOST", 1)],
      }),
      warnings: [
        "spec.traitLimits[0].trait: HANA_EXCLUSIVE_HOST is neither CUSTOM_* nor in a standard placement trait namespace (COMPUTE_, HW_, MISC_, OWNER_, STORAGE_), so it will likely never match a host",
      ],
    },
    {
      name: "the same trait twice: deny",
      obj: policy({
        maxConcurrentMigrations: 4,
        traitLimits: [tl("CUSTOM_A", 1), tl("CUSTOM_B", 2), tl("CUSTOM_A", 2)],
      }),
      message:
        'spec.traitLimits[2].trait: got "CUSTOM_A", the same trait as spec.traitLimits[0].trait "CUSTOM_A"; expected each trait at most once',
    },
    {
      name: "the same trait twice, differing only in case: deny",
      obj: policy({
        maxConcurrentMigrations: 4,
        traitLimits: [tl("custom_a", 1), tl("CUSTOM_A", 2)],
      }),
      message:
        `spec.traitLimits[0].trait: got "custom_a"; expected ${NAME} | spec.traitLimits[1].trait: got "CUSTOM_A", the same trait as spec.traitLimits[0].trait "custom_a" (trait names are compared ignoring case); expected each trait at most once`,
    },
    {
      name: "trait limit above the default: deny, saying the effective limit",
      obj: policy({
        maxConcurrentMigrations: 4,
        traitLimits: [tl("CUSTOM_BIG", 16)],
      }),
      message:
        "spec.traitLimits[0].maxConcurrentMigrations: got 16 for CUSTOM_BIG, above the default spec.maxConcurrentMigrations 4; expected at most 4, because traits can only lower the limit (the effective limit for hosts with CUSTOM_BIG would stay 4)",
    },
    {
      name: "trait limit equal to the default: allow, warn",
      obj: policy({
        maxConcurrentMigrations: 4,
        traitLimits: [tl("CUSTOM_A", 4)],
      }),
      warnings: [
        "spec.traitLimits[0].maxConcurrentMigrations: 4 for CUSTOM_A equals the default spec.maxConcurrentMigrations, so it has no effect",
      ],
    },
    {
      name: "cluster budget below the per-host default: allow, warn",
      obj: policy({
        maxConcurrentMigrations: 8,
        clusterMaxConcurrentMigrations: 4,
      }),
      warnings: [
        "spec.clusterMaxConcurrentMigrations: 4 is below the per-host default spec.maxConcurrentMigrations 8, so no drain can reach its per-host limit",
      ],
    },
    {
      name: "a bound the CRD schema also checks: deny",
      obj: policy({ maxConcurrentMigrations: 65 }),
      message:
        "spec.maxConcurrentMigrations: got 65; expected an integer from 1 to 64",
    },
    {
      name: "several refusals: one line, name first",
      obj: policy({ maxConcurrentMigrations: 0 }, "x"),
      message:
        'metadata.name: got "x"; expected "default", because there is one EvictionPolicy per cluster | spec.maxConcurrentMigrations: got 0; expected an integer from 1 to 64',
    },
    {
      name: "update lowering limits while drains run: allow, warn naming them",
      obj: policy({
        maxConcurrentMigrations: 2,
        traitLimits: [tl("HW_GPU_API_CUDA", 1)],
      }),
      old: policy({ maxConcurrentMigrations: 4 }),
      context: DRAINS,
      warnings: [
        'spec: lowers the limit of 2 running drains: Eviction "node001" from 4 to 2, "node003" from 2 to 1; they start no new migrations until fewer than the new limit are in flight',
      ],
    },
    {
      name: "a policy created while flag-limited drains run: warn the same way",
      obj: policy({ maxConcurrentMigrations: 3 }),
      context: DRAINS,
      warnings: [
        'spec: lowers the limit of 1 running drain: Eviction "node001" from 4 to 3; they start no new migrations until fewer than the new limit are in flight',
      ],
    },
    {
      name: "raising limits while drains run: no warning",
      obj: policy({ maxConcurrentMigrations: 8 }),
      old: policy({ maxConcurrentMigrations: 4 }),
      context: DRAINS,
    },
    {
      name: "lowering the cluster budget while drains run: allow, warn",
      obj: policy({
        maxConcurrentMigrations: 4,
        clusterMaxConcurrentMigrations: 5,
      }),
      old: policy({
        maxConcurrentMigrations: 4,
        clusterMaxConcurrentMigrations: 10,
      }),
      context: DRAINS,
      warnings: [
        'spec.clusterMaxConcurrentMigrations: lowered to 5 (from 10) while 3 drains are running (Eviction "node001", "node002", "node003"); new migrations wait until fewer than 5 are in flight across the cluster',
      ],
    },
    {
      name: "setting a first cluster budget while drains run: allow, warn",
      obj: policy({
        maxConcurrentMigrations: 4,
        clusterMaxConcurrentMigrations: 6,
      }),
      old: policy({ maxConcurrentMigrations: 4 }),
      context: { runningEvictions: DRAINS.runningEvictions.slice(0, 1) },
      warnings: [
        'spec.clusterMaxConcurrentMigrations: lowered to 6 (from no budget) while 1 drain is running (Eviction "node001"); new migrations wait until fewer than 6 are in flight across the cluster',
      ],
    },
    {
      name: "many lowered drains: the list is shortened",
      obj: policy({ maxConcurrentMigrations: 1 }),
      context: {
        runningEvictions: Array.from({ length: 8 }, (_, i) => ({
          name: `n${i}`,
          hypervisor: `n${i}`,
          traits: [],
          effectiveLimit: 2,
        })),
      },
      warnings: [
        'spec: lowers the limit of 8 running drains: Eviction "n0" from 2 to 1, "n1" from 2 to 1, "n2" from 2 to 1, "n3" from 2 to 1, "n4" from 2 to 1 and 3 more; they start no new migrations until fewer than the new limit are in flight',
      ],
    },
    {
      name: "update keeping a refusal the old object had: allow, warn",
      obj: {
        ...policy({ maxConcurrentMigrations: 4 }, "old-name"),
        metadata: { name: "old-name", labels: { a: "b" } },
      },
      old: policy({ maxConcurrentMigrations: 4 }, "old-name"),
      warnings: [
        'metadata.name: got "old-name"; expected "default", because there is one EvictionPolicy per cluster (already so before this update, so not refused)',
      ],
    },
    {
      name: "update adding a new refusal to a bad old object: deny the new one",
      obj: policy({ maxConcurrentMigrations: 0 }, "old-name"),
      old: policy({ maxConcurrentMigrations: 4 }, "old-name"),
      message:
        "spec.maxConcurrentMigrations: got 0; expected an integer from 1 to 64",
      warnings: [
        'metadata.name: got "old-name"; expected "default", because there is one EvictionPolicy per cluster (already so before this update, so not refused)',
      ],
    },
    {
      name: "convergence: a zero bound in a trait entry and a bad noPauseTrait",
      obj: policy({
        maxConcurrentMigrations: 4,
        traitLimits: [{
          ...tl("CUSTOM_HANA_EXCLUSIVE_HOST", 1),
          convergence: { completionTimeoutPerGiB: 0 },
        }],
        noPauseTraits: ["hana"],
      }),
      message:
        `spec.traitLimits[0].convergence.completionTimeoutPerGiB: got 0; expected an integer from 1 to 86400 (seconds per GiB) | spec.noPauseTraits[0]: got "hana"; expected ${NAME}`,
    },
    {
      name:
        "convergence: ForceComplete for a noPauseTraits host and the legacy timeout warn",
      obj: policy({
        maxConcurrentMigrations: 4,
        migrationTimeoutSeconds: 3600,
        traitLimits: [{
          ...tl("CUSTOM_HANA_EXCLUSIVE_HOST", 1),
          convergence: { onTimeout: "ForceComplete" },
        }],
        noPauseTraits: ["CUSTOM_HANA_EXCLUSIVE_HOST"],
      }),
      warnings: [
        `spec.traitLimits[0].convergence.onTimeout: ForceComplete: ${FORCE_COMPLETE_EFFECT}; a force-completed copy still running after forceCompleteTimeoutSeconds is aborted`,
        `spec.noPauseTraits[0]: VMs on hosts with CUSTOM_HANA_EXCLUSIVE_HOST must never be paused, but hosts with CUSTOM_HANA_EXCLUSIVE_HOST resolve to onTimeout ForceComplete (spec.traitLimits[0].convergence.onTimeout): ${FORCE_COMPLETE_EFFECT}; give CUSTOM_HANA_EXCLUSIVE_HOST an entry in spec.traitLimits with convergence.onTimeout Abort or Report (the lowest risk wins)`,
        "spec.migrationTimeoutSeconds: deprecated beside convergence: a completionTimeoutPerGiB (spec.convergence, a trait's or the Eviction's) replaces this flat 3600 s timeout wherever it is set; set spec.convergence.completionTimeoutPerGiB and remove it",
      ],
    },
    {
      name: "an object being deleted is allowed",
      obj: {
        metadata: { name: "x", deletionTimestamp: "2026-11-29T00:00:00Z" },
        spec: { maxConcurrentMigrations: 0 },
      },
      old: policy({ maxConcurrentMigrations: 0 }, "x"),
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const v = validateEvictionPolicy(c.obj, c.old, c.context ?? NONE);
      assert.deepEqual(
        v,
        c.message === undefined
          ? allow(c.warnings)
          : deny(c.message, { warnings: c.warnings ?? [] }),
      );
    });
  }
});

// ---- properties ----

const traitArb = fc.oneof(
  fc.constantFrom(
    "CUSTOM_A",
    "CUSTOM_B",
    "custom_a",
    "HW_GPU_API_CUDA",
    "HANA",
    "",
    "CUSTOM A",
  ),
  fc.stringMatching(/^[A-Z_]{1,12}$/),
  fc.string({ maxLength: 8 }),
);
const numArb = fc.oneof(
  fc.integer({ min: -2, max: 70 }),
  fc.constantFrom(1.5, "3", null),
);
const rawSpecArb = fc.record({
  maxConcurrentMigrations: numArb,
  traitLimits: fc.array(
    fc.record({ trait: traitArb, maxConcurrentMigrations: numArb }),
    { maxLength: 5 },
  ),
  clusterMaxConcurrentMigrations: fc.option(numArb, { nil: undefined }),
}, { requiredKeys: [] });
const hostTraitsArb = fc.subarray([
  "CUSTOM_A",
  "CUSTOM_B",
  "HW_GPU_API_CUDA",
  "HANA",
  "custom_a",
]);

Deno.test("property: any policy the webhook allows resolves to 1 <= limit <= default for every trait set", () => {
  let allowedRuns = 0;
  fc.assert(
    fc.property(
      rawSpecArb,
      fc.array(hostTraitsArb, { minLength: 1, maxLength: 5 }),
      fc.option(fc.integer({ min: 1, max: 64 }), { nil: undefined }),
      (spec, traitSets, requested) => {
        const v = validateEvictionPolicy(policy(spec), undefined, NONE);
        if (!v.allowed) return;
        allowedRuns++;
        const parsed = EvictionPolicySpecSchema.parse(spec);
        const settings = policySettings(parsed);
        for (const traits of [...traitSets, []]) {
          const r = resolveLimit(settings, traits, requested);
          assert.ok(r.limit >= 1);
          assert.ok(r.limit <= parsed.maxConcurrentMigrations);
          assert.ok(r.hostLimit <= parsed.maxConcurrentMigrations);
        }
      },
    ),
    { numRuns: 500 },
  );
  assert.ok(allowedRuns > 25, `only ${allowedRuns} allowed runs`);
});

Deno.test("property: the verdict is well-formed and its message one line for any input", () => {
  fc.assert(fc.property(
    fc.oneof(rawSpecArb.map((s) => policy(s)), fc.anything()),
    fc.option(fc.anything(), { nil: undefined }),
    (obj, old) => {
      const v = validateEvictionPolicy(obj, old, DRAINS);
      if (!v.allowed) {
        assert.ok(v.message.length > 0);
        assert.ok(!/[\n\r\u2028\u2029]/.test(v.message));
      }
      for (const w of v.warnings ?? []) {
        assert.ok(!/[\n\r\u2028\u2029]/.test(w));
      }
    },
  ));
});
