import assert from "node:assert/strict";
import type {
  Eviction,
  EvictionPolicySpec,
  EvictionStatus,
  Hypervisor,
} from "../../models/mod.ts";
import { freezeSettings, type LimitSettings } from "../../limits/resolve.ts";
import {
  eviction,
  passFixture,
  type PassWorld,
} from "../../tests/harness/pass_fixture.ts";
import { DEFAULT_PLAN_OPTIONS, type PlanOptions } from "./plan_options.ts";
import { resolveConvergence } from "../../limits/convergence.ts";
import {
  clusterInFlight,
  finishedLookMs,
  limitOfDrain,
  type MutablePass,
  passPlanOptions,
  type Phase,
  planOptionsFor,
  record,
  runSteps,
  wakeSiblings,
} from "./pass.ts";

// The fixture's defaults: pollIntervalMs 1 s, finishedCheckMs 60 s; its
// clock starts at NOW.
const NOW = Date.parse("2026-01-01T01:00:00Z");
const POLL = 1_000;
const FINISHED_CHECK = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

const settings = (
  spec: Partial<EvictionPolicySpec> = {},
  source: LimitSettings["source"] = "policy",
): LimitSettings =>
  freezeSettings(source, {
    maxConcurrentMigrations: 4,
    abortStuckMigrations: false,
    ...spec,
  });

Deno.test("planOptionsFor: takes the defaults, then the overrides, then the policy's timeout and abort", () => {
  const rows: Array<{
    name: string;
    overrides: Partial<PlanOptions>;
    settings: LimitSettings;
    want: PlanOptions;
  }> = [
    {
      name: "no overrides, no timeout: the defaults",
      overrides: {},
      settings: settings(),
      want: { ...DEFAULT_PLAN_OPTIONS },
    },
    {
      name: "overrides replace the defaults",
      overrides: { maxAttempts: 3, retryWindowMs: 60_000, gracePeriodMs: 5 },
      settings: settings(),
      want: {
        ...DEFAULT_PLAN_OPTIONS,
        maxAttempts: 3,
        retryWindowMs: 60_000,
        gracePeriodMs: 5,
      },
    },
    {
      name: "an overridden timeout stands without the policy's",
      overrides: { migrationTimeoutSeconds: 600 },
      settings: settings(),
      want: { ...DEFAULT_PLAN_OPTIONS, migrationTimeoutSeconds: 600 },
    },
    {
      name: "the policy's timeout wins over an override",
      overrides: { migrationTimeoutSeconds: 600 },
      settings: settings({ migrationTimeoutSeconds: 120 }),
      want: { ...DEFAULT_PLAN_OPTIONS, migrationTimeoutSeconds: 120 },
    },
    {
      name: "the policy's abortStuckMigrations wins: true",
      overrides: { abortStuckMigrations: false },
      settings: settings({ abortStuckMigrations: true }),
      want: { ...DEFAULT_PLAN_OPTIONS, abortStuckMigrations: true },
    },
    {
      name: "the policy's abortStuckMigrations wins: false",
      overrides: { abortStuckMigrations: true },
      settings: settings({ abortStuckMigrations: false }),
      want: { ...DEFAULT_PLAN_OPTIONS, abortStuckMigrations: false },
    },
    {
      name: "the flags' settings count as the policy's",
      overrides: { migrationTimeoutSeconds: 600 },
      settings: settings(
        { migrationTimeoutSeconds: 300, abortStuckMigrations: true },
        "flags",
      ),
      want: {
        ...DEFAULT_PLAN_OPTIONS,
        migrationTimeoutSeconds: 300,
        abortStuckMigrations: true,
      },
    },
  ];
  for (const row of rows) {
    assert.deepEqual(
      planOptionsFor(row.overrides, row.settings),
      row.want,
      row.name,
    );
  }
});

