/**
 * The start-up flags and an EvictionPolicy with the same settings give the
 * same resolution, the same refusal messages and the same warnings.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { drainConvergence, resolveLimit } from "../limits/resolve.ts";
import { policySettings } from "../limits/resolve.ts";
import { CONVERGENCE_KEYS, parseConcurrencyFlags } from "../limits/flags.ts";
import { EvictionPolicySpecSchema } from "../models/mod.ts";
import { validateEvictionPolicy } from "./eviction_policy.ts";

// traits without "," (the flag's list separator); "=" is allowed: the
// entry is split at the last one
const traitArb = fc.oneof(
  fc.constantFrom(
    "CUSTOM_A",
    "CUSTOM_B",
    "custom_a",
    "HW_GPU_API_CUDA",
    "HANA",
    "",
    "A=B",
    "CUSTOM A",
    "CUSTOM_\n",
  ),
  fc.stringMatching(/^[A-Z_]{1,10}$/),
  fc.string({ maxLength: 6 }).filter((s) => !s.includes(",")),
);
const intArb = fc.integer({ min: -3, max: 70 });
const settingsArb = fc.record({
  max: fc.option(intArb, { nil: undefined }),
  traits: fc.array(fc.record({ trait: traitArb, max: intArb }), {
    maxLength: 5,
  }),
  // how the entries are spread over repeated flags
  cuts: fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
});
const hostTraitsArb = fc.subarray([
  "CUSTOM_A",
  "CUSTOM_B",
  "HW_GPU_API_CUDA",
  "HANA",
]);

function asFlags(
  traits: Array<{ trait: string; max: number }>,
  cuts: boolean[],
): string[] {
  const flags: string[] = [];
  let current: string[] = [];
  traits.forEach((t, i) => {
    current.push(`${t.trait}=${t.max}`);
    if (cuts[i] === true) {
      flags.push(current.join(","));
      current = [];
    }
  });
  if (current.length > 0) flags.push(current.join(","));
  return flags;
}

Deno.test("property: flags and a policy with the same settings agree", () => {
  let allowedRuns = 0;
  fc.assert(
    fc.property(settingsArb, hostTraitsArb, ({ max, traits, cuts }, host) => {
      const spec: Record<string, unknown> = {};
      if (max !== undefined) spec["maxConcurrentMigrations"] = max;
      if (traits.length > 0) {
        spec["traitLimits"] = traits.map((t) => ({
          trait: t.trait,
          maxConcurrentMigrations: t.max,
        }));
      }
      const verdict = validateEvictionPolicy(
        { metadata: { name: "default" }, spec },
        undefined,
        { runningEvictions: [] },
      );
      const flags = parseConcurrencyFlags(
        max === undefined ? undefined : String(max),
        asFlags(traits, cuts),
      );
      if (verdict.allowed) {
        assert.ok(flags.ok, "flags refused what the policy allows");
        allowedRuns++;
        assert.deepEqual(
          flags.warnings.map((w) => w.message),
          verdict.warnings ?? [],
        );
        const fromPolicy = resolveLimit(
          policySettings(EvictionPolicySpecSchema.parse(spec)),
          host,
        );
        const fromFlags = resolveLimit(flags.settings, host);
        assert.deepEqual(
          { ...fromFlags, source: "policy" },
          fromPolicy,
        );
        assert.equal(fromFlags.source, "flags");
      } else {
        assert.ok(!flags.ok, "flags allowed what the policy refuses");
        assert.equal(flags.error.message, verdict.message);
        assert.deepEqual(
          flags.error.problems.map((p) => p.message).join(" | "),
          verdict.message,
        );
      }
    }),
    { numRuns: 1000 },
  );
  assert.ok(allowedRuns > 50, `only ${allowedRuns} allowed runs`);
});

const convergenceArb = fc.dictionary(
  fc.constantFrom(...CONVERGENCE_KEYS),
  fc.oneof(
    fc.integer({ min: -2, max: 90_000 }).map(String),
    fc.constantFrom("Report", "Abort", "ForceComplete", "abort", "1.5", ""),
  ),
  { maxKeys: 5 },
);

Deno.test("property: --eviction-convergence and a policy's spec.convergence agree", () => {
  let allowedRuns = 0;
  fc.assert(
    fc.property(convergenceArb, hostTraitsArb, (entries, host) => {
      const convergence = Object.fromEntries(
        Object.entries(entries).map(([k, v]) => [
          k,
          k !== "onTimeout" && /^-?[0-9]+$/.test(v) ? Number(v) : v,
        ]),
      );
      const spec = Object.keys(entries).length === 0 ? {} : { convergence };
      const verdict = validateEvictionPolicy(
        { metadata: { name: "default" }, spec },
        undefined,
        { runningEvictions: [] },
      );
      const flags = parseConcurrencyFlags(
        undefined,
        undefined,
        Object.entries(entries).map(([k, v]) => `${k}=${v}`),
      );
      if (verdict.allowed) {
        assert.ok(flags.ok, "flags refused what the policy allows");
        allowedRuns++;
        assert.deepEqual(
          flags.warnings.map((w) => w.message),
          verdict.warnings ?? [],
        );
        assert.deepEqual(
          drainConvergence(flags.settings, host, undefined),
          drainConvergence(
            policySettings(EvictionPolicySpecSchema.parse(spec)),
            host,
            undefined,
          ),
        );
      } else {
        assert.ok(!flags.ok, "flags allowed what the policy refuses");
        assert.equal(flags.error.message, verdict.message);
      }
    }),
    { numRuns: 500 },
  );
  assert.ok(allowedRuns > 50, `only ${allowedRuns} allowed runs`);
});
