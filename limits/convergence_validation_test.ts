import assert from "node:assert/strict";
import fc from "fast-check";
import {
  checkConvergence,
  type ConvergencePolicyView,
  convergencePolicyWarnings,
  type ConvergenceSink,
  FORCE_COMPLETE_EFFECT,
  noPauseEvictionWarning,
} from "./convergence_validation.ts";
import { checkLimitSpec } from "./validation.ts";
import { type OnTimeout, resolveConvergence } from "./convergence.ts";

const FC_WARNING = (field: string) =>
  `${field}.onTimeout: ForceComplete: ${FORCE_COMPLETE_EFFECT}; a force-completed copy still running after forceCompleteTimeoutSeconds is aborted`;

Deno.test("checkConvergence: refusals name the value and the expectation", async (t) => {
  const rows: Array<[string, unknown, string[]]> = [
    ["nothing is fine", undefined, []],
    ["an empty object is fine", {}, []],
    [
      "not an object",
      "Abort",
      [
        'spec.convergence: got "Abort"; expected an object with any of completionTimeoutPerGiB, progressTimeoutSeconds, maxAbortedTries, forceCompleteTimeoutSeconds, onTimeout',
      ],
    ],
    [
      "a list",
      [],
      [
        "spec.convergence: got []; expected an object with any of completionTimeoutPerGiB, progressTimeoutSeconds, maxAbortedTries, forceCompleteTimeoutSeconds, onTimeout",
      ],
    ],
    [
      "zero",
      { progressTimeoutSeconds: 0 },
      [
        "spec.convergence.progressTimeoutSeconds: got 0; expected an integer from 1 to 86400 (seconds)",
      ],
    ],
    [
      "negative",
      { completionTimeoutPerGiB: -800 },
      [
        "spec.convergence.completionTimeoutPerGiB: got -800; expected an integer from 1 to 86400 (seconds per GiB)",
      ],
    ],
    [
      "not an integer",
      { forceCompleteTimeoutSeconds: 2.5 },
      [
        "spec.convergence.forceCompleteTimeoutSeconds: got 2.5; expected an integer from 1 to 86400 (seconds)",
      ],
    ],
    [
      "a string",
      { maxAbortedTries: "2" },
      [
        'spec.convergence.maxAbortedTries: got "2"; expected an integer from 1 to 100 (tries)',
      ],
    ],
    [
      "above the maximum",
      { maxAbortedTries: 101, progressTimeoutSeconds: 86401 },
      [
        "spec.convergence.progressTimeoutSeconds: got 86401; expected an integer from 1 to 86400 (seconds)",
        "spec.convergence.maxAbortedTries: got 101; expected an integer from 1 to 100 (tries)",
      ],
    ],
    [
      "an unknown action",
      { onTimeout: "Pause" },
      [
        'spec.convergence.onTimeout: got "Pause"; expected one of Report, Abort, ForceComplete',
      ],
    ],
    [
      "Nova's spelling of an action",
      { onTimeout: "force_complete" },
      [
        'spec.convergence.onTimeout: got "force_complete"; expected one of Report, Abort, ForceComplete',
      ],
    ],
    [
      "infinity",
      { completionTimeoutPerGiB: Infinity },
      [
        "spec.convergence.completionTimeoutPerGiB: got Infinity; expected an integer from 1 to 86400 (seconds per GiB)",
      ],
    ],
  ];
  for (const [name, value, want] of rows) {
    await t.step(name, () => {
      const r = checkLimitSpec({ convergence: value });
      assert.deepEqual(r.violations.map((v) => v.message), want);
      assert.equal(r.ok, want.length === 0);
    });
  }
});

