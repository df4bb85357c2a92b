import assert from "node:assert/strict";
import { TemporaryError } from "../../framework/errors.ts";
import type { Eviction, EvictionStatus } from "../../models/mod.ts";
import { MicroversionError } from "../../openstack/mod.ts";
import {
  CONDITION_EVICTING,
  CONDITION_PREFLIGHT,
  REASON_DUPLICATE,
  REASON_NOVA_INCOMPATIBLE,
} from "../conditions.ts";
import {
  eviction,
  passFixture,
  type PassWorld,
} from "../../tests/harness/pass_fixture.ts";
import {
  disabledService,
  hostServer,
  liveMigration,
} from "../../tests/harness/nova_objects.ts";
import type { Observation } from "../../openstack/informer/snapshot.ts";
import { reconcileEviction } from "./reconcile.ts";

const ME = "mine";
const HOST = "node042";
const NOW = Date.parse("2026-01-01T01:00:00Z");
const INCOMPATIBLE = "Nova supports 2.1 to 2.40; evictor needs 2.59 to 2.90";

/** The Evicting condition of a status. */
function evictingOf(status: EvictionStatus | undefined) {
  return status?.conditions?.find((c) => c.type === CONDITION_EVICTING);
}

/** A pass of `ev` at NOW in `world`, its Nova's calls recorded. */
function run(ev: Eviction, world: PassWorld = {}) {
  const fx = passFixture(ev, { nowMs: NOW, ...world });
  return { fx, deps: fx.pass.deps, calls: fx.novaCalls };
}

/** The host's compute service, disabled by the drain. */
const DISABLED = disabledService(HOST);

Deno.test("reconcileEviction: a gone or deleting Eviction returns {} with no Nova call and no write", async () => {
  const deleting = eviction(ME, HOST);
  deleting.metadata = {
    ...deleting.metadata,
    deletionTimestamp: "2026-01-01T00:59:00Z",
  };
  const rows: Array<{ name: string; ev: Eviction; gone: boolean }> = [
    { name: "gone from the cache", ev: eviction(ME, HOST), gone: true },
    { name: "being deleted (the finalizer's)", ev: deleting, gone: false },
  ];
  for (const row of rows) {
    const { fx, deps, calls } = run(row.ev, {
      nova: { negotiate: () => Promise.resolve("2.90") },
    });
    const ctx = row.gone ? { ...fx.pass.ctx, object: undefined } : fx.pass.ctx;
    assert.deepEqual(await reconcileEviction(ctx, deps), {}, row.name);
    assert.deepEqual(calls, [], `${row.name}: no Nova call`);
    assert.deepEqual(fx.writes, [], `${row.name}: no write`);
    assert.deepEqual(fx.events, [], `${row.name}: no Event`);
  }
});

Deno.test("reconcileEviction: Nova without a shared microversion writes Evicting=False/NovaIncompatible once, then the slow poll", async () => {
  const { fx, deps, calls } = run(eviction(ME, HOST, { outstandingCount: 2 }), {
    nova: {
      negotiate: () => Promise.reject(new MicroversionError(INCOMPATIBLE)),
    },
  });
  const first = await reconcileEviction(fx.pass.ctx, deps);
  assert.deepEqual(first, { requeueAfterMs: 10_000 });
  assert.deepEqual(calls, ["negotiate"], "no call besides the version look");
  assert.equal(fx.writes.length, 1);
  const c = evictingOf(fx.writes[0]);
  assert.equal(c?.status, "False");
  assert.equal(c?.reason, REASON_NOVA_INCOMPATIBLE);
  assert.equal(c?.message, INCOMPATIBLE);
  assert.equal(
    fx.writes[0]?.outstandingCount,
    2,
    "the rest of the status kept",
  );
  assert.deepEqual(fx.events, [{
    type: "Warning",
    reason: REASON_NOVA_INCOMPATIBLE,
    message: INCOMPATIBLE,
  }]);

  // The next pass, the status saying so already: no write, no Event.
  const written = { ...fx.pass.ev, status: fx.writes[0] ?? {} };
  const second = await reconcileEviction(
    { ...fx.pass.ctx, object: written },
    deps,
  );
  assert.deepEqual(second, { requeueAfterMs: 10_000 });
  assert.equal(fx.writes.length, 1, "written once");
  assert.equal(fx.events.length, 1, "one Event");
  assert.deepEqual(calls, ["negotiate", "negotiate"]);
});

