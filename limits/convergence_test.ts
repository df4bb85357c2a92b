import assert from "node:assert/strict";
import fc from "fast-check";
import {
  copyTimeoutSeconds,
  ON_TIMEOUT_BY_RISK,
  type OnTimeout,
  resolveConvergence,
} from "./convergence.ts";

Deno.test("resolveConvergence: the legacy fields are the flat special case", () => {
  const table: [boolean, number | undefined, OnTimeout, number | undefined][] =
    [
      [false, undefined, "Report", undefined],
      [true, 3600, "Abort", 3600],
      [false, 600, "Report", 600],
    ];
  for (const [abort, flat, action, timeout] of table) {
    const p = resolveConvergence({
      abortStuckMigrations: abort,
      ...(flat === undefined ? {} : { migrationTimeoutSeconds: flat }),
    });
    assert.equal(p.onTimeout, action);
    assert.equal(copyTimeoutSeconds(p, 65536), timeout);
    assert.equal(p.source, "policy");
    assert.equal(p.progressTimeoutSeconds, 150);
    assert.equal(p.maxAbortedTries, 2);
  }
});

Deno.test("resolveConvergence: a per-GiB bound replaces the flat timeout", () => {
  const p = resolveConvergence({
    abortStuckMigrations: true,
    migrationTimeoutSeconds: 3600,
    defaults: { completionTimeoutPerGiB: 100 },
  });
  assert.equal(p.flatTimeoutSeconds, undefined);
  assert.equal(copyTimeoutSeconds(p, 16384), 1600);
  assert.equal(copyTimeoutSeconds(p, 256), 100);
});

Deno.test("resolveConvergence: the Eviction overrides field by field", () => {
  const p = resolveConvergence({
    abortStuckMigrations: false,
    defaults: { onTimeout: "Abort", progressTimeoutSeconds: 60 },
    traits: [{ trait: "CUSTOM_X", convergence: { maxAbortedTries: 3 } }],
    eviction: { onTimeout: "ForceComplete", maxAbortedTries: 1 },
  });
  assert.equal(p.onTimeout, "ForceComplete");
  assert.equal(p.source, "eviction");
  assert.equal(p.progressTimeoutSeconds, 60);
  assert.equal(p.maxAbortedTries, 1);
});

Deno.test("resolveConvergence: several traits give the lowest risk of each field", () => {
  const action = fc.constantFrom<OnTimeout>(...ON_TIMEOUT_BY_RISK);
  const entry = fc.record({
    trait: fc.constantFrom("CUSTOM_A", "CUSTOM_B", "CUSTOM_C"),
    convergence: fc.record({
      onTimeout: action,
      progressTimeoutSeconds: fc.integer({ min: 1, max: 1000 }),
      maxAbortedTries: fc.integer({ min: 1, max: 5 }),
    }, { requiredKeys: [] }),
  });
  fc.assert(
    fc.property(fc.array(entry, { maxLength: 4 }), action, (traits, d) => {
      const p = resolveConvergence({
        abortStuckMigrations: false,
        defaults: { onTimeout: d },
        traits,
      });
      const set = traits.flatMap((t) => t.convergence);
      const actions = set.flatMap((c) => c.onTimeout ?? []);
      const risk = (a: OnTimeout) => ON_TIMEOUT_BY_RISK.indexOf(a);
      assert.equal(
        risk(p.onTimeout),
        actions.length === 0 ? risk(d) : Math.min(...actions.map(risk)),
      );
      const progress = set.flatMap((c) => c.progressTimeoutSeconds ?? []);
      if (progress.length > 0) {
        assert.equal(p.progressTimeoutSeconds, Math.max(...progress));
      }
      const tries = set.flatMap((c) => c.maxAbortedTries ?? []);
      if (tries.length > 0) assert.equal(p.maxAbortedTries, Math.min(...tries));
    }),
  );
});
