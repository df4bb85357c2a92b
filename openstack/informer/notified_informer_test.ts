import assert from "node:assert/strict";
import type { Migration, Server } from "../mod.ts";
import { NotifiedInformer, wakesDrain } from "./notified_informer.ts";
import type { LookNeed } from "./informer.ts";
import { NovaLister } from "./lister.ts";
import { MemoryFeed } from "../../tests/harness/memory_feed.ts";
import {
  FixedNova,
  HOST,
  instance,
  listed,
  liveMigration,
  notification,
  record,
  T0,
} from "../../tests/harness/notified_fixtures.ts";

function setUp(hooks?: ConstructorParameters<typeof NotifiedInformer>[5]) {
  const feed = new MemoryFeed();
  const nova = new FixedNova();
  const woken: string[] = [];
  let now = T0;
  const clock = () => now;
  const watches = new NotifiedInformer(
    feed,
    new NovaLister(nova, { now: clock }),
    (k) => woken.push(k),
    clock,
    undefined,
    hooks,
  );
  /** A look as a pass asks it: any view the informer vouches for. */
  const look = (over: Partial<LookNeed> = {}) =>
    watches.look("ev", {
      host: HOST,
      since: new Date(0),
      status: {},
      ram: () => undefined,
      starts: [],
      ...over,
    });
  /** A look that lists what Nova shows now. */
  const relist = (servers: Server[], migrations: Migration[] = []) => {
    nova.show(servers, migrations);
    return look({ freshSince: now });
  };
  return {
    feed,
    nova,
    woken,
    watches,
    look,
    relist,
    tick: (ms: number) => (now += ms),
  };
}

/**
 * A start of `id` at the watches' clock, heard of by its first event
 * (the API's update) or already: the feed is proven for the host.
 */
function prove(
  watches: NotifiedInformer,
  feed: MemoryFeed,
  id: string,
  atMs = T0,
  publish = true,
): void {
  if (publish) feed.publish(liveMigration(id, 5, "completed")[0]!);
  watches.probeStarts(
    "ev",
    [{ id, state: "accepted", issuedAtMs: atMs, answeredAtMs: atMs }],
  );
}

const list = (...ids: string[]) => ({
  servers: ids.map((id) => listed(id)),
  migrations: [],
  departed: [],
});
const moving = (id: string) =>
  listed(id, { status: "MIGRATING", taskState: "migrating" });

Deno.test("subscribe first, then list: events during the list are applied to the new view", () => {
  const { feed, woken, watches } = setUp();
  const stamp = watches.beginList("ev", HOST);
  assert.equal(watches.trustworthyView("ev", 1000), undefined);
  for (const n of liveMigration("a", 5, "completed")) feed.publish(n);
  // the list began before the migration ended, and shows "a" still there
  watches.endList("ev", stamp, list("a", "b"));
  prove(watches, feed, "a", T0, false);
  const view = watches.trustworthyView("ev", 1000);
  assert.ok(view);
  assert.deepEqual(view.observation(undefined).servers.map((s) => s.id), ["b"]);
  assert.deepEqual(
    woken,
    ["ev"],
    "an end the list may not show wakes the drain",
  );
});

Deno.test("a completion wakes its host's drain; a start does not; other hosts' events do nothing", () => {
  const { feed, woken, watches } = setUp();
  watches.endList("ev", watches.beginList("ev", HOST), list("a"));
  const events = liveMigration("a", 5, "completed");
  feed.publish(events[0]!); // the API's update: task_state migrating
  assert.deepEqual(woken, []);
  for (const n of liveMigration("x", 5, "completed", "node999", "node998")) {
    feed.publish(n);
  }
  assert.deepEqual(woken, []);
  for (const n of events.slice(1)) feed.publish(n);
  assert.ok(woken.length >= 1 && woken.every((k) => k === "ev"));
});

Deno.test("the feed going down or up wakes every drain; a view of an older epoch is not trusted; stale views are relisted", () => {
  const { feed, woken, watches, tick } = setUp();
  watches.endList("ev", watches.beginList("ev", HOST), list("a"));
  prove(watches, feed, "a");
  feed.down();
  assert.deepEqual(woken, ["ev"]);
  assert.equal(watches.trustworthyView("ev", 1000), undefined);
  feed.up();
  assert.deepEqual(woken, ["ev", "ev"]);
  assert.equal(
    watches.trustworthyView("ev", 1000),
    undefined,
    "events may be missing: relist",
  );
  watches.endList("ev", watches.beginList("ev", HOST), list("a"));
  assert.ok(watches.trustworthyView("ev", 1000));
  tick(1000);
  assert.equal(
    watches.trustworthyView("ev", 1000),
    undefined,
    "due for its relist",
  );
});