Deno.test("reconcileEviction: other failures of the version look are left to the pass's first call", async () => {
  // Not a MicroversionError: Nova ready lets the pass go on; its first
  // call (the preflight's) then meets the trouble and fails the pass.
  const { fx, deps, calls } = run(eviction(ME, HOST), {
    nova: {
      negotiate: () => Promise.reject(new Error("keystone timeout")),
      findComputeService: () => Promise.reject(new Error("keystone timeout")),
    },
  });
  await assert.rejects(
    reconcileEviction(fx.pass.ctx, deps),
    /keystone timeout/,
  );
  assert.deepEqual(calls, ["negotiate", "findComputeService"]);
  assert.deepEqual(fx.writes, [], "nothing kept, nothing written");
  assert.ok(
    fx.events.every((e) => e.reason !== REASON_NOVA_INCOMPATIBLE),
    "not called incompatible",
  );
});

Deno.test("reconcileEviction: a duplicate Eviction writes Duplicate once and makes no other Nova call", async () => {
  const older = eviction("older", HOST, {}, "2026-01-01T00:00:00Z");
  const mine = eviction(ME, HOST, {}, "2026-01-01T00:10:00Z");
  const { fx, deps, calls } = run(mine, {
    evictions: [older],
    nova: { negotiate: () => Promise.resolve("2.90") },
  });
  const got = await reconcileEviction(fx.pass.ctx, deps);
  assert.deepEqual(got, { requeueAfterMs: 10_000 });
  assert.deepEqual(calls, ["negotiate"], "no other Nova call");
  assert.equal(fx.writes.length, 1);
  const c = evictingOf(fx.writes[0]);
  assert.equal(c?.status, "False");
  assert.equal(c?.reason, REASON_DUPLICATE);
  assert.match(c?.message ?? "", /Eviction older already drains/);
  assert.deepEqual(fx.events.map((e) => e.reason), ["DuplicateEviction"]);

  // The next pass, with that status: nothing more written, no Event.
  const again = await reconcileEviction(
    { ...fx.pass.ctx, object: { ...mine, status: fx.writes[0] ?? {} } },
    deps,
  );
  assert.deepEqual(again, { requeueAfterMs: 10_000 });
  assert.equal(fx.writes.length, 1, "written once");
  assert.equal(fx.events.length, 1, "one Event");
  assert.deepEqual(calls, ["negotiate", "negotiate"]);
});

