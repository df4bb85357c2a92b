// The finalizer of a deleted Eviction (finalize.ts): re-enable the compute
// service or leave it disabled, wait for moves to settle within bounds,
// confirm our resizes, and surface Nova's failures.
import assert from "node:assert/strict";
import { Registry } from "prom-client";
import {
  DEFAULT_FINALIZER_BOUNDS,
  finalizeEviction,
  type FinalizerDeps,
  finalizerDeps,
} from "./finalize.ts";
import type { EvictionPassDeps } from "./pass.ts";
import type {
  FinalizeResult,
  HandlerContext,
} from "../../framework/handler.ts";
import type { Kind, KubeObject } from "../../framework/kind.ts";
import type { KubeClient } from "../../framework/client.ts";
import { silentLogger } from "../../framework/logger.ts";
import { PermanentError, TemporaryError } from "../../framework/errors.ts";
import type {
  Eviction,
  EvictionStatus,
  EvictionStatusInFlightItem,
  Hypervisor,
} from "../../models/mod.ts";
import type {
  ActionResult,
  ComputeService,
  Migration,
  NovaClient,
  Server,
} from "../../openstack/mod.ts";
import { EvictionKind, HypervisorKind } from "../kinds.ts";
import {
  disabledService,
  hostServer,
  liveMigration,
} from "../../tests/harness/nova_objects.ts";
import { DrainMemory } from "./memory.ts";
import { EvictionMetrics } from "./metrics.ts";
import { NovaLister } from "../../openstack/informer/lister.ts";
import { PollingInformer } from "../../openstack/informer/informer.ts";
import { policySettings } from "../../limits/resolve.ts";

const HOST = "node042";
const KEY = "e1";
const T0 = Date.parse("2026-11-29T12:00:00Z");
const POLL_MS = 1_000;
const MAX_POLL_MS = 8_000;

/** Nova's zone-less time for T0 plus `ms`. */
function novaAt(ms: number): string {
  return new Date(T0 + ms).toISOString().replace("Z", "");
}

function migration(
  id: number,
  vm: string,
  status: string,
  extra: Partial<Migration> = {},
): Migration {
  return liveMigration(id, vm, HOST, status, {
    createdAt: novaAt(-60_000),
    updatedAt: novaAt(-30_000),
    ...extra,
  });
}

function service(extra: Partial<ComputeService> = {}): ComputeService {
  return disabledService(HOST, {
    disabledReason: "evictor: kernel update",
    ...extra,
  });
}

/** A Nova client fake: what the finalizer calls, recorded; failures on demand. */
class FakeNova {
  service: ComputeService | undefined = service();
  migrations: Migration[] = [];
  servers = new Map<string, string>();
  /** Calls that throw, by method name. */
  fail = new Map<string, Error>();
  calls: string[] = [];

  #call<T>(name: string, detail: string, value: () => T): Promise<T> {
    this.calls.push(detail === "" ? name : `${name} ${detail}`);
    const err = this.fail.get(name);
    return err === undefined ? Promise.resolve(value()) : Promise.reject(err);
  }

  findComputeService(host: string): Promise<ComputeService | undefined> {
    return this.#call("findComputeService", host, () => this.service);
  }

  setComputeServiceStatus(
    id: string,
    enabled: boolean,
    reason?: string,
  ): Promise<ComputeService> {
    return this.#call(
      "setComputeServiceStatus",
      `${id} ${enabled}${reason === undefined ? "" : ` ${reason}`}`,
      () => ({ ...service(), id, status: enabled ? "enabled" : "disabled" }),
    );
  }

  /** The servers listed on HOST. */
  onHost: Server[] = [];

  listServersOnHost(host: string): Promise<Server[]> {
    return this.#call("listServersOnHost", host, () => this.onHost);
  }

  listMigrations(): Promise<Migration[]> {
    return this.#call("listMigrations", "", () => this.migrations);
  }

  getServer(id: string): Promise<Server> {
    return this.#call("getServer", id, () => ({
      id,
      name: id,
      status: this.servers.get(id) ?? "ACTIVE",
      host: "node043",
      hypervisorHostname: "node043",
      taskState: null,
      vmState: null,
      powerState: 1,
      flavor: { ramMb: 1024, vcpus: 1 },
    }));
  }

  abortLiveMigration(id: string, migrationId: number): Promise<ActionResult> {
    return this.#call(
      "abortLiveMigration",
      `${id} ${migrationId}`,
      () => ({ requestId: "req-2" }) as unknown as ActionResult,
    );
  }

  confirmResize(id: string): Promise<ActionResult> {
    return this.#call(
      "confirmResize",
      id,
      () => ({ requestId: "req-1" }) as unknown as ActionResult,
    );
  }
}

