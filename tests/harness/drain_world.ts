// A drain world for the randomized simulation: the real pass
// (reconcileEviction: observe, plan, record, act, report, requeue) driven
// against the Nova simulator's in-process World on a virtual clock, through
// a thin adapter that maps World objects onto the OpenStack client's types,
// injects faults into the start answers and checks the invariants at the
// moment each Nova call is made. The Eviction lives in a small in-memory
// store with resourceVersions (409 on a stale one) and a cache that lags.
import { Registry } from "prom-client";
import { ApiError } from "../../framework/errors.ts";
import { WrittenObjects } from "../../framework/written.ts";
import type { HandlerContext } from "../../framework/handler.ts";
import type { Kind, KubeObject } from "../../framework/kind.ts";
import { silentLogger } from "../../framework/logger.ts";
import type { KubeClient } from "../../framework/client.ts";
import { drainConvergence, policySettings } from "../../limits/resolve.ts";
import {
  type ConvergenceSpec,
  copyTimeoutSeconds,
} from "../../limits/convergence.ts";
import { DEFAULT_PROGRESS_INTERVAL_MS } from "../../openstack/informer/progress.ts";
import type {
  Eviction,
  EvictionPolicy,
  EvictionStatus,
  Hypervisor,
  HypervisorStatusLastDrain,
} from "../../models/mod.ts";
import {
  type ActionResult,
  BadRequestError,
  type ComputeService,
  ConflictError,
  type Migration,
  NotFoundError,
  type NovaClient,
  OpenStackError,
  type Server,
  type ServerMigration,
  TimeoutError,
} from "../../openstack/mod.ts";
import { NotifiedInformer } from "../../openstack/informer/notified_informer.ts";
import type { NovaNotification } from "../../openstack/notification_types.ts";
import { MemoryFeed } from "./memory_feed.ts";
import { parseSimEnvelope } from "./sim_feed.ts";
import { Prng } from "./nova_sim/prng.ts";
import { parseScenario } from "./nova_sim/scenario.ts";
import { ManualClock } from "./nova_sim/sim_clock.ts";
import {
  LIVE_IN_PROGRESS,
  NovaFault,
  novaTime,
  serverStatus,
  type SimMigration,
  type SimServer,
  World,
} from "./nova_sim/world.ts";
import {
  EvictionKind,
  EvictionPolicyKind,
  HypervisorKind,
} from "../../controllers/kinds.ts";
import { stoppedForPerson } from "../../controllers/conditions.ts";
import { DrainMemory } from "../../controllers/eviction/memory.ts";
import { EvictionMetrics } from "../../controllers/eviction/metrics.ts";
import { NovaLister } from "../../openstack/informer/lister.ts";
import { PollingInformer } from "../../openstack/informer/informer.ts";
import { NovaClock } from "../../openstack/informer/nova_clock.ts";
import {
  type EvictionPassDeps,
  reconcileEviction,
} from "../../controllers/eviction/reconcile.ts";

export const HOST = "drain-me";
const LOGGER = silentLogger();
const SIGNAL = new AbortController().signal;
const OTHERS = ["other-a", "other-b", "other-c"];
const EVICTION = "e1";
/** The most passes of one drain within a simulated second. */
const MAX_PASSES_PER_SECOND = 8;
/** The source of the migration queued before the drain starts. */
const QUEUED_SOURCE = "other-q";

/**
 * A migration towards HOST queued behind a 40 s one on its source (limit
 * 1), its record last updated 20 s before the drain starts: older than the
 * changes-since margin.
 */
function queueTowardsHost(world: World, clock: ManualClock): void {
  const blocker = world.addServer({
    name: "blocker",
    host: QUEUED_SOURCE,
    ramMb: 40_000,
  });
  const waiter = world.addServer({
    name: "waiter",
    host: QUEUED_SOURCE,
    ramMb: 1024,
  });
  world.liveMigrate(blocker.id, "other-b", true);
  world.liveMigrate(waiter.id, HOST, true);
  clock.advance(1000);
  world.advance();
  clock.advance(20_000);
  world.advance();
}

/** What can happen to one start call. */
export type StartFault =
  | "ok"
  | "slow" // processed now, answered late
  | "lost_processed" // processed now, never answered: times out
  | "lost_unprocessed" // never reached Nova: times out
  | "unavailable"; // 503, not processed

/** A world's parameters (drawn by fast-check). */
export interface WorldSpec {
  seed: number;
  vms: Array<{
    ramMb: number;
    status: "ACTIVE" | "SHUTOFF" | "PAUSED" | "SUSPENDED" | "ERROR";
    blocker: boolean;
    migrationFault: "none" | "fail" | "error" | "delete";
    /** How many of its migrations the fault hits (default 2). */
    faultTimes?: number;
    /**
     * Guest memory dirtied per second (MB/s, default 0): at or above the
     * host's copy rate (1000 MB/s) its copy never converges.
     */
    dirtyRateMBps?: number;
  }>;
  /** The drained host's `live_migration_permit_post_copy` (default false). */
  permitPostCopy?: boolean;
  /** The EvictionPolicy's `spec.convergence` (default none). */
  convergence?: ConvergenceSpec;
  /** The Eviction's own `spec.convergence` (default none). */
  evictionConvergence?: ConvergenceSpec;
  /** The legacy flat policy: `migrationTimeoutSeconds`, `abortStuckMigrations`. */
  legacy?: { migrationTimeoutSeconds?: number; abortStuckMigrations: boolean };
  /** `--migration-progress-interval` (real ms; default 30 s). */
  progressIntervalMs?: number;
  limit: number;
  novaHostLimit: number;
  /** Per start call, cycled. */
  startFaults: StartFault[];
  /** Things that happen, at pass numbers. */
  events: Array<{
    atPass: number;
    what:
      | "arrive"
      | "arrive_incoming"
      | "arrive_during_pass"
      | "incoming_during_pass"
      | "delete"
      | "power"
      | "user_resize"
      | "lower_policy"
      | "fault_next"
      | "owner_confirms"
      | "write_fails"
      | "restart"
      // armed here: 1 s after the next pass that ends Succeeded, a VM is
      // forced onto the host
      | "forced_after_succeeded";
    pick: number;
  }>;
  /**
   * Before the drain starts, a migration towards the host waits `queued`
   * behind another on its source (Nova's per-host limit 1), its record
   * last updated 20 s before the first pass.
   */
  queuedBeforeStart?: boolean;
  /**
   * Nova's clock minus the drain's (ms, default 0): its record times, its
   * `changes-since` filter and the `Date` of its answers are on it.
   */
  novaClockOffsetMs?: number;
  /**
   * How long after its 202 Nova's conductor writes a live migration's
   * record (simulated s, default 0.2): meanwhile the server shows the task
   * and no record of it (real Zed: 0.08-0.35 s quiet, seconds under load).
   */
  recordDelaySeconds?: number;
  /** Retry window (0: transient failures end after maxAttempts). */
  retryWindowMs: number;
  /** Nova's notifications feed the drain (a host view), through a lossy feed. */
  notified?: NotifiedSpec;
  /**
   * The drain's settings (real ms) and its clock's rate: defaults poll
   * 2 s, relist 60 s, settle 6 s, rate 1.
   */
  timing?: { pollMs: number; relistMs: number; settleMs: number; rate: number };
}

