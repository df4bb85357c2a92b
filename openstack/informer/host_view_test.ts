import assert from "node:assert/strict";
import fc from "fast-check";
import type { Migration, Server } from "../mod.ts";
import type {
  NotifiedInstance,
  NovaNotification,
} from "../notification_types.ts";
import { WatchedHost } from "./host_view.ts";
import { factDiffs, planFacts } from "./view_diff.ts";

const viewDiffs = (...a: Parameters<typeof factDiffs>) =>
  factDiffs(...a).map((d) => d.id);
import {
  DEST,
  HOST,
  instance,
  listed,
  liveMigration,
  notification,
  record,
  T0,
} from "../../tests/harness/notified_fixtures.ts";

const UP = { atMs: T0, epoch: 3, up: true };

function view(
  servers: Server[],
  events: NovaNotification[],
  migrations: Migration[] = [],
): WatchedHost {
  const v = new WatchedHost(HOST, { servers, migrations, departed: [] }, UP);
  for (const n of events) v.apply(n);
  return v;
}

const tracked = (...ids: string[]) => ({ outstandingInstances: ids });

Deno.test("a completed live migration: the VM left for the destination, its record completed", () => {
  const seen = view(
    [listed("a"), listed("b")],
    liveMigration("a", 10, "completed"),
  )
    .observation(tracked("a", "b"));
  assert.deepEqual(seen.servers.map((s) => s.id), ["b"]);
  assert.equal(seen.migrations.length, 1);
  const m = seen.migrations[0];
  assert.equal(m?.status, "completed");
  assert.equal(m?.sourceCompute, HOST);
  assert.equal(m?.destCompute, DEST);
  assert.equal(m?.id, undefined, "a record of the view's own has no id");
  assert.deepEqual(seen.departed, [{
    id: "a",
    server: {
      id: "a",
      status: "ACTIVE",
      host: DEST,
      taskState: null,
      flavor: { ramMb: 1024 },
    },
  }]);
});

Deno.test("each step of a live migration leaves the record status Nova's source gives it", () => {
  const events = liveMigration("a", 10, "completed");
  const cases: Array<[string, string | undefined, string]> = [
    ["instance.update", undefined, "MIGRATING"],
    ["instance.live_migration_pre.start", "preparing", "MIGRATING"],
    ["instance.live_migration_pre.end", "running", "MIGRATING"],
    ["instance.live_migration_post.start", "running", "MIGRATING"],
    ["instance.live_migration_post_dest.end", "running", "gone"],
    ["instance.live_migration_post.end", "completed", "gone"],
  ];
  for (const [upTo, status, server] of cases) {
    const cut = events.findIndex((n) => n.eventType === upTo);
    const seen = view([listed("a")], events.slice(0, cut + 1)).observation(
      tracked("a"),
    );
    assert.equal(seen.migrations[0]?.status, status, upTo);
    assert.equal(seen.servers[0]?.status ?? "gone", server, upTo);
  }
});

Deno.test("failures: a rollback ends failed, an aborted one cancelled, the conductor's error", () => {
  const failed = view([listed("a")], liveMigration("a", 10, "failed"))
    .observation(tracked("a"));
  assert.equal(failed.migrations[0]?.status, "failed");
  assert.equal(failed.servers[0]?.status, "ACTIVE");

  const events = liveMigration("a", 10, "failed");
  events.splice(
    3,
    0,
    notification(
      "instance.live_migration_abort.start",
      12,
      `nova-compute:${HOST}`,
      {
        instance: instance("a", { taskState: "migrating" }),
      },
    ),
  );
  const aborted = view([listed("a")], events).observation(tracked("a"));
  assert.equal(aborted.migrations[0]?.status, "cancelled");

  const error = view([listed("a")], liveMigration("a", 10, "error"))
    .observation(tracked("a"));
  assert.equal(error.migrations[0]?.status, "error");
  assert.equal(error.migrations[0]?.sourceCompute, HOST);
  assert.equal(error.servers[0]?.status, "ACTIVE");
});

Deno.test("a listed record in progress takes the steps (its id kept); an ended one is followed by a new record", () => {
  const queued = view(
    [listed("a", { status: "MIGRATING", taskState: "migrating" })],
    liveMigration("a", 10, "completed").slice(1),
    [record(8, "a", "queued")],
  )
    .observation(tracked("a"));
  assert.deepEqual(queued.migrations.map((m) => [m.id, m.status]), [[
    8,
    "completed",
  ]]);

  const retried = view([listed("a")], liveMigration("a", 10, "completed"), [
    record(8, "a", "failed"),
  ])
    .observation(tracked("a"));
  assert.deepEqual(retried.migrations.map((m) => m.status), [
    "failed",
    "completed",
  ]);
});

