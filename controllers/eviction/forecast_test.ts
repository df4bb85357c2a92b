import { strict as assert } from "node:assert";
import fc from "fast-check";
import type { EvictionStatusInFlightItem } from "../../models/mod.ts";
import { forecastFinishMs, type ForecastInput } from "./forecast.ts";

const NOW = Date.parse("2026-01-01T01:00:00Z");
const at = (s: number) => new Date(NOW + s * 1000).toISOString();
/** 10 ms per MB: a 1000 MB VM copies in 10 s. */
const durationMs = (_kind: "live" | "cold", ramMb: number) => ramMb * 10;
const copy = (
  id: string,
  more: Partial<EvictionStatusInFlightItem> = {},
): EvictionStatusInFlightItem => ({
  id,
  kind: "live",
  startedAt: at(-5),
  ...more,
});
const vm = (id: string, ramMb: number) => ({
  id,
  kind: "live" as const,
  ramMb,
});

function input(more: Partial<ForecastInput>): ForecastInput {
  return {
    nowMs: NOW,
    limit: 2,
    inFlight: [],
    expectedEnds: new Map(),
    toStart: [],
    aborted: [],
    ramOf: () => 1000,
    durationMs,
    onTimeout: "Abort",
    ...more,
  };
}

Deno.test("forecastFinishMs: table (seconds after now; undefined: absent)", () => {
  const cases: [string, Partial<ForecastInput>, number | undefined][] = [
    ["nothing left", {}, 0],
    ["a copy at its measured ETA", {
      inFlight: [copy("a", { etaSeconds: 12 })],
    }, 12],
    ["no ETA: the pacing model's expected end", {
      inFlight: [copy("a")],
      expectedEnds: new Map([["a", NOW + 7000]]),
    }, 7],
    ["the ETA before the pacing model", {
      inFlight: [copy("a", { etaSeconds: 3 })],
      expectedEnds: new Map([["a", NOW + 7000]]),
    }, 3],
    ["untimed: its copy's start plus its learned duration", {
      inFlight: [copy("a", { copyStartedAt: at(-4) })],
      expectedEnds: new Map([["a", undefined]]),
    }, 6],
    ["overdue: never before now", {
      inFlight: [copy("a", { startedAt: at(-60) })],
    }, 0],
    ["the queue fills the slots as they free, largest first", {
      inFlight: [copy("a", { etaSeconds: 10 })],
      toStart: [vm("b", 1000), vm("c", 2000)],
    }, 20],
    ["limit 1: one after the other", {
      limit: 1,
      inFlight: [copy("a", { etaSeconds: 10 })],
      toStart: [vm("b", 1000), vm("c", 2000)],
    }, 40],
    ["Report on a copy not converging: absent", {
      onTimeout: "Report",
      inFlight: [copy("a", { notConverging: true, etaSeconds: 5 })],
    }, undefined],
    ["no policy on a copy not converging: absent", {
      onTimeout: undefined,
      inFlight: [copy("a", { notConverging: true, deadlineAt: at(30) })],
    }, undefined],
    ["Abort: at the deadline, then retried alone after the others", {
      inFlight: [copy("a", { notConverging: true, deadlineAt: at(30) })],
      // b (40 s) takes the free slot; a ends at 30 s, retried after b
      toStart: [vm("b", 4000)],
    }, 40 + 10],
    ["Abort past its deadline: now, then retried", {
      inFlight: [copy("a", { notConverging: true, deadlineAt: at(-30) })],
    }, 10],
    ["Abort of its last allowed try: no retry, it ends at the deadline", {
      inFlight: [copy("a", { notConverging: true, deadlineAt: at(30) })],
      aborted: [{
        id: "a",
        tries: 1,
        lastAbortedAt: at(-100),
        reason: "timeout",
      }],
      maxAbortedTries: 2,
    }, 30],
    ["ForceComplete sent: the rest at the measured rate", {
      onTimeout: "ForceComplete",
      inFlight: [copy("a", {
        notConverging: true,
        forceCompleteSentAt: at(-2),
        deadlineAt: at(298),
        memoryRemainingBytes: 800_000_000,
        bytesPerSecond: 100_000_000,
      })],
    }, 8],
    ["ForceComplete sent, no measured rate: a copy of its size from then", {
      onTimeout: "ForceComplete",
      inFlight: [
        copy("a", { notConverging: true, forceCompleteSentAt: at(-4) }),
      ],
    }, 6],
    ["ForceComplete due: its deadline plus a paused copy", {
      onTimeout: "ForceComplete",
      inFlight: [copy("a", { notConverging: true, deadlineAt: at(20) })],
    }, 30],
    ["aborted VMs to retry go alone and last", {
      toStart: [vm("r", 2000), vm("b", 1000), vm("c", 1000)],
      aborted: [{ id: "r", tries: 1, lastAbortedAt: at(-100) }],
    }, 10 + 20],
    ["a retry in flight runs alone", {
      inFlight: [copy("r", { etaSeconds: 10, startedAt: at(-50) })],
      toStart: [vm("b", 1000)],
      aborted: [{ id: "r", tries: 1, lastAbortedAt: at(-60) }],
    }, 20],
    ["limit 0 with VMs to start: absent", {
      limit: 0,
      toStart: [vm("b", 1000)],
    }, undefined],
    ["limit 0, copies in flight only", {
      limit: 0,
      inFlight: [copy("a", { etaSeconds: 4 })],
    }, 4],
    ["only VMs that need a person left: absent", { needsPerson: 1 }, undefined],
    ["VMs that need a person beside others: the others' end", {
      needsPerson: 1,
      toStart: [vm("b", 1000)],
    }, 10],
    ["a duration below 0 counts as none", {
      toStart: [vm("b", 1000)],
      durationMs: () => -5000,
    }, 0],
    ["a copy of unknown size and no ETA: absent", {
      inFlight: [copy("a")],
      ramOf: () => undefined,
    }, undefined],
  ];
  for (const [name, more, seconds] of cases) {
    const t = forecastFinishMs(input(more));
    assert.equal(
      t === undefined ? undefined : (t - NOW) / 1000,
      seconds,
      name,
    );
  }
});

