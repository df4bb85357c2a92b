import assert from "node:assert/strict";
import fc from "fast-check";
import {
  MIN_OFFSET_MS,
  NovaClock,
  STEADY_SPAN_MS,
  steadyOffset,
} from "./nova_clock.ts";

/** Nova's `Date` (whole seconds) for our time `t`, its clock `offset` away and `rate` as fast. */
function novaDate(t: number, offset: number, rate = 1): number {
  return Math.floor((t * rate + offset) / 1000) * 1000;
}

Deno.test("nova clock: steady offsets are learned once they span the steady span", () => {
  const table: Array<[string, number, number, number]> = [
    // label, Nova minus ours, our span read over, expected
    ["30 s behind", -30_000, 12_000, -30_000],
    ["5 min behind", -300_000, 12_000, -300_000],
    ["1 min ahead", 60_000, 12_000, 60_000],
    ["too short a span", -30_000, 5_000, 0],
    ["within the header's resolution", 1_200, 20_000, 0],
    ["in step", 0, 20_000, 0],
  ];
  for (const [label, offset, span, expected] of table) {
    const clock = new NovaClock();
    // a response every 700 ms of our clock, at odd sub-second phases
    for (let t = 1_000_123; t <= 1_000_123 + span; t += 700) {
      clock.sample(novaDate(t, offset), t);
    }
    const got = clock.offsetMs();
    assert.ok(
      Math.abs(got - expected) <= 500,
      `${label}: learned ${got}, expected ${expected}`,
    );
  }
});

Deno.test("nova clock: a simulator running faster than our clock is never taken as an offset", () => {
  for (const rate of [2, 10, 60, 0.5]) {
    const clock = new NovaClock();
    for (let t = 0; t <= 60_000; t += 1_000) {
      clock.sample(novaDate(t, 0, rate), t);
    }
    assert.equal(clock.offsetMs(), 0, `rate ${rate}`);
  }
});

Deno.test("nova clock: property: a steady offset is learned within the header's resolution, or left at 0 when small", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: -3_600_000, max: 3_600_000 }),
      fc.integer({ min: 0, max: 999 }),
      fc.array(fc.integer({ min: 1_000, max: 3_000 }), {
        minLength: 12,
        maxLength: 40,
      }),
      (offset, phase, gaps) => {
        const clock = new NovaClock();
        let t = 1_700_000_000_000 + phase;
        let span = 0;
        for (const gap of gaps) {
          clock.sample(novaDate(t, offset), t);
          t += gap;
          span += gap;
        }
        const got = clock.offsetMs();
        if (span - gaps[gaps.length - 1]! < STEADY_SPAN_MS) return;
        if (Math.abs(offset) >= MIN_OFFSET_MS + 500) {
          assert.ok(Math.abs(got - offset) <= 500, `${got} vs ${offset}`);
        } else {
          assert.ok(got === 0 || Math.abs(got - offset) <= 500);
        }
      },
    ),
  );
});

Deno.test("nova clock: steadyOffset takes the median (one late sample does not move it)", () => {
  const samples = [0, 2_000, 4_000, 6_000, 8_000, 11_000].map((t) => ({
    localMs: t,
    offsetMs: -30_000,
  }));
  samples.splice(3, 0, { localMs: 5_000, offsetMs: -31_900 });
  assert.equal(steadyOffset(samples), -30_000);
  assert.equal(steadyOffset([]), 0);
});
