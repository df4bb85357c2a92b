import assert from "node:assert/strict";
import fc from "fast-check";
import { copySpan } from "./pacing.ts";

Deno.test("copySpan: table", () => {
  const rows: Array<
    [string, number, number | undefined, boolean, number, unknown]
  > = [
    ["never queued: all copy", 0, undefined, false, 40_000, {
      copyMs: 40_000,
      queuedMs: 0,
    }],
    ["never queued: a copy start seen is ignored", 0, 5000, false, 40_000, {
      copyMs: 40_000,
      queuedMs: 0,
    }],
    ["queued 30 s, copied 10 s", 0, 30_000, true, 40_000, {
      copyMs: 10_000,
      queuedMs: 30_000,
    }],
    ["queued, copy start unknown", 0, undefined, true, 40_000, undefined],
    ["queued, copy start before the start: clamped", 1000, 0, true, 5000, {
      copyMs: 4000,
      queuedMs: 0,
    }],
    [
      "queued, copy start at the end: no copy",
      0,
      40_000,
      true,
      40_000,
      undefined,
    ],
    ["queued, copy start after the end", 0, 50_000, true, 40_000, undefined],
    ["an end before the start", 10_000, undefined, false, 5000, undefined],
    ["an empty span", 10_000, undefined, false, 10_000, undefined],
    ["an unparsed start", Number.NaN, undefined, false, 10_000, undefined],
    ["an unparsed copy start", 0, Number.NaN, true, 10_000, undefined],
  ];
  for (const [name, start, from, queued, end, want] of rows) {
    assert.deepEqual(copySpan(start, from, queued, end), want, name);
  }
});

Deno.test("property: copySpan splits the span, never counts a wait as copy, and a wait only when queued", () => {
  fc.assert(fc.property(
    fc.integer({ min: 0, max: 1e9 }),
    fc.option(fc.integer({ min: -1e6, max: 2e9 }), { nil: undefined }),
    fc.boolean(),
    fc.integer({ min: -1e6, max: 1e7 }),
    (start, from, queued, length) => {
      const end = start + length;
      const s = copySpan(start, from, queued, end);
      if (length <= 0) return assert.equal(s, undefined);
      if (queued && from === undefined) return assert.equal(s, undefined);
      if (s === undefined) {
        // only a queued one whose copy start is at or past its end
        assert.ok(queued && from !== undefined && from >= end);
        return;
      }
      assert.equal(s.copyMs + s.queuedMs, length);
      assert.ok(s.copyMs > 0 && s.queuedMs >= 0);
      if (!queued) assert.equal(s.queuedMs, 0);
      else if (from !== undefined && from >= start) {
        assert.equal(s.queuedMs, from - start);
      }
    },
  ));
});