Deno.test("checkConvergence: warnings for risky choices, none for safe ones", async (t) => {
  const perGiB = (n: number) =>
    `spec.convergence.completionTimeoutPerGiB: ${n} is above Nova's default live_migration_completion_timeout (800 s per GiB): unless the hosts' nova.conf raises it, Nova acts first (its live_migration_timeout_action, abort by default)`;
  const rows: Array<[string, unknown, string[]]> = [
    ["Report", { onTimeout: "Report" }, []],
    ["Abort", { onTimeout: "Abort" }, []],
    ["ForceComplete", { onTimeout: "ForceComplete" }, [
      FC_WARNING("spec.convergence"),
    ]],
    ["Nova's own bound", { completionTimeoutPerGiB: 800 }, []],
    ["above Nova's bound", { completionTimeoutPerGiB: 801 }, [perGiB(801)]],
    ["both", { completionTimeoutPerGiB: 3600, onTimeout: "ForceComplete" }, [
      FC_WARNING("spec.convergence"),
      perGiB(3600),
    ]],
    ["a refused bound gives no warning", { completionTimeoutPerGiB: 1e9 }, []],
  ];
  for (const [name, value, want] of rows) {
    await t.step(name, () => {
      const warned: string[] = [];
      checkConvergence(value, "spec.convergence", {
        deny: () => {},
        warn: (_rule, _field, message) => warned.push(message),
      });
      assert.deepEqual(warned, want);
    });
  }
});

Deno.test("checkLimitSpec: convergence in trait entries and noPauseTraits", async (t) => {
  const NAME =
    "a placement trait name: upper-case letters, digits and underscore (^[A-Z0-9_]+$), 1 to 255 characters";
  const rows: Array<{
    name: string;
    spec: Record<string, unknown>;
    violations?: string[];
    warnings?: string[];
  }> = [
    {
      name: "a trait entry's bad bound names its index",
      spec: {
        maxConcurrentMigrations: 2,
        traitLimits: [{
          trait: "CUSTOM_A",
          maxConcurrentMigrations: 1,
          convergence: { progressTimeoutSeconds: -1, onTimeout: "abort" },
        }],
      },
      violations: [
        "spec.traitLimits[0].convergence.progressTimeoutSeconds: got -1; expected an integer from 1 to 86400 (seconds)",
        'spec.traitLimits[0].convergence.onTimeout: got "abort"; expected one of Report, Abort, ForceComplete',
      ],
    },
    {
      name: "a trait entry with convergence has an effect at the default limit",
      spec: {
        maxConcurrentMigrations: 2,
        traitLimits: [{
          trait: "CUSTOM_A",
          maxConcurrentMigrations: 2,
          convergence: { onTimeout: "Abort" },
        }],
      },
      warnings: [],
    },
    {
      name: "noPauseTraits: not a list",
      spec: { noPauseTraits: "CUSTOM_HANA" },
      violations: [
        'spec.noPauseTraits: got "CUSTOM_HANA"; expected a list of at most 256 placement trait names',
      ],
    },
    {
      name: "noPauseTraits: a bad name and a repeat differing in case",
      spec: { noPauseTraits: ["CUSTOM_HANA", "", "custom_hana", 7] },
      violations: [
        `spec.noPauseTraits[1]: got ""; expected ${NAME}`,
        `spec.noPauseTraits[2]: got "custom_hana"; expected ${NAME}`,
        `spec.noPauseTraits[3]: got 7; expected ${NAME}`,
      ],
    },
    {
      name: "noPauseTraits: the same name twice",
      spec: { noPauseTraits: ["CUSTOM_HANA", "CUSTOM_HANA"] },
      violations: [
        'spec.noPauseTraits[1]: got "CUSTOM_HANA", the same trait as spec.noPauseTraits[0]; expected each trait at most once',
      ],
    },
    {
      name:
        "abortStuckMigrations beside convergence: the deprecation, not 'no effect'",
      spec: {
        abortStuckMigrations: true,
        convergence: { completionTimeoutPerGiB: 600 },
      },
      warnings: [
        "spec.abortStuckMigrations: deprecated beside convergence: an onTimeout (spec.convergence, a trait's or the Eviction's) replaces it wherever it is set; set spec.convergence.onTimeout to Abort and remove it",
      ],
    },
    {
      name: "noPauseTraits without ForceComplete anywhere: no warning",
      spec: {
        noPauseTraits: ["CUSTOM_HANA"],
        convergence: { onTimeout: "Abort" },
      },
      warnings: [],
    },
  ];
  for (const row of rows) {
    await t.step(row.name, () => {
      const r = checkLimitSpec(row.spec);
      assert.deepEqual(
        r.violations.map((v) => v.message),
        row.violations ?? [],
      );
      if (row.warnings !== undefined) {
        assert.deepEqual(r.warnings.map((w) => w.message), row.warnings);
      }
    });
  }
});

