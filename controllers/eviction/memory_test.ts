import assert from "node:assert/strict";
import fc from "fast-check";
import { changeRecord, copyStartsSeen, DrainMemory } from "./memory.ts";
import { NotifiedInformer } from "../../openstack/informer/notified_informer.ts";
import { MemoryFeed } from "../../tests/harness/memory_feed.ts";
import { NovaLister } from "../../openstack/informer/lister.ts";
import { PollingInformer } from "../../openstack/informer/informer.ts";
import {
  FixedNova,
  HOST,
  listed,
  T0,
} from "../../tests/harness/notified_fixtures.ts";

Deno.test("DrainMemory: one forget clears every part of the drain's record", () => {
  const feed = new MemoryFeed();
  const informer = new NotifiedInformer(
    feed,
    new NovaLister(new FixedNova(), { now: () => T0 }),
    () => {},
    () => T0,
  );
  const m = new DrainMemory(informer);
  const list = (id: string) => ({
    servers: [listed(id)],
    migrations: [],
    departed: [],
  });
  for (const key of ["e", "other"]) {
    const s = m.of(key);
    s.ram.set("a", 1024);
    s.settle.marks = new Map([["a", { sig: "1|running|", sinceMs: 0 }]]);
    s.settle.waitingSinceMs = 5;
    s.settle.failures = 2;
    m.ledger.set(key, 3);
    m.budgetWaiters.add(key);
    informer.endList(key, informer.beginList(key, HOST), list("a"));
    // a relist that disagrees with the view: a demotion to report
    informer.endList(key, informer.beginList(key, HOST), list("b"));
  }
  feed.down(); // wakes every watched drain
  m.forget("e");
  const s = m.of("e");
  assert.equal(s.ram.size, 0);
  assert.deepEqual(
    [s.settle.marks.size, s.settle.waitingSinceMs, s.settle.failures],
    [0, undefined, 0],
  );
  assert.equal(m.ledger.get("e"), 0);
  assert.equal(m.budgetWaiters.standing("e"), undefined);
  assert.equal(informer.woken("e"), false);
  assert.deepEqual(informer.takeWarnings("e"), []);
  feed.up();
  assert.equal(informer.woken("e"), false, "no longer watched: not woken");
  // the other drain keeps every part
  const o = m.of("other");
  assert.equal(o.settle.failures, 2);
  assert.equal(m.ledger.get("other"), 3);
  assert.equal(m.budgetWaiters.standing("other"), "waiting");
  assert.equal(informer.woken("other"), true);
  assert.equal(informer.takeWarnings("other").length, 1);
});

Deno.test("changeRecord: the notes no longer tracked go before the issued ones are added; due may be cleared; maps are replaced", () => {
  const s = new DrainMemory(
    new PollingInformer(new NovaLister(new FixedNova(), { now: () => T0 })),
  ).of("e");
  const note = { sentAtMs: 1 };
  s.starts.set("gone", {
    id: "gone",
    kind: "live",
    state: "pending",
    issuedAtMs: 0,
  });
  s.confirms.set("kept", note);
  s.aborts.set("7", note);
  s.waveSeen.set("old", 1);
  s.due = { atMs: 5, fingerprint: "f" };
  const start = {
    id: "new",
    kind: "live" as const,
    state: "pending" as const,
    issuedAtMs: 2,
  };
  changeRecord(s, {
    tracked: { servers: new Set(["kept", "new"]), migrations: new Set() },
    issued: {
      starts: [start],
      confirms: new Map(),
      aborts: new Map([["8", note]]),
    },
    due: undefined,
    waveSeen: new Map([["b", 2]]),
  });
  assert.deepEqual([...s.starts.keys()], ["new"]);
  assert.deepEqual([...s.confirms.keys()], ["kept"]);
  assert.deepEqual([...s.aborts.keys()], ["8"]);
  assert.deepEqual([...s.waveSeen], [["b", 2]]);
  assert.equal(s.due, undefined);
  changeRecord(s, { woken: true });
  assert.equal(s.starts.get("new"), start, "a change without notes keeps them");
  assert.equal(s.woken, true);
});

