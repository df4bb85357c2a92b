import assert from "node:assert/strict";
import { checkLimitSpec, violationsMessage } from "./validation.ts";

const NAME_EXPECTED =
  "a placement trait name: upper-case letters, digits and underscore (^[A-Z0-9_]+$), 1 to 255 characters";

function tl(trait: unknown, max: unknown) {
  return { trait, maxConcurrentMigrations: max };
}

Deno.test("checkLimitSpec: refusals, each message exact", async (t) => {
  const cases: Array<{
    name: string;
    spec: unknown;
    rules: string[];
    message: string;
  }> = [
    {
      name: "spec is not an object",
      spec: "fast",
      rules: ["spec-type"],
      message:
        'spec: got "fast"; expected an object with the concurrency limits',
    },
    {
      name: "spec is missing",
      spec: undefined,
      rules: ["spec-type"],
      message:
        "spec: got nothing; expected an object with the concurrency limits",
    },
    {
      name: "default below 1",
      spec: { maxConcurrentMigrations: 0 },
      rules: ["default-range"],
      message:
        "spec.maxConcurrentMigrations: got 0; expected an integer from 1 to 64",
    },
    {
      name: "default above 64",
      spec: { maxConcurrentMigrations: 65 },
      rules: ["default-range"],
      message:
        "spec.maxConcurrentMigrations: got 65; expected an integer from 1 to 64",
    },
    {
      name: "default not an integer",
      spec: { maxConcurrentMigrations: 2.5 },
      rules: ["default-range"],
      message:
        "spec.maxConcurrentMigrations: got 2.5; expected an integer from 1 to 64",
    },
    {
      name: "default a string",
      spec: { maxConcurrentMigrations: "4" },
      rules: ["default-range"],
      message:
        'spec.maxConcurrentMigrations: got "4"; expected an integer from 1 to 64',
    },
    {
      name: "traitLimits not a list",
      spec: { traitLimits: { CUSTOM_A: 1 } },
      rules: ["trait-limits-type"],
      message:
        'spec.traitLimits: got {"CUSTOM_A":1}; expected a list of {trait, maxConcurrentMigrations}',
    },
    {
      name: "too many trait limits",
      spec: {
        maxConcurrentMigrations: 2,
        traitLimits: Array.from(
          { length: 257 },
          (_, i) => tl(`CUSTOM_T${i}`, 1),
        ),
      },
      rules: ["trait-limits-length"],
      message:
        "spec.traitLimits: got 257 entries; expected at most 256 entries",
    },
    {
      name: "a trait limit that is not an object",
      spec: { traitLimits: ["CUSTOM_A=1"] },
      rules: ["trait-limit-type"],
      message:
        'spec.traitLimits[0]: got "CUSTOM_A=1"; expected an object with trait and maxConcurrentMigrations',
    },
    {
      name: "trait name in lower case",
      spec: { maxConcurrentMigrations: 4, traitLimits: [tl("custom_a", 1)] },
      rules: ["trait-syntax"],
      message:
        `spec.traitLimits[0].trait: got "custom_a"; expected ${NAME_EXPECTED}`,
    },
    {
      name: "trait name with a dash",
      spec: { maxConcurrentMigrations: 4, traitLimits: [tl("CUSTOM-A", 1)] },
      rules: ["trait-syntax"],
      message:
        `spec.traitLimits[0].trait: got "CUSTOM-A"; expected ${NAME_EXPECTED}`,
    },
    {
      name: "trait name empty",
      spec: { maxConcurrentMigrations: 4, traitLimits: [tl("", 1)] },
      rules: ["trait-syntax"],
      message: `spec.traitLimits[0].trait: got ""; expected ${NAME_EXPECTED}`,
    },
    {
      name: "trait name missing",
      spec: {
        maxConcurrentMigrations: 4,
        traitLimits: [{ maxConcurrentMigrations: 1 }],
      },
      rules: ["trait-syntax"],
      message:
        `spec.traitLimits[0].trait: got nothing; expected ${NAME_EXPECTED}`,
    },
    {
      name: "trait name of 256 characters (shown shortened)",
      spec: {
        maxConcurrentMigrations: 4,
        traitLimits: [tl(`CUSTOM_${"A".repeat(249)}`, 1)],
      },
      rules: ["trait-syntax"],
      message: `spec.traitLimits[0].trait: got "CUSTOM_${
        "A".repeat(73)
      }"… (256 characters); expected ${NAME_EXPECTED}`,
    },
    {
      name: "trait name with a newline is escaped, one line",
      spec: {
        maxConcurrentMigrations: 4,
        traitLimits: [tl("CUSTOM_A\nlevel=fatal", 1)],
      },
      rules: ["trait-syntax"],
      message:
        `spec.traitLimits[0].trait: got "CUSTOM_A\\nlevel=fatal"; expected ${NAME_EXPECTED}`,
    },
    {
      name: "the same trait twice",
      spec: {
        maxConcurrentMigrations: 4,
        traitLimits: [tl("CUSTOM_A", 1), tl("CUSTOM_A", 2)],
      },
      rules: ["trait-duplicate"],
      message:
        'spec.traitLimits[1].trait: got "CUSTOM_A", the same trait as spec.traitLimits[0].trait "CUSTOM_A"; expected each trait at most once',
    },
    {
      name: "the same trait twice, differing only in case",
      spec: {
        maxConcurrentMigrations: 4,
        traitLimits: [tl("CUSTOM_A", 1), tl("Custom_A", 2)],
      },
      rules: ["trait-syntax", "trait-duplicate"],
      message:
        `spec.traitLimits[1].trait: got "Custom_A"; expected ${NAME_EXPECTED} | spec.traitLimits[1].trait: got "Custom_A", the same trait as spec.traitLimits[0].trait "CUSTOM_A" (trait names are compared ignoring case); expected each trait at most once`,
    },
    {
      name: "a trait limit below 1",
      spec: { maxConcurrentMigrations: 4, traitLimits: [tl("CUSTOM_A", 0)] },
      rules: ["trait-limit-range"],
      message:
        "spec.traitLimits[0].maxConcurrentMigrations: got 0; expected an integer from 1 to 64",
    },
    {
      name: "a trait limit missing",
      spec: {
        maxConcurrentMigrations: 4,
        traitLimits: [{ trait: "CUSTOM_A" }],
      },
      rules: ["trait-limit-range"],
      message:
        "spec.traitLimits[0].maxConcurrentMigrations: got nothing; expected an integer from 1 to 64",
    },
    {
      name: "a trait limit above the default",
      spec: { maxConcurrentMigrations: 4, traitLimits: [tl("CUSTOM_A", 8)] },
      rules: ["trait-above-default"],
      message:
        "spec.traitLimits[0].maxConcurrentMigrations: got 8 for CUSTOM_A, above the default spec.maxConcurrentMigrations 4; expected at most 4, because traits can only lower the limit (the effective limit for hosts with CUSTOM_A would stay 4)",
    },
    {
      name: "a trait limit above the omitted default (1)",
      spec: { traitLimits: [tl("CUSTOM_A", 2)] },
      rules: ["trait-above-default"],
      message:
        "spec.traitLimits[0].maxConcurrentMigrations: got 2 for CUSTOM_A, above the default spec.maxConcurrentMigrations 1; expected at most 1, because traits can only lower the limit (the effective limit for hosts with CUSTOM_A would stay 1)",
    },
    {
      name: "cluster budget below 1",
      spec: { clusterMaxConcurrentMigrations: 0 },
      rules: ["cluster-budget-range"],
      message:
        "spec.clusterMaxConcurrentMigrations: got 0; expected an integer from 1 to 4096",
    },
    {
      name: "migration timeout below 1",
      spec: { migrationTimeoutSeconds: -5 },
      rules: ["timeout-range"],
      message:
        "spec.migrationTimeoutSeconds: got -5; expected an integer number of seconds >= 1",
    },
    {
      name: "abortStuckMigrations not a boolean",
      spec: { abortStuckMigrations: "yes" },
      rules: ["abort-type"],
      message: 'spec.abortStuckMigrations: got "yes"; expected true or false',
    },
    {
      name: "several refusals in field order, one line",
      spec: {
        maxConcurrentMigrations: 100,
        traitLimits: [tl("bad", 0)],
        clusterMaxConcurrentMigrations: 5000,
      },
      rules: [
        "default-range",
        "trait-syntax",
        "trait-limit-range",
        "cluster-budget-range",
      ],
      message:
        `spec.maxConcurrentMigrations: got 100; expected an integer from 1 to 64 | spec.traitLimits[0].trait: got "bad"; expected ${NAME_EXPECTED} | spec.traitLimits[0].maxConcurrentMigrations: got 0; expected an integer from 1 to 64 | spec.clusterMaxConcurrentMigrations: got 5000; expected an integer from 1 to 4096`,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const r = checkLimitSpec(c.spec);
      assert.equal(r.ok, false);
      assert.deepEqual(r.violations.map((v) => v.rule), c.rules);
      const message = violationsMessage(r.violations);
      assert.equal(message, c.message);
      assert.ok(!/[\n\r\u2028\u2029]/.test(message), "one line");
    });
  }
});

