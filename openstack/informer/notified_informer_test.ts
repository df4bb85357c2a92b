import assert from "node:assert/strict";
import { NotifiedInformer } from "./notified_informer.ts";
import { MemoryFeed } from "../../tests/harness/memory_feed.ts";
import {
  HOST,
  listed,
  liveMigration,
  record,
  T0,
} from "../../tests/harness/notified_fixtures.ts";

function setUp() {
  const feed = new MemoryFeed();
  const woken: string[] = [];
  let now = T0;
  const watches = new NotifiedInformer(feed, (k) => woken.push(k), () => now);
  return { feed, woken, watches, tick: (ms: number) => (now += ms) };
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

Deno.test("a relist counts the VMs a trustworthy view got wrong (a dropped event)", () => {
  const { feed, watches } = setUp();
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
  assert.deepEqual(relisted, {
    diffs: [{ id: "a", view: "on moving", fresh: undefined }],
    checked: true,
  });
  const again = watches.endList("ev", watches.beginList("ev", HOST), list("b"));
  assert.deepEqual(again, { diffs: [], checked: true });
});

Deno.test("a live migration without a record while another copies: the view stops vouching after a poll interval, until a list shows it", async () => {
  const { feed, watches, tick } = setUp();
  const request = (starts: Parameters<NotifiedInformer["probeStarts"]>[1]) => ({
    maxAgeMs: 60_000,
    status: {},
    ram: () => undefined,
    starts,
  });
  const copying = record(1, "a", "running");
  const listing = {
    servers: [listed("a", { status: "MIGRATING", taskState: "migrating" })],
    migrations: [copying],
    departed: [],
  };
  await watches.look("ev", HOST, () => Promise.resolve(listing));
  prove(watches, feed, "b", T0, false);
  // b's start: the API's update, and nothing from its compute (queued)
  feed.publish(liveMigration("b", T0 + 1, "completed")[0]!);
  assert.ok(watches.snapshot("ev", request([])), "just started: vouched for");
  assert.ok(watches.cached("ev"));
  tick(1999);
  assert.ok(watches.snapshot("ev", request([])));
  tick(1);
  assert.equal(watches.snapshot("ev", request([])), undefined);
  assert.equal(watches.cached("ev"), false);
  // a list shows it queued: vouched for again, and the record is there
  await watches.look("ev", HOST, () =>
    Promise.resolve({
      ...listing,
      servers: [...listing.servers, listed("b", { taskState: "migrating" })],
      migrations: [copying, record(2, "b", "queued")],
    }));
  const seen = watches.snapshot("ev", request([]));
  assert.deepEqual(seen?.migrations.map((m) => m.status), [
    "running",
    "queued",
  ]);
});

Deno.test("a live migration without a record while Nova runs as many as its learned limit: queued as the drain expects, the view keeps vouching", async () => {
  const { feed, watches, tick } = setUp();
  const request = (novaLimit?: number) => ({
    maxAgeMs: 60_000,
    status: {},
    ram: () => undefined,
    starts: [],
    ...(novaLimit === undefined ? {} : { novaLimit }),
  });
  const copying = record(1, "a", "running");
  await watches.look("ev", HOST, () =>
    Promise.resolve({
      servers: [listed("a", { status: "MIGRATING", taskState: "migrating" })],
      migrations: [copying],
      departed: [],
    }));
  prove(watches, feed, "b", T0, false);
  feed.publish(liveMigration("b", T0 + 1, "completed")[0]!);
  tick(30_000);
  // one copies, Nova's limit is 1: b waits in Nova's queue, as expected
  assert.ok(watches.snapshot("ev", request(1)));
  assert.ok(watches.cached("ev", 1));
  // a limit of 2 leaves b unexplained: its time without a record starts now
  assert.ok(watches.snapshot("ev", request(2)));
  tick(2000);
  assert.equal(watches.snapshot("ev", request(2)), undefined);
  assert.equal(watches.cached("ev"), false);
  assert.ok(watches.cached("ev", 1));
});

Deno.test("a demotion is counted once however many drains are told of it; the drain's standing says deaf until trusted again", () => {
  const feed = new MemoryFeed();
  let now = T0;
  const counted: string[] = [];
  const informer = new NotifiedInformer(
    feed,
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
