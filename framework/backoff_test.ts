import assert from "node:assert/strict";
import fc from "fast-check";
import {
  DEFAULT_OUTAGE_BASE_MS,
  DEFAULT_OUTAGE_MAX_MS,
  outageRetryDelay,
} from "./backoff.ts";
import { ManualClock } from "./clock.ts";
import { WorkQueue } from "./queue.ts";

Deno.test("outageRetryDelay: the backoff, or the handler's pacing when slower", () => {
  const cases: [number, number | undefined, number][] = [
    [200, undefined, 200],
    [200, 100, 200],
    [200, 1000, 1000],
    [2000, 2000, 2000],
    [0, 0, 0],
  ];
  for (const [backoff, pacing, want] of cases) {
    assert.equal(
      outageRetryDelay(backoff, pacing),
      want,
      `${backoff} ${pacing}`,
    );
  }
  assert.throws(() => outageRetryDelay(-1, undefined), /backoffMs/);
  assert.throws(() => outageRetryDelay(Infinity, undefined), /backoffMs/);
  assert.throws(() => outageRetryDelay(1, Infinity), /pacingMs/);
});

Deno.test("outageRetryDelay: never below either bound, never above the larger", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 10_000 }),
      fc.option(fc.integer({ min: 0, max: 1_000_000 }), { nil: undefined }),
      (backoff, pacing) => {
        const d = outageRetryDelay(backoff, pacing);
        assert.ok(d >= backoff);
        if (pacing !== undefined) assert.ok(d >= pacing);
        assert.ok(d <= Math.max(backoff, pacing ?? 0));
      },
    ),
  );
});

Deno.test("queue: outage retries grow from 200 ms to a 2 s cap and reset on success", () => {
  const q = new WorkQueue({ clock: new ManualClock(0) });
  const delays = Array.from({ length: 8 }, () => q.addOutageLimited("k"));
  assert.deepEqual(delays, [200, 400, 800, 1600, 2000, 2000, 2000, 2000]);
  assert.equal(delays[0], DEFAULT_OUTAGE_BASE_MS);
  assert.equal(delays.at(-1), DEFAULT_OUTAGE_MAX_MS);
  assert.equal(q.failures("k"), 0, "outages do not count as failures");
  q.forget("k");
  assert.equal(q.addOutageLimited("k"), 200);
  assert.equal(q.addOutageLimited("k", 5_000), 5_000, "the handler's pace");
  q.shutdown();
});

Deno.test("queue: outage backoff bounds are options", () => {
  const q = new WorkQueue({
    clock: new ManualClock(0),
    outageBackoff: { baseMs: 50, maxMs: 120 },
  });
  assert.deepEqual(
    [q.addOutageLimited("k"), q.addOutageLimited("k"), q.addOutageLimited("k")],
    [50, 100, 120],
  );
  q.shutdown();
  assert.throws(
    () => new WorkQueue({ outageBackoff: { baseMs: 10, maxMs: 5 } }),
    /baseMs=10 maxMs=5/,
  );
});

Deno.test("queue: an outage retry is a delayed add that the clock releases", async () => {
  const clock = new ManualClock(0);
  const q = new WorkQueue({ clock });
  q.addOutageLimited("k");
  assert.equal(q.length, 0);
  clock.advance(199);
  assert.equal(q.length, 0);
  clock.advance(1);
  assert.equal(await q.get(), "k");
  q.shutdown();
});
