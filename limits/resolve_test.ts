import assert from "node:assert/strict";
import fc from "fast-check";
import type { EvictionPolicySpec } from "../models/mod.ts";
import {
  clusterBudgetLeft,
  drainConvergence,
  effectiveSettings,
  freezeSettings,
  type LimitSettings,
  policySettings,
  resolveLimit,
} from "./resolve.ts";

function spec(
  max: number,
  traitLimits: Array<[string, number]> = [],
  extra: Partial<EvictionPolicySpec> = {},
): EvictionPolicySpec {
  return {
    maxConcurrentMigrations: max,
    abortStuckMigrations: false,
    ...(traitLimits.length === 0 ? {} : {
      traitLimits: traitLimits.map(([trait, m]) => ({
        trait,
        maxConcurrentMigrations: m,
      })),
    }),
    ...extra,
  };
}

const HANA = "CUSTOM_HANA_EXCLUSIVE_HOST";

Deno.test("resolveLimit: table", async (t) => {
  const policy = policySettings(
    spec(4, [[HANA, 1], ["HW_GPU_API_CUDA", 2], ["CUSTOM_SLOW", 2]]),
  );
  const flags = freezeSettings("flags", spec(4, [[HANA, 1]]));
  const cases: Array<{
    name: string;
    settings: LimitSettings;
    traits: readonly string[] | undefined;
    requested?: number;
    limit: number;
    source: string;
    matched: string[];
    deciding: string | undefined;
    hostLimit: number;
    clamped: boolean;
  }> = [
    {
      name: "no traits: the default",
      settings: policy,
      traits: [],
      limit: 4,
      source: "policy",
      matched: [],
      deciding: undefined,
      hostLimit: 4,
      clamped: false,
    },
    {
      name: "traits unknown (undefined): the default",
      settings: policy,
      traits: undefined,
      limit: 4,
      source: "policy",
      matched: [],
      deciding: undefined,
      hostLimit: 4,
      clamped: false,
    },
    {
      name: "a host trait that the policy does not list changes nothing",
      settings: policy,
      traits: ["HW_CPU_X86_AVX2"],
      limit: 4,
      source: "policy",
      matched: [],
      deciding: undefined,
      hostLimit: 4,
      clamped: false,
    },
    {
      name: "one matching trait lowers the limit",
      settings: policy,
      traits: ["HW_GPU_API_CUDA", "HW_CPU_X86_AVX2"],
      limit: 2,
      source: "policy",
      matched: ["HW_GPU_API_CUDA"],
      deciding: "HW_GPU_API_CUDA",
      hostLimit: 2,
      clamped: false,
    },
    {
      name: "several matching traits: the lowest wins",
      settings: policy,
      traits: ["CUSTOM_SLOW", HANA, "HW_GPU_API_CUDA"],
      limit: 1,
      source: "policy",
      matched: [HANA, "HW_GPU_API_CUDA", "CUSTOM_SLOW"],
      deciding: HANA,
      hostLimit: 1,
      clamped: false,
    },
    {
      name: "two traits with the same lowest limit: the first listed decides",
      settings: policy,
      traits: ["CUSTOM_SLOW", "HW_GPU_API_CUDA"],
      limit: 2,
      source: "policy",
      matched: ["HW_GPU_API_CUDA", "CUSTOM_SLOW"],
      deciding: "HW_GPU_API_CUDA",
      hostLimit: 2,
      clamped: false,
    },
    {
      name: "matching is case-sensitive",
      settings: policy,
      traits: ["custom_hana_exclusive_host"],
      limit: 4,
      source: "policy",
      matched: [],
      deciding: undefined,
      hostLimit: 4,
      clamped: false,
    },
    {
      name: "a trait limit above the default never raises it",
      settings: policySettings(spec(2, [["CUSTOM_BIG", 8]])),
      traits: ["CUSTOM_BIG"],
      limit: 2,
      source: "policy",
      matched: ["CUSTOM_BIG"],
      deciding: undefined,
      hostLimit: 2,
      clamped: false,
    },
    {
      name: "the Eviction's own lower value decides",
      settings: policy,
      traits: ["HW_GPU_API_CUDA"],
      requested: 1,
      limit: 1,
      source: "eviction",
      matched: ["HW_GPU_API_CUDA"],
      deciding: "HW_GPU_API_CUDA",
      hostLimit: 2,
      clamped: false,
    },
    {
      name: "the Eviction's value equal to the host limit: the policy decides",
      settings: policy,
      traits: ["HW_GPU_API_CUDA"],
      requested: 2,
      limit: 2,
      source: "policy",
      matched: ["HW_GPU_API_CUDA"],
      deciding: "HW_GPU_API_CUDA",
      hostLimit: 2,
      clamped: false,
    },
    {
      name: "the Eviction's higher value is clamped",
      settings: policy,
      traits: [HANA],
      requested: 8,
      limit: 1,
      source: "policy",
      matched: [HANA],
      deciding: HANA,
      hostLimit: 1,
      clamped: true,
    },
    {
      name: "flags as the source",
      settings: flags,
      traits: [HANA],
      limit: 1,
      source: "flags",
      matched: [HANA],
      deciding: HANA,
      hostLimit: 1,
      clamped: false,
    },
    {
      name: "flags, lowered by the Eviction",
      settings: flags,
      traits: [],
      requested: 3,
      limit: 3,
      source: "eviction",
      matched: [],
      deciding: undefined,
      hostLimit: 4,
      clamped: false,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const r = resolveLimit(c.settings, c.traits, c.requested);
      assert.deepEqual(r, {
        limit: c.limit,
        source: c.source,
        matchedTraits: c.matched,
        decidingTrait: c.deciding,
        defaultLimit: c.settings.spec.maxConcurrentMigrations,
        hostLimit: c.hostLimit,
        requested: c.requested,
        clamped: c.clamped,
      });
    });
  }
});