function eviction(
  name: string,
  extra: {
    host?: string;
    status?: EvictionStatus;
    deleting?: boolean;
  } = {},
): Eviction {
  return {
    metadata: {
      name,
      creationTimestamp: new Date(T0 - 3_600_000).toISOString(),
      ...(extra.deleting === false
        ? {}
        : { deletionTimestamp: new Date(T0).toISOString() }),
    },
    spec: { hypervisor: extra.host ?? HOST, reason: "kernel update" },
    ...(extra.status === undefined ? {} : { status: extra.status }),
  } as Eviction;
}

interface World {
  nova: FakeNova;
  deps: EvictionPassDeps;
  fin: FinalizerDeps;
  ctx: HandlerContext<Eviction> & { object: Eviction };
  clock: { ms: number };
  events: Array<[string, string, string]>;
  statusWrites: EvictionStatus[];
  enqueued: string[];
}

/** The deleted Eviction KEY of HOST, its deps and a context around fakes. */
function world(opts: {
  status?: EvictionStatus;
  others?: Eviction[];
  hypervisor?: Hypervisor;
  bounds?: Partial<Pick<FinalizerDeps, "stalledAfterMs" | "giveUpAfterMs">>;
} = {}): World {
  const nova = new FakeNova();
  const clock = { ms: T0 };
  const metrics = new EvictionMetrics(new Registry());
  const deps: EvictionPassDeps = {
    nova: nova as unknown as NovaClient,
    novaClockOffsetMs: () => 0,
    flagSettings: policySettings({
      maxConcurrentMigrations: 2,
      abortStuckMigrations: false,
    }),
    pollIntervalMs: POLL_MS,
    maxPollMs: MAX_POLL_MS,
    slowPollMs: POLL_MS * 10,
    finishedCheckMs: POLL_MS * 60,
    relistMs: POLL_MS * 30,
    settleMs: 0,
    planOptions: { gracePeriodMs: 60_000 },
    clock: { now: () => clock.ms },
    memory: new DrainMemory(
      new PollingInformer(
        new NovaLister(nova as unknown as NovaClient, { now: () => clock.ms }),
      ),
    ),
    metrics,
    actConcurrency: 1,
    waveSettleMs: 15_000,
  };
  const self = eviction(
    KEY,
    opts.status === undefined ? {} : { status: opts.status },
  );
  const evictions = [self, ...(opts.others ?? [])];
  const events: Array<[string, string, string]> = [];
  const statusWrites: EvictionStatus[] = [];
  const enqueued: string[] = [];
  const cache = <U extends KubeObject>(kind: Kind<U>) => {
    const all =
      (kind === (EvictionKind as unknown as Kind<U>)
        ? evictions
        : kind === (HypervisorKind as unknown as Kind<U>) &&
            opts.hypervisor !== undefined
        ? [opts.hypervisor]
        : []) as U[];
    return {
      get: (key: string) => all.find((o) => o.metadata?.name === key),
      list: (filter?: (o: U) => boolean) =>
        filter === undefined ? [...all] : all.filter(filter),
      hasSynced: true,
    };
  };
  const ctx: HandlerContext<Eviction> & { object: Eviction } = {
    key: KEY,
    name: KEY,
    namespace: undefined,
    object: self,
    kind: EvictionKind,
    client: {} as KubeClient,
    logger: silentLogger(),
    signal: new AbortController().signal,
    cache: cache as HandlerContext<Eviction>["cache"],
    event: (type, reason, message) => {
      events.push([type, reason, message]);
      return Promise.resolve();
    },
    updateStatus: async (mutate) => {
      const next = (await mutate({ ...self.status }, self)) ?? {};
      statusWrites.push(next);
      self.status = next;
      return self;
    },
    latest: (e) => e,
    enqueue: (_kind, key) => {
      enqueued.push(key);
    },
  };
  return {
    nova,
    deps,
    fin: finalizerDeps(opts.bounds),
    ctx,
    clock,
    events,
    statusWrites,
    enqueued,
  };
}