Deno.test("a step in the second its listed record ended in is that record's (Nova keeps whole seconds)", () => {
  // record() ends at T0 - 1000, a whole second as Nova's database keeps
  // it; its own last events were sent 0.7 s later in that second and
  // received after the list began.
  const ended = { updatedAt: new Date(T0 - 1000).toISOString().slice(0, 19) };
  const postEnd = liveMigration("a", -310, "completed").filter((n) =>
    n.eventType === "instance.live_migration_post.end"
  );
  const confirmEnd = notification(
    "instance.resize_confirm.end",
    -200,
    `nova-compute:${HOST}`,
    { instance: instance("a", { host: DEST, node: DEST }) },
  );
  const rows: {
    name: string;
    servers: Server[];
    migrations: Migration[];
    events: NovaNotification[];
    records: string[];
    fact: string;
  }[] = [{
    name: "a live migration's post.end after the list showing it completed",
    servers: [],
    migrations: [record(8, "a", "completed", ended)],
    events: postEnd,
    records: ["8 completed node007"],
    fact: "left done node007",
  }, {
    name:
      "a cold migration's resize_confirm.end after the list showing it confirmed",
    servers: [],
    migrations: [
      record(9, "a", "confirmed", { ...ended, migrationType: "migration" }),
    ],
    events: [confirmEnd],
    records: ["9 confirmed node007"],
    fact: "left done node007",
  }, {
    name: "a retry in a later second is a new record",
    servers: [listed("a")],
    migrations: [record(8, "a", "failed", ended)],
    events: liveMigration("a", 0, "completed"),
    records: ["8 failed node007", "new completed node007"],
    fact: "left done node007",
  }];
  for (const row of rows) {
    const seen = view(row.servers, row.events, row.migrations).observation(
      undefined,
    );
    assert.deepEqual(
      seen.migrations.map((m) =>
        `${m.id ?? "new"} ${m.status} ${m.destCompute ?? "?"}`
      ),
      row.records,
      row.name,
    );
    assert.equal(planFacts(seen, HOST).get("a"), row.fact, row.name);
  }
});

Deno.test("arrivals, deletions, old, foreign and duplicated events", () => {
  const arrival = liveMigration("z", 5, "completed", "node999", HOST);
  const deleted = [
    notification("instance.update", 20, "nova-compute:controller", {
      instance: instance("b", { taskState: "deleting" }),
    }),
    notification("instance.delete.end", 21, `nova-compute:${HOST}`, {
      instance: instance("b", { vmState: "deleted" }),
    }),
  ];
  const old = notification("instance.delete.end", -5, `nova-compute:${HOST}`, {
    instance: instance("c", { vmState: "deleted" }),
  });
  const foreign = notification("instance.update", 30, "nova-compute:node999", {
    instance: instance("y", { host: "node999" }),
  });
  const listedAt = new Date(T0).toISOString();
  const v = view([listed("b"), listed("c", { updated: listedAt })], [
    ...arrival,
    ...deleted,
    old,
    foreign,
    ...deleted,
  ]);
  const seen = v.observation(tracked("b", "c"));
  assert.deepEqual(seen.servers.map((s) => s.id).sort(), ["c", "z"]);
  assert.deepEqual(seen.departed, [{ id: "b", server: null }]);
  assert.equal(
    v.eventCount,
    arrival.length + deleted.length + 1,
    "the arrival's first update (naming its source only) is taken in once the VM is known; the old one is held, but older than c's listing; the foreign one is not",
  );
  const incoming = seen.migrations.find((m) => m.instanceUuid === "z");
  assert.equal(incoming?.destCompute, HOST);
  assert.equal(incoming?.status, "completed");
});

Deno.test("trustworthy: listed while up, and up in the same epoch since", () => {
  const v = view([], []);
  assert.equal(v.trustworthy({ state: "up", epoch: 3 }), true);
  assert.equal(v.trustworthy({ state: "down", epoch: 3 }), false);
  assert.equal(
    v.trustworthy({ state: "up", epoch: 4 }),
    false,
    "reconnected: events may be missing",
  );
  const listedDown = new WatchedHost(HOST, {
    servers: [],
    migrations: [],
    departed: [],
  }, { ...UP, up: false });
  assert.equal(listedDown.trustworthy({ state: "up", epoch: 3 }), false);
});

