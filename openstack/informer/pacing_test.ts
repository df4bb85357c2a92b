import assert from "node:assert/strict";
import fc from "fast-check";
import {
  Durations,
  fitDuration,
  LATE_MARGIN,
  lookAt,
  type LookInput,
  nextLookMs,
  Pace,
  type PaceView,
  QUEUED_MARGIN,
} from "./pacing.ts";
import type { ObservedMigration } from "./snapshot.ts";
import { NovaClock } from "./nova_clock.ts";

const T = Date.parse("2026-12-01T00:00:00Z");
const nova = (ms: number) =>
  new Date(ms).toISOString().replace("Z", "").replace(/\.(\d{3})$/, ".$1000");

function record(
  id: string,
  status: string,
  createdMs: number,
  updatedMs: number,
): ObservedMigration {
  return {
    id: 1,
    instanceUuid: id,
    migrationType: "live-migration",
    status,
    sourceCompute: "h",
    destCompute: "d",
    createdAt: nova(createdMs),
    updatedAt: nova(updatedMs),
  };
}

function view(
  nowMs: number,
  records: Array<[string, ObservedMigration]>,
  inFlight: string[],
  extra: Partial<PaceView> = {},
): PaceView {
  return {
    nowMs,
    inFlight: inFlight.map((id) => ({
      id,
      kind: "live" as const,
      startedAt: new Date(T).toISOString(),
    })),
    records: new Map(records),
    ramOf: () => 4096,
    issuedAt: () => undefined,
    pending: () => false,
    pollMs: 2000,
    limit: 4,
    ...extra,
  };
}

/** Two starts of ours 10 s apart on both clocks: they run alike. */
function sameClock(p: Pace): void {
  const at = (id: string, ms: number): [string, ObservedMigration] => [
    id,
    { ...record(id, "running", ms, ms), id: `clock-${id}` },
  ];
  const issued = new Map([["k1", T - 20_000], ["k2", T - 10_000]]);
  p.learn(view(T, [at("k1", T - 20_000), at("k2", T - 10_000)], [], {
    issuedAt: (id) => issued.get(id),
  }));
}

/**
 * A later look at the view's starts (a poll interval on): their first
 * look done, the model times them from then on.
 */
function looked(p: Pace, v: PaceView): void {
  p.learn({ ...v, nowMs: v.nowMs + v.pollMs });
}

const BASE: LookInput = {
  dueMs: undefined,
  untimed: false,
  inFlight: 0,
  retryInMs: undefined,
  watching: false,
  pollMs: 2000,
  maxPollMs: 60_000,
  slowPollMs: 20_000,
};

Deno.test("nextLookMs: table", () => {
  const rows: Array<[string, Partial<LookInput>, number]> = [
    ["due in 30 s", { inFlight: 1, dueMs: 30_000 }, 30_000],
    ["overdue: the poll interval", { inFlight: 1, dueMs: 0 }, 2000],
    ["beyond the max", { inFlight: 1, dueMs: 600_000 }, 60_000],
    ["untimed: the poll interval", { inFlight: 1, untimed: true }, 2000],
    ["untimed, Nova's queue busy: as late again as it ran", {
      inFlight: 1,
      untimed: true,
      untimedRunMs: 7000,
    }, 7000],
    ["untimed, Nova's queue busy: at most the slow poll", {
      inFlight: 1,
      untimed: true,
      untimedRunMs: 50_000,
    }, 20_000],
    ["untimed, Nova's queue busy, just begun: the poll interval", {
      inFlight: 1,
      untimed: true,
      untimedRunMs: 500,
    }, 2000],
    ["untimed, Nova's queue busy, a timed end sooner", {
      inFlight: 2,
      untimed: true,
      untimedRunMs: 50_000,
      dueMs: 9000,
    }, 9000],
    ["untimed, Nova's queue busy, busy VMs: the poll interval", {
      inFlight: 1,
      untimed: true,
      untimedRunMs: 50_000,
      watching: true,
    }, 2000],
    ["no model yet", { inFlight: 2 }, 2000],
    ["busy VMs: the poll interval", {
      inFlight: 1,
      dueMs: 30_000,
      watching: true,
    }, 2000],
    ["retry sooner than the finish", {
      inFlight: 1,
      dueMs: 30_000,
      retryInMs: 5000,
    }, 5000],
    ["nothing in flight, nothing to do", {}, 20_000],
    ["nothing in flight, a retry in 90 s", { retryInMs: 90_000 }, 90_000],
    ["nothing in flight, a retry past 10 slow polls", {
      retryInMs: 900_000,
    }, 200_000],
    ["nothing in flight, arriving VMs", { watching: true }, 2000],
  ];
  for (const [name, input, want] of rows) {
    assert.equal(nextLookMs({ ...BASE, ...input }), want, name);
  }
});

