import assert from "node:assert/strict";
import fc from "fast-check";
import {
  type CopyToWatch,
  decideAt,
  nextLookEstimate,
  nextProgress,
  nextReadAtMs,
  pendingReadAtMs,
  type ReadMarks,
  readsDue,
} from "./progress.ts";
import type { ServerMigration } from "../nova_types.ts";

const S = 1000;
const INTERVAL = 30 * S;

const copy = (o: Partial<CopyToWatch> = {}): CopyToWatch => ({
  serverId: "vm",
  migrationId: "1",
  sinceMs: 0,
  ...o,
});

Deno.test("progress: readsDue, table", () => {
  const cases: {
    name: string;
    c: CopyToWatch;
    marks?: ReadMarks;
    nowMs: number;
    nextLookAtMs?: number;
    read: boolean;
  }[] = [
    {
      name: "young and on time: no read",
      c: copy({ endAtMs: 60 * S, overdueAtMs: 75 * S }),
      nowMs: 20 * S,
      read: false,
    },
    {
      name:
        "timed and on schedule, but its policy acts on a stall: read once Nova has its figures",
      c: copy({ endAtMs: 90 * S, overdueAtMs: 100 * S, acts: true }),
      nowMs: 10 * S,
      nextLookAtMs: 13 * S,
      read: true,
    },
    {
      name: "acting policy, before Nova's first figures: no read",
      c: copy({ endAtMs: 90 * S, overdueAtMs: 100 * S, acts: true }),
      nowMs: 5 * S,
      nextLookAtMs: 8 * S,
      read: false,
    },
    {
      name: "acting policy, read 10 s ago: not again within the interval",
      c: copy({ endAtMs: 90 * S, overdueAtMs: 100 * S, acts: true }),
      marks: { triedAtMs: 30 * S },
      nowMs: 40 * S,
      nextLookAtMs: 45 * S,
      read: false,
    },
    {
      name: "untimed, run longer than an interval",
      c: copy(),
      nowMs: 31 * S,
      read: true,
    },
    {
      name: "untimed, before its first figures",
      c: copy(),
      nowMs: 9 * S,
      read: false,
    },
    {
      name: "untimed, past its first figures (its ETA times it)",
      c: copy(),
      nowMs: 11 * S,
      read: true,
    },
    {
      name: "timed, past its overdue end (before an interval)",
      c: copy({ endAtMs: 10 * S, overdueAtMs: 12 * S }),
      nowMs: 14 * S,
      read: true,
    },
    {
      name: "run long but expected to end before the next look",
      c: copy({ endAtMs: 45 * S, overdueAtMs: 50 * S }),
      nowMs: 40 * S,
      nextLookAtMs: 45 * S,
      read: false,
    },
    {
      name: "timed, run long but on schedule: no read (its end is a look's)",
      c: copy({ endAtMs: 90 * S, overdueAtMs: 100 * S }),
      nowMs: 40 * S,
      nextLookAtMs: 45 * S,
      read: false,
    },
    {
      name: "overdue, read 20 s ago: not again within the interval",
      c: copy({ endAtMs: 0, overdueAtMs: 0 }),
      marks: { triedAtMs: 40 * S },
      nowMs: 60 * S,
      read: false,
    },
    {
      name: "untimed, read 10 s ago: again (two reads time it)",
      c: copy(),
      marks: { triedAtMs: 40 * S },
      nowMs: 50 * S,
      read: true,
    },
    {
      name: "untimed, read 9 s ago: not yet",
      c: copy(),
      marks: { triedAtMs: 40 * S },
      nowMs: 49 * S,
      read: false,
    },
    {
      name: "read an interval ago: again",
      c: copy(),
      marks: { triedAtMs: 40 * S },
      nowMs: 70 * S,
      read: true,
    },
    {
      name: "completion bound due, young copy",
      c: copy({ decideAtMs: 10 * S, endAtMs: 60 * S }),
      nowMs: 10 * S,
      read: true,
    },
    {
      name: "completion bound due, read within the interval: not again",
      c: copy({ decideAtMs: 50 * S, endAtMs: 45 * S, overdueAtMs: 48 * S }),
      marks: { triedAtMs: 40 * S },
      nowMs: 50 * S,
      read: false,
    },
    {
      name: "progress timeout due after the lowest read",
      c: copy({ sinceMs: 100 * S, stallMs: 5 * S, endAtMs: 200 * S }),
      marks: { triedAtMs: 60 * S, lowestAtMs: 60 * S },
      nowMs: 101 * S,
      read: true,
    },
  ];
  for (const t of cases) {
    const due = readsDue({
      nowMs: t.nowMs,
      intervalMs: INTERVAL,
      nextLookAtMs: t.nextLookAtMs ?? t.nowMs + 2 * S,
      copies: [t.c],
      marks: () => t.marks ?? {},
    });
    assert.equal(due.length === 1, t.read, t.name);
  }
});