Deno.test("checkLimitSpec: structured fields of a violation", () => {
  const r = checkLimitSpec({
    maxConcurrentMigrations: 4,
    traitLimits: [tl("CUSTOM_A", 1), tl("CUSTOM_B", 9)],
  });
  assert.equal(r.ok, false);
  const v = r.violations[0];
  assert.deepEqual(
    v && { ...v, message: undefined },
    {
      rule: "trait-above-default",
      field: "spec.traitLimits[1].maxConcurrentMigrations",
      value: 9,
      expected:
        "at most 4, because traits can only lower the limit (the effective limit for hosts with CUSTOM_B would stay 4)",
      message: undefined,
      traitIndex: 1,
    },
  );
});

Deno.test("checkLimitSpec: warnings, each message exact", async (t) => {
  const cases: Array<{ name: string; spec: unknown; warnings: string[] }> = [
    {
      name: "a valid policy without warnings",
      spec: {
        maxConcurrentMigrations: 4,
        traitLimits: [
          tl("CUSTOM_HANA_EXCLUSIVE_HOST", 1),
          tl("HW_GPU_API_CUDA", 2),
          tl("COMPUTE_STATUS_DISABLED", 3),
          tl("STORAGE_DISK_SSD", 3),
          tl("MISC_SHARES_VIA_AGGREGATE", 3),
          tl("OWNER_NOVA", 3),
        ],
        clusterMaxConcurrentMigrations: 10,
        migrationTimeoutSeconds: 3600,
        abortStuckMigrations: true,
      },
      warnings: [],
    },
    {
      name: "a trait outside CUSTOM_ and the standard namespaces",
      spec: { maxConcurrentMigrations: 4, traitLimits: [tl("HANA_HOST", 1)] },
      warnings: [
        "spec.traitLimits[0].trait: HANA_HOST is neither CUSTOM_* nor in a standard placement trait namespace (COMPUTE_, HW_, MISC_, OWNER_, STORAGE_), so it will likely never match a host",
      ],
    },
    {
      name: "a bare namespace prefix",
      spec: { maxConcurrentMigrations: 4, traitLimits: [tl("CUSTOM_", 1)] },
      warnings: [
        "spec.traitLimits[0].trait: CUSTOM_ is neither CUSTOM_* nor in a standard placement trait namespace (COMPUTE_, HW_, MISC_, OWNER_, STORAGE_), so it will likely never match a host",
      ],
    },
    {
      name: "a trait limit equal to the default",
      spec: { maxConcurrentMigrations: 4, traitLimits: [tl("CUSTOM_A", 4)] },
      warnings: [
        "spec.traitLimits[0].maxConcurrentMigrations: 4 for CUSTOM_A equals the default spec.maxConcurrentMigrations, so it has no effect",
      ],
    },
    {
      name: "a cluster budget below the per-host default",
      spec: { maxConcurrentMigrations: 4, clusterMaxConcurrentMigrations: 3 },
      warnings: [
        "spec.clusterMaxConcurrentMigrations: 3 is below the per-host default spec.maxConcurrentMigrations 4, so no drain can reach its per-host limit",
      ],
    },
    {
      name: "abortStuckMigrations without a timeout",
      spec: { abortStuckMigrations: true },
      warnings: [
        "spec.abortStuckMigrations: true has no effect without spec.migrationTimeoutSeconds",
      ],
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const r = checkLimitSpec(c.spec);
      assert.equal(r.ok, true);
      assert.deepEqual(r.warnings.map((w) => w.message), c.warnings);
    });
  }
});

Deno.test("checkLimitSpec: a valid spec is parsed with defaults applied", () => {
  const r = checkLimitSpec({});
  assert.ok(r.ok);
  assert.deepEqual(r.spec, {
    maxConcurrentMigrations: 1,
    abortStuckMigrations: false,
  });
});