Deno.test("property: with work in flight the wait stays within [poll, max]", () => {
  fc.assert(fc.property(
    fc.option(fc.nat(10_000_000), { nil: undefined }),
    fc.boolean(),
    fc.boolean(),
    fc.option(fc.nat(10_000_000), { nil: undefined }),
    (dueMs, untimed, watching, retryInMs) => {
      const d = nextLookMs({
        ...BASE,
        inFlight: 1,
        dueMs,
        untimed,
        watching,
        retryInMs,
      });
      assert.ok(d >= BASE.pollMs && d <= BASE.maxPollMs, String(d));
    },
  ));
});

Deno.test("fitDuration: proportional through one size, a line through several", () => {
  assert.equal(fitDuration([]), undefined);
  assert.deepEqual(fitDuration([{ ramMb: 2000, durationMs: 4000 }]), {
    a: 0,
    b: 2,
  });
  const f = fitDuration([
    { ramMb: 1000, durationMs: 3000 },
    { ramMb: 3000, durationMs: 5000 },
  ]);
  assert.ok(f !== undefined && Math.abs(f.a - 2000) < 1e-6);
});

Deno.test("property: fitDuration never predicts a negative duration", () => {
  fc.assert(fc.property(
    fc.array(
      fc.record({
        ramMb: fc.integer({ min: 1, max: 1_000_000 }),
        durationMs: fc.integer({ min: 1, max: 10_000_000 }),
      }),
      { minLength: 1, maxLength: 20 },
    ),
    fc.integer({ min: 0, max: 1_000_000 }),
    (samples, ram) => {
      const f = fitDuration(samples);
      assert.ok(f !== undefined && f.a + f.b * ram >= 0);
    },
  ));
});

Deno.test("Pace: learns a duration from Nova's records, times the next finish in the controller's clock", () => {
  const p = new Pace();
  sameClock(p);
  // Seen running at T+1 s (Nova says it began at T), completed at T+10 s.
  p.learn(view(T + 1000, [["a", record("a", "running", T, T)]], ["a"]));
  p.learn(
    view(T + 12_000, [["a", record("a", "completed", T, T + 10_000)]], []),
  );
  assert.equal(p.predictMs("live", 4096), 10_000);
  // b started by us at T+12 s: first a look a poll interval later (a
  // fast failure), then expected to finish 10 s (plus the margin) after
  // its start.
  const issuedAt = (id: string) => id === "b" ? T + 12_000 : undefined;
  const started = view(T + 12_000, [], ["b"], { issuedAt });
  assert.deepEqual(p.dueInMs(started), { dueMs: 2000, untimed: false });
  const v = view(
    T + 14_000,
    [["b", record("b", "running", T + 12_000, T + 12_500)]],
    ["b"],
    { issuedAt },
  );
  p.learn(v);
  const due = p.dueInMs(v);
  assert.equal(due.untimed, false);
  assert.equal(due.dueMs, Math.round(10_000 * (1 + LATE_MARGIN)) - 2000);
});

Deno.test("Pace: queued migrations and starts behind Nova's queue are not timed (but looked at for how they began); no model is untimed", () => {
  const p = new Pace();
  const queued = view(T, [["q", record("q", "queued", T, T)]], ["q", "new"], {
    issuedAt: (id) => id === "new" ? T : undefined,
  });
  p.learn(queued);
  assert.deepEqual(p.dueInMs(queued), { dueMs: 2000, untimed: false });
  // not listed yet at its first look: again a poll interval later
  looked(p, queued);
  assert.deepEqual(p.dueInMs(queued), { dueMs: 4000, untimed: false });
  // past the window, still not listed: the conductor has not written its
  // record yet, looked at a poll interval after the last look
  p.learn({ ...queued, nowMs: T + 6000 });
  assert.deepEqual(p.dueInMs(queued), { dueMs: 8000, untimed: false });
  // listed queued behind Nova's queue: not timed
  const behind = view(
    T,
    [
      ["q", record("q", "queued", T, T)],
      ["new", { ...record("new", "queued", T, T), id: 2 }],
    ],
    ["q", "new"],
    { issuedAt: (id) => id === "new" ? T : undefined },
  );
  p.learn({ ...behind, nowMs: T + 8000 });
  assert.deepEqual(p.dueInMs(behind), { dueMs: undefined, untimed: false });
  const running = view(T, [["r", record("r", "running", T, T)]], ["r"]);
  p.learn(running);
  assert.deepEqual(p.dueInMs(running), { dueMs: undefined, untimed: true });
});