Deno.test("convergencePolicyWarnings: ForceComplete reaching a noPauseTraits host, and the legacy fields", async (t) => {
  const HANA = "CUSTOM_HANA";
  const noPause = (source: string, who = `hosts with ${HANA}`) =>
    `spec.noPauseTraits[0]: VMs on hosts with ${HANA} must never be paused, but ${who} resolve to onTimeout ForceComplete (${source}): ${FORCE_COMPLETE_EFFECT}; give ${HANA} an entry in spec.traitLimits with convergence.onTimeout Abort or Report (the lowest risk wins)`;
  const entry = (trait: string, onTimeout?: OnTimeout) => ({
    trait,
    maxConcurrentMigrations: 1,
    ...(onTimeout === undefined ? {} : { convergence: { onTimeout } }),
  });
  const LEGACY_TIMEOUT =
    "spec.migrationTimeoutSeconds: deprecated beside convergence: a completionTimeoutPerGiB (spec.convergence, a trait's or the Eviction's) replaces this flat 3600 s timeout wherever it is set; set spec.convergence.completionTimeoutPerGiB and remove it";
  const LEGACY_ABORT =
    "spec.abortStuckMigrations: deprecated beside convergence: an onTimeout (spec.convergence, a trait's or the Eviction's) replaces it wherever it is set; set spec.convergence.onTimeout to Abort and remove it";
  const rows: Array<[string, ConvergencePolicyView, string[]]> = [
    ["the default forces", {
      convergence: { onTimeout: "ForceComplete" },
      noPauseTraits: [HANA],
    }, [noPause("spec.convergence.onTimeout")]],
    ["the trait's own entry forces", {
      traitLimits: [entry("CUSTOM_B"), entry(HANA, "ForceComplete")],
      noPauseTraits: [HANA],
    }, [noPause("spec.traitLimits[1].convergence.onTimeout")]],
    ["the trait's own Abort protects it from the default and other traits", {
      convergence: { onTimeout: "ForceComplete" },
      traitLimits: [entry(HANA, "Abort"), entry("CUSTOM_B", "ForceComplete")],
      noPauseTraits: [HANA],
    }, []],
    ["another trait forces on hosts that have both", {
      traitLimits: [entry(HANA), entry("CUSTOM_B", "ForceComplete")],
      noPauseTraits: [HANA],
    }, [
      noPause(
        "spec.traitLimits[1].convergence.onTimeout",
        `hosts with ${HANA} and CUSTOM_B`,
      ),
    ]],
    ["abortStuckMigrations alone never forces", {
      abortStuckMigrations: true,
      migrationTimeoutSeconds: 3600,
      noPauseTraits: [HANA],
    }, []],
    ["legacy timeout and abort beside convergence", {
      abortStuckMigrations: true,
      migrationTimeoutSeconds: 3600,
      convergence: { progressTimeoutSeconds: 300 },
    }, [LEGACY_TIMEOUT, LEGACY_ABORT]],
    ["legacy beside a trait's convergence only", {
      abortStuckMigrations: false,
      migrationTimeoutSeconds: 3600,
      traitLimits: [entry(HANA, "Report")],
    }, [LEGACY_TIMEOUT]],
    ["legacy fields without convergence: the flat special case, no warning", {
      abortStuckMigrations: true,
      migrationTimeoutSeconds: 3600,
    }, []],
  ];
  for (const [name, spec, want] of rows) {
    await t.step(name, () => {
      const warned: string[] = [];
      const sink: ConvergenceSink = {
        deny: () => assert.fail("no refusal expected"),
        warn: (_rule, _field, message) => warned.push(message),
      };
      convergencePolicyWarnings(spec, sink);
      assert.deepEqual(warned, want);
    });
  }
});

