/**
 * The eviction controller's integration harness: a Nova simulator and an
 * in-process Operator with the eviction controller against a real API
 * server, isolated from other test files by a unique label, plus helpers
 * to create Hypervisors and Evictions and to measure what Nova saw.
 *
 * @module
 */

import { KubeClient } from "../../framework/client.ts";
import { ApiError } from "../../framework/errors.ts";
import { EVENTS } from "../../framework/events.ts";
import { createLogger } from "../../framework/logger.ts";
import { Operator } from "../../framework/operator.ts";
import {
  type EvictionControllerDeps,
  registerEvictionController,
} from "../../controllers/eviction/controller.ts";
import { parseConcurrencyFlags } from "../../limits/flags.ts";
import { registerMaintenance } from "../../controllers/hypervisor/maintenance.ts";
import type { PlanOptions } from "../../controllers/eviction/plan_options.ts";
import {
  EvictionKind,
  EvictionPolicyKind,
  HypervisorKind,
} from "../../controllers/kinds.ts";
import type {
  Eviction,
  EvictionPolicySpec,
  Hypervisor,
} from "../../models/mod.ts";
import {
  createOpenStackClients,
  loadCloudConfig,
  type OpenStackClients,
} from "../../openstack/mod.ts";
import { type Envtest, startEnvtest } from "./envtest.ts";
import type { MemoryFeed } from "./memory_feed.ts";
import { startNotificationFeed } from "../../openstack/notifications.ts";
import type { NotificationFeed } from "../../openstack/notification_types.ts";
import { simFeed } from "./sim_feed.ts";
import {
  type NovaSim,
  type ScenarioInput,
  startNovaSim,
} from "./nova_sim/mod.ts";

/** Options of {@linkcode startDrainEnv}. */
export interface DrainEnvOptions {
  /** The API server. */
  env: Envtest;
  /** The cloud. */
  scenario: ScenarioInput;
  /** `--eviction-concurrency` (default "4"). */
  concurrency?: string;
  /** `--eviction-trait-concurrency` entries. */
  traitConcurrency?: string[];
  /** Poll interval, real ms (default 100). */
  pollIntervalMs?: number;
  /** `--drain-settle`, real ms (default the controller's: 3 poll intervals). */
  settleMs?: number;
  /** `--migration-progress-interval`, real ms (default the controller's: 30 s). */
  progressIntervalMs?: number;
  /** Planner options in simulator (virtual) time. */
  planOptions?: Partial<PlanOptions>;
  /** Evictions reconciled at once (default 4). */
  maxConcurrentReconciles?: number;
  /**
   * Run the maintenance controller too (controllers/hypervisor): a
   * Hypervisor's spec.maintenance creates and deletes its Eviction.
   */
  maintenance?: boolean;
  /** Give the controller Placement, so drains run the capacity check. */
  capacityCheck?: boolean;
  /** Bounds of a deleted Eviction's wait (simulator time). */
  finalizer?: EvictionControllerDeps["finalizer"];
  /** The bound on a drain's wait for one member of its wave (real ms). */
  waveSettleMs?: number;
  /**
   * The Evictions of this environment's cloud, across partitions (budget,
   * waves, duplicates): default its own; null for every Eviction of the
   * API server (another partition's included).
   */
  cloudSelector?: string | null;
  /**
   * Drain with the simulator's notifications: through a real RabbitMQ at
   * `amqpUrl` (the simulator publishes there, the operator consumes with
   * openstack/notifications.ts), else in process (sim_feed.ts), where
   * `deliver` may hold, reorder or repeat them. The operator listens at
   * `listenUrl` when given (a vhost Nova does not publish to).
   */
  notifications?: {
    amqpUrl?: string;
    listenUrl?: string;
    deliver?: Parameters<typeof simFeed>[1];
  };
}