Deno.test("Pace: a start still waiting for its answer is timed from when it was issued", () => {
  const p = new Pace();
  p.sample("live", 4096, 10_000);
  const v = view(T + 1000, [], ["new"], {
    issuedAt: () => T,
    pending: () => true,
  });
  assert.equal(p.dueInMs(v).dueMs, 1000, "its first look");
  // no record all through the first looks' window: the model's time
  p.learn({ ...v, nowMs: T + 6000 });
  assert.equal(
    p.dueInMs(v).dueMs,
    Math.round(10_000 * (1 + LATE_MARGIN)) - 1000,
  );
});

Deno.test("Pace: the margin follows the spread the samples show, per size", () => {
  const p = new Pace();
  assert.equal(p.marginOf("live", 4096, 2000), LATE_MARGIN, "no samples");
  for (const d of [9000, 10_000, 11_000, 9500, 10_500, 12_000]) {
    p.sample("live", 4096, d);
  }
  // a poll interval long against the spread: past the latest end (12 s)
  const m = p.marginOf("live", 4096, 20_000);
  const mean = 62_000 / 6;
  assert.ok(Math.abs(m - (12_000 / mean - 1 + 0.01)) < 1e-9, String(m));
  const steady = new Pace();
  for (let i = 0; i < 5; i++) steady.sample("live", 4096, 10_000);
  assert.ok(Math.abs(steady.marginOf("live", 4096, 2000) - 0.01) < 1e-9);
  // a size of its own, steady, beside a jittery one
  for (let i = 0; i < 5; i++) p.sample("live", 1024, 3000);
  assert.ok(p.marginOf("live", 1024, 20_000) < m);
});

Deno.test("Pace: a migration first seen queued is timed from when Nova's record says it left the queue", () => {
  const p = new Pace();
  sameClock(p);
  p.sample("live", 4096, 8000);
  p.learn(view(T, [["q", record("q", "queued", T, T)]], ["q"]));
  const later = view(
    T + 30_000,
    [["q", record("q", "running", T, T + 29_000)]],
    ["q"],
    {
      issuedAt: () => T,
    },
  );
  p.learn(later);
  // left the queue at T+29 s (Nova's clock, ours alike): due 8 s after
  assert.equal(
    p.dueInMs(later).dueMs,
    Math.round(29_000 + 8000 * (1 + LATE_MARGIN) - 30_000),
  );
});

Deno.test("Pace: a queued copy first seen long after it began is timed from the copy ahead of it ending, not from libvirt's last save", () => {
  const p = new Pace();
  sameClock(p);
  p.sample("live", 4096, 16_000);
  const ours = (id: string) => id === "a" ? undefined : T;
  p.learn(view(T, [["q", record("q", "queued", T, T)]], ["q"]));
  // the copy ahead ended at T+10 s; q's record was last saved at T+21 s
  const ahead = { ...record("a", "completed", T - 5000, T + 10_000), id: 2 };
  const later = view(
    T + 22_000,
    [["a", ahead], ["q", record("q", "running", T, T + 21_000)]],
    ["q"],
    { issuedAt: ours },
  );
  p.learn(later);
  assert.equal(
    p.dueInMs(later).dueMs,
    Math.round(10_000 + 16_000 * (1 + LATE_MARGIN) - 22_000),
  );
});

Deno.test("Pace: at Nova's limit 1, a start never seen queued is timed from the copy ahead of it ending, not from its issue", () => {
  const ahead = { ...record("a", "completed", T - 5000, T + 10_000), id: 2 };
  const dueAt = (novaLimit: number) => {
    const p = new Pace();
    sameClock(p);
    p.sample("live", 4096, 16_000);
    const v = view(
      T + 22_000,
      [["a", ahead], ["s", record("s", "running", T, T + 21_000)]],
      ["s"],
      { issuedAt: (id) => id === "a" ? undefined : T, novaLimit },
    );
    p.learn(v);
    return p.expectedEnds().size === 0 ? p.dueInMs(v).dueMs : undefined;
  };
  const due = (sinceMs: number) =>
    Math.max(0, Math.round(sinceMs + 16_000 * (1 + LATE_MARGIN) - 22_000));
  assert.equal(dueAt(1), due(10_000));
  // at a higher limit it may have copied from our start: timed from it
  assert.equal(dueAt(2), due(0));
});