Deno.test("resolveLimit: RangeError names the bad value", () => {
  assert.throws(
    () => resolveLimit(policySettings(spec(0)), []),
    new RangeError(
      "spec.maxConcurrentMigrations must be an integer >= 1, got 0",
    ),
  );
  assert.throws(
    () => resolveLimit(policySettings(spec(4, [["CUSTOM_A", 1.5]])), []),
    new RangeError(
      "spec.traitLimits[0].maxConcurrentMigrations must be an integer >= 1, got 1.5",
    ),
  );
  assert.throws(
    () => resolveLimit(policySettings(spec(4)), [], 0),
    new RangeError(
      "the Eviction's spec.maxConcurrentMigrations must be an integer >= 1, got 0",
    ),
  );
});

Deno.test("settings are frozen copies", () => {
  const input = spec(4, [["CUSTOM_A", 2]], {
    clusterMaxConcurrentMigrations: 8,
  });
  const s = policySettings(input);
  assert.ok(Object.isFrozen(s) && Object.isFrozen(s.spec));
  assert.ok(Object.isFrozen(s.spec.traitLimits));
  assert.ok(Object.isFrozen(s.spec.traitLimits?.[0]));
  input.maxConcurrentMigrations = 1;
  const first = input.traitLimits?.[0];
  if (first !== undefined) first.maxConcurrentMigrations = 1;
  assert.equal(s.spec.maxConcurrentMigrations, 4);
  assert.equal(s.spec.traitLimits?.[0]?.maxConcurrentMigrations, 2);
  assert.equal(s.spec.clusterMaxConcurrentMigrations, 8);
});

Deno.test("effectiveSettings: the policy when there is one, else the flags", () => {
  const flags = freezeSettings("flags", spec(2));
  assert.equal(effectiveSettings(undefined, flags), flags);
  const p = effectiveSettings(spec(5), flags);
  assert.equal(p.source, "policy");
  assert.equal(p.spec.maxConcurrentMigrations, 5);
});

