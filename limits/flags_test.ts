import assert from "node:assert/strict";
import { parseArgs } from "node:util";
import fc from "fast-check";
import {
  ConcurrencyFlagError,
  CONVERGENCE_ENTRY_MESSAGE,
  parseConcurrencyFlags,
  TRAIT_ENTRY_MESSAGE,
} from "./flags.ts";
import { checkLimitSpec } from "./validation.ts";
import { FORCE_COMPLETE_EFFECT } from "./convergence_validation.ts";
import { resolveLimit } from "./resolve.ts";

function parse(args: string[]) {
  const { values } = parseArgs({
    args,
    options: {
      "eviction-concurrency": { type: "string" },
      "eviction-trait-concurrency": { type: "string", multiple: true },
      "eviction-convergence": { type: "string", multiple: true },
    },
  });
  return parseConcurrencyFlags(
    values["eviction-concurrency"],
    values["eviction-trait-concurrency"],
    values["eviction-convergence"],
  );
}

function error(
  r: ReturnType<typeof parseConcurrencyFlags>,
): ConcurrencyFlagError {
  assert.equal(r.ok, false);
  if (r.ok) throw new TypeError("expected an error");
  assert.ok(r.error instanceof ConcurrencyFlagError);
  assert.ok(r.error instanceof Error);
  return r.error;
}

Deno.test("flags: none given gives the CRD defaults, source flags", () => {
  const r = parse([]);
  assert.ok(r.ok);
  assert.deepEqual(r.settings, {
    source: "flags",
    spec: { maxConcurrentMigrations: 1, abortStuckMigrations: false },
  });
  assert.ok(Object.isFrozen(r.settings) && Object.isFrozen(r.settings.spec));
  assert.deepEqual(r.warnings, []);
});

Deno.test("flags: default, comma lists and repeated flags, in order", () => {
  const r = parse([
    "--eviction-concurrency",
    "4",
    "--eviction-trait-concurrency",
    "CUSTOM_HANA_EXCLUSIVE_HOST=1,HW_GPU_API_CUDA=2",
    "--eviction-trait-concurrency=STORAGE_DISK_SSD=3",
  ]);
  assert.ok(r.ok);
  assert.deepEqual(r.settings.spec, {
    maxConcurrentMigrations: 4,
    abortStuckMigrations: false,
    traitLimits: [
      { trait: "CUSTOM_HANA_EXCLUSIVE_HOST", maxConcurrentMigrations: 1 },
      { trait: "HW_GPU_API_CUDA", maxConcurrentMigrations: 2 },
      { trait: "STORAGE_DISK_SSD", maxConcurrentMigrations: 3 },
    ],
  });
  assert.equal(
    resolveLimit(r.settings, ["CUSTOM_HANA_EXCLUSIVE_HOST"]).limit,
    1,
  );
  assert.equal(
    resolveLimit(r.settings, ["CUSTOM_HANA_EXCLUSIVE_HOST"]).source,
    "flags",
  );
});

Deno.test("flags: warnings carry flag and entry", () => {
  const r = parse([
    "--eviction-concurrency",
    "4",
    "--eviction-trait-concurrency",
    "HANA_HOST=1,CUSTOM_A=4",
  ]);
  assert.ok(r.ok);
  assert.deepEqual(r.warnings, [
    {
      flag: "--eviction-trait-concurrency",
      entry: "HANA_HOST=1",
      rule: "trait-namespace",
      field: "spec.traitLimits[0].trait",
      message:
        "spec.traitLimits[0].trait: HANA_HOST is neither CUSTOM_* nor in a standard placement trait namespace (COMPUTE_, HW_, MISC_, OWNER_, STORAGE_), so it will likely never match a host",
    },
    {
      flag: "--eviction-trait-concurrency",
      entry: "CUSTOM_A=4",
      rule: "trait-equals-default",
      field: "spec.traitLimits[1].maxConcurrentMigrations",
      message:
        "spec.traitLimits[1].maxConcurrentMigrations: 4 for CUSTOM_A equals the default spec.maxConcurrentMigrations, so it has no effect",
    },
  ]);
});