Deno.test("noPauseEvictionWarning: only ForceComplete on a host with a listed trait", () => {
  const forced = resolveConvergence({
    abortStuckMigrations: false,
    eviction: { onTimeout: "ForceComplete" },
  });
  const byTrait = resolveConvergence({
    abortStuckMigrations: false,
    traits: [{
      trait: "CUSTOM_B",
      convergence: { onTimeout: "ForceComplete" },
    }],
  });
  const aborts = resolveConvergence({
    abortStuckMigrations: false,
    eviction: { onTimeout: "Abort" },
  });
  const HANA = ["CUSTOM_HANA", "CUSTOM_B"];
  assert.equal(
    noPauseEvictionWarning(forced, HANA, ["CUSTOM_HANA"]),
    `spec.convergence: VMs on this host must never be paused (EvictionPolicy spec.noPauseTraits: CUSTOM_HANA), but its drain resolves to onTimeout ForceComplete from spec.convergence.onTimeout: ${FORCE_COMPLETE_EFFECT}; set spec.convergence.onTimeout to Abort or Report`,
  );
  assert.match(
    noPauseEvictionWarning(byTrait, HANA, ["CUSTOM_HANA"]) ?? "",
    /from the EvictionPolicy \(trait CUSTOM_B\)/,
  );
  assert.equal(
    noPauseEvictionWarning(aborts, HANA, ["CUSTOM_HANA"]),
    undefined,
  );
  assert.equal(noPauseEvictionWarning(forced, HANA, undefined), undefined);
  assert.equal(
    noPauseEvictionWarning(forced, ["CUSTOM_B"], ["CUSTOM_HANA"]),
    undefined,
  );
});

Deno.test("property: the validator is total over any convergence value, one line per message", () => {
  const w = <T>(weight: number, arbitrary: fc.Arbitrary<T>) => ({
    weight,
    arbitrary,
  });
  const bound = fc.oneof(
    w(4, fc.constant(undefined)),
    w(4, fc.integer({ min: 1, max: 86_400 })),
    w(1, fc.integer({ min: -2, max: 90_000 })),
    w(1, fc.double()),
    w(1, fc.anything()),
  );
  const action = fc.oneof(
    w(3, fc.constantFrom(undefined, "Report", "Abort", "ForceComplete")),
    w(1, fc.constantFrom("abort", "", "Pause")),
    w(1, fc.anything()),
  );
  const convergenceArb = fc.oneof(
    w(1, fc.anything()),
    w(
      6,
      fc.record({
        completionTimeoutPerGiB: bound,
        progressTimeoutSeconds: bound,
        onTimeout: action,
        maxAbortedTries: bound,
        forceCompleteTimeoutSeconds: bound,
      }, { requiredKeys: [] }),
    ),
  );
  const noPauseArb = fc.oneof(
    w(3, fc.constant(undefined)),
    w(3, fc.array(fc.constantFrom("CUSTOM_A", "CUSTOM_HANA", "HW_X"))),
    w(1, fc.array(fc.string({ maxLength: 12 }))),
    w(1, fc.anything()),
  );
  let allowed = 0;
  fc.assert(
    fc.property(
      convergenceArb,
      noPauseArb,
      (convergence, noPauseTraits) => {
        const r = checkLimitSpec({
          maxConcurrentMigrations: 2,
          convergence,
          traitLimits: [{
            trait: "CUSTOM_A",
            maxConcurrentMigrations: 1,
            convergence,
          }],
          noPauseTraits,
        });
        for (const m of [...r.violations, ...r.warnings]) {
          assert.ok(!/[\n\r\u2028\u2029]/.test(m.message), m.message);
        }
        if (r.ok) {
          allowed++;
          // what the validator allows, the resolution takes
          resolveConvergence({
            abortStuckMigrations: r.spec.abortStuckMigrations,
            defaults: r.spec.convergence,
            traits: r.spec.traitLimits,
          });
        }
      },
    ),
    { numRuns: 500 },
  );
  assert.ok(allowed > 10, `only ${allowed} allowed runs`);
});