Deno.test("passPlanOptions: a host with two traits gets the lowest risk of each field, then the Eviction's own", () => {
  const policy = settings({
    maxConcurrentMigrations: 4,
    migrationTimeoutSeconds: 3600,
    convergence: { completionTimeoutPerGiB: 300, onTimeout: "ForceComplete" },
    traitLimits: [
      {
        trait: "CUSTOM_HANA",
        maxConcurrentMigrations: 1,
        convergence: { onTimeout: "Abort", progressTimeoutSeconds: 600 },
      },
      {
        trait: "CUSTOM_BIG",
        maxConcurrentMigrations: 2,
        convergence: {
          completionTimeoutPerGiB: 900,
          progressTimeoutSeconds: 120,
          maxAbortedTries: 1,
        },
      },
      {
        trait: "CUSTOM_ELSEWHERE",
        maxConcurrentMigrations: 1,
        convergence: { onTimeout: "Report", maxAbortedTries: 1 },
      },
    ],
  });
  const host: Hypervisor = {
    metadata: { name: "h1" },
    status: { traits: ["CUSTOM_HANA", "CUSTOM_BIG", "HW_CPU_X86_AVX2"] },
  } as Hypervisor;
  const ev = eviction("a", "h1");
  const options = passPlanOptions(
    passFixture(ev, { hypervisors: [host] }).pass,
    policy,
  );
  assert.deepEqual(options.convergence, {
    completionTimeoutPerGiB: 900, // the longer of the traits' bounds
    progressTimeoutSeconds: 600,
    onTimeout: "Abort", // Abort before the default's ForceComplete
    maxAbortedTries: 1,
    forceCompleteTimeoutSeconds: 300,
    source: "trait CUSTOM_HANA",
  });
  // the legacy fields stay in the options, the flat special case beside it
  assert.equal(options.migrationTimeoutSeconds, 3600);
  const own = eviction("a", "h1");
  own.spec.convergence = { onTimeout: "Report", completionTimeoutPerGiB: 60 };
  const overridden = passPlanOptions(
    passFixture(own, { hypervisors: [host] }).pass,
    policy,
  );
  assert.equal(overridden.convergence?.onTimeout, "Report");
  assert.equal(overridden.convergence?.source, "eviction");
  assert.equal(overridden.convergence?.completionTimeoutPerGiB, 60);
  assert.equal(overridden.convergence?.progressTimeoutSeconds, 600);
  // an unknown host: the policy's default alone
  const alone = passPlanOptions(passFixture(ev).pass, policy);
  assert.equal(alone.convergence?.onTimeout, "ForceComplete");
  assert.equal(alone.convergence?.completionTimeoutPerGiB, 300);
});

Deno.test("planOptionsFor: the convergence of an override stands only while nothing sets one", () => {
  const injected = resolveConvergence({
    abortStuckMigrations: false,
    defaults: { onTimeout: "Abort", completionTimeoutPerGiB: 10 },
  });
  const drain = { traits: ["CUSTOM_A"], convergence: undefined };
  // nothing set: the override stands
  assert.equal(
    planOptionsFor({ convergence: injected }, settings(), drain).convergence,
    injected,
  );
  // no override, nothing set: the legacy fields resolved
  assert.deepEqual(
    planOptionsFor(
      {},
      settings({ migrationTimeoutSeconds: 600, abortStuckMigrations: true }),
      drain,
    ).convergence,
    resolveConvergence({
      abortStuckMigrations: true,
      migrationTimeoutSeconds: 600,
    }),
  );
  // a trait entry's convergence wins over the override
  const byTrait = planOptionsFor(
    { convergence: injected },
    settings({
      traitLimits: [{
        trait: "CUSTOM_A",
        maxConcurrentMigrations: 1,
        convergence: { onTimeout: "Report" },
      }],
    }),
    drain,
  ).convergence;
  assert.equal(byTrait?.onTimeout, "Report");
  assert.equal(byTrait?.source, "trait CUSTOM_A");
  // without the drain (the finalizer's look), only the override
  assert.equal(planOptionsFor({}, settings()).convergence, undefined);
});