Deno.test("a relist counts the VMs a trustworthy view got wrong (a dropped event) once no event came a poll interval on; an event on its way is the feed's lag", () => {
  const { feed, watches, tick } = setUp();
  watches.endList("ev", watches.beginList("ev", HOST), list("a", "b"));
  feed.drop = (n) =>
    n.eventType === "instance.update" && n.instance?.host !== HOST;
  const events = liveMigration("a", 5, "completed").filter((n) =>
    !n.eventType.startsWith("instance.live_migration_post")
  );
  for (const n of events) feed.publish(n);
  assert.equal(feed.lost, 1);
  const relisted = watches.endList(
    "ev",
    watches.beginList("ev", HOST),
    list("b"),
  );
  const moving = { id: "a", view: "on moving", fresh: undefined };
  assert.deepEqual(relisted, { diffs: [], lagging: [moving], checked: true });
  tick(2000);
  const again = watches.endList("ev", watches.beginList("ev", HOST), list("b"));
  assert.deepEqual(again, { diffs: [], lagging: [], checked: true });
  assert.equal(
    watches.takeWarnings("ev")[0]?.reason,
    "NotificationViewDemoted",
  );
  // the same difference, and the event that tells it comes after the relist
  const late = setUp();
  late.watches.endList(
    "ev",
    late.watches.beginList("ev", HOST),
    list("a", "b"),
  );
  const moves = liveMigration("a", 5, "completed");
  const [first, ...rest] = moves;
  late.feed.publish(first!);
  const lagged = late.watches.endList(
    "ev",
    late.watches.beginList("ev", HOST),
    list("b"),
  );
  assert.deepEqual(lagged.lagging.map((d) => d.id), ["a"]);
  const woken = late.woken.length;
  for (const n of rest) late.feed.publish(n);
  assert.equal(late.woken.length, woken, "the late events tell nothing new");
  late.tick(2000);
  late.watches.endList("ev", late.watches.beginList("ev", HOST), {
    ...list("b"),
    migrations: [record(1, "a", "completed")],
  });
  assert.deepEqual(late.watches.takeWarnings("ev"), [], "only lag: trusted");
});

Deno.test("a live migration without a record while another copies: the view stops vouching after a poll interval, until a list shows it", async () => {
  const { feed, nova, watches, look, relist, tick } = setUp();
  const copying = record(1, "a", "running");
  await relist([moving("a"), listed("b")], [copying]);
  prove(watches, feed, "b", T0, false);
  // b's start: the API's update, and nothing from its compute (queued)
  feed.publish(liveMigration("b", T0 + 1, "completed")[0]!);
  assert.equal((await look()).fromView, true, "just started: vouched for");
  assert.ok(watches.cached("ev"));
  tick(1999);
  assert.equal((await look()).fromView, true);
  tick(1);
  assert.equal(watches.cached("ev"), false);
  // the look lists: Nova shows it queued, and teaches its limit
  nova.show([moving("a"), moving("b")], [copying, record(2, "b", "queued")]);
  const calls = nova.calls.length;
  const fresh = await look();
  assert.equal(fresh.fromView, undefined);
  assert.equal(nova.calls.length, calls + 2, "servers and migrations");
  const seen = await look();
  assert.equal(seen.fromView, true, "vouched for again");
  assert.deepEqual(seen.migrations.map((m) => m.status), ["running", "queued"]);
  assert.equal(seen.novaLimit, 1);
});

Deno.test("a live migration without a record while Nova runs as many as the limit it showed: queued as expected, the view keeps vouching until Nova shows more", async () => {
  const { feed, watches, look, relist, tick } = setUp();
  // Nova copies a and holds c queued: its limit on the host is 1
  await relist(
    [moving("a"), listed("b"), moving("c")],
    [record(1, "a", "running"), record(2, "c", "queued")],
  );
  prove(watches, feed, "b", T0, false);
  feed.publish(liveMigration("b", T0 + 1, "completed")[0]!);
  tick(30_000);
  const seen = await look();
  assert.equal(seen.fromView, true, "b waits in Nova's queue, as expected");
  assert.equal(seen.novaLimit, 1);
  assert.ok(watches.cached("ev"));
  // Nova runs two at once now (its limit raised): the limit is known no more
  await relist(
    [moving("a"), moving("b"), moving("c")],
    [record(1, "a", "running"), record(2, "c", "running")],
  );
  prove(watches, feed, "b", T0 + 30_000);
  const raised = await look();
  assert.equal(raised.fromView, true);
  assert.equal(raised.novaLimit, undefined);
});

