import assert from "node:assert/strict";
import fc from "fast-check";
import { learnedNovaLimit, predictionLimit } from "./prediction_limit.ts";

Deno.test("predictionLimit: table", () => {
  const rows: Array<[string, number, number | undefined, number]> = [
    ["Nova's limit not learned: ours", 4, undefined, 4],
    ["Nova's lower: Nova's", 4, 1, 1],
    ["Nova's equal", 4, 4, 4],
    ["Nova's higher: ours", 2, 8, 2],
  ];
  for (const [name, limit, nova, want] of rows) {
    assert.equal(predictionLimit(limit, nova), want, name);
  }
});

Deno.test("predictionLimit: bad input names the value", () => {
  assert.throws(() => predictionLimit(0, undefined), /limit .* got 0/);
  assert.throws(() => predictionLimit(1.5, 1), /got 1\.5/);
  assert.throws(
    () => predictionLimit(4, 0),
    /Nova's live-migration limit .* got 0/,
  );
});

Deno.test("property: a prediction never assumes more at once than either limit, and exactly the lower", () => {
  fc.assert(fc.property(
    fc.integer({ min: 1, max: 64 }),
    fc.option(fc.integer({ min: 1, max: 64 }), { nil: undefined }),
    (limit, nova) => {
      const l = predictionLimit(limit, nova);
      assert.ok(l >= 1 && l <= limit);
      if (nova !== undefined) assert.ok(l <= nova);
      assert.equal(l, Math.min(limit, nova ?? limit));
    },
  ));
});

Deno.test("learnedNovaLimit: the host's running drain's, else what its last ended drain kept; never an ended Eviction's or another host's", () => {
  const running = (host: string, limit?: number) => ({
    spec: { hypervisor: host },
    status: limit === undefined ? {} : { novaLiveMigrationLimit: limit },
  });
  const ended = (host: string, limit: number) => ({
    spec: { hypervisor: host },
    status: {
      finishedAt: "2026-12-01T00:00:00Z",
      novaLiveMigrationLimit: limit,
    },
  });
  assert.equal(learnedNovaLimit("a", []), undefined);
  assert.equal(learnedNovaLimit("a", [running("a", 1)]), 1);
  assert.equal(learnedNovaLimit("a", [running("b", 1)]), undefined);
  assert.equal(learnedNovaLimit("a", [ended("a", 2)]), undefined);
  assert.equal(learnedNovaLimit("a", [ended("a", 2), running("a", 3)]), 3);
  assert.equal(learnedNovaLimit("a", [running("a")]), undefined);
  assert.equal(
    learnedNovaLimit("a", [{ spec: { hypervisor: "a" } }]),
    undefined,
  );
  // the host's latest ended drain kept it: a plan before the next drain
  const kept = { novaLiveMigrationLimit: 1 };
  assert.equal(learnedNovaLimit("a", [], kept), 1);
  assert.equal(learnedNovaLimit("a", [running("a")], kept), 1);
  assert.equal(learnedNovaLimit("a", [running("a", 2)], kept), 2);
  assert.equal(learnedNovaLimit("a", [], {}), undefined);
});