Deno.test("progress: decideAt is the earlier of the completion bound and the progress timeout after the lowest read", () => {
  assert.equal(decideAt(copy(), {}), Infinity);
  assert.equal(decideAt(copy({ decideAtMs: 500 }), {}), 500);
  assert.equal(
    decideAt(copy({ decideAtMs: 500, stallMs: 100 }), { lowestAtMs: 300 }),
    400,
  );
  assert.equal(decideAt(copy({ stallMs: 100 }), {}), Infinity);
});

Deno.test("progress: nextLookEstimate is the earliest end to come, within a poll interval and the longest wait", () => {
  const c = (endAtMs?: number) => copy({ endAtMs });
  assert.equal(nextLookEstimate(0, [], 2000, 60_000), 2000);
  assert.equal(nextLookEstimate(0, [c(500)], 2000, 60_000), 2000);
  assert.equal(nextLookEstimate(0, [c(90_000)], 2000, 60_000), 60_000);
  assert.equal(nextLookEstimate(10, [c(5), c(40_000)], 2000, 60_000), 40_000);
});

Deno.test("progress: pendingReadAtMs only for copies with a decision pending, not expected to end first", () => {
  const marks = () => ({});
  assert.equal(pendingReadAtMs([copy()], marks, INTERVAL, 0), undefined);
  // untimed: at its first figures
  assert.equal(
    pendingReadAtMs([copy({ decideAtMs: 900 * S })], marks, INTERVAL, 0),
    10 * S,
  );
  assert.equal(
    pendingReadAtMs(
      [copy({ decideAtMs: 900 * S, endAtMs: 25 * S })],
      marks,
      INTERVAL,
      0,
    ),
    undefined,
  );
  // past its expected end (overdue, not converging): its read needs a look
  assert.equal(
    pendingReadAtMs(
      [copy({ decideAtMs: 900 * S, endAtMs: 25 * S, acts: true })],
      () => ({ triedAtMs: 40 * S }),
      INTERVAL,
      45 * S,
    ),
    70 * S,
  );
  assert.equal(
    pendingReadAtMs(
      [
        copy({ decideAtMs: 900 * S, sinceMs: 10 * S }),
        copy({ decideAtMs: 900 * S, migrationId: "2", sinceMs: 5 * S }),
      ],
      marks,
      INTERVAL,
      0,
    ),
    15 * S, // the earlier copy's first figures
  );
});

const rec = (id: number, remaining: number | null): ServerMigration => ({
  id,
  uuid: "u",
  serverUuid: "vm",
  status: "running",
  sourceCompute: "h",
  destCompute: "d",
  createdAt: "",
  updatedAt: null,
  memoryTotalBytes: remaining === null ? null : 1000,
  memoryProcessedBytes: remaining === null ? null : 1000 - remaining,
  memoryRemainingBytes: remaining,
  diskTotalBytes: null,
  diskProcessedBytes: null,
  diskRemainingBytes: null,
});

Deno.test("progress: nextProgress keeps the lowest remaining and when first read, the net rate and the ETA", () => {
  assert.equal(nextProgress(undefined, rec(7, null), 0), undefined);
  const a = nextProgress(undefined, rec(7, 900), 0);
  assert.deepEqual(a?.progress, {
    serverId: "vm",
    migrationId: "7",
    totalBytes: 1000,
    remainingBytes: 900,
    readAtMs: 0,
    lowestRemainingBytes: 900,
    lowestAtMs: 0,
  });
  const b = nextProgress(a, rec(7, 500), 10 * S);
  assert.equal(b?.progress.lowestRemainingBytes, 500);
  assert.equal(b?.progress.lowestAtMs, 10 * S);
  assert.equal(b?.progress.bytesPerSecond, 40);
  assert.equal(b?.progress.etaSeconds, 13);
  // dirtied back up: the lowest stays, the net rate falls
  const c = nextProgress(b, rec(7, 800), 20 * S);
  assert.equal(c?.progress.remainingBytes, 800);
  assert.equal(c?.progress.lowestRemainingBytes, 500);
  assert.equal(c?.progress.lowestAtMs, 10 * S);
  assert.equal(c?.progress.bytesPerSecond, 5);
  // no net fall: no ETA
  const d = nextProgress(c, rec(7, 950), 30 * S);
  assert.equal(d?.progress.bytesPerSecond, -2);
  assert.equal(d?.progress.etaSeconds, undefined);
  // a read without counters keeps what was read
  assert.equal(nextProgress(d, rec(7, null), 40 * S), d);
});

/** A world of copies with their read marks, and passes at random times. */
const copyArb = fc.record({
  sinceMs: fc.integer({ min: 0, max: 300 * S }),
  lengthMs: fc.integer({ min: 1 * S, max: 900 * S }),
  timed: fc.boolean(),
  boundMs: fc.option(fc.integer({ min: 1 * S, max: 600 * S })),
  stallMs: fc.option(fc.integer({ min: 1 * S, max: 200 * S })),
});