const inFlightArb = fc.uniqueArray(
  fc.record({
    id: fc.string({ minLength: 1, maxLength: 3 }).map((s) => `f${s}`),
    eta: fc.option(fc.integer({ min: 0, max: 600 }), { nil: undefined }),
    startedAgo: fc.integer({ min: 0, max: 600 }),
  }),
  { selector: (x) => x.id, maxLength: 5 },
).map((xs) =>
  xs.map((x) =>
    copy(x.id, {
      startedAt: at(-x.startedAgo),
      ...(x.eta === undefined ? {} : { etaSeconds: x.eta }),
    })
  )
);
const queueArb = fc.array(fc.integer({ min: 0, max: 32_000 }), {
  maxLength: 10,
}).map((rams) => rams.map((r, i) => vm(`q${i}`, r)));

Deno.test("property: never before now nor before a running copy's measured ETA", () => {
  fc.assert(fc.property(
    inFlightArb,
    queueArb,
    fc.integer({ min: 1, max: 4 }),
    (inFlight, toStart, limit) => {
      const t = forecastFinishMs(input({ inFlight, toStart, limit }));
      assert.ok(t !== undefined);
      assert.ok(t >= NOW);
      for (const e of inFlight) {
        if (e.etaSeconds !== undefined) {
          assert.ok(t >= NOW + e.etaSeconds * 1000, e.id);
        }
      }
    },
  ));
});

Deno.test("property: nothing in flight and nothing to start ends now", () => {
  fc.assert(fc.property(
    fc.integer({ min: 0, max: 8 }),
    fc.integer({ min: 0, max: 2 ** 40 }),
    (limit, nowMs) => {
      assert.equal(forecastFinishMs(input({ limit, nowMs })), nowMs);
    },
  ));
});

Deno.test("property: one more VM to start never makes it earlier", () => {
  fc.assert(fc.property(
    inFlightArb,
    queueArb,
    fc.integer({ min: 0, max: 32_000 }),
    fc.integer({ min: 1, max: 4 }),
    (inFlight, toStart, ramMb, limit) => {
      const before = forecastFinishMs(input({ inFlight, toStart, limit }));
      const after = forecastFinishMs(
        input({ inFlight, toStart: [...toStart, vm("new", ramMb)], limit }),
      );
      assert.ok(before !== undefined && after !== undefined);
      assert.ok(after >= before, `${after} < ${before}`);
    },
  ));
});