Deno.test("reconcileEviction: a failing phase still writes what the pass kept, and rethrows", async () => {
  const service = disabledService(HOST, {
    status: "enabled",
    disabledReason: null,
  });
  const rows: Array<{
    name: string;
    writeFails: boolean;
    wantWrites: number;
  }> = [
    { name: "the write succeeds", writeFails: false, wantWrites: 1 },
    {
      name: "the write fails too: the phase's error wins",
      writeFails: true,
      wantWrites: 0,
    },
  ];
  for (const row of rows) {
    const disabled: Array<[string, boolean]> = [];
    const { fx, deps, calls } = run(eviction(ME, HOST), {
      nova: {
        negotiate: () => Promise.resolve("2.90"),
        findComputeService: () => Promise.resolve(service),
        setComputeServiceStatus: (id, enabled) => {
          disabled.push([id, enabled]);
          return Promise.resolve({ ...service, status: "disabled" });
        },
        listServersOnHost: () => Promise.reject(new Error("503 from nova")),
        listMigrations: () => Promise.reject(new Error("503 from nova")),
      },
    });
    const ctx = row.writeFails
      ? {
        ...fx.pass.ctx,
        updateStatus: () => Promise.reject(new Error("409 conflict")),
      }
      : fx.pass.ctx;
    await assert.rejects(
      reconcileEviction(ctx, deps),
      (err: unknown) => {
        assert.ok(err instanceof TemporaryError, row.name);
        assert.match(
          err.message,
          new RegExp(`^observing host ${HOST} failed: 503 from nova`),
          row.name,
        );
        assert.equal(err.delayMs, 1_000, row.name);
        return true;
      },
      row.name,
    );
    assert.deepEqual(disabled, [["svc-1", false]], row.name);
    assert.deepEqual(
      calls.slice(0, 3),
      ["negotiate", "findComputeService", "setComputeServiceStatus"],
      row.name,
    );
    assert.ok(calls.includes("listServersOnHost"), row.name);
    assert.ok(
      !calls.some((c) => c === "liveMigrate" || c === "coldMigrate"),
      `${row.name}: nothing started`,
    );
    assert.equal(fx.writes.length, row.wantWrites, row.name);
    if (row.wantWrites === 0) continue;
    // what the pass kept: the preflight's result
    const kept = fx.writes[0];
    assert.equal(kept?.hypervisorServiceId, "svc-1", row.name);
    assert.equal(kept?.startedAt, new Date(NOW).toISOString(), row.name);
    assert.equal(
      kept?.conditions?.find((c) => c.type === CONDITION_PREFLIGHT)?.status,
      "True",
      row.name,
    );
    assert.equal(kept?.inFlight, undefined, `${row.name}: no starts`);
    assert.ok(
      fx.events.some((e) => e.reason === "DrainStarted"),
      `${row.name}: the start is told`,
    );
  }
});

Deno.test("reconcileEviction: a full pass over an empty host writes its status once and looks again within the poll interval", async () => {
  const { fx, deps, calls } = run(eviction(ME, HOST), {
    nova: {
      negotiate: () => Promise.resolve("2.90"),
      findComputeService: () => Promise.resolve(DISABLED),
      listServersOnHost: () => Promise.resolve([]),
      listMigrations: () => Promise.resolve([]),
    },
  });
  const got = await reconcileEviction(fx.pass.ctx, deps);
  assert.deepEqual(got, { requeueAfterMs: 1_000 });
  assert.deepEqual(calls.filter((c) => c !== "listMigrations"), [
    "negotiate",
    "findComputeService",
    "listServersOnHost",
  ], "no start, no disable (already ours)");
  assert.equal(
    calls.filter((c) => c === "listMigrations").length,
    2,
    "no server left: the records still in progress are read too",
  );
  assert.equal(fx.writes.length, 1, "one status write");
  const status = fx.writes[0];
  assert.equal(status?.hypervisorServiceId, "svc-1");
  assert.equal(status?.finishedAt, undefined, "not settled by one look");
  assert.equal(evictingOf(status)?.reason, "Settling");
  assert.equal(deps.memory.ledger.get(ME), 0);
  assert.deepEqual(
    fx.pass.state.due?.atMs,
    NOW + 1_000,
    "the next look is due a poll interval on",
  );
});

Deno.test("reconcileEviction: a start answer that comes while the pass looks wakes another pass, not one a poll interval on", async () => {
  let answerDuringLook = true;
  const { fx, deps, calls } = run(eviction(ME, HOST), {
    nova: {
      negotiate: () => Promise.resolve("2.90"),
      findComputeService: () => Promise.resolve(DISABLED),
      listServersOnHost: () => {
        // A refused start's answer lands while the pass awaits Nova: phase_act.ts
        // marks the drain woken and enqueues it.
        if (answerDuringLook) fx.pass.state.woken = true;
        answerDuringLook = false;
        return Promise.resolve([]);
      },
      listMigrations: () => Promise.resolve([]),
    },
  });
  assert.deepEqual(await reconcileEviction(fx.pass.ctx, deps), {
    requeueAfterMs: 1_000,
  });
  assert.equal(fx.pass.state.woken, true, "the wake outlives the pass");
  // The pass the wake enqueued, before the next look is due: it looks.
  const looks = calls.filter((c) => c === "listServersOnHost").length;
  const ctx = {
    ...fx.pass.ctx,
    object: { ...fx.pass.ev, status: fx.writes[0] },
  };
  await reconcileEviction(ctx, deps);
  assert.equal(
    calls.filter((c) => c === "listServersOnHost").length,
    looks + 1,
    "the woken pass does not return early",
  );
  assert.equal(
    fx.pass.state.woken,
    false,
    "the wake is taken by the pass that read it",
  );
});