Deno.test("clusterBudgetLeft: table", () => {
  assert.equal(clusterBudgetLeft(undefined, 0), Infinity);
  assert.equal(clusterBudgetLeft(undefined, 1000), Infinity);
  assert.equal(clusterBudgetLeft(5, 0), 5);
  assert.equal(clusterBudgetLeft(5, 3), 2);
  assert.equal(clusterBudgetLeft(5, 5), 0);
  assert.equal(clusterBudgetLeft(5, 9), 0);
  assert.throws(
    () => clusterBudgetLeft(5, -1),
    new RangeError("inFlightTotal must be an integer >= 0, got -1"),
  );
  assert.throws(
    () => clusterBudgetLeft(0, 1),
    new RangeError(
      "spec.clusterMaxConcurrentMigrations must be an integer >= 1, got 0",
    ),
  );
});

// ---- properties ----

const TRAIT_POOL = [
  HANA,
  "CUSTOM_A",
  "CUSTOM_B",
  "HW_GPU_API_CUDA",
  "COMPUTE_STATUS_DISABLED",
  "STORAGE_DISK_SSD",
];
const limitArb = fc.integer({ min: 1, max: 64 });
const settingsArb: fc.Arbitrary<LimitSettings> = fc.record({
  source: fc.constantFrom("policy" as const, "flags" as const),
  max: limitArb,
  traits: fc.uniqueArray(
    fc.record({ trait: fc.constantFrom(...TRAIT_POOL), limit: limitArb }),
    { selector: (t) => t.trait, maxLength: TRAIT_POOL.length },
  ),
}).map(({ source, max, traits }) =>
  freezeSettings(
    source,
    spec(max, traits.map((t) => [t.trait, t.limit])),
  )
);
const traitsArb = fc.subarray([...TRAIT_POOL, "HW_CPU_X86_AVX2", "custom_a"]);

Deno.test("property: 1 <= limit <= default, and limit = min(default, matching trait limits)", () => {
  fc.assert(fc.property(settingsArb, traitsArb, (s, traits) => {
    const r = resolveLimit(s, traits);
    const matching = (s.spec.traitLimits ?? []).filter((t) =>
      traits.includes(t.trait)
    ).map((t) => t.maxConcurrentMigrations);
    assert.ok(r.limit >= 1);
    assert.ok(r.limit <= s.spec.maxConcurrentMigrations);
    assert.equal(
      r.limit,
      Math.min(s.spec.maxConcurrentMigrations, ...matching),
    );
    assert.equal(r.source, s.source);
  }));
});

Deno.test("property: traits only lower the limit (more traits, never a higher limit)", () => {
  fc.assert(
    fc.property(settingsArb, traitsArb, traitsArb, (s, a, b) => {
      const fewer = resolveLimit(s, a).limit;
      const more = resolveLimit(s, [...a, ...b]).limit;
      assert.ok(more <= fewer);
      assert.ok(fewer <= resolveLimit(s, []).limit);
    }),
  );
});

Deno.test("property: the Eviction's value only lowers the limit", () => {
  fc.assert(
    fc.property(settingsArb, traitsArb, limitArb, (s, traits, requested) => {
      const base = resolveLimit(s, traits);
      const r = resolveLimit(s, traits, requested);
      assert.equal(r.limit, Math.min(base.limit, requested));
      assert.ok(r.limit <= base.limit);
      assert.equal(r.hostLimit, base.limit);
      assert.equal(r.source, requested < base.limit ? "eviction" : s.source);
      assert.equal(r.clamped, requested > base.limit);
    }),
  );
});