/**
 * What the feed between the simulator's notifications and the drain does:
 * each event is dropped, duplicated and delayed (delays reorder them) at
 * random; from pass `silentFromPass` on it delivers nothing while staying
 * connected (a feed listening where Nova no longer publishes); `downAtPass`
 * takes it down for a few passes (a new epoch when it is back).
 */
export interface NotifiedSpec {
  /** Probability that an event is lost. */
  drop: number;
  /** Probability that an event is delivered twice. */
  duplicate: number;
  /** Each delivery is delayed by up to this (simulated ms). */
  delayMaxMs: number;
  /** From this pass on, nothing is delivered (0: deaf from the start). */
  silentFromPass?: number | undefined;
  /** At this pass the connection drops, for three passes. */
  downAtPass?: number | undefined;
  /**
   * Probability, per event, of a forged `instance.update` besides it that
   * places a VM the feed has named (often one that left) on the host at
   * rest, stamped as new (anyone who can publish on Nova's exchange).
   */
  forge?: number | undefined;
  /** Probability, per event, of an earlier event replayed with a new id and timestamp. */
  replay?: number | undefined;
  /**
   * Probability that an event names the wrong host: the drained host for
   * another, or another for the drained host (a misattributing publisher).
   */
  misattribute?: number | undefined;
  /** Probability that an event ending a live migration (its last steps and the move) is lost. */
  dropEnds?: number | undefined;
}

/** A broken invariant, with where it broke. */
export class InvariantError extends Error {}

/** Violations found inside Nova calls (whose errors the drain may swallow). */
const violations: string[] = [];

function check(ok: boolean, message: string): void {
  if (!ok) {
    violations.push(message);
    throw new InvariantError(message);
  }
}

interface PendingAnswer {
  atMs: number;
  settle: () => void;
}

/**
 * The adapter: the NovaClient methods a drain uses, over World. Counts and
 * checks every call a drain makes.
 */
class SimNova {
  readonly world: World;
  readonly clock: ManualClock;
  readonly answers: PendingAnswer[] = [];
  /** Migration ids this drain's calls created. */
  readonly ours = new Set<number>();
  /** Per VM: calls Nova processed, or refused definitively (4xx but 409). */
  readonly chargeable = new Map<string, number>();
  /** Run between the server list and the migration list of a pass. */
  duringPass: (() => void) | undefined;
  /** The Eviction's status as written (for the intent invariant). */
  written: () => EvictionStatus | undefined = () => undefined;
  listedServers: string[] = [];
  /** Set by the server list: the pass looked at Nova. */
  observed = false;
  listedTouching: number[] = [];
  calls = 0;
  /** Progress reads (`GET /servers/{id}/migrations/{mid}`). */
  progressReads = 0;
  /** Per migration: when this drain sent its force_complete (simulated ms). */
  readonly forceCompleted = new Map<number, number>();
  /** Migrations this drain sent an abort for, with their VM. */
  readonly aborted = new Map<number, string>();
  /**
   * 15. How long a copy of `ramMb` runs before the policy may abort it
   * (its bound, or its progress timeout if sooner); undefined without a
   * policy that aborts. Checked at each abort, less 2 s: Nova's timestamps
   * date to the whole second and its clock's offset is estimated.
   */
  abortNoSoonerMs: ((ramMb: number) => number) | undefined;
  /** Start calls (live or cold) made so far. */
  startCalls = 0;
  /** The drain plans from Nova's notifications too. */
  notified = false;
  #faults: StartFault[];
  #startIndex = 0;
  readonly timeoutMs = 30_000;
  /** Nova's clock minus the drain's. */
  readonly offsetMs: number;
  readonly #dateListeners = new Set<(ms: number) => void>();

  constructor(
    world: World,
    clock: ManualClock,
    faults: StartFault[],
    offsetMs = 0,
  ) {
    this.world = world;
    this.clock = clock;
    this.#faults = faults.length === 0 ? ["ok"] : faults;
    this.offsetMs = offsetMs;
  }

  /** NovaClient.onServerDate: Nova's clock, in whole seconds, on each answer. */
  onServerDate(listener: (ms: number) => void): () => void {
    this.#dateListeners.add(listener);
    return () => this.#dateListeners.delete(listener);
  }

  #answerDate(): void {
    const ms = Math.floor((this.clock.now() + this.offsetMs) / 1000) * 1000;
    for (const l of this.#dateListeners) l(ms);
  }