Deno.test("the planner's facts tell a missed completion apart", () => {
  const events = liveMigration("a", 10, "completed");
  const full = view([listed("a")], events).observation(tracked("a"));
  const missed = view(
    [listed("a")],
    events.filter((n) => !n.eventType.includes("post"))
      .filter((n) => n.timestampMs < T0 + 15),
  ).observation(tracked("a"));
  assert.deepEqual(viewDiffs(missed, full, HOST), ["a"]);
  assert.deepEqual(viewDiffs(full, full, HOST), []);
});

// Property tests: a history of the host (each listed VM stays, migrates
// away, fails to, or is deleted; others arrive) as events, and the list
// Nova gives after it.

type Fate = "stay" | "completed" | "failed" | "error" | "deleted";
const FATES: Fate[] = ["stay", "completed", "failed", "error", "deleted"];

interface History {
  servers: Server[];
  events: NovaNotification[];
  after: { servers: Server[]; migrations: Migration[] };
}

function historyOf(
  fates: Fate[],
  arrivals: number,
  offsets: number[],
): History {
  const servers = fates.map((_, i) => listed(`vm${i}`));
  const events: NovaNotification[] = [];
  const after: History["after"] = { servers: [], migrations: [] };
  fates.forEach((fate, i) => {
    const id = `vm${i}`;
    const ms = 10 + (offsets[i] ?? 0);
    const nova = (status: string) => record(100 + i, id, status);
    if (fate === "stay") after.servers.push(listed(id));
    if (fate === "completed" || fate === "failed" || fate === "error") {
      events.push(...liveMigration(id, ms, fate));
      after.migrations.push(nova(fate));
      if (fate !== "completed") after.servers.push(listed(id));
    }
    if (fate === "deleted") {
      events.push(
        notification("instance.update", ms, "nova-compute:controller", {
          instance: instance(id, { taskState: "deleting" }),
        }),
        notification("instance.delete.end", ms + 1, `nova-compute:${HOST}`, {
          instance: instance(id, { vmState: "deleted" }),
        }),
      );
    }
  });
  for (let j = 0; j < arrivals; j++) {
    const id = `new${j}`;
    events.push(...liveMigration(id, 50 + 7 * j, "completed", "node999", HOST));
    after.servers.push(listed(id));
    after.migrations.push(
      record(200 + j, id, "completed", {
        sourceCompute: "node999",
        destCompute: HOST,
      }),
    );
  }
  return { servers, events, after };
}

const histories = fc.record({
  fates: fc.array(fc.constantFrom(...FATES), { minLength: 1, maxLength: 8 }),
  arrivals: fc.integer({ min: 0, max: 2 }),
  offsets: fc.array(fc.integer({ min: 0, max: 40 }), {
    minLength: 8,
    maxLength: 8,
  }),
}).map(({ fates, arrivals, offsets }) => historyOf(fates, arrivals, offsets));

Deno.test("property: the view after the events plans as the list taken after them", () => {
  fc.assert(fc.property(histories, (h) => {
    const seen = view(h.servers, h.events).observation(undefined);
    assert.deepEqual(planFacts(seen, HOST), planFacts(h.after, HOST));
  }));
});

Deno.test("property: duplicated and reordered events change nothing", () => {
  fc.assert(fc.property(
    histories,
    fc.array(fc.nat(), { minLength: 64, maxLength: 64 }),
    fc.array(fc.nat({ max: 63 }), { maxLength: 20 }),
    (h, keys, dupes) => {
      const inOrder = view(h.servers, h.events).observation(
        tracked(...h.servers.map((s) => s.id)),
      );
      const shuffled = h.events
        .map((n, i) => ({ n, k: keys[i % keys.length] ?? 0 }))
        .sort((a, b) => a.k - b.k)
        .map((x) => x.n);
      for (const d of dupes) {
        const n = h.events[d % h.events.length];
        if (n !== undefined) shuffled.splice(d % (shuffled.length + 1), 0, n);
      }
      const other = view(h.servers, shuffled).observation(
        tracked(...h.servers.map((s) => s.id)),
      );
      assert.deepEqual(other, inOrder);
    },
  ));
});