Deno.test("the trust rule: a VM shown back on the host at rest after it left is looked at before any start (forged, replayed or misattributed)", async () => {
  const { feed, nova, watches, look, relist } = setUp();
  await relist([listed("a"), listed("b")]);
  prove(watches, feed, "b", T0);
  for (const n of liveMigration("a", 10, "completed")) feed.publish(n);
  const left = await look();
  assert.equal(left.fromView, true);
  assert.deepEqual(left.servers.map((s) => s.id), ["b"], "a left");
  // one update, stamped as new, puts a back on the host at rest
  feed.publish(
    notification("instance.update", 20, "nova-conductor:forger", {
      instance: instance("a"),
    }),
  );
  assert.equal(watches.cached("ev"), false);
  const calls = nova.calls.length;
  assert.equal((await look()).fromView, undefined, "listed");
  assert.ok(nova.calls.length > calls);
  // the look Nova answers shows where a is: the view was wrong
  const differed: string[] = [];
  const other = setUp({
    differed: (_host, diffs) => differed.push(...diffs.map((d) => d.id)),
    demoted: () => {},
  });
  await other.relist([listed("a"), listed("b")]);
  prove(other.watches, other.feed, "b", T0);
  for (const n of liveMigration("a", 30, "completed")) other.feed.publish(n);
  other.feed.publish(
    notification("instance.update", 40, "nova-compute:node001", {
      instance: instance("a"),
    }),
  );
  await other.relist([moving("b")]);
  assert.deepEqual(differed, ["a"], "the relist tells what the view saw");
  assert.equal(
    other.watches.takeWarnings("ev")[0]?.reason,
    "NotificationViewDemoted",
  );
});

Deno.test("the trust rule: an arrival the list behind the view does not show is looked at first; once listed, the view vouches", async () => {
  const { feed, watches, look, relist } = setUp();
  await relist([listed("b")]);
  prove(watches, feed, "b", T0);
  assert.equal((await look()).fromView, true);
  feed.publish(
    notification("instance.update", 20, "nova-compute:node042", {
      instance: instance("new"),
    }),
  );
  assert.equal(watches.cached("ev"), false);
  await relist([moving("b"), listed("new")]);
  prove(watches, feed, "b", T0);
  const seen = await look();
  assert.equal(seen.fromView, true);
  assert.deepEqual(seen.servers.map((s) => s.id), ["b", "new"]);
});

Deno.test("a migration's end not heard of by its due time: the view looks, then at spacings doubling while the copy runs on", async () => {
  const { feed, nova, watches, look, tick } = setUp();
  nova.show([moving("a"), moving("b")], [record(1, "a", "running")]);
  await look();
  prove(watches, feed, "b", T0);
  const ending = (by: number) => look({ endsBy: new Map([["a", by]]) });
  const due = T0 + 10_000;
  tick(9_999);
  assert.equal((await ending(due)).fromView, true, "not due yet");
  tick(1);
  assert.equal((await ending(due)).fromView, undefined, "overdue: listed");
  // Looks at T0 + 10 s, 12 s and 14 s find it copying still: each time
  // the view vouches until the next look is due, a poll interval (2 s) on
  // or as late as the copy was at that look, whichever is longer.
  let at = due;
  for (const spacing of [2_000, 2_000, 4_000]) {
    prove(watches, feed, "b", at);
    tick(spacing - 1);
    assert.equal((await ending(due)).fromView, true, `${at - T0}: vouched`);
    tick(1);
    assert.equal((await ending(due)).fromView, undefined, "looks");
    at += spacing;
  }
  assert.equal((await ending(T0 + 100_000)).fromView, true, "due later");
});

Deno.test("the view is relisted at the relist age while a copy of ours runs untimed, at the finished check while none does", async () => {
  const { feed, watches, look, relist, tick } = setUp();
  await relist([listed("b")]);
  prove(watches, feed, "b", T0);
  tick(59_999);
  assert.equal((await look({ untimed: 1 })).fromView, true);
  tick(1);
  assert.equal((await look()).fromView, true, "none untimed: 120 s");
  assert.equal((await look({ untimed: 2 })).fromView, undefined, "60 s");
});

Deno.test("a look fresh since a time: the view's own list when it began after it, else a list", async () => {
  const { feed, nova, watches, look, relist, tick } = setUp();
  await relist([listed("b")]);
  prove(watches, feed, "b", T0);
  for (const n of liveMigration("b", 10, "completed")) feed.publish(n);
  tick(1000);
  const calls = nova.calls.length;
  const view = await look();
  assert.deepEqual(view.servers, [], "the view: b left");
  const listedAfter = await look({ freshSince: T0 - 1 });
  assert.deepEqual(listedAfter.servers.map((s) => s.id), ["b"], "its list");
  assert.equal(listedAfter.listedAtMs, T0);
  assert.equal(nova.calls.length, calls, "no call");
  nova.show([]);
  const fresh = await look({ freshSince: view.listedAtMs });
  assert.equal(fresh.listedAtMs, T0 + 1000);
  assert.deepEqual(fresh.servers, []);
  assert.equal(nova.calls.length, calls + 3, "servers, migrations twice");
});