Deno.test("Pace: a start not listed yet while our copies fill Nova's limit is neither timed nor looked at first (it waits in Nova's queue)", () => {
  const due = (novaLimit: number | undefined) => {
    const p = new Pace();
    sameClock(p);
    p.sample("live", 4096, 8000);
    const v = view(
      T + 1000,
      [["r", record("r", "running", T, T)]],
      ["r", "new"],
      {
        issuedAt: (id) => id === "r" ? T : T + 500,
        ramOf: (id) => id === "r" ? 40_960 : 1024,
        novaLimit,
      },
    );
    looked(p, v);
    looked(p, { ...v, nowMs: v.nowMs + v.pollMs });
    return p.dueInMs({ ...v, nowMs: T + 5000 }).dueMs;
  };
  // the small start is not timed, nor looked at first: the running copy's end times the look
  assert.equal(due(1), Math.round(80_000 * (1 + LATE_MARGIN) - 5000));
  // an unknown limit: timed from its issue, its end (2.5 s) is past
  assert.equal(due(undefined), 0);
});

Deno.test("Pace: while Nova queues more work for the host, the look comes later (it stays busy)", () => {
  const p = new Pace();
  sameClock(p);
  p.sample("live", 4096, 10_000);
  const v = view(
    T,
    [["r", record("r", "running", T, T)], ["q", record("q", "queued", T, T)]],
    ["r", "q"],
    { issuedAt: () => T },
  );
  p.learn(v);
  looked(p, v);
  assert.equal(p.dueInMs(v).dueMs, Math.round(10_000 * (1 + QUEUED_MARGIN)));
});

Deno.test("Pace.slotRate: a line through our start to the pass that saw it done, on our clock", () => {
  const p = new Pace();
  const sizes: Record<string, number> = { a: 1000, b: 2000, c: 4000, x: 8000 };
  const done = (id: string, n: number, nowMs: number, issued: boolean) =>
    p.learn(view(
      nowMs,
      [[id, {
        ...record(id, "completed", 0, 50_000), // Nova's clock: ignored here
        id: n,
      }]],
      [id],
      {
        ramOf: (v) => sizes[v],
        issuedAt: (v) => (issued && v === id ? T : undefined),
      },
    ));
  assert.equal(p.slotRate(), undefined);
  done("a", 1, T + 3000 + 500, true);
  assert.equal(p.slotRate(), undefined, "one size says nothing of the slope");
  done("b", 2, T + 3000 + 1000, true);
  done("c", 3, T + 3000 + 2000, true);
  // Not started by this process: no slot time of ours.
  done("x", 4, T + 99_000, false);
  // Seen again in a later pass: sampled once.
  done("c", 3, T + 60_000, true);
  assert.deepEqual(p.slotRate(), {
    mbPerSecond: 2000,
    overheadMs: 3000,
    migrations: 3,
  });
});

Deno.test("Pace: an untimed copy states how long it has run only while Nova's queue holds more work of the host", () => {
  const p = new Pace();
  sameClock(p);
  const busy = view(
    T + 30_000,
    [
      ["r", record("r", "running", T, T)],
      ["q", record("q", "queued", T, T)],
    ],
    ["r", "q"],
    { issuedAt: () => T },
  );
  p.learn(busy);
  looked(p, busy);
  assert.deepEqual(p.dueInMs(busy), {
    dueMs: undefined,
    untimed: true,
    untimedRunMs: 30_000,
  });
  const alone = view(T + 30_000, [["r", record("r", "running", T, T)]], [
    "r",
  ], { issuedAt: () => T });
  const q = new Pace();
  sameClock(q);
  q.learn(alone);
  looked(q, alone);
  assert.deepEqual(q.dueInMs(alone), { dueMs: undefined, untimed: true });
});