/** One finalizer call, then the answers to the calls it did not await (phase_act.ts). */
async function run(w: World): Promise<FinalizeResult | void> {
  const got = await finalizeEviction(w.ctx, w.deps, w.fin);
  await new Promise((resolve) => setTimeout(resolve, 0));
  return got;
}

/** A server of ours as Nova lists it on HOST. */
function listed(id: string, extra: Partial<Server> = {}): Server {
  return hostServer(id, HOST, { extra: { vmState: null, ...extra } });
}

function reasons(w: World): string[] {
  return w.events.map(([, reason]) => reason);
}

function reEnabled(w: World): boolean {
  return w.nova.calls.includes("setComputeServiceStatus svc-1 true");
}

async function gaveUpCount(w: World): Promise<number> {
  const m = await w.deps.metrics.finalizerGaveUp.get();
  return m.values.reduce((s, v) => s + v.value, 0);
}

function cold(id: string, extra: Partial<EvictionStatusInFlightItem> = {}) {
  return {
    id,
    kind: "cold" as const,
    startedAt: new Date(T0 - 600_000).toISOString(),
    ...extra,
  };
}

Deno.test("finalizerDeps: the default bounds, overrides, and no bound <= 0", () => {
  assert.deepEqual(
    { ...DEFAULT_FINALIZER_BOUNDS },
    { stalledAfterMs: 15 * 60_000, giveUpAfterMs: 60 * 60_000 },
    "defaults: 15 minutes without progress, an hour in all",
  );
  assert.ok(Object.isFrozen(DEFAULT_FINALIZER_BOUNDS), "defaults frozen");
  const rows: Array<{
    name: string;
    bounds: Partial<Pick<FinalizerDeps, "stalledAfterMs" | "giveUpAfterMs">>;
    want: FinalizerDeps | RegExp;
  }> = [
    {
      name: "none given: the defaults",
      bounds: {},
      want: { stalledAfterMs: 900_000, giveUpAfterMs: 3_600_000 },
    },
    {
      name: "one given: it wins, the other defaults",
      bounds: { giveUpAfterMs: 1_000 },
      want: { stalledAfterMs: 900_000, giveUpAfterMs: 1_000 },
    },
    {
      name: "zero is refused, naming the bound",
      bounds: { stalledAfterMs: 0 },
      want: /stalledAfterMs must be a number > 0, got 0/,
    },
    {
      name: "negative is refused",
      bounds: { giveUpAfterMs: -1 },
      want: /giveUpAfterMs must be a number > 0, got -1/,
    },
    {
      name: "NaN is refused",
      bounds: { giveUpAfterMs: NaN },
      want: /giveUpAfterMs must be a number > 0, got NaN/,
    },
    {
      name: "Infinity is refused",
      bounds: { stalledAfterMs: Infinity },
      want: /stalledAfterMs must be a number > 0, got Infinity/,
    },
  ];
  for (const row of rows) {
    if (row.want instanceof RegExp) {
      assert.throws(() => finalizerDeps(row.bounds), RangeError, row.name);
      assert.throws(() => finalizerDeps(row.bounds), row.want, row.name);
    } else {
      assert.deepEqual(finalizerDeps(row.bounds), row.want, row.name);
    }
  }
  assert.equal(
    DEFAULT_FINALIZER_BOUNDS.giveUpAfterMs,
    3_600_000,
    "an override leaves the defaults alone",
  );
});