  #later(delayMs: number, settle: () => void): void {
    this.answers.push({ atMs: this.clock.now() + delayMs, settle });
  }

  /** Per VM, the migrations of ours that completed (moved it). */
  completedOurs(): Map<string, number> {
    const out = new Map<string, number>();
    for (const m of this.world.migrations) {
      if (!this.ours.has(m.id)) continue;
      if (
        !["completed", "finished", "confirming", "confirmed"].includes(m.status)
      ) {
        continue;
      }
      out.set(m.serverId, (out.get(m.serverId) ?? 0) + 1);
    }
    return out;
  }

  inProgress(m: SimMigration): boolean {
    return m.type === "live-migration"
      ? m.status === "accepted" || LIVE_IN_PROGRESS.includes(m.status)
      : ["pre-migrating", "migrating", "post-migrating"].includes(m.status);
  }

  touching(host: string): SimMigration[] {
    return this.world.migrations.filter((m) =>
      (m.source === host || m.dest === host) && this.inProgress(m)
    );
  }

  /** {@linkcode touching}, less the records Nova's conductor has not written yet. */
  shownTouching(host: string): SimMigration[] {
    const now = this.world.now();
    return this.touching(host).filter((m) => m.visibleAt <= now);
  }

  listServersOnHost(host: string): Promise<Server[]> {
    this.calls++;
    this.world.advance();
    const list = this.world.listServers().filter((s) => s.host === host);
    this.listedServers = list.map((s) => s.id);
    this.observed = true;
    this.#answerDate();
    const out = list.map(toServer);
    const hook = this.duringPass;
    this.duringPass = undefined;
    hook?.();
    return Promise.resolve(out);
  }

  listMigrations(
    filter: { host?: string; changesSince?: Date | string },
  ): Promise<Migration[]> {
    this.calls++;
    this.world.advance();
    // Nova filters on its own clock
    const since = filter.changesSince === undefined
      ? -Infinity
      : new Date(filter.changesSince).getTime() - this.offsetMs;
    const host = filter.host ?? "";
    const now = this.world.now();
    this.listedTouching = this.shownTouching(host).map((m) => m.id);
    this.#answerDate();
    return Promise.resolve(
      this.world.migrations
        .filter((m) =>
          (m.source === host || m.dest === host) && m.updatedAt >= since &&
          m.visibleAt <= now
        )
        .map((m) => toMigration(m, this.offsetMs)),
    );
  }

  getServer(id: string): Promise<Server> {
    this.calls++;
    this.world.advance();
    const s = this.world.servers.get(id);
    if (s === undefined || s.deleted) {
      return Promise.reject(
        new NotFoundError(`Instance ${id} could not be found.`, {
          status: 404,
        }),
      );
    }
    return Promise.resolve(toServer(s));
  }

  #start(id: string, kind: "live" | "cold"): Promise<ActionResult> {
    this.calls++;
    this.startCalls++;
    this.world.advance();
    const s = this.world.servers.get(id);
    // Someone else's migration in progress is Nova's to refuse (409): a
    // start planned from a notified view may not know of it yet.
    check(
      !this.world.migrations.some((m) =>
        m.serverId === id && this.inProgress(m) &&
        (this.ours.has(m.id) || !this.notified)
      ),
      `second start of ${id} while a migration of it is in progress`,
    );
    // 11. No VM moved twice: none of ours of it completed before.
    check(
      (this.completedOurs().get(id) ?? 0) === 0,
      `start of ${id}, which a migration of ours already moved off the host`,
    );
    if (kind === "cold" && s !== undefined && !s.deleted) {
      check(
        s.vmState !== "active" && s.vmState !== "paused",
        `cold migration of ${id}, which is ${s.vmState} in Nova now`,
      );
    }
    // 8. Intent before starts: the written status names this start.
    const intent = (this.written()?.inFlight ?? []).find((e) => e.id === id);
    check(
      intent !== undefined && intent.kind === kind &&
        Date.parse(intent.startedAt) >= this.clock.now() - 1000,
      `start of ${id} issued before the status recorded it (${
        JSON.stringify(intent)
      })`,
    );
    return this.#answer(() => {
      const m = kind === "live"
        ? this.world.liveMigrate(id, null)
        : this.world.coldMigrate(id, null);
      this.ours.add(m.id);
      this.chargeable.set(id, (this.chargeable.get(id) ?? 0) + 1);
      return { requestId: `req-${m.id}` } as ActionResult;
    }, (e) => {
      if (e.status !== 409) {
        this.chargeable.set(id, (this.chargeable.get(id) ?? 0) + 1);
      }
    });
  }

  /** A non-idempotent call's answer under the next fault of the cycle. */
  #answer(
    run: () => ActionResult,
    refused?: (e: OpenStackError) => void,
  ): Promise<ActionResult> {
    const fault = this.#faults[this.#startIndex++ % this.#faults.length] ??
      "ok";
    if (fault === "unavailable") {
      return Promise.reject(
        new OpenStackError("503 Service Unavailable", { status: 503 }),
      );
    }
    if (fault === "lost_unprocessed") {
      return new Promise((_, reject) =>
        this.#later(
          this.timeoutMs,
          () => reject(new TimeoutError("timed out", {})),
        )
      );
    }
    let result: ActionResult;
    try {
      result = run();
    } catch (err) {
      const e = toOpenStack(err);
      refused?.(e);
      return Promise.reject(e);
    }
    if (fault === "slow") {
      return new Promise((resolve) =>
        this.#later(20_000, () => resolve(result))
      );
    }
    if (fault === "lost_processed") {
      return new Promise((_, reject) =>
        this.#later(
          this.timeoutMs,
          () => reject(new TimeoutError("timed out", {})),
        )
      );
    }
    return Promise.resolve(result);
  }

  liveMigrate(id: string): Promise<ActionResult> {
    return this.#start(id, "live");
  }

  coldMigrate(id: string): Promise<ActionResult> {
    return this.#start(id, "cold");
  }

  confirmResize(id: string): Promise<ActionResult> {
    this.calls++;
    this.world.advance();
    const m = [...this.world.migrations].reverse().find((x) =>
      x.serverId === id && x.type !== "live-migration" &&
      x.status === "finished"
    );
    check(
      m === undefined || this.ours.has(m.id),
      `confirmed ${id}'s ${m?.type} ${m?.id}, which this drain did not start`,
    );
    try {
      this.world.confirmResize(id);
      return Promise.resolve({} as ActionResult);
    } catch (err) {
      return Promise.reject(toOpenStack(err));
    }
  }

  abortLiveMigration(id: string, migrationId: number): Promise<ActionResult> {
    this.calls++;
    const m = this.world.migrations.find((x) => x.id === migrationId);
    // The world as of the pass's look (the clock stands still in a pass):
    // an abort of a copy already cancelled or ended is one sent twice, or
    // one a look would have told the drain not to send. A refused one
    // (Nova's 400 for a copy in post-copy) did nothing: not counted.
    check(
      !this.aborted.has(migrationId),
      `abort of migration ${migrationId} (${id}) sent twice`,
    );
    check(
      m === undefined || !["cancelled", "completed", "error", "failed"]
        .includes(m.status),
      `abort of migration ${migrationId} (${id}), which Nova shows ${m?.status}`,
    );
    if (this.abortNoSoonerMs !== undefined && m !== undefined) {
      const ranMs = m.copyStartedAt === undefined
        ? undefined
        : this.world.now() - m.copyStartedAt;
      const soonestMs = this.abortNoSoonerMs(m.memoryTotalBytes / 2 ** 20);
      check(
        ranMs !== undefined && ranMs >= soonestMs - 2000,
        `abort of migration ${migrationId} (${id}) ${
          ranMs === undefined ? "before its copy began" : `${ranMs} ms into it`
        }: its policy allows ${soonestMs} ms`,
      );
    }
    try {
      this.world.abortLiveMigration(id, migrationId, 80);
      this.aborted.set(migrationId, id);
      return Promise.resolve({} as ActionResult);
    } catch (err) {
      return Promise.reject(toOpenStack(err));
    }
  }

  /**
   * `GET /servers/{id}/migrations/{mid}` as Nova's API answers it
   * (nova_api.ts `getServerMigration`): the record's saved progress, or
   * `undefined` for Nova's 404 once the copy is not in progress.
   */
  getServerMigration(
    id: string,
    migrationId: number | string,
  ): Promise<ServerMigration | undefined> {
    this.calls++;
    this.progressReads++;
    this.world.advance();
    this.#answerDate();
    const now = this.world.now();
    const m = this.world.migrations.find((x) =>
      String(x.id) === String(migrationId) && x.serverId === id &&
      x.visibleAt <= now
    );
    const s = this.world.servers.get(id);
    if (
      s === undefined || s.deleted || m === undefined ||
      m.type !== "live-migration" || !this.inProgress(m) ||
      m.status === "accepted"
    ) {
      return Promise.resolve(undefined);
    }
    const mem = this.world.savedProgress(m, now);
    return Promise.resolve({
      id: m.id,
      uuid: m.uuid,
      serverUuid: m.serverId,
      status: m.status,
      sourceCompute: m.source,
      destCompute: m.dest,
      createdAt: novaTime(m.createdAt + this.offsetMs),
      updatedAt: m.touched ? novaTime(m.updatedAt + this.offsetMs) : null,
      memoryTotalBytes: mem === null ? null : m.memoryTotalBytes,
      memoryProcessedBytes: mem?.processed ?? null,
      memoryRemainingBytes: mem?.remaining ?? null,
      diskTotalBytes: mem === null ? null : 0,
      diskProcessedBytes: mem === null ? null : 0,
      diskRemainingBytes: mem === null ? null : 0,
    });
  }

  /**
   * `force_complete` (non-idempotent): checked never to be sent twice for
   * one migration, answered with the start calls' faults (a 503, a slow
   * answer, one lost after or before Nova processed it).
   */
  forceCompleteLiveMigration(
    id: string,
    migrationId: number,
  ): Promise<ActionResult> {
    this.calls++;
    check(
      !this.forceCompleted.has(migrationId),
      `force_complete of migration ${migrationId} (${id}) sent twice`,
    );
    this.forceCompleted.set(migrationId, this.clock.now());
    return this.#answer(() => {
      this.world.forceCompleteLiveMigration(id, migrationId);
      return {} as ActionResult;
    });
  }

  findComputeService(host: string): Promise<ComputeService | undefined> {
    this.calls++;
    const h = this.world.hosts.get(host);
    if (h === undefined) return Promise.resolve(undefined);
    return Promise.resolve({
      id: h.serviceId,
      binary: "nova-compute",
      host: h.name,
      status: h.enabled ? "enabled" : "disabled",
      state: h.state,
      disabledReason: h.disabledReason,
      forcedDown: h.forcedDown,
    });
  }

  setComputeServiceStatus(
    id: string,
    enabled: boolean,
    reason?: string,
  ): Promise<ComputeService> {
    this.calls++;
    const h = [...this.world.hosts.values()].find((x) => x.serviceId === id);
    if (h === undefined) throw new RangeError(`no service ${id}`);
    this.world.setService(
      h,
      enabled ? "enabled" : "disabled",
      reason,
      undefined,
    );
    return this.findComputeService(h.name) as Promise<ComputeService>;
  }
}