/** A running drain environment. */
export interface DrainEnv {
  /** The simulator. */
  sim: NovaSim;
  /** The operator (started). */
  operator: Operator;
  /** An admin API client. */
  client: KubeClient;
  /** The label every object of this environment carries. */
  label: Record<string, string>;
  /** The operator's log lines. */
  logs: string[];
  /** The operator's notification feed, with `notifications`. */
  feed: NotificationFeed | undefined;
  /** The in-process feed, with `notifications` without `amqpUrl`. */
  memoryFeed: MemoryFeed | undefined;
  /** Creates a Hypervisor for a simulator host (ids, traits, TraitsUpdated). */
  hypervisor(
    host: string,
    options?: {
      traitsUpdated?: "True" | "False";
      maintenance?: string;
      registered?: boolean;
    },
  ): Promise<void>;
  /** Sets the TraitsUpdated condition of a Hypervisor. */
  setTraitsUpdated(host: string, value: "True" | "False"): Promise<void>;
  /** Creates an Eviction. */
  evict(
    name: string,
    host: string,
    maxConcurrentMigrations?: number,
  ): Promise<void>;
  /** Reads an Eviction. */
  eviction(name: string): Promise<Eviction>;
  /** Creates or replaces the EvictionPolicy `default`. */
  policy(spec: Partial<EvictionPolicySpec>): Promise<void>;
  /** Stops the operator and the simulator. */
  stop(): Promise<void>;
  /** The step {@linkcode stop} is at (undefined before it began), for a report of what hangs. */
  stopping(): string | undefined;
}

/** A unique suffix for names in the shared API server. */
export function uniqueSuffix(): string {
  return crypto.randomUUID().slice(0, 8);
}

