import assert from "node:assert/strict";
import fc from "fast-check";
import {
  authRetryDelayMs,
  checkedAuthBackoff,
  DEFAULT_AUTH_BACKOFF,
  doublingDelayMs,
} from "./backoff.ts";

Deno.test("doublingDelayMs: doubles from the first delay up to the cap", () => {
  const got = [1, 2, 3, 4, 5, 6, 7, 100, 5000].map((n) =>
    doublingDelayMs(n, 500, 10_000)
  );
  assert.deepEqual(got, [
    500,
    1000,
    2000,
    4000,
    8000,
    10_000,
    10_000,
    10_000,
    10_000,
  ]);
  assert.equal(doublingDelayMs(0, 500, 10_000), 500);
});

Deno.test("auth backoff: from seconds to minutes by default", () => {
  const table: Array<[number, number]> = [
    [1, 5_000],
    [2, 10_000],
    [3, 20_000],
    [4, 40_000],
    [5, 80_000],
    [6, 160_000],
    [7, 300_000],
    [8, 300_000],
    [1_000, 300_000],
  ];
  for (const [failures, ms] of table) {
    assert.equal(authRetryDelayMs(failures), ms, `failures=${failures}`);
  }
});

Deno.test("auth backoff: bounds are checked and named", () => {
  assert.throws(
    () => authRetryDelayMs(0),
    /failures must be an integer >= 1, got 0/,
  );
  assert.throws(() => authRetryDelayMs(1.5), /got 1.5/);
  assert.throws(
    () => checkedAuthBackoff({ initialMs: 0 }),
    /authBackoff.initialMs must be a finite number > 0, got 0/,
  );
  assert.throws(
    () => checkedAuthBackoff({ initialMs: 10, maxMs: 5 }),
    /authBackoff.maxMs must be a finite number >= initialMs \(10\), got 5/,
  );
  assert.deepEqual(checkedAuthBackoff({}), DEFAULT_AUTH_BACKOFF);
});

Deno.test("auth backoff: never shrinks, starts at initialMs, never passes maxMs", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 60_000 }),
      fc.integer({ min: 0, max: 10_000_000 }),
      fc.integer({ min: 1, max: 200 }),
      (initialMs, extra, failures) => {
        const options = { initialMs, maxMs: initialMs + extra };
        const d = authRetryDelayMs(failures, options);
        const next = authRetryDelayMs(failures + 1, options);
        assert.equal(authRetryDelayMs(1, options), initialMs);
        assert.ok(d >= initialMs && d <= options.maxMs);
        assert.ok(next >= d);
        // doubling until the cap
        assert.equal(next, Math.min(options.maxMs, d * 2));
      },
    ),
  );
});