Deno.test("property: the cluster budget holds when drains start one after another", () => {
  fc.assert(fc.property(
    fc.option(fc.integer({ min: 1, max: 50 }), { nil: undefined }),
    fc.array(
      fc.record({ limit: limitArb, inFlight: fc.nat(70) }),
      { maxLength: 20 },
    ),
    (budget, drains) => {
      let total = drains.reduce((sum, d) => sum + d.inFlight, 0);
      const before = total;
      for (const d of drains) {
        // What the planner starts: the room under the drain's own limit,
        // bounded by the cluster budget left.
        const n = Math.max(
          0,
          Math.min(d.limit - d.inFlight, clusterBudgetLeft(budget, total)),
        );
        assert.ok(d.inFlight + n <= Math.max(d.limit, d.inFlight));
        total += n;
      }
      if (budget !== undefined) assert.ok(total <= Math.max(budget, before));
      else {
        assert.equal(
          total,
          drains.reduce((sum, d) => sum + Math.max(d.limit, d.inFlight), 0),
        );
      }
    },
  ));
});

Deno.test("freezeSettings keeps the convergence fields, frozen, and drainConvergence reads them", () => {
  const s = freezeSettings("policy", {
    maxConcurrentMigrations: 4,
    abortStuckMigrations: true,
    migrationTimeoutSeconds: 3600,
    convergence: { progressTimeoutSeconds: 200, onTimeout: "ForceComplete" },
    traitLimits: [{
      trait: "CUSTOM_HANA",
      maxConcurrentMigrations: 1,
      convergence: { onTimeout: "Report", maxAbortedTries: 1 },
    }, { trait: "CUSTOM_B", maxConcurrentMigrations: 2 }],
    noPauseTraits: ["CUSTOM_HANA"],
  });
  assert.deepEqual(s.spec.convergence, {
    progressTimeoutSeconds: 200,
    onTimeout: "ForceComplete",
  });
  assert.deepEqual(s.spec.traitLimits?.[0]?.convergence, {
    onTimeout: "Report",
    maxAbortedTries: 1,
  });
  assert.ok(!("convergence" in (s.spec.traitLimits?.[1] ?? {})));
  assert.deepEqual(s.spec.noPauseTraits, ["CUSTOM_HANA"]);
  assert.ok(Object.isFrozen(s.spec.convergence));
  assert.ok(Object.isFrozen(s.spec.traitLimits?.[0]?.convergence));
  assert.ok(Object.isFrozen(s.spec.noPauseTraits));
  const rows: Array<{
    name: string;
    traits: string[] | undefined;
    eviction?: { onTimeout: "Abort" };
    want: { onTimeout: string; source: string; maxAbortedTries: number };
  }> = [
    {
      name: "no matching trait: the policy's default",
      traits: ["CUSTOM_B"],
      want: {
        onTimeout: "ForceComplete",
        source: "policy",
        maxAbortedTries: 2,
      },
    },
    {
      name: "unknown traits: the policy's default",
      traits: undefined,
      want: {
        onTimeout: "ForceComplete",
        source: "policy",
        maxAbortedTries: 2,
      },
    },
    {
      name: "a matching trait's entry",
      traits: ["CUSTOM_HANA", "CUSTOM_B"],
      want: {
        onTimeout: "Report",
        source: "trait CUSTOM_HANA",
        maxAbortedTries: 1,
      },
    },
    {
      name: "the Eviction over both",
      traits: ["CUSTOM_HANA"],
      eviction: { onTimeout: "Abort" },
      want: { onTimeout: "Abort", source: "eviction", maxAbortedTries: 1 },
    },
  ];
  for (const row of rows) {
    const p = drainConvergence(s, row.traits, row.eviction);
    assert.deepEqual(
      {
        onTimeout: p.onTimeout,
        source: p.source,
        maxAbortedTries: p.maxAbortedTries,
      },
      row.want,
      row.name,
    );
    assert.equal(p.progressTimeoutSeconds, 200, row.name);
    // no per-GiB bound anywhere: the legacy flat timeout is the bound
    assert.equal(p.flatTimeoutSeconds, 3600, row.name);
  }
});