Deno.test("limitOfDrain: lowers the settings' limit by the host's traits and the Eviction's cap", () => {
  const traitSettings = settings({
    maxConcurrentMigrations: 4,
    traitLimits: [
      { trait: "CUSTOM_HANA", maxConcurrentMigrations: 1 },
      { trait: "CUSTOM_BIG", maxConcurrentMigrations: 2 },
    ],
  });
  const hv = (name: string, traits: string[] | undefined): Hypervisor => ({
    metadata: { name },
    ...(traits === undefined ? {} : { status: { traits } }),
  } as Hypervisor);
  const cache = new Map([
    ["big", hv("big", ["CUSTOM_BIG", "HW_CPU_X86_AVX2"])],
    ["hana", hv("hana", ["CUSTOM_BIG", "CUSTOM_HANA"])],
    ["plain", hv("plain", [])],
    ["unsynced", hv("unsynced", undefined)],
  ]);
  const hypervisors = { get: (name: string) => cache.get(name) };
  const rows: Array<{
    name: string;
    spec: { hypervisor: string; maxConcurrentMigrations?: number };
    want: { limit: number; source: string; decidingTrait: string | undefined };
  }> = [
    {
      name: "no trait: the default",
      spec: { hypervisor: "plain" },
      want: { limit: 4, source: "policy", decidingTrait: undefined },
    },
    {
      name: "a trait lowers it",
      spec: { hypervisor: "big" },
      want: { limit: 2, source: "policy", decidingTrait: "CUSTOM_BIG" },
    },
    {
      name: "of two traits the lowest wins",
      spec: { hypervisor: "hana" },
      want: { limit: 1, source: "policy", decidingTrait: "CUSTOM_HANA" },
    },
    {
      name: "no Hypervisor cached: the default",
      spec: { hypervisor: "gone" },
      want: { limit: 4, source: "policy", decidingTrait: undefined },
    },
    {
      name: "a Hypervisor without traits yet: the default",
      spec: { hypervisor: "unsynced" },
      want: { limit: 4, source: "policy", decidingTrait: undefined },
    },
    {
      name: "the Eviction's cap lowers it further",
      spec: { hypervisor: "big", maxConcurrentMigrations: 1 },
      want: { limit: 1, source: "eviction", decidingTrait: "CUSTOM_BIG" },
    },
    {
      name: "the Eviction's cap never raises it",
      spec: { hypervisor: "big", maxConcurrentMigrations: 8 },
      want: { limit: 2, source: "policy", decidingTrait: "CUSTOM_BIG" },
    },
    {
      name: "a cap equal to the host's limit leaves the source",
      spec: { hypervisor: "plain", maxConcurrentMigrations: 4 },
      want: { limit: 4, source: "policy", decidingTrait: undefined },
    },
  ];
  for (const row of rows) {
    const got = limitOfDrain(traitSettings, hypervisors, row.spec);
    assert.deepEqual(
      {
        limit: got.limit,
        source: got.source,
        decidingTrait: got.decidingTrait,
      },
      row.want,
      row.name,
    );
  }
});