Deno.test("apply: keeps what concerns the host once; parks a stranger's event until its VM becomes known", () => {
  const v = view([listed("a")], []);
  const here = notification("instance.update", 1, "nova-compute:controller", {
    instance: instance("n"),
  });
  assert.equal(v.apply(here), true, "names the host");
  assert.equal(v.apply(here), false, "the same message again");
  const away = notification("instance.update", 2, "nova-compute:node999", {
    instance: instance("a", { host: "node999", node: "node999" }),
  });
  assert.equal(v.concerns(away), true, "a listed VM, wherever it is");
  assert.equal(v.apply(away), true);
  const byPublisher = notification(
    "instance.update",
    3,
    `nova-compute:${HOST}`,
    {
      instance: instance("p", { host: "node999" }),
    },
  );
  assert.equal(v.concerns(byPublisher), true, "sent by the host");
  const early = notification("instance.update", 4, "nova-compute:node999", {
    instance: instance("y", { host: "node999", taskState: "migrating" }),
  });
  assert.equal(v.concerns(early), false);
  assert.equal(v.apply(early), false, "parked, not kept");
  assert.equal(v.eventCount, 2);
  v.apply(
    notification("instance.update", 5, "nova-compute:controller", {
      instance: instance("y"),
    }),
  );
  assert.equal(v.eventCount, 4, "y's arrival brings its parked event in");
  assert.equal(v.listedHere("a"), true);
  assert.equal(v.listedHere("y"), false, "shown, never listed");
});

Deno.test("apply: at most 1024 strangers' events are parked, the oldest dropped first", () => {
  const v = view([], []);
  const parked = Array.from(
    { length: 1025 },
    (_, i) =>
      notification("instance.update", i, "nova-compute:node999", {
        instance: instance("y", { host: "node999" }),
      }),
  );
  for (const n of parked) v.apply(n);
  v.apply(parked[1]!); // parked again: now the newest
  v.apply(
    notification("instance.update", 2000, "nova-compute:controller", {
      instance: instance("y"),
    }),
  );
  assert.equal(v.eventCount, 1 + 1024);
  const seen = v.observation(undefined);
  assert.deepEqual(seen.servers.map((s) => s.id), ["y"]);
});

Deno.test("observation: an event fills what its payload lacks from the list, then from ramOf", () => {
  const a = listed("a", {
    name: "alpha",
    flavor: { ramMb: 4096, vcpus: 4 },
    tenantId: "t1",
  });
  // payloads without a flavor
  const bare = (id: string, o: Partial<NotifiedInstance> = {}) => {
    const { flavorRamMb: _, ...rest } = instance(id, o);
    return rest;
  };
  const seen = view([a], [
    notification("instance.update", 1, "nova-compute:controller", {
      instance: bare("a", { taskState: "migrating" }),
    }),
    notification("instance.update", 2, "nova-compute:controller", {
      instance: bare("n"),
    }),
  ]).observation(undefined, (id) => id === "n" ? 2048 : undefined);
  const byId = new Map(seen.servers.map((s) => [s.id, s]));
  assert.equal(byId.get("a")?.name, "alpha");
  assert.deepEqual(byId.get("a")?.flavor, { ramMb: 4096, vcpus: 4 });
  assert.equal(byId.get("a")?.tenantId, "t1");
  assert.equal(byId.get("a")?.taskState, "migrating");
  assert.equal(byId.get("a")?.status, "MIGRATING");
  assert.deepEqual(byId.get("n")?.flavor, { ramMb: 2048, vcpus: 0 });
  assert.equal(byId.get("n")?.name, "");
  assert.equal("tenantId" in (byId.get("n") ?? {}), false);
  assert.equal(seen.listedAtMs, T0, "the list's time, not the events'");
});

Deno.test("observation: a cold move whose flavor changed is a user's resize; one keeping it a migration", () => {
  const moveOf = (ramMb: number) => [
    notification("instance.resize_prep.start", 1, `nova-compute:${HOST}`, {
      instance: instance("c", { vmState: "stopped", powerState: 4 }),
    }),
    notification("instance.update", 2, "nova-compute:controller", {
      instance: instance("c", {
        vmState: "stopped",
        taskState: "resize_prep",
        flavorRamMb: ramMb,
      }),
    }),
  ];
  const shutoff = listed("c", { status: "SHUTOFF", vmState: "stopped" });
  const types = (ramMb: number, migrations: Migration[] = []) =>
    view([shutoff], moveOf(ramMb), migrations).observation(undefined)
      .migrations.map((m) => `${m.id ?? "new"} ${m.migrationType}`);
  assert.deepEqual(types(1024), ["new migration"]);
  assert.deepEqual(types(2048), ["new resize"]);
  const listedRecord = record(9, "c", "confirmed", {
    migrationType: "migration",
    createdAt: "2026-11-29T11:00:00",
    updatedAt: "2026-11-29T11:00:00",
  });
  assert.deepEqual(
    types(2048, [listedRecord]),
    ["9 migration", "new resize"],
    "a listed record's type is Nova's: never renamed",
  );
});