Deno.test("progress: property — over passes, no copy is read twice within an interval (10 s while untimed), a copy whose decision is due is read by it unless expected to end before the next look, none expected to end before the next look is read", () => {
  fc.assert(
    fc.property(
      fc.array(copyArb, { minLength: 1, maxLength: 6 }),
      fc.array(fc.integer({ min: 1, max: 40 * S }), {
        minLength: 1,
        maxLength: 40,
      }),
      fc.integer({ min: 5 * S, max: 60 * S }),
      (specs, gaps, intervalMs) => {
        const copies = specs.map((s, i): CopyToWatch => ({
          serverId: `vm${i}`,
          migrationId: String(i),
          sinceMs: s.sinceMs,
          ...(s.timed
            ? {
              endAtMs: s.sinceMs + s.lengthMs,
              overdueAtMs: s.sinceMs + s.lengthMs * 1.25,
            }
            : {}),
          ...(s.boundMs === null ? {} : { decideAtMs: s.sinceMs + s.boundMs }),
          ...(s.stallMs === null ? {} : { stallMs: s.stallMs }),
        }));
        const marks = new Map<string, ReadMarks>();
        const reads = new Map<string, number[]>();
        let now = 0;
        for (const gap of gaps) {
          now += gap;
          const running = copies.filter((c) => c.sinceMs <= now);
          const nextLookAtMs = nextLookEstimate(now, running, 2 * S, 60 * S);
          const due = readsDue({
            nowMs: now,
            intervalMs,
            nextLookAtMs,
            copies: running,
            marks: (id) => marks.get(id) ?? {},
          });
          const dueIds = new Set(due.map((c) => c.migrationId));
          for (const c of running) {
            const m = marks.get(c.migrationId) ?? {};
            const endsFirst = c.endAtMs !== undefined && c.endAtMs > now &&
              c.endAtMs <= nextLookAtMs;
            // an untimed copy is read again after 10 s: two reads time it
            const gapMs = c.endAtMs === undefined
              ? Math.min(intervalMs, 10 * S)
              : intervalMs;
            const fresh = m.triedAtMs !== undefined &&
              now - m.triedAtMs < gapMs;
            if (dueIds.has(c.migrationId)) {
              assert.ok(!endsFirst, "read though expected to end first");
              assert.ok(!fresh, "read twice within an interval");
            } else if (decideAt(c, m) <= now && !fresh && !endsFirst) {
              assert.fail(`decision due at ${decideAt(c, m)} but not read`);
            }
          }
          for (const c of due) {
            const m = marks.get(c.migrationId) ?? {};
            // a read finds a new low half the time (time-driven, deterministic)
            const low = Math.floor(now / 7) % 2 === 0 ||
              m.lowestAtMs === undefined;
            marks.set(c.migrationId, {
              triedAtMs: now,
              lowestAtMs: low ? now : m.lowestAtMs,
            });
            reads.set(c.migrationId, [
              ...(reads.get(c.migrationId) ?? []),
              now,
            ]);
          }
        }
        for (const [id, times] of reads) {
          const untimed = copies[Number(id)]?.endAtMs === undefined;
          const gapMs = untimed ? Math.min(intervalMs, 10 * S) : intervalMs;
          for (let i = 1; i < times.length; i++) {
            assert.ok((times[i] ?? 0) - (times[i - 1] ?? 0) >= gapMs);
          }
        }
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("progress: property — a pass at pendingReadAtMs reads the copy it names (the next look comes by it)", () => {
  fc.assert(
    fc.property(
      fc.array(copyArb, { minLength: 1, maxLength: 5 }),
      fc.integer({ min: 0, max: 400 * S }),
      fc.integer({ min: 0, max: 400 * S }),
      (specs, triedAt, nowMs) => {
        const copies = specs.map((s, i): CopyToWatch => ({
          serverId: `vm${i}`,
          migrationId: String(i),
          sinceMs: s.sinceMs,
          ...(s.timed ? { endAtMs: s.sinceMs + s.lengthMs } : {}),
          decideAtMs: s.sinceMs + (s.boundMs ?? 600 * S),
        }));
        const marks = (id: string): ReadMarks =>
          Number(id) % 2 === 0 ? { triedAtMs: triedAt } : {};
        const at = pendingReadAtMs(copies, marks, INTERVAL, nowMs);
        // expected to end after now and before its read: that end's look
        const endsFirst = (c: CopyToWatch) =>
          c.endAtMs !== undefined && c.endAtMs > nowMs &&
          c.endAtMs <= nextReadAtMs(c, marks(c.migrationId), INTERVAL);
        if (at === undefined) {
          assert.ok(copies.every(endsFirst));
          return;
        }
        const due = readsDue({
          nowMs: at,
          intervalMs: INTERVAL,
          nextLookAtMs: at, // the look itself: nothing ends between
          copies,
          marks,
        });
        assert.ok(due.length > 0);
        for (const c of copies) {
          const next = nextReadAtMs(c, marks(c.migrationId), INTERVAL);
          assert.ok(next >= at || endsFirst(c));
        }
      },
    ),
    { numRuns: 300 },
  );
});
