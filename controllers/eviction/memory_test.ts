import assert from "node:assert/strict";
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

Deno.test("copyStartsSeen: a copy runs from its record's creation (a restart never restarts its bound), unless this process saw it queued", () => {
  const rec = (vm: string, createdAt: string, status = "running") => ({
    id: 1,
    instanceUuid: vm,
    migrationType: "live-migration",
    status,
    sourceCompute: "h",
    createdAt,
  });
  const nowMs = Date.parse("2026-12-01T00:01:30Z");
  const queued = copyStartsSeen(
    new Map(),
    [rec("long-queued", "2026-12-01T00:00:10.000000", "queued")],
    "h",
    nowMs - 40_000,
  );
  const seen = copyStartsSeen(
    queued,
    [
      rec("before", "2026-12-01T00:00:20.000000"),
      rec("long-queued", "2026-12-01T00:00:10.000000"),
      rec("ahead", "2026-12-01T00:05:00.000000"),
    ],
    "h",
    nowMs,
    5_000, // Nova's clock 5 s ahead
  );
  assert.equal(seen.get("before"), Date.parse("2026-12-01T00:00:15Z"));
  // seen waiting in Nova's queue: from when it was first seen under way
  assert.equal(seen.get("long-queued"), nowMs);
  // a creation time past now (clocks) is now
  assert.equal(seen.get("ahead"), nowMs);
});