Deno.test("a failed list leaves the view as it was and says why", async () => {
  const { feed, nova, watches, look, relist, tick } = setUp();
  await relist([listed("b")]);
  prove(watches, feed, "b", T0);
  tick(120_000);
  nova.listServersOnHost = () => Promise.reject(new Error("Nova is away"));
  await assert.rejects(look(), /Nova is away/);
  tick(-120_000);
  assert.equal((await look()).fromView, true, "the old view stands");
});

Deno.test("a demotion is counted once however many drains are told of it; the drain's standing says deaf until trusted again", () => {
  const feed = new MemoryFeed();
  let now = T0;
  const counted: string[] = [];
  const informer = new NotifiedInformer(
    feed,
    new NovaLister(new FixedNova(), { now: () => now }),
    () => {},
    () => now,
    undefined,
    {
      differed() {},
      demoted: (d) => counted.push(`${d.scope}/${d.reason}`),
    },
  );
  // A wave of three drains; the feed carries none of their hosts' events.
  const keys = ["ev1", "ev2", "ev3"];
  for (const [i, key] of keys.entries()) {
    informer.endList(key, informer.beginList(key, `node0${i}`), list());
    informer.probeStarts(key, [{
      id: `vm${i}`,
      state: "accepted",
      issuedAtMs: now,
      answeredAtMs: now,
    }]);
  }
  assert.equal(informer.notifications("ev1"), undefined, "not proven yet");
  now += 10_001; // past the probe bound: each start unheard of
  const standing = informer.notifications("ev1");
  assert.equal(standing?.trusted, false);
  assert.equal(standing?.trusted === false && standing.reason, "deaf");
  assert.equal(standing?.trusted === false && standing.scope, "host");
  assert.deepEqual(informer.demotedHosts(), { wrong: 0, deaf: 3 });
  assert.ok(informer.feedDemoted(), "three hosts: the whole feed");
  // Every drain is told (its Event), each demotion counted once.
  const told = keys.flatMap((k) => informer.takeWarnings(k));
  assert.equal(
    told.filter((w) => w.reason === "NotificationFeedDemoted").length,
    3,
  );
  assert.deepEqual(counted.sort(), [
    "feed/deaf",
    "host/deaf",
    "host/deaf",
    "host/deaf",
  ]);
});

Deno.test("wakesDrain: ends of steps on the host, arrivals at rest and an arrival's first step wake its drain; starts and other hosts' moves do not", () => {
  const at = (
    eventType: string,
    publisher: string,
    over: Parameters<typeof instance>[1] = {},
  ) => notification(eventType, 0, publisher, { instance: instance("a", over) });
  const there = { host: "node007", node: "node007" };
  const cases: Array<[string, ReturnType<typeof at>, boolean, boolean]> = [
    // what, event, wakes, wakes when a was listed here
    [
      "the source's post.end",
      at("instance.live_migration_post.end", `nova-compute:${HOST}`),
      true,
      true,
    ],
    [
      "a rollback ended on the host",
      at("instance.live_migration_rollback.end", `nova-compute:${HOST}`),
      true,
      true,
    ],
    [
      "a deletion elsewhere of a VM listed here",
      at("instance.delete.end", "nova-compute:node007", there),
      false,
      true,
    ],
    [
      "the update that starts a migration",
      at("instance.update", "nova-conductor:c", { taskState: "migrating" }),
      false,
      false,
    ],
    [
      "an update putting a VM here at rest (an arrival)",
      at("instance.update", "nova-conductor:c"),
      true,
      true,
    ],
    [
      "the destination's post_dest.end (the record runs on)",
      at(
        "instance.live_migration_post_dest.end",
        "nova-compute:node007",
        there,
      ),
      false,
      false,
    ],
    [
      "an arrival's first step on this host",
      at("instance.live_migration_pre.start", `nova-compute:${HOST}`, there),
      true,
      true,
    ],
    [
      "another host's move",
      at("instance.live_migration_post.end", "nova-compute:node007", there),
      false,
      true,
    ],
  ];
  for (const [what, n, wakes, listedHere] of cases) {
    assert.equal(wakesDrain(n, HOST), wakes, what);
    assert.equal(wakesDrain(n, HOST, (id) => id === "a"), listedHere, what);
  }
  const failed = notification(
    "compute_task.migrate_server.error",
    0,
    "nova-conductor:c",
    { task: { instanceUuid: "a", reason: "No valid host was found." } },
  );
  assert.equal(wakesDrain(failed, HOST), false, "whose host, unsaid");
  assert.equal(wakesDrain(failed, HOST, (id) => id === "a"), true);
});
