import assert from "node:assert/strict";
import type { EvictionStatus } from "../../models/mod.ts";
import type { CopyProgress } from "../../openstack/informer/progress_types.ts";
import { eviction, passFixture } from "../../tests/harness/pass_fixture.ts";
import {
  disabledService,
  hostServer,
  liveMigration,
} from "../../tests/harness/nova_objects.ts";
import { reconcileEviction } from "./reconcile.ts";

const ME = "mine";
const HOST = "node042";
const NOW = Date.parse("2026-01-01T01:00:00Z");
const iso = (s: number) => new Date(NOW + s * 1000).toISOString();

const DISABLED = disabledService(HOST);
const server = (id: string, ramMb: number, copying: boolean) =>
  hostServer(id, HOST, { ramMb, copying });
const RUNNING = liveMigration(7, "a", HOST, "running");

Deno.test("pass: status.predictedFinishAt is written and moves with a copy's measured ETA (kept while it moves little)", async () => {
  // a copies at limit 1; b (2048 MB) waits for its slot, then takes
  // 2.048 s + 5 s at the default rate (no copy finished yet to learn from)
  const ev = eviction(ME, HOST, {
    startedAt: iso(-60),
    hypervisorServiceId: "svc-1",
    outstandingInstances: ["a", "b"],
    outstandingCount: 2,
    inFlight: [{
      id: "a",
      kind: "live",
      startedAt: iso(-20),
      migrationId: "7",
    }],
    inFlightCount: 1,
  });
  let servers = [server("a", 1024, true), server("b", 2048, false)];
  let migrations = [RUNNING];
  let eta = 60;
  const progress = (): ReadonlyMap<string, CopyProgress> =>
    new Map([["a", {
      serverId: "a",
      migrationId: "7",
      totalBytes: 1024 * 2 ** 20,
      remainingBytes: eta * 1_000_000,
      readAtMs: NOW,
      lowestRemainingBytes: eta * 1_000_000,
      lowestAtMs: NOW,
      bytesPerSecond: 1_000_000,
      etaSeconds: eta,
    }]]);
  const fx = passFixture(ev, {
    nowMs: NOW,
    nova: {
      negotiate: () => Promise.resolve("2.90"),
      findComputeService: () => Promise.resolve(DISABLED),
      listServersOnHost: () => Promise.resolve(servers),
      listMigrations: () => Promise.resolve(migrations),
    },
    deps: {
      flagSettings: {
        source: "flags",
        spec: { maxConcurrentMigrations: 1, abortStuckMigrations: false },
      },
    },
    // each pass a full one: a new read's ETA is news (as its wake would be)
    informer: {
      progress: () => Promise.resolve(progress()),
      woken: () => true,
    },
  });
  let status: EvictionStatus = ev.status ?? {};
  const passAt = async (s: number, etaNow: number) => {
    fx.clock.set(NOW + s * 1000);
    eta = etaNow;
    const n = fx.writes.length;
    await reconcileEviction(
      { ...fx.pass.ctx, object: { ...ev, status } },
      fx.pass.deps,
    );
    status = fx.writes.length > n ? fx.writes.at(-1) ?? status : status;
    return status;
  };

  const first = await passAt(0, 60);
  assert.equal(first.inFlight?.[0]?.etaSeconds, 60);
  assert.equal(first.predictedFinishAt, iso(68), "a in 60 s, then b: 7.048 s");

  const slower = await passAt(10, 300);
  assert.equal(slower.inFlight?.[0]?.etaSeconds, 300);
  assert.equal(
    slower.predictedFinishAt,
    iso(318),
    "a's measured ETA moved 4 min: rewritten",
  );

  const little = await passAt(20, 296);
  assert.equal(
    little.predictedFinishAt,
    iso(318),
    "5 s off: the written value kept",
  );

  // both gone (b moved by a person meanwhile): settling, then ended
  servers = [];
  const completed = {
    ...RUNNING,
    status: "completed",
    updatedAt: "2026-01-01T01:05:00.000000",
  };
  migrations = [completed, {
    ...completed,
    id: 8,
    uuid: "m-8",
    instanceUuid: "b",
    createdAt: "2026-01-01T01:04:00.000000",
  }];
  const settling = await passAt(400, 0);
  assert.equal(settling.finishedAt, undefined);
  assert.equal(
    settling.predictedFinishAt,
    iso(403),
    "seen empty: at the settle time (3 s)",
  );
  const done = await passAt(404, 0);
  assert.notEqual(done.finishedAt, undefined);
  assert.ok(!("predictedFinishAt" in done), "removed when the drain ends");
});