Deno.test("flags: errors, each with a one-line message and the entry as a field", async (t) => {
  const NAME =
    "a placement trait name: upper-case letters, digits and underscore (^[A-Z0-9_]+$), 1 to 255 characters";
  const cases: Array<{
    name: string;
    args: string[];
    flag: string;
    entry: string;
    field: string;
    value: unknown;
    rule: string;
    message: string;
  }> = [
    {
      name: "default not a number",
      args: ["--eviction-concurrency", "four"],
      flag: "--eviction-concurrency",
      entry: "four",
      field: "spec.maxConcurrentMigrations",
      value: "four",
      rule: "default-range",
      message:
        'spec.maxConcurrentMigrations: got "four"; expected an integer from 1 to 64',
    },
    {
      name: "default 0",
      args: ["--eviction-concurrency", "0"],
      flag: "--eviction-concurrency",
      entry: "0",
      field: "spec.maxConcurrentMigrations",
      value: 0,
      rule: "default-range",
      message:
        "spec.maxConcurrentMigrations: got 0; expected an integer from 1 to 64",
    },
    {
      name: "default with a space is not trimmed",
      args: ["--eviction-concurrency", " 4"],
      flag: "--eviction-concurrency",
      entry: " 4",
      field: "spec.maxConcurrentMigrations",
      value: " 4",
      rule: "default-range",
      message:
        'spec.maxConcurrentMigrations: got " 4"; expected an integer from 1 to 64',
    },
    {
      name: "entry without =",
      args: ["--eviction-trait-concurrency", "CUSTOM_A"],
      flag: "--eviction-trait-concurrency",
      entry: "CUSTOM_A",
      field: "--eviction-trait-concurrency",
      value: "CUSTOM_A",
      rule: "flag-entry-format",
      message: TRAIT_ENTRY_MESSAGE,
    },
    {
      name: "an empty entry (trailing comma)",
      args: ["--eviction-trait-concurrency", "CUSTOM_A=1,"],
      flag: "--eviction-trait-concurrency",
      entry: "",
      field: "--eviction-trait-concurrency",
      value: "",
      rule: "flag-entry-format",
      message: TRAIT_ENTRY_MESSAGE,
    },
    {
      name: "N not a number",
      args: ["--eviction-trait-concurrency", "CUSTOM_A=x"],
      flag: "--eviction-trait-concurrency",
      entry: "CUSTOM_A=x",
      field: "spec.traitLimits[0].maxConcurrentMigrations",
      value: "x",
      rule: "trait-limit-range",
      message:
        'spec.traitLimits[0].maxConcurrentMigrations: got "x"; expected an integer from 1 to 64',
    },
    {
      name: "lower-case trait",
      args: [
        "--eviction-trait-concurrency",
        "CUSTOM_B=1",
        "--eviction-trait-concurrency",
        "custom_a=1",
      ],
      flag: "--eviction-trait-concurrency",
      entry: "custom_a=1",
      field: "spec.traitLimits[1].trait",
      value: "custom_a",
      rule: "trait-syntax",
      message: `spec.traitLimits[1].trait: got "custom_a"; expected ${NAME}`,
    },
    {
      name: "empty trait",
      args: ["--eviction-trait-concurrency", "=1"],
      flag: "--eviction-trait-concurrency",
      entry: "=1",
      field: "spec.traitLimits[0].trait",
      value: "",
      rule: "trait-syntax",
      message: `spec.traitLimits[0].trait: got ""; expected ${NAME}`,
    },
    {
      name: "the same trait in two flags",
      args: [
        "--eviction-concurrency",
        "2",
        "--eviction-trait-concurrency",
        "CUSTOM_A=1",
        "--eviction-trait-concurrency",
        "CUSTOM_A=2",
      ],
      flag: "--eviction-trait-concurrency",
      entry: "CUSTOM_A=2",
      field: "spec.traitLimits[1].trait",
      value: "CUSTOM_A",
      rule: "trait-duplicate",
      message:
        'spec.traitLimits[1].trait: got "CUSTOM_A", the same trait as spec.traitLimits[0].trait "CUSTOM_A"; expected each trait at most once',
    },
    {
      name: "trait limit above the default",
      args: [
        "--eviction-concurrency",
        "4",
        "--eviction-trait-concurrency",
        "CUSTOM_A=8",
      ],
      flag: "--eviction-trait-concurrency",
      entry: "CUSTOM_A=8",
      field: "spec.traitLimits[0].maxConcurrentMigrations",
      value: 8,
      rule: "trait-above-default",
      message:
        "spec.traitLimits[0].maxConcurrentMigrations: got 8 for CUSTOM_A, above the default spec.maxConcurrentMigrations 4; expected at most 4, because traits can only lower the limit (the effective limit for hosts with CUSTOM_A would stay 4)",
    },
    {
      name: "a newline in an entry never reaches the message",
      args: ["--eviction-trait-concurrency", 'CUSTOM_A\n{"level":60}'],
      flag: "--eviction-trait-concurrency",
      entry: 'CUSTOM_A\n{"level":60}',
      field: "--eviction-trait-concurrency",
      value: 'CUSTOM_A\n{"level":60}',
      rule: "flag-entry-format",
      message: TRAIT_ENTRY_MESSAGE,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const e = error(parse(c.args));
      assert.equal(e.message, c.message);
      assert.equal(e.flag, c.flag);
      assert.equal(e.entry, c.entry);
      assert.equal(e.field, c.field);
      assert.deepEqual(e.value, c.value);
      assert.equal(e.rule, c.rule);
      assert.equal(e.name, "ConcurrencyFlagError");
      assert.ok(!/[\n\r]/.test(e.message), "one line");
      if (c.rule === "flag-entry-format") {
        assert.ok(c.entry === "" || !e.message.includes(c.entry));
      }
    });
  }
});