function toOpenStack(err: unknown): OpenStackError {
  if (!(err instanceof NovaFault)) throw err;
  const details = { status: err.status };
  if (err.status === 409) return new ConflictError(err.message, details);
  if (err.status === 404) return new NotFoundError(err.message, details);
  if (err.status === 400) return new BadRequestError(err.message, details);
  return new OpenStackError(err.message, details);
}

function toServer(s: SimServer): Server {
  return {
    id: s.id,
    name: s.name,
    status: serverStatus(s.vmState, s.taskState),
    host: s.host,
    hypervisorHostname: s.host,
    taskState: s.taskState,
    vmState: s.vmState,
    powerState: s.powerState,
    flavor: { ramMb: s.flavor.ramMb, vcpus: s.flavor.vcpus },
    ...(s.fault === null
      ? {}
      : { fault: { code: s.fault.code, message: s.fault.message } }),
  };
}

function toMigration(m: SimMigration, offsetMs: number): Migration {
  return {
    id: m.id,
    uuid: m.uuid,
    instanceUuid: m.serverId,
    migrationType: m.type,
    status: m.status,
    sourceCompute: m.source,
    destCompute: m.dest,
    sourceNode: m.source,
    destNode: m.dest,
    destHost: null,
    createdAt: novaTime(m.createdAt + offsetMs),
    updatedAt: novaTime(m.updatedAt + offsetMs),
  };
}

/** The Eviction's store: resourceVersions, a merge-patch status write, a lagging cache. */
class EvictionStore {
  object: Eviction;
  cached: Eviction;
  rv = 1;
  constructor(ev: Eviction) {
    this.object = { ...ev, metadata: { ...ev.metadata, resourceVersion: "1" } };
    this.cached = this.object;
  }

  /** Status writes to refuse with a 500 (the API server has trouble). */
  failWrites = 0;
  /** Set when a write was refused (the status shown is the last one written). */
  failedWrite = false;

  write(status: EvictionStatus, expectRv: string | undefined): Eviction {
    if (this.failWrites > 0) {
      this.failWrites--;
      this.failedWrite = true;
      throw new ApiError(
        "PATCH",
        "evictions/e1/status",
        500,
        "Internal",
        "etcd",
      );
    }
    if (
      expectRv !== undefined &&
      expectRv !== this.object.metadata?.resourceVersion
    ) {
      throw new ApiError(
        "PATCH",
        "evictions/e1/status",
        409,
        "Conflict",
        "stale",
      );
    }
    this.rv++;
    this.object = {
      ...this.object,
      metadata: { ...this.object.metadata, resourceVersion: String(this.rv) },
      status,
    };
    return this.object;
  }

  sync(): void {
    // The pass never mutates what it reads (it builds new objects), so
    // sharing is safe; a frozen copy would tell otherwise.
    this.cached = this.object;
  }
}

function mergeStatus(
  current: EvictionStatus | undefined,
  patch: Record<string, unknown>,
): EvictionStatus {
  const out: Record<string, unknown> = { ...(current ?? {}) };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out as EvictionStatus;
}

/** The outcome of one world. */
export interface WorldRun {
  passes: number;
  /** Migrations of ours that completed, per VM, at most. */
  maxMovesPerVm: number;
  novaCalls: number;
  finalReason: string | undefined;
  hostEmpty: boolean;
  /** The Eviction's final status. */
  status: EvictionStatus;
  /** Simulated time the run took (ms). */
  simulatedMs: number;
  /** What the drain kept in its Hypervisor's status.lastDrain. */
  lastDrain: HypervisorStatusLastDrain | undefined;
  /** Aborts Nova accepted from this drain. */
  aborts: number;
  /** force_complete calls this drain sent. */
  forceCompletes: number;
  /** Progress reads (`GET /servers/{id}/migrations/{mid}`). */
  progressReads: number;
}

/**
 * Builds the world of `spec`, drains it with the real pass, and throws an
 * InvariantError at the first broken invariant.
 */