Deno.test("Pace.slotRate: a look made long after Nova's end counts at most a poll interval past it", () => {
  const p = new Pace();
  sameClock(p);
  const sizes: Record<string, number> = { a: 1000, b: 2000 };
  // Nova ended a at T+4 s and b at T+6 s; the pass saw both at T+40 s
  const done = (id: string, n: number, endMs: number) =>
    p.learn(view(
      T + 40_000,
      [[id, { ...record(id, "completed", T, endMs), id: n }]],
      [id],
      { ramOf: (v) => sizes[v], issuedAt: () => T },
    ));
  done("a", 1, T + 4000);
  done("b", 2, T + 6000);
  assert.deepEqual(p.slotRate(), {
    mbPerSecond: 500,
    overheadMs: 4000,
    migrations: 2,
  });
});

Deno.test("Pace: Nova's clock running faster than ours (a simulator's time scale) is converted, not mixed", () => {
  const p = new Pace();
  const C = 1_000_000; // the controller's clock, unrelated to Nova's
  const issued = new Map([["a", C], ["b", C + 1000], ["c", C + 2000]]);
  const withIds = (r: ObservedMigration, id: number) => ({ ...r, id });
  const issuedAt = (id: string) => issued.get(id);
  // Nova's clock runs 20x ours: a 40 s migration takes 2 s of ours
  p.learn(view(
    C + 500,
    [
      ["a", withIds(record("a", "running", T, T), 1)],
    ],
    ["a"],
    { issuedAt },
  ));
  p.learn(view(
    C + 2100,
    [
      ["a", withIds(record("a", "completed", T, T + 40_000), 1)],
      ["b", withIds(record("b", "running", T + 20_000, T + 20_000), 2)],
    ],
    ["b"],
    { issuedAt },
  ));
  assert.equal(p.predictMs("live", 4096), 40_000);
  assert.ok(Math.abs((p.clockPerNovaMs() ?? 1) - 1 / 20) < 1e-9);
  const v = view(
    C + 2100,
    [
      ["b", withIds(record("b", "running", T + 20_000, T + 20_000), 2)],
    ],
    ["b"],
    { issuedAt },
  );
  // b: issued at C+1000, expected to end 2 s of ours later (plus the
  // margin); it is C+2100 now
  const due = p.dueInMs(v).dueMs;
  assert.equal(due, Math.round(1000 + 2000 * (1 + LATE_MARGIN) - 2100));
});

Deno.test("Pace: starts of ours too close together to tell the clocks' rate leave a migration untimed", () => {
  const p = new Pace();
  p.sample("live", 4096, 10_000);
  const issued = new Map([["a", T], ["b", T + 10]]);
  const v = view(
    T + 100,
    [
      ["a", { ...record("a", "running", T, T), id: 1 }],
      ["b", { ...record("b", "running", T + 500, T + 500), id: 2 }],
    ],
    ["a", "b"],
    { issuedAt: (id) => issued.get(id) },
  );
  p.learn(v);
  looked(p, v);
  assert.equal(p.clockPerNovaMs(), undefined);
  assert.deepEqual(p.dueInMs(v), { dueMs: undefined, untimed: true });
});

Deno.test("Pace: a new drain times by what the process's drains learned, by its own once it has three of two sizes", () => {
  const cloud = new Durations();
  const first = new Pace(cloud);
  for (let i = 0; i < 3; i++) first.sample("live", 4096, 10_000);
  const later = new Pace(cloud);
  assert.equal(later.predictMs("live", 4096), 10_000);
  assert.equal(new Pace().predictMs("live", 4096), undefined, "alone: none");
  for (let i = 0; i < 3; i++) later.sample("live", 4096, 20_000);
  // one size of its own: still the cloud's (both drains' samples)
  assert.equal(later.predictMs("live", 4096), 15_000);
  later.sample("live", 2048, 10_000);
  const own = later.predictMs("live", 4096) ?? 0;
  assert.ok(Math.abs(own - 20_000) < 1e-6, `its own host: ${own}`);
});

Deno.test("lookAt: the earliest end, or the last within half a poll of it; never before the earliest (property)", () => {
  fc.assert(fc.property(
    fc.array(fc.integer({ min: 0, max: 100_000 }), { maxLength: 10 }),
    fc.integer({ min: 1, max: 10_000 }),
    (ends, pollMs) => {
      const look = lookAt(ends, pollMs);
      if (ends.length === 0) return assert.equal(look, undefined);
      const first = Math.min(...ends);
      assert.ok(look !== undefined && look >= first);
      assert.ok(look - first <= pollMs / 2);
      assert.ok(ends.includes(look));
    },
  ));
});