Deno.test("flags: every problem is listed, the message joins them", () => {
  const e = error(parse([
    "--eviction-concurrency",
    "2",
    "--eviction-trait-concurrency",
    "CUSTOM_A=3,bad=1",
  ]));
  assert.deepEqual(e.problems.map((p) => [p.entry, p.rule]), [
    ["CUSTOM_A=3", "trait-above-default"],
    ["bad=1", "trait-syntax"],
  ]);
  assert.equal(e.message, e.problems.map((p) => p.message).join(" | "));
  const f = error(parse(["--eviction-trait-concurrency", "A,B=1,C"]));
  assert.deepEqual(f.problems.map((p) => p.entry), ["A", "C"]);
  assert.equal(f.message, TRAIT_ENTRY_MESSAGE);
});

Deno.test("flags: a trait entry is split at the last =", () => {
  const e = error(parse(["--eviction-trait-concurrency", "A=B=1"]));
  assert.equal(e.value, "A=B");
  assert.equal(e.rule, "trait-syntax");
});

Deno.test("flags: values that are not strings are refused, not thrown", () => {
  const e = error(
    parseConcurrencyFlags(
      true as unknown as string,
      undefined,
    ),
  );
  assert.equal(e.flag, "--eviction-concurrency");
  assert.equal(
    e.message,
    "--eviction-concurrency: the value is not a string; expected an integer from 1 to 64",
  );
});

Deno.test("property: flags never throw and messages are one line without raw entries of format errors", () => {
  fc.assert(fc.property(
    fc.option(fc.string(), { nil: undefined }),
    fc.array(fc.string({ unit: "binary" }), { maxLength: 4 }),
    (c, traits) => {
      const r = parseConcurrencyFlags(c, traits);
      if (!r.ok) {
        assert.ok(!/[\n\r\u2028\u2029]/.test(r.error.message));
        assert.ok(r.error.problems.length >= 1);
      } else {
        assert.ok(r.settings.spec.maxConcurrentMigrations >= 1);
      }
    },
  ));
});