/** Starts a simulator and an operator running the eviction controller. */
export async function startDrainEnv(
  options: DrainEnvOptions,
): Promise<DrainEnv> {
  const amqpUrl = options.notifications?.amqpUrl;
  const sim = await startNovaSim(
    options.scenario,
    amqpUrl === undefined ? {} : { amqpUrl },
  );
  const suffix = uniqueSuffix();
  const label = { "evictor-test": suffix };
  const logs: string[] = [];
  let clients: OpenStackClients | undefined;
  let operator: Operator | undefined;
  const client = await KubeClient.fromKubeConfig(options.env.kubeConfig());
  const notified = options.notifications === undefined || amqpUrl !== undefined
    ? undefined
    : simFeed(sim, options.notifications.deliver);
  const feed: NotificationFeed | undefined = amqpUrl === undefined
    ? notified?.feed
    : startNotificationFeed({
      url: options.notifications?.listenUrl ?? amqpUrl,
      initialBackoffMs: 100,
    });
  try {
    clients = createOpenStackClients(
      loadCloudConfig({
        sources: { env: sim.env(), readTextFile: () => undefined },
      }),
    );
    const flags = parseConcurrencyFlags(
      options.concurrency ?? "4",
      options.traitConcurrency,
    );
    if (!flags.ok) throw new Error(flags.error.message);
    const timeScale = sim.scenario.timeScale;
    operator = new Operator({
      name: "evictor-test",
      kubeConfig: options.env.kubeConfig(),
      labelSelector: `evictor-test=${suffix}`,
      healthAddress: false,
      handleSignals: false,
      processMetrics: false,
      shutdownTimeoutMs: 2000,
      finalizer: "kvm.cloud.sap/evictor-test",
      logger: createLogger({
        name: "evictor-test",
        level: "info",
        destination: { write: (l) => logs.push(l) },
      }),
    });
    registerEvictionController(operator, {
      nova: clients.nova,
      flagSettings: flags.settings,
      pollIntervalMs: options.pollIntervalMs ?? 100,
      ...(options.settleMs === undefined ? {} : { settleMs: options.settleMs }),
      ...(options.progressIntervalMs === undefined
        ? {}
        : { progressIntervalMs: options.progressIntervalMs }),
      planOptions: {
        retryBaseMs: 5_000,
        retryCapMs: 20_000,
        maxAttempts: 3,
        ...options.planOptions,
      },
      maxConcurrentReconciles: options.maxConcurrentReconciles ?? 4,
      clock: { now: () => sim.world.now(), rate: timeScale },
      ...(options.capacityCheck === true
        ? { placement: clients.placement }
        : {}),
      ...(options.finalizer === undefined
        ? {}
        : { finalizer: options.finalizer }),
      ...(options.waveSettleMs === undefined
        ? {}
        : { waveSettleMs: options.waveSettleMs }),
      // one simulated cloud per environment: its budget and waves are its own
      ...(options.cloudSelector === null ? {} : {
        cloudSelector: options.cloudSelector ?? `evictor-test=${suffix}`,
      }),
      ...(feed === undefined ? {} : { notifications: feed }),
    });
    if (options.maintenance === true) {
      registerMaintenance(operator, { nova: clients.nova });
    }
    await operator.start();
  } catch (err) {
    await operator?.stop();
    clients?.close();
    client.close();
    notified?.stop();
    await feed?.close();
    await sim.close();
    throw err;
  }
  const op = operator;
  const os = clients;
  let stopStep: string | undefined;
  const hostOf = (host: string) =>
    sim.state().hosts.find((h) => h.name === host);
  const setStatus = async (host: string, status: Record<string, unknown>) => {
    await client.patch(HypervisorKind, host, { status }, "merge", "status");
  };
  const traitsCondition = (value: "True" | "False") => ({
    type: "TraitsUpdated",
    status: value,
    reason: value === "True" ? "Updated" : "Failed",
    message: value === "True" ? "" : "placement unreachable",
    lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
  });
  return {
    sim,
    operator: op,
    client,
    label,
    logs,
    feed,
    memoryFeed: notified?.feed,
    async hypervisor(host, o = {}) {
      await client.create<Hypervisor>(HypervisorKind, {
        metadata: { name: host, labels: label },
        spec: o.maintenance === undefined ? {} : {
          maintenance: o.maintenance as "manual",
          maintenanceReason: "test",
        },
      });
      const h = hostOf(host);
      await setStatus(host, {
        ...(o.registered === false || (h === undefined && !o.registered)
          ? {}
          : {
            hypervisorId: h?.hypervisorId ?? crypto.randomUUID(),
            serviceId: h?.serviceId ?? crypto.randomUUID(),
          }),
        traits: h?.traits ?? [],
        conditions: [traitsCondition(o.traitsUpdated ?? "True")],
      });
    },
    async setTraitsUpdated(host, value) {
      await setStatus(host, { conditions: [traitsCondition(value)] });
    },
    async evict(name, host, max) {
      await client.create<Eviction>(EvictionKind, {
        metadata: { name, labels: label },
        spec: {
          hypervisor: host,
          reason: `test ${name}`,
          ...(max === undefined ? {} : { maxConcurrentMigrations: max }),
        },
      });
    },
    eviction: (name) => client.get<Eviction>(EvictionKind, name),
    async policy(spec) {
      const body = {
        apiVersion: "kvm.cloud.sap/v1alpha1",
        kind: "EvictionPolicy",
        metadata: { name: "default" },
        spec: { maxConcurrentMigrations: 1, ...spec },
      };
      let current: { metadata?: { resourceVersion?: string } } | undefined;
      try {
        current = await client.get(EvictionPolicyKind, "default");
      } catch (err) {
        if (!(err instanceof ApiError && err.status === 404)) throw err;
      }
      if (current === undefined) {
        await client.create(EvictionPolicyKind, body);
        return;
      }
      await client.replace(EvictionPolicyKind, {
        ...body,
        metadata: {
          name: "default",
          resourceVersion: current.metadata?.resourceVersion ?? "",
        },
      });
    },
    async stop() {
      stopStep = "the operator";
      await op.stop();
      stopStep = "the OpenStack and API clients";
      os.close();
      client.close();
      notified?.stop();
      stopStep = "the notification feed";
      await feed?.close();
      stopStep = "the simulator";
      await sim.close();
      stopStep = "stopped";
    },
    stopping: () => stopStep,
  };
}

/**
 * Polls `probe` until it returns a value other than undefined; throws after
 * `timeoutMs` with `what` in the message.
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 30_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${
          last === undefined ? "" : `: ${String(last)}`
        }`,
      );
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** In-progress statuses of a migration record (Nova holds resources). */
const IN_PROGRESS = new Set([
  "accepted",
  "queued",
  "preparing",
  "running",
  "post-migrating",
  "pre-migrating",
  "migrating",
  "finished",
]);

/** Whether a simulator migration record is still in flight. */
export function inProgress(status: string): boolean {
  return IN_PROGRESS.has(status);
}