Deno.test("Pace: with one slot no look is planned before the latest end the samples show", () => {
  const p = new Pace();
  sameClock(p);
  for (const d of [9000, 9500, 10_000, 10_500, 11_000, 9200, 10_800]) {
    p.sample("live", 4096, d);
  }
  const at = (limit: number) => {
    const v = view(T, [["b", { ...record("b", "running", T, T), id: 7 }]], [
      "b",
    ], { issuedAt: (id) => id === "b" ? T : undefined, pollMs: 200, limit });
    p.learn(v);
    looked(p, v);
    return p.dueInMs(v).dueMs ?? 0;
  };
  const mean = 70_000 / 7;
  assert.ok(at(1) >= 11_000, `limit 1: ${at(1)}`);
  assert.ok(at(1) <= 11_000 + 0.011 * mean, `limit 1: ${at(1)}`);
  assert.ok(at(4) < at(1), `limit 4: ${at(4)}, limit 1: ${at(1)}`);
});

Deno.test("Pace: a migration queued behind another learns its copy alone, on Nova's clock and on ours", () => {
  const p = new Pace();
  sameClock(p);
  const ram: Record<string, number> = { a: 2048, q: 4096 };
  const at = (
    nowMs: number,
    recs: Array<[string, string, number]>,
    inFlight: string[],
  ) =>
    p.learn(view(
      nowMs,
      recs.map(([id, status, updated]) => [id, {
        ...record(id, status, T, updated),
        id: id === "a" ? 11 : 12,
      }]),
      inFlight,
      { ramOf: (id) => ram[id], issuedAt: () => T },
    ));
  // a copies from T; q waits in Nova's queue behind it
  at(T + 2000, [["a", "running", T], ["q", "queued", T]], ["a", "q"]);
  // a done at T+6 s; q left the queue then
  at(T + 6500, [["a", "completed", T + 6000], ["q", "running", T + 6000]], [
    "q",
  ]);
  at(T + 17_000, [["q", "completed", T + 16_000]], []);
  // Nova's clock: a 6 s, q 10 s of copy (not 16 s)
  assert.ok(Math.abs((p.predictMs("live", 4096) ?? 0) - 10_000) < 1e-6);
  // ours: a 6.5 s, q 11 s from when it left the queue (not 17 s)
  const b = 4500 / 2048;
  assert.deepEqual(p.slotRate(), {
    mbPerSecond: Math.round(1000 / b),
    overheadMs: Math.round(6500 - 2048 * b),
    migrations: 2,
  });
});

Deno.test("Pace: the conductor's `accepted` is not Nova's queue: a migration seen accepted is timed from its creation", () => {
  const p = new Pace();
  sameClock(p);
  const rec = (status: string, updated: number) => ({
    ...record("a", status, T, updated),
    id: 21,
  });
  const v = (nowMs: number, status: string, updated: number) =>
    view(
      nowMs,
      [["a", rec(status, updated)]],
      status === "completed" ? [] : [
        "a",
      ],
      { issuedAt: () => T },
    );
  p.learn(v(T + 300, "accepted", T));
  p.learn(v(T + 2000, "running", T + 1500));
  p.learn(v(T + 10_500, "completed", T + 10_000));
  assert.equal(p.predictMs("live", 4096), 10_000);
});

Deno.test("Pace: each start of ours gets a look a poll interval after it, then the model's; a retried VM's new start its own", () => {
  const p = new Pace();
  sameClock(p);
  p.sample("live", 4096, 30_000);
  let issued = T;
  const v = (nowMs: number, recs: Array<[string, ObservedMigration]>) =>
    view(nowMs, recs, ["a"], { issuedAt: () => issued });
  // the starting pass: a poll interval on
  assert.equal(p.dueInMs(v(T, [])).dueMs, 2000);
  // woken 300 ms on (too soon to see the outcome): still the first look
  p.learn(v(T + 300, []));
  assert.equal(p.dueInMs(v(T + 300, [])).dueMs, 1700);
  // the first look sees it copying: the model times its end
  const running: Array<[string, ObservedMigration]> = [[
    "a",
    { ...record("a", "running", T, T + 500), id: 31 },
  ]];
  p.learn(v(T + 2000, running));
  assert.equal(
    p.dueInMs(v(T + 2000, running)).dueMs,
    Math.round(30_000 * (1 + LATE_MARGIN)) - 2000,
  );
  // it failed; the VM's next start is looked at a poll interval after it
  const failed: Array<[string, ObservedMigration]> = [[
    "a",
    { ...record("a", "error", T, T + 3000), id: 31 },
  ]];
  p.learn(v(T + 4000, failed));
  issued = T + 4000;
  assert.equal(p.dueInMs(v(T + 4000, failed)).dueMs, 2000);
});