Deno.test("record: writes the status only when it changed, and keeps what it wrote", async () => {
  const before: EvictionStatus = {
    hypervisorServiceId: "svc",
    migratedCount: 1,
  };
  const rows: Array<{
    name: string;
    next: EvictionStatus;
    want: { writes: number; resourceVersion: string };
  }> = [
    {
      name: "the same status: no write",
      next: { hypervisorServiceId: "svc", migratedCount: 1 },
      want: { writes: 0, resourceVersion: "1" },
    },
    {
      name: "an undefined property counts as absent: no write",
      next: {
        hypervisorServiceId: "svc",
        migratedCount: 1,
        finishedAt: undefined,
      } as EvictionStatus,
      want: { writes: 0, resourceVersion: "1" },
    },
    {
      name: "a changed count: written",
      next: { hypervisorServiceId: "svc", migratedCount: 2 },
      want: { writes: 1, resourceVersion: "2" },
    },
    {
      name: "a field removed: written",
      next: { hypervisorServiceId: "svc" },
      want: { writes: 1, resourceVersion: "2" },
    },
  ];
  for (const row of rows) {
    const ev = eviction("a", "h1", before);
    const fx = passFixture(ev);
    await record(fx.pass, row.next);
    assert.equal(fx.writes.length, row.want.writes, `${row.name}: writes`);
    assert.equal(
      fx.pass.ev.metadata?.resourceVersion,
      row.want.resourceVersion,
      `${row.name}: resourceVersion`,
    );
    if (row.want.writes === 0) {
      assert.equal(fx.pass.ev, ev, `${row.name}: the Eviction untouched`);
    } else {
      assert.deepEqual(fx.writes[0], row.next, `${row.name}: what is written`);
      assert.equal(fx.pass.ev.status, row.next, `${row.name}: pass.ev.status`);
      assert.equal(
        fx.pass.ev.metadata?.name,
        "a",
        `${row.name}: the rest of the metadata kept`,
      );
      assert.deepEqual(ev.status, before, `${row.name}: the old object kept`);
    }
  }
});

Deno.test("record: an equal status after a write is not written again", async () => {
  const fx = passFixture(eviction("a", "h1", { migratedCount: 1 }));
  await record(fx.pass, { migratedCount: 2 });
  await record(fx.pass, { migratedCount: 2 });
  await record(fx.pass, { migratedCount: 3 });
  assert.deepEqual(fx.writes, [{ migratedCount: 2 }, { migratedCount: 3 }]);
  assert.equal(fx.pass.ev.metadata?.resourceVersion, "3");
});

Deno.test("wakeSiblings: enqueues only the other Evictions of the same host", () => {
  const rows: Array<{ name: string; others: Eviction[]; want: string[] }> = [
    { name: "alone", others: [], want: [] },
    {
      name: "two siblings, one of another host",
      others: [
        eviction("b", "h1"),
        eviction("c", "h2"),
        eviction("d", "h1", { finishedAt: "2026-01-01T00:30:00Z" }),
      ],
      want: ["b", "d"],
    },
    {
      name: "only other hosts",
      others: [eviction("c", "h2"), eviction("e", "h3")],
      want: [],
    },
  ];
  for (const row of rows) {
    const fx = passFixture(eviction("a", "h1"), { evictions: row.others });
    wakeSiblings(fx.pass.ctx, "h1");
    assert.deepEqual(fx.enqueued, row.want, row.name);
  }
});

Deno.test("clusterInFlight: counts the running drains of the cluster, or else of the cache", () => {
  const running = (name: string, n: number, more: EvictionStatus = {}) =>
    eviction(name, name, { inFlightCount: n, ...more });
  const rows: Array<{
    name: string;
    world: PassWorld;
    want: Record<string, number>;
  }> = [
    {
      name: "the cache: running drains, idle and finished ones left out",
      world: {
        evictions: [
          running("b", 2),
          running("c", 0),
          running("d", 3, { finishedAt: "2026-01-01T00:30:00Z" }),
          eviction("e", "e"),
        ],
      },
      want: { a: 1, b: 2 },
    },
    {
      name: "every partition's Evictions when given, not the cache",
      world: {
        evictions: [running("b", 2)],
        deps: {
          allEvictions: { list: () => [running("x", 4), running("y", 1)] },
        },
      },
      want: { x: 4, y: 1 },
    },
  ];
  for (const row of rows) {
    const fx = passFixture(running("a", 1), row.world);
    assert.deepEqual(
      Object.fromEntries(clusterInFlight(fx.pass)),
      row.want,
      row.name,
    );
  }
});