/**
 * The most migrations of `hosts` in flight at once, from the simulator's
 * records (exact: every record is an interval from its creation to its
 * last update, or to now while in progress). Cold migrations count until
 * confirmed.
 */
export function maxOverlap(sim: NovaSim, hosts: readonly string[]): number {
  const state = sim.state();
  const set = new Set(hosts);
  const points: Array<[number, number]> = [];
  for (const m of state.migrations) {
    if (!set.has(m.source)) continue;
    const end = inProgress(m.status) ? Number.POSITIVE_INFINITY : m.updatedAt;
    points.push([m.createdAt, 1], [end, -1]);
  }
  // Ends before starts at the same instant: a slot freed and refilled.
  points.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let max = 0;
  for (const [, d] of points) {
    now += d;
    max = Math.max(max, now);
  }
  return max;
}

/** Migrations in flight on `hosts` right now, per the simulator. */
export function inFlightNow(sim: NovaSim, hosts: readonly string[]): number {
  const set = new Set(hosts);
  return sim.state().migrations.filter((m) =>
    set.has(m.source) && inProgress(m.status)
  ).length;
}

/**
 * Samples the simulator every `everyMs` until stopped: the most migrations
 * of `hosts` in flight at once, and the most of them Nova held `queued`.
 */
export function sampleInFlight(
  sim: NovaSim,
  hosts: readonly string[],
  everyMs = 10,
): { stop(): { max: number; maxQueued: number } } {
  const set = new Set(hosts);
  let max = 0;
  let maxQueued = 0;
  const sample = () => {
    const mine = sim.state().migrations.filter((m) => set.has(m.source));
    max = Math.max(max, mine.filter((m) => inProgress(m.status)).length);
    maxQueued = Math.max(
      maxQueued,
      mine.filter((m) => m.status === "queued").length,
    );
  };
  const timer = setInterval(sample, everyMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return { max, maxQueued };
    },
  };
}

/** VMs (by id) on a simulator host now. */
export function serversOn(sim: NovaSim, host: string): string[] {
  return sim.state().servers.filter((s) => s.host === host && !s.deleted).map(
    (s) => s.id,
  );
}

/**
 * VMs that Nova accepted more than one migration of, among those that had
 * a migration from `hosts` (all hosts when absent).
 */
export function migratedTwice(
  sim: NovaSim,
  hosts?: readonly string[],
): string[] {
  const from = hosts === undefined ? undefined : new Set(hosts);
  const ids = new Set(
    sim.state().migrations.filter((m) =>
      from === undefined || from.has(m.source)
    ).map((m) => m.serverId),
  );
  return Object.entries(sim.counters().migrationsAccepted)
    .filter(([id, n]) => n > 1 && ids.has(id)).map(([id]) => id).sort();
}

/**
 * Runs `fn` with a drain environment on an API server of its own, for a
 * test that sets the cluster-wide EvictionPolicy; stops both afterwards.
 */
export async function withOwnApiServer(
  options: Omit<DrainEnvOptions, "env">,
  fn: (env: DrainEnv) => Promise<void>,
): Promise<void> {
  const api = await startEnvtest();
  let env: DrainEnv | undefined;
  try {
    env = await startDrainEnv({ ...options, env: api });
    await fn(env);
  } finally {
    await env?.stop();
    await api.stop();
  }
}

/** An Event of the API server, as the tests read it. */
export interface EventSeen {
  involvedObject?: { name?: string };
  reason?: string;
  type?: string;
  message?: string;
}

/** The Events about the object named `name` (cluster-scoped: namespace default). */
export async function eventsOf(
  e: { client: KubeClient },
  name: string,
): Promise<EventSeen[]> {
  const list = await e.client.list(EVENTS, { namespace: "default" });
  return (list.items as EventSeen[]).filter((x) =>
    x.involvedObject?.name === name
  );
}

/** Waits until the drain of Eviction `name` has finished; returns it. */
export async function drained(
  env: DrainEnv,
  name: string,
  timeoutMs = 60_000,
): Promise<Eviction> {
  return await waitFor(`${name} drained`, async () => {
    const ev = await env.eviction(name);
    return ev.status?.finishedAt === undefined ? undefined : ev;
  }, timeoutMs);
}