Deno.test("Pace.firstLooksOnly: a look due only for first looks (a glance will do); not when a migration may end by then or cannot be timed", () => {
  const p = new Pace();
  sameClock(p);
  p.sample("live", 4096, 30_000);
  const issued = new Map([["new", T + 10_000]]);
  const running = (
    id: string,
    createdMs: number,
  ): [string, ObservedMigration] => [
    id,
    { ...record(id, "running", createdMs, createdMs), id: `r-${id}` },
  ];
  // "old" ends at T+30.9 s; "new" started at T+10 s, first look at T+12 s
  const v = (ids: string[], extra: Partial<PaceView> = {}) =>
    view(T + 10_000, [running("old", T)], ids, {
      issuedAt: (id) => id === "old" ? T : issued.get(id),
      ...extra,
    });
  p.learn({ ...v(["old"]), nowMs: T + 2000 }); // old looked at
  assert.equal(p.firstLooksOnly(v(["old", "new"])), true);
  assert.equal(p.dueInMs(v(["old", "new"])).dueMs, 2000);
  // no start due a first look: the model's look
  assert.equal(p.firstLooksOnly(v(["old"])), false);
  // a migration the model expects to end first (a full look then)
  assert.equal(p.firstLooksOnly(v(["old", "new"], { pollMs: 42_000 })), false);
  // something the model cannot time: the poll interval, a full look
  assert.equal(
    p.firstLooksOnly(v(["old", "new"], { ramOf: () => undefined })),
    false,
  );
  // a planned glance is taken once
  p.planGlance(v(["old", "new"]));
  assert.ok(p.takeGlance() !== undefined);
  assert.equal(p.takeGlance(), undefined);
});

Deno.test("Pace: a start still with Nova's conductor at its first look is looked at again a poll interval later (a glance), until seen past it", () => {
  const p = new Pace();
  sameClock(p);
  p.sample("live", 4096, 30_000);
  const at = (nowMs: number, status: string) =>
    view(nowMs, [["a", { ...record("a", status, T, T), id: 41 }]], ["a"], {
      issuedAt: () => T,
    });
  p.learn(at(T + 2000, "accepted"));
  assert.equal(p.dueInMs(at(T + 2000, "accepted")).dueMs, 2000);
  assert.equal(p.firstLooksOnly(at(T + 2000, "accepted")), true);
  p.learn(at(T + 4000, "preparing"));
  assert.equal(
    p.dueInMs(at(T + 4000, "preparing")).dueMs,
    Math.round(30_000 * (1 + LATE_MARGIN)) - 4000,
  );
  assert.equal(p.firstLooksOnly(at(T + 4000, "preparing")), false);
});

Deno.test("Pace: a start whose record Nova's conductor has not written yet is looked at every poll interval past the window, until its record shows", () => {
  const p = new Pace();
  sameClock(p);
  p.sample("live", 4096, 30_000);
  const none = (nowMs: number) => view(nowMs, [], ["a"], { issuedAt: () => T });
  const pollMs = none(T).pollMs;
  // Looks at every poll interval, past FIRST_LOOK_WINDOW too: a loaded
  // cloud's conductor may write the record many seconds after the 202,
  // and a NoValidHost is to be seen within a poll interval of its error.
  for (let k = 1; k <= 6; k++) {
    const look = none(T + k * pollMs);
    p.learn(look);
    assert.equal(p.dueInMs(look).dueMs, pollMs, `look ${k}`);
  }
  // Once the record shows the migration past the conductor, the model.
  const copying = view(
    T + 7 * pollMs,
    [["a", { ...record("a", "preparing", T, T), id: 41 }]],
    ["a"],
    { issuedAt: () => T },
  );
  p.learn(copying);
  assert.ok((p.dueInMs(copying).dueMs ?? 0) > pollMs);
});

