/**
 * One drain pass without a cluster or a Nova, for the table tests of the
 * phases (controllers/eviction/pass_*_test.ts): a handler context over
 * in-memory caches that records the pass's Events, wake-ups and status
 * writes, a settable clock, and the pass's dependencies with a Nova that
 * answers only what a test gives it.
 *
 * @module
 */

import { Registry } from "prom-client";
import type { HandlerContext } from "../../framework/handler.ts";
import type { CacheReader } from "../../framework/informer.ts";
import type { Kind, KubeObject } from "../../framework/kind.ts";
import type { KubeClient } from "../../framework/client.ts";
import { silentLogger } from "../../framework/logger.ts";
import type {
  Eviction,
  EvictionPolicy,
  EvictionStatus,
  Hypervisor,
} from "../../models/mod.ts";
import {
  EvictionKind,
  EvictionPolicyKind,
  HypervisorKind,
} from "../../controllers/kinds.ts";
import { DrainMemory } from "../../controllers/eviction/memory.ts";
import { EvictionMetrics } from "../../controllers/eviction/metrics.ts";
import type { NovaClient } from "../../openstack/mod.ts";
import { NovaLister } from "../../openstack/informer/lister.ts";
import {
  type EvictionPassDeps,
  type Pass,
  passTimes,
} from "../../controllers/eviction/pass.ts";
import type { PendingEvent } from "../../controllers/eviction/report.ts";
import {
  type HostInformer,
  PollingInformer,
} from "../../openstack/informer/informer.ts";

/** The world a pass reads besides its own Eviction. */
export interface PassWorld {
  /** Every Eviction of the cluster (the pass's own is added when missing). */
  evictions?: Eviction[];
  hypervisors?: Hypervisor[];
  policy?: EvictionPolicy;
  /** The clock's start (epoch ms). */
  nowMs?: number;
  /** The Nova calls the phase under test makes; any other call throws. */
  nova?: Partial<NovaClient>;
  /** Overrides of the pass's dependencies. */
  deps?: Partial<EvictionPassDeps>;
  /** Fields of the pass itself (e.g. `status`, `retryValue`). */
  pass?: Partial<Pass>;
  /**
   * Answers of the drains' host informer (e.g. `watching`, `woken`) over
   * one that caches and watches nothing (`PollingInformer`).
   */
  informer?: Partial<HostInformer>;
}

/** A pass and what it did. */
export interface PassFixture {
  pass: Pass;
  /** Events the pass recorded. */
  events: PendingEvent[];
  /** Keys of the Evictions the pass woke. */
  enqueued: string[];
  /** The statuses the pass wrote, in order. */
  writes: EvictionStatus[];
  /** The controller's clock (settable). */
  clock: { now(): number; set(ms: number): void };
  /** The informer's lister (its host facts). */
  lister: NovaLister;
  /** The Nova calls made, the informer's too, by name. */
  novaCalls: string[];
}

/** An Eviction of `host` named `name`, created at `createdAt`. */
export function eviction(
  name: string,
  host: string,
  status: EvictionStatus = {},
  createdAt = "2026-01-01T00:00:00Z",
): Eviction {
  return {
    apiVersion: "kvm.cloud.sap/v1",
    kind: "Eviction",
    metadata: {
      name,
      uid: `uid-${name}`,
      generation: 1,
      resourceVersion: "1",
      creationTimestamp: createdAt,
    },
    spec: { hypervisor: host, reason: "test" },
    status,
  } as Eviction;
}