Deno.test("finalizeEviction: re-enables the service the drain disabled, unless something keeps it disabled", async () => {
  const rows: Array<{
    name: string;
    service?: ComputeService | undefined;
    others?: Eviction[];
    hypervisor?: Hypervisor;
    /** Whether setComputeServiceStatus(svc-1, true) is called. */
    want: boolean;
    /** The Event's reason, and a fragment of its message. */
    event?: [string, string];
    /** Other Evictions enqueued. */
    enqueued?: string[];
  }> = [
    {
      name: "disabled by evictor, nothing else: re-enabled",
      want: true,
      event: [
        "HypervisorReEnabled",
        "compute service svc-1 of host node042 re-enabled",
      ],
      enqueued: [],
    },
    {
      name:
        "another Eviction of the same host stands: left disabled, and woken",
      others: [eviction("e2", { deleting: false })],
      want: false,
      event: [
        "HypervisorLeftDisabled",
        "another Eviction of the same hypervisor still stands",
      ],
      enqueued: ["e2"],
    },
    {
      name: "the other Eviction of the host is being deleted too: re-enabled",
      others: [eviction("e2", { deleting: true })],
      want: true,
      event: ["HypervisorReEnabled", "re-enabled"],
      enqueued: [],
    },
    {
      name: "another Eviction of another host: re-enabled",
      others: [eviction("e2", { host: "node043", deleting: false })],
      want: true,
      event: ["HypervisorReEnabled", "re-enabled"],
      enqueued: [],
    },
    {
      name: "disabled by someone else: left disabled, naming the reason",
      service: service({ disabledReason: "broken disk" }),
      want: false,
      event: [
        "HypervisorLeftDisabled",
        'the service was disabled by someone else ("broken disk")',
      ],
    },
    {
      name: "disabled without a reason: someone else's, left disabled",
      service: service({ disabledReason: null }),
      want: false,
      event: ["HypervisorLeftDisabled", "disabled by someone else"],
    },
    ...["manual", "auto", "termination"].map((maintenance) => ({
      name: `Hypervisor in maintenance ${maintenance}: left disabled`,
      hypervisor: {
        metadata: { name: HOST },
        spec: { maintenance },
      } as unknown as Hypervisor,
      want: false,
      event: ["HypervisorLeftDisabled", `maintenance "${maintenance}"`] as [
        string,
        string,
      ],
    })),
    {
      name: "Hypervisor in maintenance ha: re-enabled",
      hypervisor: {
        metadata: { name: HOST },
        spec: { maintenance: "ha" },
      } as unknown as Hypervisor,
      want: true,
      event: ["HypervisorReEnabled", "re-enabled"],
    },
    {
      name: "the service is enabled already: nothing to do, no Event",
      service: service({ status: "enabled", disabledReason: null }),
      want: false,
    },
    {
      name: "no compute service for the host: nothing to do, no Event",
      service: undefined,
      want: false,
    },
  ];
  for (const row of rows) {
    const w = world({
      ...(row.others === undefined ? {} : { others: row.others }),
      ...(row.hypervisor === undefined ? {} : { hypervisor: row.hypervisor }),
    });
    if ("service" in row) w.nova.service = row.service;
    const result = await run(w);
    assert.equal(result, undefined, `${row.name}: done, the finalizer goes`);
    assert.equal(reEnabled(w), row.want, `${row.name}: re-enabled`);
    assert.ok(
      !w.nova.calls.some((c) =>
        c.startsWith("setComputeServiceStatus svc-1 false")
      ),
      `${row.name}: never disables`,
    );
    assert.ok(
      !w.nova.calls.includes("listMigrations"),
      `${row.name}: nothing recorded in flight, no look`,
    );
    if (row.event === undefined) {
      assert.deepEqual(w.events, [], `${row.name}: no Event`);
    } else {
      assert.deepEqual(reasons(w), [row.event[0]], `${row.name}: Event`);
      assert.ok(
        w.events[0]![2].includes(row.event[1]),
        `${row.name}: Event message ${JSON.stringify(w.events[0]![2])}`,
      );
      assert.equal(w.events[0]![0], "Normal", `${row.name}: Event type`);
    }
    if (row.enqueued !== undefined) {
      assert.deepEqual(w.enqueued, row.enqueued, `${row.name}: woken`);
    }
  }
});

