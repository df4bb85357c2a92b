import assert from "node:assert/strict";
import fc from "fast-check";
import type { EvictionStatus } from "../../models/mod.ts";
import { UNSUPPORTED_PREFIX } from "./classify.ts";
import { applyRetry } from "./retry.ts";

const f = (id: string, attempts = 5) => ({
  id,
  reason: "x",
  attempts,
  lastAttemptAt: "2026-01-01T00:00:00Z",
});
const STATUS: EvictionStatus = {
  failed: [f("a"), f("b")],
  skipped: [
    { id: "c", reason: `${UNSUPPORTED_PREFIX}vTPM` },
    { id: "d", reason: "SUSPENDED needs a person" },
  ],
};

Deno.test("applyRetry: table", () => {
  const rows: Array<[string, string, string[], string[], string[], string[]]> =
    [
      // value, rearmed, ignored, failed left, skipped left
      ["*", "*", ["a", "b", "c"], [], [], ["d"]],
      ["one", "a", ["a"], [], ["b"], ["c", "d"]],
      ["spaces and an unknown id", " b , zz ", ["b"], ["zz"], ["a"], [
        "c",
        "d",
      ]],
      ["a person's skip is not re-armed", "d", [], ["d"], ["a", "b"], [
        "c",
        "d",
      ]],
      ["empty", "", [], [], ["a", "b"], ["c", "d"]],
    ];
  for (const [name, value, rearmed, ignored, failed, skipped] of rows) {
    const r = applyRetry(STATUS, value);
    assert.deepEqual(r.rearmed, rearmed, name);
    assert.deepEqual(r.ignored, ignored, name);
    assert.deepEqual(r.status.failed?.map((x) => x.id), failed, name);
    assert.deepEqual(r.status.skipped?.map((x) => x.id), skipped, name);
  }
});

Deno.test("property: every requested id is re-armed or ignored, and re-armed ones leave failed", () => {
  fc.assert(fc.property(
    fc.uniqueArray(fc.constantFrom("a", "b", "c", "d", "e"), { maxLength: 5 }),
    fc.array(fc.constantFrom("a", "b", "c", "x", "y"), { maxLength: 6 }),
    (failedIds, asked) => {
      const r = applyRetry(
        { failed: failedIds.map((id) => f(id)) },
        asked.join(","),
      );
      for (const id of asked) {
        assert.ok(r.rearmed.includes(id) !== r.ignored.includes(id));
      }
      for (const id of r.rearmed) {
        assert.ok(!(r.status.failed ?? []).some((x) => x.id === id));
      }
      assert.equal(
        (r.status.failed ?? []).length + r.rearmed.length,
        failedIds.length,
      );
    },
  ));
});