Deno.test("finishedLookMs: as long as the drain has been finished, between a poll interval and the finished check", () => {
  const rows: Array<{
    name: string;
    finishedAt: string | undefined;
    atMs?: number;
    world?: PassWorld;
    want: number;
  }> = [
    {
      name: "just finished: a poll interval",
      finishedAt: iso(NOW),
      want: POLL,
    },
    {
      name: "finished less than a poll interval ago: a poll interval",
      finishedAt: iso(NOW - 400),
      want: POLL,
    },
    {
      name: "finished 5 s ago: 5 s",
      finishedAt: iso(NOW - 5_000),
      want: 5_000,
    },
    {
      name: "at an earlier look: as long as finished then",
      finishedAt: iso(NOW - 5_000),
      atMs: NOW - 2_000,
      want: 3_000,
    },
    {
      name: "finished an hour ago: the finished check",
      finishedAt: iso(NOW - 3_600_000),
      want: FINISHED_CHECK,
    },
    {
      name: "finishedAt in the future (clock skew): a poll interval",
      finishedAt: iso(NOW + 30_000),
      want: POLL,
    },
    {
      name: "no finishedAt: the finished check",
      finishedAt: undefined,
      want: FINISHED_CHECK,
    },
    {
      name: "an unreadable finishedAt: the finished check",
      finishedAt: "yesterday",
      want: FINISHED_CHECK,
    },
    {
      name: "a scaled clock: its ms (requeue makes them real)",
      finishedAt: iso(NOW - 50_000),
      world: { deps: { clock: { now: () => NOW, rate: 10 } } },
      want: 50_000,
    },
    {
      name: "the informer watches the host: the finished check",
      finishedAt: iso(NOW),
      world: { informer: { watching: () => true } },
      want: FINISHED_CHECK,
    },
    {
      name: "the informer watches nothing: the spacing",
      finishedAt: iso(NOW),
      world: { informer: { watching: () => false } },
      want: POLL,
    },
  ];
  for (const row of rows) {
    const fx = passFixture(eviction("a", "h1"), row.world);
    assert.equal(
      finishedLookMs(fx.pass, row.finishedAt, row.atMs),
      row.want,
      row.name,
    );
  }
});

Deno.test("finishedLookMs: the looks at a finished drain double in spacing", () => {
  // Each look waits as long as the drain had been finished at it: the
  // spacing doubles from a poll interval until the finished check caps it.
  const fx = passFixture(eviction("a", "h1"));
  const finishedAt = iso(NOW);
  const waits: number[] = [];
  for (let at = NOW + POLL; waits.length < 9;) {
    const wait = finishedLookMs(fx.pass, finishedAt, at);
    waits.push(wait);
    at += wait;
  }
  assert.deepEqual(waits, [
    1_000,
    2_000,
    4_000,
    8_000,
    16_000,
    32_000,
    60_000,
    60_000,
    60_000,
  ]);
});

Deno.test("runSteps: each phase sees what the earlier left; the first end stops the pass; the Steps change the pass and its drain record", async () => {
  const fx = passFixture(eviction("a", "h1", { migratedCount: 1 }));
  const pass = { ...fx.pass } as MutablePass;
  const seen: EvictionStatus[] = [];
  let woken = 0;
  const phases: Phase[] = [
    (p) => {
      seen.push(p.status);
      return {
        status: { ...p.status, migratedCount: 2 },
        hold: "wave",
        record: { lastFinishedCheckMs: 7, waveSeen: new Map([["b", 3]]) },
        after: () => woken++,
      };
    },
    (p) => {
      seen.push(p.status);
      assert.equal(p.waveHold, "wave");
      assert.equal(p.state.lastFinishedCheckMs, 7, "applied before the next");
      return Promise.resolve({ retry: "all", end: { inMs: 5 } });
    },
    () => assert.fail("a phase after the end ran"),
  ];
  assert.deepEqual(await runSteps(pass, phases), { inMs: 5 });
  assert.deepEqual(seen.map((s) => s.migratedCount), [1, 2]);
  assert.equal(pass.status.migratedCount, 2);
  assert.equal(pass.retryValue, "all");
  assert.deepEqual([...pass.state.waveSeen], [["b", 3]]);
  for (const then of pass.afterRecord) then();
  assert.equal(woken, 1);
  assert.equal(await runSteps(pass, [() => ({})]), undefined);
});