Deno.test("finalizeEviction: a Nova failure surfaces as a temporary error naming what failed, retried after a doubling delay", async () => {
  const rows: Array<{
    name: string;
    status?: EvictionStatus;
    failing: string;
    message: RegExp;
    /** The delays of consecutive failures: each doubles, up to maxPollMs. */
    delays: number[];
  }> = [
    {
      name: "re-enabling fails",
      failing: "setComputeServiceStatus",
      message:
        /^finalizer of Eviction e1 failed: re-enabling compute service svc-1 of host node042 failed: nova said no$/,
      delays: [POLL_MS, 2 * POLL_MS, 4 * POLL_MS, MAX_POLL_MS],
    },
    {
      name: "finding the service fails",
      failing: "findComputeService",
      message: /^finalizer of Eviction e1 failed: nova said no$/,
      delays: [POLL_MS, 2 * POLL_MS, 4 * POLL_MS, MAX_POLL_MS],
    },
    {
      name: "listing the migrations fails",
      status: { inFlightCount: 1 },
      failing: "listMigrations",
      message: /^finalizer of Eviction e1 failed: nova said no$/,
      delays: [POLL_MS, 2 * POLL_MS, 4 * POLL_MS, MAX_POLL_MS, MAX_POLL_MS],
    },
  ];
  for (const row of rows) {
    const w = world(row.status === undefined ? {} : { status: row.status });
    const cause = new Error("nova said no");
    w.nova.fail.set(row.failing, cause);
    const delays: Array<number | undefined> = [];
    for (let i = 0; i < row.delays.length; i++) {
      const err = await run(w).then(
        () => assert.fail(`${row.name}: no error`),
        (e: unknown) => e,
      );
      assert.ok(err instanceof TemporaryError, `${row.name}: temporary`);
      assert.match(err.message, row.message, row.name);
      let c: unknown = err.cause;
      while (c instanceof Error && c !== cause && c.cause !== undefined) {
        c = c.cause;
      }
      assert.equal(c, cause, `${row.name}: Nova's error is the cause`);
      delays.push(err.delayMs);
    }
    assert.deepEqual(
      delays,
      row.delays,
      `${row.name}: from the poll interval, doubling, to maxPollMs`,
    );
    assert.ok(
      !reasons(w).includes("HypervisorReEnabled"),
      `${row.name}: no re-enabled Event`,
    );
    // Once Nova answers again, the failures are forgotten.
    w.nova.fail.clear();
    await run(w);
    assert.equal(
      w.deps.memory.of(KEY).settle.failures,
      0,
      `${row.name}: failures reset`,
    );
  }
});

Deno.test("finalizeEviction: a permanent error is passed on as it is", async () => {
  const w = world();
  const err = new PermanentError("forbidden");
  w.nova.fail.set("findComputeService", err);
  await assert.rejects(run(w), (e) => e === err);
  assert.equal(w.deps.memory.of(KEY).settle.failures, 0, "not counted");
});

Deno.test("finalizeEviction: waits while migrations from the host settle, then re-enables", async () => {
  const rows: Array<{
    name: string;
    status: EvictionStatus;
    ledger?: number;
    migrations: Migration[];
    /** The servers Nova lists on the host. */
    onHost?: Server[];
    /** The requeue, or undefined when done. */
    want: FinalizeResult | undefined;
    /** The inFlightCount written, if any. */
    written?: number;
    ledgerAfter: number;
  }> = [
    {
      name: "one still running: requeue after the poll interval, count written",
      status: { inFlightCount: 2 },
      migrations: [
        migration(1, "a", "running"),
        migration(2, "b", "completed"),
      ],
      want: { requeueAfterMs: POLL_MS },
      written: 1,
      ledgerAfter: 1,
    },
    {
      name: "the count unchanged: requeue, no status write",
      status: { inFlightCount: 1 },
      migrations: [migration(1, "a", "running")],
      want: { requeueAfterMs: POLL_MS },
      ledgerAfter: 1,
    },
    {
      name: "all ended: count 0 written, service re-enabled",
      status: { inFlightCount: 2 },
      migrations: [migration(1, "a", "completed"), migration(2, "b", "error")],
      want: undefined,
      written: 0,
      ledgerAfter: 0,
    },
    {
      name: "migrations of other sources do not count",
      status: { inFlightCount: 1 },
      migrations: [migration(1, "a", "running", { sourceCompute: "node043" })],
      want: undefined,
      written: 0,
      ledgerAfter: 0,
    },
    {
      name: "the ledger's count alone makes it look",
      status: {},
      ledger: 1,
      migrations: [migration(1, "a", "running")],
      want: { requeueAfterMs: POLL_MS },
      written: 1,
      ledgerAfter: 1,
    },
    {
      name: "a fresh start Nova has not listed yet counts",
      status: {
        inFlightCount: 1,
        inFlight: [{
          id: "a",
          kind: "live",
          startedAt: new Date(T0 - 1_000).toISOString(),
        }],
      },
      migrations: [],
      onHost: [listed("a")],
      want: { requeueAfterMs: POLL_MS },
      ledgerAfter: 1,
    },
    {
      name: "an unlisted start past the grace period does not",
      status: {
        inFlightCount: 1,
        inFlight: [{
          id: "a",
          kind: "live",
          startedAt: new Date(T0 - 120_000).toISOString(),
        }],
      },
      migrations: [],
      onHost: [listed("a")],
      want: undefined,
      written: 0,
      ledgerAfter: 0,
    },
  ];
  for (const row of rows) {
    const w = world({ status: row.status });
    if (row.ledger !== undefined) w.deps.memory.ledger.set(KEY, row.ledger);
    w.nova.migrations = row.migrations;
    w.nova.onHost = row.onHost ?? [];
    const got = await run(w);
    assert.deepEqual(got, row.want, `${row.name}: result`);
    assert.deepEqual(
      w.statusWrites.map((s) => s.inFlightCount),
      row.written === undefined ? [] : [row.written],
      `${row.name}: inFlightCount written`,
    );
    assert.equal(
      w.deps.memory.ledger.get(KEY),
      row.ledgerAfter,
      `${row.name}: ledger`,
    );
    assert.equal(
      reEnabled(w),
      row.want === undefined,
      `${row.name}: re-enabled only once settled`,
    );
  }
});