Deno.test("Pace: records the informer knows only from notifications (no Nova id) are each learned once", () => {
  const p = new Pace();
  sameClock(p);
  const ram = new Map([["a", 2048], ["b", 4096]]);
  const issued = new Map([["a", T], ["b", T + 1000]]);
  const viewOnly = (id: string, status: string, from: number, to: number) => {
    const { id: _novaId, ...r } = record(id, status, from, to);
    return r;
  };
  const at = (nowMs: number, records: Array<[string, ObservedMigration]>) =>
    view(nowMs, records, ["a", "b"], {
      issuedAt: (id) => issued.get(id),
      ramOf: (id) => ram.get(id),
    });
  p.learn(at(T + 1500, [
    ["a", viewOnly("a", "running", T, T)],
    ["b", viewOnly("b", "running", T + 1000, T + 1000)],
  ]));
  const aDone = viewOnly("a", "completed", T, T + 5000);
  p.learn(
    at(T + 5500, [["a", aDone], [
      "b",
      viewOnly("b", "running", T + 1000, T + 1000),
    ]]),
  );
  const bDone = viewOnly("b", "completed", T + 1000, T + 10_000);
  p.learn(at(T + 10_500, [["a", aDone], ["b", bDone]]));
  // and the same records listed by Nova (with ids) add nothing
  p.learn(
    at(T + 12_000, [["a", { ...aDone, id: 41 }], ["b", { ...bDone, id: 42 }]]),
  );
  // (2048 MB, 5 s) and (4096 MB, 9 s): a line, not one size through zero
  assert.equal(p.predictMs("live", 8192), 17_000);
});

Deno.test("Pace.endsBy: none for a start with no record (Nova's queue holds it silently); a record known only from events times the copy from its first step", () => {
  const p = new Pace();
  sameClock(p);
  p.sample("live", 4096, 10_000);
  const issuedAt = (id: string) => id === "q" ? T : undefined;
  const waiting = view(T + 5_000, [], ["q"], { issuedAt });
  p.learn(waiting);
  p.dueInMs(waiting);
  assert.equal(p.endsBy().has("q"), false);
  assert.equal(p.expectedEnds().has("q"), false);
  // the copy's first step at T+15 s: the view's record, without Nova's id
  const { id: _novaId, ...fromEvents } = record(
    "q",
    "running",
    T + 15_000,
    T + 15_000,
  );
  const copying = view(T + 16_000, [["q", fromEvents]], ["q"], { issuedAt });
  p.learn(copying);
  p.dueInMs(copying);
  const by = p.endsBy().get("q") ?? 0;
  const end = T + 15_000 + 10_000 * (1 + LATE_MARGIN);
  assert.equal(by, end + Math.max(2000, 0.25 * (end - (T + 15_000))));
  // the progress schedule reads the expected end itself (progress.ts)
  assert.equal(p.expectedEnds().get("q"), end);
});

Deno.test("Pace.endsBy: a drain's first copy, with no length to go by, is not due before the fastest link could copy its memory (then its poll intervals or a quarter more)", () => {
  const cases: Array<[number, number, string]> = [
    // RAM (MB), end-by after its start (ms)
    [65_536, 65_536 / 3 + Math.max(8_000, 65_536 / 12), "64 GiB: 21.8 s + 8 s"],
    [4096, 8_000 + 4096 / 3, "4 GiB: its untimed poll intervals rule"],
  ];
  for (const [ram, afterMs, why] of cases) {
    const p = new Pace();
    sameClock(p);
    const copying = view(
      T + 8_000,
      [["a", { ...record("a", "running", T, T), id: 1 }]],
      ["a"],
      { issuedAt: (id) => id === "a" ? T : undefined, ramOf: () => ram },
    );
    p.learn(copying);
    assert.equal(p.dueInMs(copying).untimed, true, why);
    assert.equal(p.endsBy().get("a"), T + afterMs, why);
    assert.equal(p.expectedEnds().get("a"), undefined, why);
  }
});

Deno.test("Pace: starts in one second of Nova's clock are timed once its answers' Date headers tell the rate (one clock model)", () => {
  const clock = new NovaClock();
  const p = new Pace(new Durations(clock));
  p.sample("live", 4096, 10_000);
  // the first pass's two starts, created in the same whole second
  const issued = new Map([["a", T], ["b", T + 40]]);
  const v = view(
    T + 100,
    [
      ["a", { ...record("a", "running", T, T), id: 1 }],
      ["b", { ...record("b", "running", T, T), id: 2 }],
    ],
    ["a", "b"],
    { issuedAt: (id) => issued.get(id) },
  );
  p.learn(v);
  looked(p, v);
  assert.equal(p.clockPerNovaMs(), undefined);
  // Nova's answers over 3 s of ours, in step with our clock
  for (let t = 0; t <= 3000; t += 1000) clock.sample(T + t, T + t);
  assert.equal(p.clockPerNovaMs(), 1);
  assert.equal(p.dueInMs(v).untimed, false);
});