Deno.test("reconcileEviction: a throw from planning gives back the budget claimed before the look", async () => {
  const { fx, deps, calls } = run(eviction(ME, HOST), {
    nova: {
      negotiate: () => Promise.resolve("2.90"),
      findComputeService: () => Promise.resolve(DISABLED),
      listServersOnHost: () => Promise.resolve([]),
      listMigrations: () => Promise.resolve([]),
    },
    deps: {
      flagSettings: {
        source: "flags",
        spec: {
          maxConcurrentMigrations: 2,
          clusterMaxConcurrentMigrations: 4,
          abortStuckMigrations: false,
        },
      },
      // the planner refuses these options: a throw after the look
      planOptions: { maxAttempts: 0 },
    },
  });
  assert.equal(deps.memory.ledger.get(ME), 0);
  await assert.rejects(
    reconcileEviction(fx.pass.ctx, deps),
    /options\.maxAttempts must be an integer >= 1, got 0/,
  );
  assert.ok(calls.includes("listServersOnHost"), "it looked (and claimed)");
  assert.equal(deps.memory.ledger.get(ME), 0, "the claim is given back");
});

Deno.test("reconcileEviction: a stuck migration is aborted at its timeout after a refused snapshot plan", async () => {
  const copying = hostServer("a", HOST, { copying: true });
  const running = liveMigration(7, "a", HOST, "running");
  const started = new Date(NOW - 20_000).toISOString();
  const ev = eviction(ME, HOST, {
    startedAt: new Date(NOW - 3_600_000).toISOString(),
    hypervisorServiceId: "svc-1",
    outstandingInstances: ["a"],
    outstandingCount: 1,
    inFlight: [{ id: "a", kind: "live", startedAt: started, migrationId: "7" }],
    inFlightCount: 1,
  });
  // The informer's snapshot, from the second pass on: it lost the copy
  // (the VM idle on the host, no record), so its plan is refused (it
  // would end the VM's migration) and the pass looks at Nova, which still shows it.
  const view: { snapshot?: Observation } = {};
  const aborted: string[] = [];
  const { fx, deps } = run(ev, {
    nova: {
      negotiate: () => Promise.resolve("2.90"),
      findComputeService: () => Promise.resolve(DISABLED),
      listServersOnHost: () => Promise.resolve([copying]),
      listMigrations: () => Promise.resolve([running]),
      abortLiveMigration: (id, migrationId) => {
        aborted.push(`${id}/${migrationId}`);
        return Promise.resolve({ requestId: "req-abort" });
      },
    },
    deps: {
      flagSettings: {
        source: "flags",
        spec: {
          maxConcurrentMigrations: 2,
          abortStuckMigrations: true,
          migrationTimeoutSeconds: 600,
        },
      },
    },
    // the view when it has one and any will do; else the fixture's lister
    informer: {
      look: (_key, need) =>
        view.snapshot !== undefined && need.freshSince === undefined
          ? Promise.resolve({ ...view.snapshot, fromView: true })
          : fx.lister.list(need),
    },
  });
  let status = ev.status ?? {};
  const passAt = async (ms: number) => {
    fx.clock.set(ms);
    const n = fx.writes.length;
    await reconcileEviction(
      { ...fx.pass.ctx, object: { ...ev, status } },
      deps,
    );
    status = fx.writes.length > n ? fx.writes.at(-1) ?? status : status;
  };
  // The copy is first seen under way now: its timeout runs from here.
  await passAt(NOW);
  view.snapshot = {
    servers: [{ ...copying, status: "ACTIVE", taskState: null }],
    migrations: [],
    departed: [],
    listedAtMs: NOW + 300_000,
  };
  await passAt(NOW + 300_000);
  assert.equal(
    (await deps.metrics.looks.get()).values.find((v) =>
      v.labels.source === "view"
    ),
    undefined,
    "the snapshot's plan was refused: every pass read Nova",
  );
  assert.deepEqual(aborted, [], "not stuck yet");
  await passAt(NOW + 601_000);
  assert.deepEqual(aborted, ["a/7"], "aborted at its timeout");
});