Deno.test("finalizeEviction: a record without progress stops counting after stalledAfterMs", async () => {
  const w = world({
    status: { inFlightCount: 1 },
    bounds: { stalledAfterMs: 10_000, giveUpAfterMs: 100_000 },
  });
  w.nova.migrations = [migration(1, "a", "running")];
  assert.deepEqual(await run(w), { requeueAfterMs: POLL_MS }, "first look");
  w.clock.ms += 9_999;
  assert.deepEqual(
    await run(w),
    { requeueAfterMs: POLL_MS },
    "just below the bound",
  );
  assert.equal(reEnabled(w), false, "not yet");
  w.clock.ms += 1;
  assert.equal(await run(w), undefined, "at the bound: settled");
  assert.deepEqual(reasons(w), ["MigrationsStalled", "HypervisorReEnabled"]);
  assert.equal(w.events[0]![0], "Warning", "a stall warns");
  assert.match(
    w.events[0]![2],
    /migration 1 of a \(running\) from node042 showed no progress for 10 s/,
  );
  assert.equal(await gaveUpCount(w), 0, "a stall is no give-up");
});

Deno.test("finalizeEviction: progress restarts the stall clock", async () => {
  const w = world({
    status: { inFlightCount: 1 },
    bounds: { stalledAfterMs: 10_000, giveUpAfterMs: 100_000 },
  });
  w.nova.migrations = [migration(1, "a", "running")];
  await run(w);
  w.clock.ms += 9_000;
  w.nova.migrations = [
    migration(1, "a", "running", { updatedAt: novaAt(9_000) }),
  ];
  await run(w);
  w.clock.ms += 9_000;
  assert.deepEqual(
    await run(w),
    { requeueAfterMs: POLL_MS },
    "18 s in, 9 s without progress",
  );
  assert.equal(reEnabled(w), false);
});

Deno.test("finalizeEviction: gives up after giveUpAfterMs with a warning and the metric", async () => {
  const rows: Array<{ name: string; waitedMs: number; gaveUp: boolean }> = [
    {
      name: "just below the bound: still waits",
      waitedMs: 59_999,
      gaveUp: false,
    },
    { name: "at the bound: gives up", waitedMs: 60_000, gaveUp: true },
    { name: "past the bound: gives up", waitedMs: 300_000, gaveUp: true },
  ];
  for (const row of rows) {
    const w = world({
      status: { inFlightCount: 1 },
      bounds: { stalledAfterMs: 1_000_000, giveUpAfterMs: 60_000 },
    });
    w.nova.migrations = [migration(1, "a", "running")];
    assert.deepEqual(
      await run(w),
      { requeueAfterMs: POLL_MS },
      `${row.name}: first look`,
    );
    w.clock.ms += row.waitedMs;
    const got = await run(w);
    assert.deepEqual(
      got,
      row.gaveUp ? undefined : { requeueAfterMs: POLL_MS },
      `${row.name}: result`,
    );
    assert.equal(
      await gaveUpCount(w),
      row.gaveUp ? 1 : 0,
      `${row.name}: metric`,
    );
    assert.equal(
      reEnabled(w),
      row.gaveUp,
      `${row.name}: re-enabled after giving up`,
    );
    assert.equal(
      w.deps.memory.ledger.get(KEY),
      row.gaveUp ? 0 : 1,
      `${row.name}: ledger`,
    );
    if (row.gaveUp) {
      assert.deepEqual(
        reasons(w),
        ["FinalizerGaveUp", "HypervisorReEnabled"],
        row.name,
      );
      assert.equal(w.events[0]![0], "Warning", `${row.name}: warns`);
      assert.match(
        w.events[0]![2],
        new RegExp(
          `^Eviction e1 deleted: stopped waiting after ${
            row.waitedMs / 1000
          } s for migration 1 of a \\(running\\) from node042 to settle$`,
        ),
        row.name,
      );
    } else {
      assert.deepEqual(reasons(w), [], `${row.name}: no Event`);
    }
  }
});