Deno.test("observation: records of other hosts are dropped; a tracked VM gone with a record departs where it says", () => {
  const elsewhere = record(2, "x", "running", {
    sourceCompute: "node001",
    destCompute: "node002",
  });
  const seen = new WatchedHost(HOST, {
    servers: [],
    migrations: [record(1, "a", "completed"), elsewhere],
    departed: [],
  }, UP).observation(tracked("a"), () => 512);
  assert.deepEqual(seen.migrations.map((m) => m.id), [1]);
  assert.equal(seen.departed.length, 1);
  assert.equal(seen.departed[0]?.server?.host, DEST);
  assert.equal(seen.departed[0]?.server?.flavor.ramMb, 512);
});

Deno.test("missedMoves: a listed VM shown elsewhere with no migration step nor open record", () => {
  const update = (id: string, ms: number, host: string) =>
    notification("instance.update", ms, "nova-compute:controller", {
      instance: instance(id, { host, node: host }),
    });
  const missed = (
    servers: Server[],
    events: NovaNotification[],
    migrations: Migration[] = [],
  ) => view(servers, events, migrations).missedMoves();
  assert.deepEqual(
    missed([listed("b"), listed("a")], [
      update("b", 1, DEST),
      update("a", 2, DEST),
    ]),
    ["a", "b"],
    "sorted",
  );
  assert.deepEqual(
    missed([listed("a")], liveMigration("a", 1, "completed")),
    [],
    "its migration was heard",
  );
  assert.deepEqual(
    missed([listed("a")], [update("a", 1, DEST)], [record(1, "a", "running")]),
    [],
    "a listed record in progress explains it",
  );
  assert.deepEqual(
    missed([listed("a")], [update("a", 1, DEST)], [
      record(1, "a", "completed"),
    ]),
    ["a"],
    "an ended record does not",
  );
  assert.deepEqual(
    missed([listed("a")], [update("a", 1, DEST), update("a", 2, HOST)]),
    [],
    "back here",
  );
  assert.deepEqual(
    missed([listed("a")], [
      update("a", 1, DEST),
      notification("instance.delete.end", 2, `nova-compute:${DEST}`, {
        instance: instance("a", { host: DEST, vmState: "deleted" }),
      }),
    ]),
    [],
    "deleted",
  );
  assert.deepEqual(
    missed([], [update("n", 1, HOST), update("n", 2, DEST)]),
    ["n"],
    "an arrival the events saw leave again",
  );
  assert.deepEqual(missed([], [update("n", 1, DEST)]), [], "never here");
});

Deno.test("unlisted: a VM the events put here that no list showed here since", () => {
  const update = (id: string, ms: number, host: string) =>
    notification("instance.update", ms, "nova-compute:controller", {
      instance: instance(id, { host, node: host }),
    });
  assert.deepEqual(view([listed("a")], [update("a", 1, HOST)]).unlisted(), []);
  assert.deepEqual(
    view([], [update("z", 1, HOST), update("y", 2, HOST)]).unlisted(),
    ["y", "z"],
  );
  assert.deepEqual(
    view([listed("a")], [update("a", 1, DEST), update("a", 2, HOST)])
      .unlisted(),
    ["a"],
    "left and came back: the return is the events' word only",
  );
  const later = new Date(T0 + 100).toISOString();
  assert.deepEqual(
    view([listed("a", { updated: later })], [
      update("a", 1, DEST),
      update("a", 2, HOST),
    ]).unlisted(),
    [],
    "events older than the list's change of the VM are ignored",
  );
  assert.deepEqual(
    view([], [
      update("z", 1, HOST),
      notification("instance.delete.end", 2, `nova-compute:${HOST}`, {
        instance: instance("z", { vmState: "deleted" }),
      }),
    ]).unlisted(),
    [],
    "gone again",
  );
});
