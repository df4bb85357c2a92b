import assert from "node:assert/strict";
import fc from "fast-check";
import { durationMs, formatDuration, parseDurationFlag } from "./duration.ts";

Deno.test("durationMs: Go's durations, a bare number as seconds", () => {
  const rows: [string, number | undefined][] = [
    ["0", 0],
    ["3", 3000],
    ["2.5", 2500],
    ["90s", 90_000],
    ["5m", 300_000],
    ["1h30m", 5_400_000],
    ["1.5h", 5_400_000],
    ["2h45m30s", 9_930_000],
    ["300ms", 300],
    ["1m0.5s", 60_500],
    ["0s", 0],
    ["1000us", 1],
    ["", undefined],
    ["5x", undefined],
    ["-1", undefined],
    ["-5m", undefined],
    ["m", undefined],
    ["5 m", undefined],
    ["1h 30m", undefined],
    ["1d", undefined],
    ["abc", undefined],
  ];
  for (const [text, want] of rows) assert.equal(durationMs(text), want, text);
});

Deno.test("durationMs reads back what formatDuration writes (property)", () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 1000 * 3600 * 100 }), (ms) => {
      assert.equal(durationMs(formatDuration(ms)), ms);
    }),
  );
});

Deno.test("parseDurationFlag: a bad value is one line naming it and the form", () => {
  assert.throws(
    () => parseDurationFlag("--timeout", "5x"),
    (e: Error) =>
      e instanceof RangeError &&
      e.message ===
        '--timeout "5x" is not valid: expected a duration such as 90s, 5m or 1h30m (a bare number is seconds; 0 waits forever)',
  );
  assert.equal(parseDurationFlag("--timeout", "5m"), 300_000);
});