Deno.test("reconcileEviction: a drain whose host's notifications are found deaf says so in its NovaNotifications condition", async () => {
  const { fx, deps } = run(eviction(ME, HOST), {
    nova: {
      negotiate: () => Promise.resolve("2.90"),
      findComputeService: () => Promise.resolve(DISABLED),
      listServersOnHost: () => Promise.resolve([]),
      listMigrations: () => Promise.resolve([]),
    },
    informer: {
      notifications: () => ({
        trusted: false,
        reason: "deaf",
        scope: "host",
        detail:
          `${ME}: no event about the start of a within 10 s of its answer`,
      }),
    },
  });
  await reconcileEviction(fx.pass.ctx, deps);
  const c = fx.writes.at(-1)?.conditions?.find((x) =>
    x.type === "NovaNotifications"
  );
  assert.equal(c?.status, "False");
  assert.equal(c?.reason, "Deaf");
  assert.match(c?.message ?? "", /no event about the start of a/);
  // Without notifications (polling) there is no such condition.
  const polled = run(eviction("other", HOST), {
    nova: {
      negotiate: () => Promise.resolve("2.90"),
      findComputeService: () => Promise.resolve(DISABLED),
      listServersOnHost: () => Promise.resolve([]),
      listMigrations: () => Promise.resolve([]),
    },
  });
  await reconcileEviction(polled.fx.pass.ctx, polled.deps);
  assert.ok(
    !polled.fx.writes.at(-1)?.conditions?.some((x) =>
      x.type === "NovaNotifications"
    ),
  );
});

Deno.test("reconcileEviction: Nova's limit, once shown, holds with no relearning: one NovaLimited Event and the condition True over half an hour", async () => {
  const vm = (id: string, taskState: string | null) =>
    hostServer(id, HOST, { copying: taskState !== null });
  const rec = (id: number, server: string, status: string) =>
    liveMigration(id, server, HOST, status);
  // Nova copies a and holds b queued at first; then only a copies, long.
  let migrations = [rec(1, "a", "running"), rec(2, "b", "queued")];
  const ev = eviction(ME, HOST, {
    startedAt: new Date(NOW - 60_000).toISOString(),
    hypervisorServiceId: "svc-1",
    outstandingInstances: ["a", "b", "c"],
    outstandingCount: 3,
  });
  const { fx, deps } = run(ev, {
    nova: {
      negotiate: () => Promise.resolve("2.90"),
      findComputeService: () => Promise.resolve(DISABLED),
      listServersOnHost: () =>
        Promise.resolve([
          vm("a", "migrating"),
          vm("b", "migrating"),
          vm("c", null),
        ]),
      listMigrations: () => Promise.resolve(migrations),
    },
  });
  let status = ev.status ?? {};
  const limits: Array<number | undefined> = [];
  for (let minute = 0; minute <= 30; minute += 5) {
    fx.clock.set(NOW + minute * 60_000);
    const n = fx.writes.length;
    await reconcileEviction(
      { ...fx.pass.ctx, object: { ...ev, status } },
      deps,
    );
    status = fx.writes.length > n ? fx.writes.at(-1) ?? status : status;
    limits.push(status.novaLiveMigrationLimit);
    migrations = [rec(1, "a", "running")];
    const c = status.conditions?.find((x) => x.type === "NovaLimited");
    assert.equal(c?.status, "True", `minute ${minute}`);
  }
  assert.deepEqual(limits, [1, 1, 1, 1, 1, 1, 1]);
  assert.equal(
    fx.events.filter((e) => e.reason === "NovaLimited").length,
    1,
    "one Event, not one per lapse",
  );
});