Deno.test("finalizeEviction: confirms only our cold migrations at VERIFY_RESIZE", async () => {
  const finished = migration(5, "c", "finished", {
    migrationType: "migration",
  });
  const rows: Array<{
    name: string;
    inFlight: EvictionStatusInFlightItem[];
    migrations: Migration[];
    serverStatus: string;
    prepare?: (w: World) => void;
    confirmed: boolean;
    want: FinalizeResult | undefined;
  }> = [
    {
      name: "ours, finished, server VERIFY_RESIZE: confirmed, still counted",
      inFlight: [cold("c")],
      migrations: [finished],
      serverStatus: "VERIFY_RESIZE",
      confirmed: true,
      want: { requeueAfterMs: POLL_MS },
    },
    {
      name: "adopted (someone else's): never confirmed, not counted",
      inFlight: [cold("c", { adopted: true })],
      migrations: [finished],
      serverStatus: "VERIFY_RESIZE",
      confirmed: false,
      want: undefined,
    },
    {
      name:
        "our cold entry, but the finished record is a user's resize: never confirmed, not counted",
      inFlight: [cold("c")],
      migrations: [
        migration(5, "c", "finished", { migrationType: "resize" }),
      ],
      serverStatus: "VERIFY_RESIZE",
      confirmed: false,
      want: undefined,
    },
    {
      // The drain's rule (plan_steps.ts confirmNeeded): the record says
      // whether a confirm is needed; once it moved on, nothing is sent.
      name:
        "ours, but confirmed already (by Nova's resize_confirm_window or a person): not confirmed, settled",
      inFlight: [cold("c")],
      migrations: [
        migration(5, "c", "confirmed", { migrationType: "migration" }),
      ],
      serverStatus: "ACTIVE",
      confirmed: false,
      want: undefined,
    },
    {
      name: "ours, confirming (a confirm under way): not sent again, counted",
      inFlight: [cold("c")],
      migrations: [
        migration(5, "c", "confirming", { migrationType: "migration" }),
      ],
      serverStatus: "VERIFY_RESIZE",
      confirmed: false,
      want: { requeueAfterMs: POLL_MS },
    },
    {
      name: "a confirm sent and not answered: not sent again",
      inFlight: [cold("c")],
      migrations: [finished],
      serverStatus: "VERIFY_RESIZE",
      prepare: (w) =>
        w.deps.memory.of(KEY).confirms.set("c", { sentAtMs: T0 - 1_000 }),
      confirmed: false,
      want: { requeueAfterMs: POLL_MS },
    },
    {
      name: "a confirm answered before this look: sent again",
      inFlight: [cold("c")],
      migrations: [finished],
      serverStatus: "VERIFY_RESIZE",
      prepare: (w) =>
        w.deps.memory.of(KEY).confirms.set("c", {
          sentAtMs: T0 - 2_000,
          answeredAtMs: T0 - 1_000,
        }),
      confirmed: true,
      want: { requeueAfterMs: POLL_MS },
    },
  ];
  for (const row of rows) {
    const w = world({
      status: { inFlightCount: 1, inFlight: row.inFlight },
    });
    w.nova.migrations = row.migrations;
    w.nova.servers.set("c", row.serverStatus);
    row.prepare?.(w);
    const got = await run(w);
    assert.deepEqual(got, row.want, `${row.name}: result`);
    assert.equal(
      w.nova.calls.includes("confirmResize c"),
      row.confirmed,
      `${row.name}: confirmed`,
    );
    assert.equal(
      reasons(w).includes("ResizeConfirmed"),
      row.confirmed,
      `${row.name}: ResizeConfirmed Event`,
    );
    if (row.confirmed) {
      const note = w.deps.memory.of(KEY).confirms.get("c");
      assert.equal(note?.sentAtMs, T0, `${row.name}: sent now`);
      assert.equal(note?.answeredAtMs, T0, `${row.name}: answered`);
    }
  }
});

