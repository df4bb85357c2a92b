import assert from "node:assert/strict";
import fc from "fast-check";
import {
  fitClock,
  MIN_OFFSET_MS,
  NovaClock,
  STEADY_SPAN_MS,
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

Deno.test("nova clock: the offset is the median (one late sample does not move it)", () => {
  const samples = [0, 2_000, 4_000, 6_000, 8_000, 11_000].map((t) => ({
    localMs: t,
    novaMs: t - 30_000,
  }));
  samples.splice(3, 0, { localMs: 5_000, novaMs: 5_000 - 31_900 });
  assert.equal(fitClock(samples)?.offsetMs, -30_000);
  assert.deepEqual(fitClock([]), { localPerNovaMs: 1, offsetMs: 0, spanMs: 0 });
});

Deno.test("nova clock: the rate is one within the header's resolution, else the scale between the clocks", () => {
  for (const rate of [1, 2, 10, 60, 0.5]) {
    const clock = new NovaClock();
    for (let t = 0; t <= 20_000; t += 1_000) {
      clock.sample(novaDate(t, 0, rate), t);
    }
    const k = clock.localPerNovaMs() ?? 0;
    assert.ok(Math.abs(k * rate - 1) < 0.02, `rate ${rate}: ${k}`);
    if (rate === 1) assert.equal(k, 1);
  }
  const once = new NovaClock();
  once.sample(5_000, 0);
  assert.equal(once.localPerNovaMs(), undefined);
  assert.equal(new NovaClock().localPerNovaMs(), 1);
});

Deno.test("nova clock: property: readings of a scaled clock convert its times to ours, whatever the offset", () => {
  fc.assert(fc.property(
    fc.double({ min: 0.01, max: 100, noNaN: true }),
    fc.integer({ min: -1e9, max: 1e9 }),
    fc.array(fc.integer({ min: 1_000, max: 5_000 }), {
      minLength: 2,
      maxLength: 20,
    }),
    (scale, offset, gaps) => {
      const clock = new NovaClock();
      let t = 1_000_000;
      for (const gap of gaps) {
        clock.reading(t * scale + offset, t);
        t += gap;
      }
      const got = clock.toLocal(t * scale + offset) ?? NaN;
      const k = clock.localPerNovaMs() ?? NaN;
      const span = t - gaps[gaps.length - 1]! - 1_000_000;
      if (k === 1) {
        // taken as one rate: Nova drifted within the resolution and MAX_DRIFT
        assert.ok(Math.abs(scale - 1) * span <= 1000 + 0.05 * span + 1e-6);
      } else {
        assert.ok(Math.abs(got - t) <= 1e-6 * t, `${got} vs ${t}`);
      }
    },
  ));
});