/** Builds a pass of `ev`'s drain in `world`. */
export function passFixture(ev: Eviction, world: PassWorld = {}): PassFixture {
  let nowMs = world.nowMs ?? Date.parse("2026-01-01T01:00:00Z");
  const clock = { now: () => nowMs, set: (ms: number) => void (nowMs = ms) };
  const name = ev.metadata?.name ?? "";
  const evictions = [
    ...(world.evictions ?? []).filter((e) => e.metadata?.name !== name),
    ev,
  ];
  const lists = new Map<unknown, KubeObject[]>([
    [EvictionKind, evictions],
    [HypervisorKind, world.hypervisors ?? []],
    [EvictionPolicyKind, world.policy === undefined ? [] : [world.policy]],
  ]);
  const events: PendingEvent[] = [];
  const enqueued: string[] = [];
  const writes: EvictionStatus[] = [];
  let current = ev;
  const ctx: HandlerContext<Eviction> = {
    key: name,
    name,
    namespace: undefined,
    object: ev,
    kind: EvictionKind,
    client: {} as KubeClient,
    logger: silentLogger(),
    signal: new AbortController().signal,
    cache: <U extends KubeObject>(kind: Kind<U>) =>
      readerOf((lists.get(kind) ?? []) as U[]),
    event: (type, reason, message) => {
      events.push({ type, reason, message });
      return Promise.resolve();
    },
    updateStatus: async (mutate) => {
      const next = await mutate({ ...current.status }, current) ??
        current.status ?? {};
      writes.push(next);
      const version = Number(current.metadata?.resourceVersion ?? "1") + 1;
      current = {
        ...current,
        metadata: { ...current.metadata, resourceVersion: String(version) },
        status: next,
      };
      return current;
    },
    latest: (e) => e,
    enqueue: (_kind, key) => void enqueued.push(key),
  };
  const novaCalls: string[] = [];
  const nova = novaOnly(world.nova ?? {}, novaCalls);
  const lister = new NovaLister(nova, clock);
  const polling = new PollingInformer(lister);
  const deps: EvictionPassDeps = {
    nova,
    novaClockOffsetMs: () => 0,
    flagSettings: {
      source: "flags",
      spec: { maxConcurrentMigrations: 2, abortStuckMigrations: false },
    },
    pollIntervalMs: 1_000,
    maxPollMs: 30_000,
    slowPollMs: 10_000,
    finishedCheckMs: 60_000,
    relistMs: 30_000,
    settleMs: 3_000,
    planOptions: {},
    clock,
    memory: new DrainMemory(Object.assign(polling, world.informer ?? {})),
    metrics: new EvictionMetrics(new Registry()),
    actConcurrency: 4,
    waveSettleMs: 15_000,
    ...world.deps,
  };
  const host = ev.spec.hypervisor;
  const pass: Pass = {
    ctx,
    deps,
    ev,
    host,
    log: ctx.logger,
    state: deps.memory.of(name),
    status: ev.status ?? {},
    hypervisor: (world.hypervisors ?? []).find((h) =>
      h.metadata?.name === host
    ),
    rate: world.pass?.rate ?? deps.clock.rate ?? 1,
    times: passTimes(deps, world.pass?.rate ?? deps.clock.rate ?? 1),
    afterRecord: [],
    ...world.pass,
  };
  return { pass, events, enqueued, writes, clock, lister, novaCalls };
}

/** A cache reader over a fixed list, keyed by name. */
function readerOf<T extends KubeObject>(items: T[]): CacheReader<T> {
  return {
    get: (key) => items.find((o) => o.metadata?.name === key),
    list: (filter) => filter === undefined ? [...items] : items.filter(filter),
    hasSynced: true,
  };
}

/**
 * A Nova of which only the given calls answer, each recorded in `made`;
 * any other call fails the test.
 */
function novaOnly(calls: Partial<NovaClient>, made: string[]): NovaClient {
  return new Proxy(calls, {
    get(target, prop) {
      const call = target[prop as keyof NovaClient];
      if (typeof call === "function") {
        return (...args: unknown[]) => {
          made.push(String(prop));
          return (call as (...a: unknown[]) => unknown)(...args);
        };
      }
      if (prop === "then") return undefined;
      return () => {
        throw new Error(`unexpected Nova call ${String(prop)}`);
      };
    },
  }) as NovaClient;
}