Deno.test("finalizeEviction: a failed confirm is no failure of the finalizer; its answer is noted", async () => {
  const w = world({ status: { inFlightCount: 1, inFlight: [cold("c")] } });
  w.nova.migrations = [
    migration(5, "c", "finished", { migrationType: "migration" }),
  ];
  w.nova.servers.set("c", "VERIFY_RESIZE");
  w.nova.fail.set("confirmResize", new Error("409 conflict"));
  assert.deepEqual(await run(w), { requeueAfterMs: POLL_MS });
  assert.ok(w.nova.calls.includes("confirmResize c"), "tried");
  assert.deepEqual(reasons(w), [], "no ResizeConfirmed Event");
  assert.equal(w.deps.memory.of(KEY).confirms.get("c")?.answeredAtMs, T0);
  assert.equal(
    w.deps.memory.of(KEY).settle.failures,
    0,
    "not counted a failure",
  );
});

Deno.test("finalizeEviction: cancelled with --abort-in-flight, aborts our live migrations in progress once, one Event; others' are left", async () => {
  const w = world({
    status: {
      inFlightCount: 3,
      inFlight: [
        {
          id: "a",
          kind: "live",
          startedAt: new Date(T0 - 60_000).toISOString(),
          migrationId: "1",
        },
        {
          id: "b",
          kind: "live",
          startedAt: new Date(T0 - 60_000).toISOString(),
          adopted: true,
        },
        cold("c"),
      ],
    },
  });
  w.ctx.object.metadata!.annotations = {
    "evictor.kvm.cloud.sap/abort-in-flight": "true",
  };
  const moving = (id: string) =>
    listed(id, { status: "MIGRATING", taskState: "migrating" });
  w.nova.onHost = [
    moving("a"),
    moving("b"),
    listed("c", { status: "RESIZE", taskState: "resize_migrating" }),
  ];
  w.nova.migrations = [
    migration(1, "a", "running"),
    migration(2, "b", "running"),
    migration(3, "c", "migrating", { migrationType: "migration" }),
  ];
  assert.deepEqual(await run(w), { requeueAfterMs: POLL_MS }, "still settling");
  const aborts = () =>
    w.nova.calls.filter((c) => c.startsWith("abortLiveMigration"));
  assert.deepEqual(
    aborts(),
    ["abortLiveMigration a 1"],
    "ours only, live only",
  );
  assert.deepEqual(reasons(w), ["MigrationsAborted"]);
  assert.match(
    w.events[0]![2],
    /aborted 1 live migrations from node042: a \(migration 1\)/,
  );
  // Nova runs the abort on after its answer: a look begun before that
  // answer sends nothing again; one begun after it may.
  w.deps.memory.of(KEY).aborts.get("1")!.answeredAtMs = T0 + 5_000;
  w.clock.ms = T0 + 1_000;
  await run(w);
  assert.equal(aborts().length, 1, "not sent again");
  w.clock.ms = T0 + 6_000;
  await run(w);
  assert.equal(
    aborts().length,
    2,
    "a look after the answer still shows it running",
  );
  w.nova.migrations = [
    migration(1, "a", "cancelled"),
    migration(2, "b", "running"),
    migration(3, "c", "migrating", { migrationType: "migration" }),
  ];
  w.nova.onHost = [
    listed("a"),
    moving("b"),
    listed("c", { status: "RESIZE", taskState: "resize_migrating" }),
  ];
  w.clock.ms = T0 + 20_000;
  assert.deepEqual(await run(w), { requeueAfterMs: POLL_MS });
  assert.equal(aborts().length, 2, "an ended one is not aborted");
  assert.equal(w.ctx.object.status?.inFlightCount, 2, "b and c still count");
});