export async function runWorld(spec: WorldSpec): Promise<WorldRun> {
  violations.length = 0;
  const startMs = Date.parse("2026-12-01T00:00:00Z");
  const clock = new ManualClock(startMs);
  const prng = new Prng(spec.seed);
  const scenario = parseScenario({
    seed: spec.seed,
    timing: {
      liveMbPerSecond: 1000,
      coldMbPerSecond: 500,
      jitter: 0.1,
      scheduleSeconds: 0.5,
      prepareSeconds: 2,
      postSeconds: 1,
      recordDelaySeconds: spec.recordDelaySeconds ?? 0.2,
    },
    hosts: [
      {
        name: HOST,
        maxConcurrentLiveMigrations: spec.novaHostLimit,
        permitPostCopy: spec.permitPostCopy ?? false,
      },
      ...OTHERS.map((name, i) => ({
        name,
        ramMb: i === 0 ? 16384 : 65536,
        maxConcurrentLiveMigrations: 2,
      })),
      ...(spec.queuedBeforeStart === true
        ? [{ name: QUEUED_SOURCE, maxConcurrentLiveMigrations: 1 }]
        : []),
    ],
    servers: [],
  });
  const world = new World(scenario, clock, prng);
  if (spec.queuedBeforeStart === true) queueTowardsHost(world, clock);
  spec.vms.forEach((v, i) => {
    const s = world.addServer({
      name: `vm${i}`,
      host: HOST,
      ramMb: v.ramMb,
      status: v.status,
      liveMigrationBlocker: v.blocker ? "vtpm" : null,
      dirtyRateMBps: v.dirtyRateMBps ?? 0,
    });
    if (v.migrationFault !== "none") {
      world.injectMigrationFault(s.id, v.migrationFault, v.faultTimes ?? 2);
    }
  });
  // Someone's VM elsewhere, for a user's own resize.
  const bystander = world.addServer({
    name: "bystander",
    host: "other-b",
    ramMb: 1024,
  });
  const nova = new SimNova(
    world,
    clock,
    spec.startFaults,
    spec.novaClockOffsetMs,
  );
  const metrics = new EvictionMetrics(new Registry());
  const timing = spec.timing ??
    { pollMs: 2000, relistMs: 60_000, settleMs: 6000, rate: 1 };
  /** Simulated ms per real ms of the drain's delays. */
  const rate = timing.rate;
  let policyLimit = spec.limit;
  const policy = (): EvictionPolicy => ({
    metadata: { name: "default", resourceVersion: String(policyLimit) },
    spec: {
      maxConcurrentMigrations: policyLimit,
      abortStuckMigrations: spec.legacy?.abortStuckMigrations ?? false,
      ...(spec.legacy?.migrationTimeoutSeconds === undefined ? {} : {
        migrationTimeoutSeconds: spec.legacy.migrationTimeoutSeconds,
      }),
      ...(spec.convergence === undefined
        ? {}
        : { convergence: spec.convergence }),
    },
  });
  // one Nova, one clock: the drains time by what its answers show
  const novaClock = new NovaClock();
  nova.onServerDate((ms) => novaClock.sample(ms, clock.now()));
  const newLister = () =>
    new NovaLister(nova as unknown as NovaClient, {
      now: () => clock.now(),
      concurrency: 4,
    });
  let lister = newLister();
  const deps: EvictionPassDeps = {
    nova: nova as unknown as NovaClient,
    novaClockOffsetMs: () => novaClock.offsetMs(),
    flagSettings: policySettings({
      maxConcurrentMigrations: spec.limit,
      abortStuckMigrations: false,
    }),
    pollIntervalMs: timing.pollMs,
    maxPollMs: timing.pollMs * 30,
    slowPollMs: timing.pollMs * 10,
    finishedCheckMs: timing.pollMs * 60,
    relistMs: timing.relistMs,
    settleMs: timing.settleMs,
    ...(spec.progressIntervalMs === undefined
      ? {}
      : { progressIntervalMs: spec.progressIntervalMs }),
    planOptions: {
      retryBaseMs: 5_000,
      retryCapMs: 20_000,
      maxAttempts: 3,
      retryWindowMs: spec.retryWindowMs,
    },
    clock: { now: () => clock.now(), rate: timing.rate },
    memory: new DrainMemory(new PollingInformer(lister), novaClock),
    metrics,
    actConcurrency: 4,
    waveSettleMs: 15_000,
  };
  nova.written = () => store.object.status;
  const store = new EvictionStore({
    metadata: {
      name: EVICTION,
      generation: 1,
      creationTimestamp: new Date(clock.now()).toISOString(),
    },
    spec: {
      hypervisor: HOST,
      reason: "simulation",
      ...(spec.evictionConvergence === undefined
        ? {}
        : { convergence: spec.evictionConvergence }),
    },
  });
  // What the drain keeps in its Hypervisor's status (hypervisor_last_drain.ts).
  let lastDrain: HypervisorStatusLastDrain | undefined;
  const hypervisor = (): Hypervisor => ({
    metadata: { name: HOST },
    spec: {},
    status: {
      ...(lastDrain === undefined ? {} : { lastDrain }),
      traits: [],
      numInstances: world.listServers().filter((s) => s.host === HOST).length,
      conditions: [{
        type: "TraitsUpdated",
        status: "True",
        reason: "Updated",
        message: "",
        lastTransitionTime: new Date(0).toISOString(),
      }],
    },
  } as Hypervisor);
  let wakeAt: number | undefined;
  const feed = notifiedFeed(world, clock, spec, () => passes);
  const watch = () =>
    feed === undefined ? undefined : new NotifiedInformer(
      feed.feed,
      lister,
      () => {
        wakeAt = clock.now();
      },
      () => clock.now(),
      {
        pollMs: timing.pollMs,
        relistMs: timing.relistMs,
        finishedCheckMs: timing.pollMs * 60,
        rate,
      },
    );
  let watches = watch();
  nova.notified = feed !== undefined;
  deps.memory = new DrainMemory(
    watches ?? new PollingInformer(lister),
    novaClock,
  );
  const cache = <U extends KubeObject>(kind: Kind<U>) => {
    const one = (): U | undefined =>
      (kind === (EvictionKind as unknown as Kind<U>)
        ? store.cached
        : kind === (HypervisorKind as unknown as Kind<U>)
        ? hypervisor()
        : kind === (EvictionPolicyKind as unknown as Kind<U>)
        ? policy()
        : undefined) as U | undefined;
    return {
      get: () => one(),
      list: (filter?: (o: U) => boolean) => {
        const o = one();
        return o === undefined || (filter !== undefined && !filter(o))
          ? []
          : [o];
      },
      has: () => one() !== undefined,
      keys: () => [],
      size: 1,
    };
  };
  const client = {
    patch: (
      kind: unknown,
      _key: string,
      body: {
        metadata?: { resourceVersion?: string };
        status?: Record<string, unknown>;
      },
    ) => {
      if (kind === HypervisorKind) {
        lastDrain = body.status?.lastDrain as HypervisorStatusLastDrain;
        return Promise.resolve(hypervisor());
      }
      if (body.status === undefined) return Promise.resolve(store.object);
      try {
        return Promise.resolve(
          store.write(
            mergeStatus(store.object.status, body.status),
            body.metadata?.resourceVersion,
          ),
        );
      } catch (err) {
        return Promise.reject(err);
      }
    },
  } as unknown as KubeClient;
  // The framework's read-your-writes (framework/controller.ts): a pass
  // sees this process's last write while the lagging cache is older.
  let written = new WrittenObjects<Eviction, Eviction>();
  const rvOf = (e: Eviction) => e.metadata?.resourceVersion;
  const ctxFor = (): HandlerContext<Eviction> => {
    const mine = written.resolve(EVICTION, rvOf(store.cached));
    let base = mine?.raw ?? store.cached;
    const ctx: HandlerContext<Eviction> = {
      key: EVICTION,
      name: EVICTION,
      namespace: undefined,
      object: mine?.parsed ?? store.cached,
      kind: EvictionKind,
      client,
      logger: LOGGER,
      signal: SIGNAL,
      cache: cache as unknown as HandlerContext<Eviction>["cache"],
      event: () => Promise.resolve(),
      // as the framework's: guarded by the version the pass knows, a 409
      // re-reads and re-applies
      updateStatus: async (mutate) => {
        const older = [rvOf(base), rvOf(store.cached)];
        for (let attempt = 1;; attempt++) {
          const next = await mutate({ ...base.status }, base);
          try {
            const w = store.write(next ?? {}, rvOf(base));
            written.remember(EVICTION, w, w, rvOf(w) ?? "", older);
            base = w;
            ctx.object = w;
            return w;
          } catch (err) {
            if (!(err instanceof ApiError && err.status === 409)) throw err;
            if (attempt >= 5) throw err;
            base = store.object;
            older.push(rvOf(base));
          }
        }
      },
      latest: (e) => written.peek(EVICTION, rvOf(e))?.parsed ?? e,
      enqueue: () => {
        wakeAt = clock.now();
      },
    };
    return ctx;
  };

  // The drain's resolved policy, where it bounds copies (Abort, ForceComplete).
  const resolved = drainConvergence(
    policySettings(policy().spec),
    [],
    spec.evictionConvergence,
  );
  const bounded = resolved.onTimeout === "Report" ? undefined : resolved;
  const progressMs = (spec.progressIntervalMs ?? DEFAULT_PROGRESS_INTERVAL_MS) *
    rate;
  nova.abortNoSoonerMs = bounded === undefined
    ? undefined
    : (ramMb) =>
      1000 * Math.min(
        copyTimeoutSeconds(bounded, ramMb) ?? Infinity,
        bounded.progressTimeoutSeconds,
      );
  const limitNow = () => Math.min(policyLimit, spec.limit);
  const oursInProgress = () =>
    world.migrations.filter((m) =>
      nova.ours.has(m.id) && m.source === HOST &&
      (nova.inProgress(m) ||
        (m.type !== "live-migration" && m.status === "finished"))
    ).length;
  const onHost = () =>
    world.listServers().filter((s) => s.host === HOST && s.id !== bystander.id);

  const lastEventPass = spec.events.reduce((m, e) => Math.max(m, e.atPass), 0);
  let passes = 0;
  let settledPasses = 0;
  let restarted = false;
  let lastNumInstances = -1;
  let forceArmed = false;
  const passTimes: number[] = [];
  /** When the status first said Succeeded with a VM on or heading here. */
  let wrongSince: number | undefined;
  // A feed gone silent after it was proven is found out at the relist
  // at the latest: its passes (no Nova call) wait that long.
  const maxPasses = 400 +
    (feed === undefined ? 0 : Math.ceil(2 * timing.relistMs / timing.pollMs));
  for (; passes < maxPasses; passes++) {
    // World events due at this pass.
    for (const ev of spec.events.filter((e) => e.atPass === passes)) {
      applyEvent(ev);
    }
    nova.observed = false;
    store.failedWrite = false;
    // 7. Bounded passes per simulated second (immediate wakes are
    // honoured, so a hot loop shows up here).
    passTimes.push(clock.now());
    while ((passTimes[0] ?? Infinity) <= clock.now() - 1000) passTimes.shift();
    check(
      passTimes.length <= MAX_PASSES_PER_SECOND,
      `${passTimes.length} passes within one simulated second`,
    );
    wakeAt = undefined;
    const before = oursInProgress();
    const limitInForce = limitNow();
    // The cache catches up with the store most of the time, not always.
    if (!restarted && prng.next() < 0.7) store.sync();
    restarted = false;
    checkCopyBounds();
    let result: { requeueAfterMs?: number | undefined };
    const rvBefore = store.rv;
    const startsBefore = nova.startCalls;
    try {
      result = await reconcileEviction(ctxFor(), deps);
    } catch (err) {
      if (
        !(err instanceof ApiError) &&
        !(err instanceof Error && err.name === "TemporaryError")
      ) throw err;
      // The framework retries a failed pass after a backoff.
      result = { requeueAfterMs: deps.pollIntervalMs };
    }
    await flush();
    if (violations.length > 0) {
      throw new InvariantError(violations.splice(0).join("; "));
    }
    // 10. The status is written from one place: once at the pass's end,
    // and before starts (the intent; no cluster budget here).
    const allowed = nova.startCalls > startsBefore ? 2 : 1;
    check(
      store.rv - rvBefore <= allowed,
      `${store.rv - rvBefore} status writes in one pass (${
        nova.startCalls - startsBefore
      } starts)`,
    );
    const status = store.object.status ?? {};
    const evicting = status.conditions?.find((c) => c.type === "Evicting");
    // 1. Succeeded only on a fresh list showing nothing on or heading here.
    if (evicting?.reason === "Succeeded") {
      check(
        status.outstandingCount === 0 && status.inFlightCount === 0,
        `Succeeded with counts ${status.outstandingCount}/${status.inFlightCount}`,
      );
    }
    if (
      evicting?.reason === "Succeeded" && nova.observed && !store.failedWrite
    ) {
      check(
        nova.listedServers.length === 0,
        `Succeeded while the pass's list showed ${nova.listedServers.length} servers`,
      );
      check(
        nova.listedTouching.length === 0,
        `Succeeded while migrations ${nova.listedTouching.join()} touched the host`,
      );
    }
    // 6. Never reported empty beyond the window: a Succeeded standing while
    // a VM is on or heading to the host is corrected by a look within the
    // time the drain had been finished when it came (at least a poll
    // interval, at most the finished check), plus a poll interval.
    const finishedAtMs = Date.parse(status.finishedAt ?? "");
    if (
      !Number.isNaN(finishedAtMs) &&
      (onHost().length > 0 || nova.shownTouching(HOST).length > 0)
    ) {
      wrongSince ??= clock.now();
      const window = Math.min(
        deps.finishedCheckMs * rate,
        Math.max(deps.pollIntervalMs * rate, wrongSince - finishedAtMs),
      ) + deps.pollIntervalMs * rate;
      check(
        clock.now() - wrongSince <= window,
        `reported empty for ${
          clock.now() - wrongSince
        } ms with a VM on or heading to the host (window ${window} ms)`,
      );
    } else wrongSince = undefined;
    // 2. Starts never push ours in flight above the limit in force.
    const after = oursInProgress();
    check(
      after <= Math.max(limitInForce, before),
      `${after} in flight after the pass, limit ${limitInForce}, ${before} before`,
    );
    // 9. Only our own migrations count as migrated (not a VM its owner or
    // an admin moved away). With notifications, a VM someone else moves
    // while the outcome of our start of it is unknown (held in flight
    // until a direct look after its answer) may be counted as ours: a
    // view whose events name no request cannot tell the two apart. It is
    // still a VM that left the host, never one counted twice.
    const oursDone = world.migrations.filter((m) =>
      (nova.ours.has(m.id) || nova.notified) && m.source === HOST &&
      ["completed", "confirmed", "finished"].includes(m.status)
    ).length;
    check(
      (status.migratedCount ?? 0) <= oursDone,
      `migratedCount ${status.migratedCount} but ${oursDone} migrations of ours ended`,
    );
    checkCopyBounds();
    // 12. Never Succeeded with a copy of ours still running (the pass's
    // look showed none: 1 checks its list, this the world as it stands).
    if (evicting?.reason === "Succeeded" && nova.observed) {
      const running = nova.touching(HOST).filter((m) =>
        nova.ours.has(m.id)
      );
      check(
        running.length === 0,
        `Succeeded while copies ${running.map((m) => m.id).join()} ran`,
      );
    }
    // 5. No failure charged for a start Nova never processed.
    for (const f of status.failed ?? []) {
      check(
        f.attempts <= (nova.chargeable.get(f.id) ?? 0),
        `${f.id} charged ${f.attempts} attempts, Nova processed ${
          nova.chargeable.get(f.id) ?? 0
        } of its starts`,
      );
    }

    // Time moves on: to the next pass, or earlier when an answer wakes it.
    const delay = (result.requeueAfterMs ?? deps.finishedCheckMs) * rate;
    let next = clock.now() + delay;
    // A wake during the pass or from an answer that came at once (a 503):
    // the framework runs the pass again right away.
    if (wakeAt !== undefined) {
      next = Math.min(next, wakeAt);
    }
    wakeAt = undefined;
    if (forceArmed && status.finishedAt !== undefined && delay > 1000 * rate) {
      // 1 s after Succeeded an admin forces a VM onto the host.
      forceArmed = false;
      clock.advance(1000);
      const s = world.addServer({
        name: `forced-late${passes}`,
        host: "other-c",
        ramMb: 1024,
      });
      world.liveMigrate(s.id, HOST, true);
      wrongSince ??= clock.now();
    }
    for (;;) {
      const due = nova.answers.filter((a) => a.atMs <= next).sort((a, b) =>
        a.atMs - b.atMs
      )[0];
      if (due === undefined) {
        break;
      }
      clock.advance(Math.max(0, due.atMs - clock.now()));
      nova.answers.splice(nova.answers.indexOf(due), 1);
      due.settle();
      await flush();
      if (violations.length > 0) {
        throw new InvariantError(violations.splice(0).join("; "));
      }
      if (wakeAt !== undefined) {
        next = Math.min(next, wakeAt);
        break;
      }
    }
    if (feed === undefined) {
      clock.advance(Math.max(0, next - clock.now()));
      world.advance();
    } else {
      // Events arrive on their own time and may wake the drain early.
      while (clock.now() < next && wakeAt === undefined) {
        clock.advance(Math.min(FEED_STEP_MS, next - clock.now()));
        world.advance();
        feed.deliverDue();
      }
      wakeAt = undefined;
    }
    // The Hypervisor's status sync: a changed instance count wakes the drain.
    const count = onHost().length;
    if (count !== lastNumInstances) lastNumInstances = count;

    if (passes > lastEventPass && nova.answers.length === 0) {
      const touching = nova.touching(HOST).length;
      const done = evicting?.reason === "Succeeded" &&
        onHost().length === 0 && touching === 0;
      const stuck = stoppedForPerson(evicting?.reason);
      if (done || stuck) settledPasses++;
      if (settledPasses > 3) break;
    }
  }
  const status = store.object.status ?? {};
  const evicting = status.conditions?.find((c) => c.type === "Evicting");
  // 11, at the end: no VM moved twice.
  const moves = [...nova.completedOurs()].filter(([, n]) => n > 1);
  check(moves.length === 0, `VMs moved twice: ${JSON.stringify(moves)}`);
  checkAbortedAccounted(status);
  if (evicting?.reason === "Succeeded") {
    check(
      onHost().length === 0,
      `ended Succeeded with ${onHost().length} servers on the host`,
    );
    const copying = nova.touching(HOST).filter((m) => nova.ours.has(m.id));
    check(
      copying.length === 0,
      `ended Succeeded with copies ${copying.map((m) => m.id).join()} running`,
    );
    // 9, its lower side: with nobody else moving VMs (no events) and a
    // drain that saw every answer, each VM our migrations moved is counted.
    if (spec.events.length === 0 && spec.notified === undefined) {
      const moved = nova.completedOurs().size;
      check(
        status.migratedCount === moved,
        `migratedCount ${status.migratedCount} but our migrations moved ${moved} VMs`,
      );
    }
  }
  if (
    passes >= maxPasses && onHost().length === 0 &&
    nova.touching(HOST).length === 0 && nova.answers.length === 0
  ) {
    check(
      evicting?.reason === "Succeeded",
      `host empty but the drain ended ${evicting?.reason}: ${
        JSON.stringify({ ...status, conditions: undefined })
      } ${evicting?.message} world: ${
        JSON.stringify((status.inFlight ?? []).map((e) => ({
          server: world.servers.get(e.id),
          migrations: world.migrations.filter((m) => m.serverId === e.id),
        })))
      }`,
    );
  }
  return {
    passes,
    maxMovesPerVm: Math.max(0, ...nova.completedOurs().values()),
    status,
    novaCalls: nova.calls,
    finalReason: evicting?.reason,
    hostEmpty: onHost().length === 0,
    simulatedMs: clock.now() - startMs,
    lastDrain,
    aborts: nova.aborted.size,
    forceCompletes: nova.forceCompleted.size,
    progressReads: nova.progressReads,
  };

  /**
   * 13. With onTimeout Abort or ForceComplete, no copy of ours runs (pre-
   * copy: one in post-copy runs on its destination already, and Nova
   * cannot abort it) past its policy's bound (plus the force-complete
   * timeout) plus one progress interval plus {@linkcode boundSlackMs}.
   */
  function checkCopyBounds(): void {
    if (bounded === undefined) return;
    const now = world.now();
    for (const m of world.migrations) {
      if (
        !nova.ours.has(m.id) || m.type !== "live-migration" ||
        m.status !== "running" || m.copyStartedAt === undefined
      ) continue;
      const ramMb = m.memoryTotalBytes / 2 ** 20;
      const boundS = copyTimeoutSeconds(bounded, ramMb);
      if (boundS === undefined) continue;
      const limitMs = boundS * 1000 +
        (bounded.onTimeout === "ForceComplete"
          ? bounded.forceCompleteTimeoutSeconds * 1000
          : 0) +
        progressMs + boundSlackMs(timing);
      check(
        now - m.copyStartedAt <= limitMs,
        `copy ${m.id} of ${m.serverId} (${ramMb} MB) running ${
          now - m.copyStartedAt
        } ms, past its bound ${limitMs} ms (${bounded.onTimeout})`,
      );
    }
  }

  /**
   * 14. Every VM with a copy our abort ended is migrated in the end, started
   * again later, or left for a person (in status.failed): never dropped. A
   * drain still running when the world stops (its passes spent) may still
   * have it waiting for its retry, in the line of VMs to move.
   */
  function checkAbortedAccounted(status: EvictionStatus): void {
    const failed = new Set((status.failed ?? []).map((f) => f.id));
    const running = evicting?.reason === "Running";
    const waiting = new Set(running ? status.outstandingInstances ?? [] : []);
    for (const [mid, id] of nova.aborted) {
      const s = world.servers.get(id);
      if (s === undefined || s.deleted || s.host !== HOST) continue;
      const again = world.migrations.some((m) =>
        m.serverId === id && m.id > mid && nova.ours.has(m.id)
      );
      check(
        again || failed.has(id) || waiting.has(id),
        `${id}'s copy ${mid} was aborted, and it was neither started again ` +
          `nor left for a person (${evicting?.reason})`,
      );
    }
  }

  function applyEvent(ev: WorldSpec["events"][number]): void {
    const list = onHost();
    const pick = <T>(xs: T[]): T | undefined =>
      xs[ev.pick % Math.max(1, xs.length)];
    switch (ev.what) {
      case "arrive":
        world.addServer({ name: `arrived${passes}`, host: HOST, ramMb: 1024 });
        return;
      case "arrive_incoming":
      case "incoming_during_pass": {
        const go = () => {
          const s = world.addServer({
            name: `incoming${passes}`,
            host: "other-c",
            ramMb: 2048,
          });
          world.liveMigrate(s.id, HOST, true);
        };
        if (ev.what === "arrive_incoming") go();
        else nova.duringPass = go;
        return;
      }
      case "arrive_during_pass":
        nova.duringPass = () =>
          world.addServer({ name: `forced${passes}`, host: HOST, ramMb: 512 });
        return;
      case "delete": {
        const s = pick(list);
        if (s !== undefined) world.deleteServer(s.id);
        return;
      }
      case "power": {
        const s = pick(list);
        if (s === undefined || s.taskState !== null) return;
        if (s.vmState === "active") world.setPower(s.id, false);
        else if (s.vmState === "stopped") world.setPower(s.id, true);
        return;
      }
      case "user_resize": {
        const s = ev.pick % 2 === 0 ? pick(list) : bystander;
        if (s === undefined || s.deleted || s.taskState !== null) return;
        if (s.vmState !== "active" && s.vmState !== "stopped") return;
        try {
          // a resize changes the flavor (Nova refuses the same one)
          world.resize(s.id, s.flavor.ramMb > 512 ? s.flavor.ramMb / 2 : 1024);
        } catch {
          // no room: nothing happens
        }
        return;
      }
      case "lower_policy":
        policyLimit = Math.max(1, policyLimit - 1);
        return;
      case "write_fails":
        store.failWrites++;
        return;
      case "owner_confirms":
        // Owners confirm their own resizes (the drain never does).
        for (const m of world.migrations) {
          if (m.type === "resize" && m.status === "finished") {
            world.confirmResize(m.serverId);
          }
        }
        return;
      case "restart":
        // The controller restarts: its memory is gone, the status stays;
        // answers to the old process's calls reach nobody.
        watches?.close();
        lister = newLister();
        watches = watch();
        deps.memory = new DrainMemory(
          watches ?? new PollingInformer(lister),
          novaClock,
        );
        written = new WrittenObjects<Eviction, Eviction>();
        nova.answers.length = 0;
        // A new process lists before it reconciles: its cache is current.
        store.sync();
        restarted = true;
        return;
      case "forced_after_succeeded":
        forceArmed = true;
        return;
      case "fault_next": {
        const s = pick(list);
        if (s !== undefined) world.injectMigrationFault(s.id, "fail", 1);
        return;
      }
    }
  }
}