Deno.test("flags: --eviction-convergence is the policy's spec.convergence", () => {
  const r = parse([
    "--eviction-convergence",
    "completionTimeoutPerGiB=600,onTimeout=ForceComplete",
    "--eviction-convergence=maxAbortedTries=3",
  ]);
  assert.ok(r.ok);
  assert.deepEqual(r.settings.spec.convergence, {
    completionTimeoutPerGiB: 600,
    onTimeout: "ForceComplete",
    maxAbortedTries: 3,
  });
  assert.deepEqual(r.warnings, [{
    flag: "--eviction-convergence",
    entry: "onTimeout=ForceComplete",
    rule: "force-complete",
    field: "spec.convergence.onTimeout",
    message:
      `spec.convergence.onTimeout: ForceComplete: ${FORCE_COMPLETE_EFFECT}; a force-completed copy still running after forceCompleteTimeoutSeconds is aborted`,
  }]);
});

Deno.test("flags: --eviction-convergence errors, one line, the webhook's message for a bad value", async (t) => {
  const rows: Array<{
    name: string;
    args: string[];
    message: string;
    entry: string;
  }> = [
    {
      name: "an unknown key",
      args: ["--eviction-convergence", "timeout=600"],
      message: CONVERGENCE_ENTRY_MESSAGE,
      entry: "timeout=600",
    },
    {
      name: "no =",
      args: ["--eviction-convergence", "onTimeout"],
      message: CONVERGENCE_ENTRY_MESSAGE,
      entry: "onTimeout",
    },
    {
      name: "a key twice, over repeated flags",
      args: [
        "--eviction-convergence",
        "onTimeout=Abort",
        "--eviction-convergence",
        "onTimeout=Report",
      ],
      message: CONVERGENCE_ENTRY_MESSAGE,
      entry: "onTimeout=Report",
    },
    {
      name: "a zero bound",
      args: ["--eviction-convergence", "progressTimeoutSeconds=0"],
      message:
        "spec.convergence.progressTimeoutSeconds: got 0; expected an integer from 1 to 86400 (seconds)",
      entry: "progressTimeoutSeconds=0",
    },
    {
      name: "a bound in other units",
      args: ["--eviction-convergence", "forceCompleteTimeoutSeconds=5m"],
      message:
        'spec.convergence.forceCompleteTimeoutSeconds: got "5m"; expected an integer from 1 to 86400 (seconds)',
      entry: "forceCompleteTimeoutSeconds=5m",
    },
    {
      name: "an unknown action",
      args: ["--eviction-convergence", "maxAbortedTries=2,onTimeout=abort"],
      message:
        'spec.convergence.onTimeout: got "abort"; expected one of Report, Abort, ForceComplete',
      entry: "onTimeout=abort",
    },
  ];
  for (const row of rows) {
    await t.step(row.name, () => {
      const e = error(parse(row.args));
      assert.equal(e.message, row.message);
      assert.equal(e.flag, "--eviction-convergence");
      assert.equal(e.entry, row.entry);
      assert.ok(!e.message.includes("\n"));
      if (e.rule !== "flag-entry-format") {
        // the same message the webhook gives the same spec.convergence
        const key = row.entry.slice(0, row.entry.indexOf("="));
        const value = row.entry.slice(row.entry.indexOf("=") + 1);
        const policy = checkLimitSpec({
          convergence: {
            [key]: key === "onTimeout" || !/^-?[0-9]+$/.test(value)
              ? value
              : Number(value),
          },
        });
        assert.equal(policy.violations[0]?.message, e.message);
      }
    });
  }
  const notStrings = parseConcurrencyFlags(undefined, undefined, [
    7 as unknown as string,
  ]);
  assert.equal(
    error(notStrings).message,
    "--eviction-convergence: the value is not a string; expected KEY=VALUE[,KEY=VALUE] with each KEY at most once, one of completionTimeoutPerGiB, progressTimeoutSeconds, onTimeout, maxAbortedTries, forceCompleteTimeoutSeconds",
  );
});