Deno.test("copyStartsSeen: a copy runs from its record's turn to running as first seen (never sooner), from what the status wrote after a restart, and not at all before it copies", () => {
  const rec = (
    vm: string,
    status: string,
    updatedAt: string | null,
    id = 1,
  ) => ({
    id,
    instanceUuid: vm,
    migrationType: "live-migration",
    status,
    sourceCompute: "h",
    createdAt: "2026-12-01T00:00:01.000000",
    updatedAt,
  });
  const nowMs = Date.parse("2026-12-01T00:01:30Z");
  const offsetMs = 5_000; // Nova's clock 5 s ahead
  const cases: {
    name: string;
    record: ReturnType<typeof rec>;
    known?: number;
    written?: { id: string; migrationId?: string; copyStartedAt?: string };
    want: number | undefined;
  }[] = [
    {
      name: "queued in Nova: no copy yet",
      record: rec("vm", "queued", "2026-12-01T00:00:05.000000"),
      want: undefined,
    },
    {
      name: "preparing the destination: no copy yet",
      record: rec("vm", "preparing", "2026-12-01T00:00:05.000000"),
      want: undefined,
    },
    {
      name: "first seen running: from its update, in our clock",
      record: rec("vm", "running", "2026-12-01T00:00:45.000000"),
      want: Date.parse("2026-12-01T00:00:40Z"),
    },
    {
      name: "an update past now (clocks): now",
      record: rec("vm", "running", "2026-12-01T00:05:00.000000"),
      want: nowMs,
    },
    {
      name: "no update time: now",
      record: rec("vm", "running", null),
      want: nowMs,
    },
    {
      name: "known: kept, though Nova saved progress since",
      record: rec("vm", "running", "2026-12-01T00:01:29.000000"),
      known: Date.parse("2026-12-01T00:00:20Z"),
      want: Date.parse("2026-12-01T00:00:20Z"),
    },
    {
      name: "after a restart: as the status wrote it for this migration",
      record: rec("vm", "running", "2026-12-01T00:01:29.000000"),
      written: {
        id: "vm",
        migrationId: "1",
        copyStartedAt: "2026-12-01T00:00:30.000Z",
      },
      want: Date.parse("2026-12-01T00:00:30Z"),
    },
    {
      name: "written for an earlier migration of the VM: not this copy's",
      record: rec("vm", "running", "2026-12-01T00:01:29.000000", 2),
      written: {
        id: "vm",
        migrationId: "1",
        copyStartedAt: "2026-12-01T00:00:30.000Z",
      },
      want: Date.parse("2026-12-01T00:01:24Z"),
    },
  ];
  for (const c of cases) {
    const known = new Map(c.known === undefined ? [] : [["vm", c.known]]);
    const seen = copyStartsSeen(
      known,
      [c.record],
      "h",
      nowMs,
      offsetMs,
      c.written === undefined ? [] : [c.written],
    );
    assert.equal(seen.get("vm"), c.want, c.name);
  }
});

Deno.test("copyStartsSeen: property: a copy's start is never before Nova's record turned running, nor after now", () => {
  fc.assert(fc.property(
    fc.integer({ min: 0, max: 600_000 }), // running since, ms after t0
    fc.integer({ min: 0, max: 600_000 }), // later saves
    fc.integer({ min: 0, max: 600_000 }), // look after the last save
    fc.integer({ min: -10_000, max: 10_000 }), // Nova's clock ahead
    (runningAt, saves, lookAfter, offsetMs) => {
      const t0 = Date.parse("2026-12-01T00:00:00Z");
      const updatedNova = t0 + runningAt + saves + offsetMs;
      const nowMs = t0 + runningAt + saves + lookAfter;
      const seen = copyStartsSeen(
        new Map(),
        [{
          id: 1,
          instanceUuid: "vm",
          migrationType: "live-migration",
          status: "running",
          sourceCompute: "h",
          createdAt: "2026-12-01T00:00:00.000000",
          updatedAt: new Date(updatedNova).toISOString().replace("Z", ""),
        }],
        "h",
        nowMs,
        offsetMs,
      );
      const start = seen.get("vm");
      assert.ok(start !== undefined);
      assert.ok(start >= t0 + runningAt && start <= nowMs);
    },
  ));
});