/**
 * The slack of the copy bound (invariant 13) for pass timing: the pass that
 * sees a deadline passed comes up to a poll interval after it (the drain
 * polls while copies run), the abort of a force-completed copy may wait
 * for the fallback's next look (one more poll), Nova's answers date to the
 * whole second, and its record's progress is the monitor's save, up to
 * 5 s old.
 */
export function boundSlackMs(
  timing: { pollMs: number; rate: number },
): number {
  return 2 * timing.pollMs * timing.rate + 1000 + 5000;
}

/** Lets promise callbacks (start answers) run. */
async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

/** The feed's delivery step while time moves between passes (simulated ms). */
const FEED_STEP_MS = 250;

/**
 * The simulator's notifications through a lossy feed (`spec.notified`),
 * delivered as the clock passes their delivery time; undefined without
 * notifications.
 */
function notifiedFeed(
  world: World,
  clock: ManualClock,
  spec: WorldSpec,
  passNow: () => number,
): { feed: MemoryFeed; deliverDue: () => void } | undefined {
  const n = spec.notified;
  if (n === undefined) return undefined;
  const feed = new MemoryFeed();
  const prng = new Prng(spec.seed ^ 0x5f3759df);
  const held: Array<{ atMs: number; n: NovaNotification }> = [];
  let downSince: number | undefined;
  const named: string[] = [];
  const sent: NovaNotification[] = [];
  let forged = 0;
  world.onNotification((key, envelope) => {
    const pass = passNow();
    if (n.silentFromPass !== undefined && pass >= n.silentFromPass) return;
    if (prng.next() < n.drop) return;
    let parsed = parseSimEnvelope(key, envelope);
    if (prng.next() < (n.dropEnds ?? 0) && endsLiveMigration(parsed)) return;
    const copies = prng.next() < n.duplicate ? 2 : 1;
    const id = parsed.instance?.uuid;
    if (id !== undefined && !named.includes(id)) named.push(id);
    if (prng.next() < (n.misattribute ?? 0)) parsed = misattributed(parsed);
    const lies: NovaNotification[] = [];
    const stamp = parsed.timestampMs;
    if (prng.next() < (n.replay ?? 0) && sent.length > 0) {
      const old = sent[Math.floor(prng.next() * sent.length)];
      if (old !== undefined) {
        lies.push({
          ...old,
          messageId: `replay-${forged++}`,
          timestampMs: stamp,
        });
      }
    }
    const vm = named[Math.floor(prng.next() * named.length)];
    if (prng.next() < (n.forge ?? 0) && vm !== undefined) {
      lies.push(forgedArrival(vm, `forged-${forged++}`, stamp));
    }
    sent.push(parsed);
    for (const m of [parsed, ...lies]) {
      for (let i = 0; i < copies; i++) {
        held.push({ atMs: clock.now() + prng.next() * n.delayMaxMs, n: m });
      }
    }
  });
  const deliverDue = () => {
    const pass = passNow();
    if (
      n.downAtPass !== undefined && pass >= n.downAtPass &&
      pass < n.downAtPass + 3
    ) {
      downSince ??= pass;
      feed.down();
    } else if (downSince !== undefined) {
      downSince = undefined;
      feed.up();
    }
    held.sort((a, b) => a.atMs - b.atMs);
    while ((held[0]?.atMs ?? Infinity) <= clock.now()) {
      const due = held.shift();
      if (due !== undefined) feed.publish(due.n);
    }
  };
  return { feed, deliverDue };
}

/** Whether an event ends a live migration: its last steps, or the move itself. */
function endsLiveMigration(n: NovaNotification): boolean {
  if (n.eventType.startsWith("instance.live_migration_post")) return true;
  return n.eventType === "instance.update" && n.instance !== undefined &&
    n.instance.host !== HOST && n.instance.taskState === null;
}

/** `n` naming the wrong host: another for the drained one, or the drained one. */
function misattributed(n: NovaNotification): NovaNotification {
  if (n.instance === undefined) return n;
  const host = n.instance.host === HOST ? "elsewhere" : HOST;
  return {
    ...n,
    publisherHost: host,
    publisherId: `nova-compute:${host}`,
    instance: { ...n.instance, host, node: host },
  };
}

/** A forged update that places `vm` on the drained host at rest. */
function forgedArrival(
  vm: string,
  messageId: string,
  timestampMs: number,
): NovaNotification {
  return {
    messageId,
    eventType: "instance.update",
    publisherId: "nova-conductor:forger",
    publisherHost: "forger",
    timestampMs,
    priority: "info",
    instance: {
      uuid: vm,
      host: HOST,
      node: HOST,
      vmState: "active",
      taskState: null,
      powerState: 1,
    },
  };
}
