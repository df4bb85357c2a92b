/**
 * The simulated cloud: hosts, servers and migration records, and the engine
 * that moves migrations through Nova's real status sequences on the
 * simulator's virtual clock. HTTP lives elsewhere; this file only knows the
 * rules (which state allows which action, where the scheduler may send a
 * server, how long a migration takes).
 *
 * @module
 */

import {
  CONTROLLER_HOST,
  type InstanceSnapshot,
  type NotificationListener,
  SimNotifier,
} from "./notifier.ts";
import type { Prng } from "./prng.ts";
import type { Scenario } from "./scenario.ts";
import type { SimClock } from "./sim_clock.ts";

/**
 * An API-level refusal, answered with Nova's status code and message.
 *
 * @example
 * ```ts
 * import { NovaFault } from "./world.ts";
 * const err = new NovaFault(409, "Cannot 'os-migrateLive' instance x while it is in task_state migrating");
 * console.log(err.message);
 * ```
 */
export class NovaFault extends Error {
  /** HTTP status. */
  readonly status: number;
  /** Placement error code, e.g. `placement.concurrent_update`. */
  readonly code: string | undefined;
  /** Creates a fault. */
  constructor(status: number, message: string, code?: string) {
    super(message);
    this.status = status;
    this.code = code;
    this.name = "NovaFault";
  }
}

/** A compute host with its hypervisor, service and resource provider. */
export interface SimHost {
  /** Service host and hypervisor hostname. */
  name: string;
  /** RAM capacity, MB. */
  ramMb: number;
  /** vCPU capacity. */
  vcpus: number;
  /** Placement traits of its resource provider. */
  traits: string[];
  /** Resource provider generation. */
  rpGeneration: number;
  /** Compute service enabled. */
  enabled: boolean;
  /** Reason when disabled. */
  disabledReason: string | null;
  /** Service up or down. */
  state: "up" | "down";
  /** Forced down by an operator. */
  forcedDown: boolean;
  /** Nova's max_concurrent_live_migrations on this host. */
  maxConcurrentLiveMigrations: number;
  /** Availability zone. */
  zone: string;
  /** Hypervisor (and resource provider) UUID. */
  hypervisorId: string;
  /** Hypervisor integer id (before 2.53). */
  hypervisorIntId: number;
  /** Service UUID. */
  serviceId: string;
  /** Service integer id (before 2.53). */
  serviceIntId: number;
  /** Host IP. */
  hostIp: string;
  /** Service update time (virtual ms). */
  updatedAt: number;
  /** Live-migration copy rate from this host (MB of RAM per virtual second). */
  copyMbPerSecond: number;
  /** `[libvirt] live_migration_downtime` (ms). */
  maxDowntimeMs: number;
  /** `[libvirt] live_migration_permit_post_copy`. */
  permitPostCopy: boolean;
  /** `[libvirt] live_migration_completion_timeout` (s per GiB; 0 = off). */
  completionTimeoutPerGiB: number;
  /** `[libvirt] live_migration_timeout_action`. */
  timeoutAction: "abort" | "force_complete";
}

/** Nova vm_state values the simulator uses. */
export type VmState =
  | "active"
  | "stopped"
  | "paused"
  | "suspended"
  | "rescued"
  | "error"
  | "resized";

/** A server (VM). */
export interface SimServer {
  /** UUID. */
  id: string;
  /** Display name. */
  name: string;
  /** Project. */
  projectId: string;
  /** User. */
  userId: string;
  /** Flavor. */
  flavor: {
    name: string;
    ramMb: number;
    vcpus: number;
    disk: number;
    extraSpecs?: Record<string, string>;
  };
  /** Current host, null when never scheduled. */
  host: string | null;
  /** vm_state. */
  vmState: VmState;
  /** vm_state before a cold migration (to restore on confirm). */
  vmStateBeforeResize: VmState | null;
  /** task_state. */
  taskState: string | null;
  /** power_state: 1 running, 3 paused, 4 shutdown, 7 suspended. */
  powerState: number;
  /** Set only when ERROR. */
  fault: { code: number; message: string; created: number } | null;
  /** Creation time (virtual ms). */
  created: number;
  /** Last update (virtual ms). */
  updated: number;
  /** Deleted servers answer 404. */
  deleted: boolean;
  /** Locked servers refuse actions. */
  locked: boolean;
  /**
   * Why Nova refuses to live-migrate this server (a legacy vTPM or an SEV
   * guest), or null when it can be live-migrated.
   */
  liveMigrationBlocker: LiveMigrationBlocker | null;
  /** user_data as Nova stores it (base64), or null. */
  userData: string | null;
  /** Guest memory dirtied per second while it runs (MB/s; 0: none). */
  dirtyRateMBps: number;
}

/** Why Nova refuses to live-migrate a server. */
export type LiveMigrationBlocker = "vtpm" | "sev";

/** What will go wrong with a migration. */
export type MigrationFaultKind =
  | "none"
  | "fail"
  | "error"
  | "stuck"
  | "delete"
  | "strand";

/** A migration record. */
export interface SimMigration {
  /** Integer id. */
  id: number;
  /** UUID. */
  uuid: string;
  /** The server. */
  serverId: string;
  /** live-migration, migration (cold) or resize (a user's new flavor). */
  type: "live-migration" | "migration" | "resize";
  /** Nova status. */
  status: string;
  /** Source host. */
  source: string;
  /** Destination host, once scheduled. */
  dest: string | null;
  /** Creation time (virtual ms). */
  createdAt: number;
  /** Last update (virtual ms). */
  updatedAt: number;
  /** When the current phase ends (virtual ms); undefined = waits. */
  phaseEndsAt: number | undefined;
  /** Length of the copy phase (virtual ms), RAM-proportional with jitter. */
  copyMs: number;
  /** When the copy phase started (virtual ms). */
  copyStartedAt: number | undefined;
  /** Injected fault. */
  fault: MigrationFaultKind;
  /** Guest RAM in bytes. */
  memoryTotalBytes: number;
  /** Project and user of the server. */
  projectId: string;
  /** User of the server. */
  userId: string;
  /** A live migration to a named host with `force` (the scheduler skipped). */
  forced: boolean;
  /** Flavor RAM after a resize (MB); the server's own RAM otherwise. */
  newRamMb: number;
  /** The request id of the action that started it (its instance action). */
  requestId?: string;
  /**
   * Changed since its creation: Nova's fresh record has `updated_at: null`,
   * which a `changes-since` filter excludes (SQL NULL compares false).
   */
  touched: boolean;
  /**
   * When the record can be listed (virtual ms): Nova's API answers a live
   * migration's 202 before the conductor has written the record (0.08-0.35 s
   * on real Zed).
   */
  visibleAt: number;
  /**
   * A live migration's checks passed (source node and destination known):
   * until then Nova's record has `source_node`, `dest_node` null, and a
   * conductor-failed record keeps them null.
   */
  scheduled: boolean;
  /**
   * When the server went ACTIVE on the destination (virtual ms): on real Zed
   * that is about 0.3 s before the record says `completed`.
   */
  movedAt?: number;
  /**
   * When `post_live_migration_at_destination` failed (virtual ms; the
   * `strand` fault): the record still completes, but the server stays
   * MIGRATING (task_state migrating) on the source until `os-resetState`.
   */
  postFailedAt?: number;
  /** When it took one of the source's slots (`preparing`, virtual ms). */
  slotAt?: number;
  /** Guest memory dirtied while the copy runs, bytes per virtual ms. */
  dirtyBytesPerMs: number;
  /**
   * The pre-copy model's last anchor (remaining and processed bytes at a
   * virtual time); undefined for a plain copy (no dirty rate, not forced),
   * which takes `copyMs` as it always did.
   */
  track?: { at: number; remaining: number; processed: number };
  /**
   * `force_complete` took effect (or Nova's own timeout action did): the VM
   * paused on the source until the copy converges, or post-copy (the VM
   * runs on the destination, which pulls the rest).
   */
  switchedTo?: "paused" | "post-copy";
  /**
   * When Nova's own `live_migration_completion_timeout` acts (virtual ms),
   * set when the copy starts on a host with the timeout on.
   */
  novaTimeoutAt?: number | undefined;
}

/** One event of an instance action (`os-instance-actions/{request_id}`). */
export interface SimActionEvent {
  /** Nova's event name, e.g. `conductor_live_migrate_instance`. */
  event: string;
  /** Start (virtual ms). */
  startTime: number;
  /** End (virtual ms), null while it runs. */
  finishTime: number | null;
  /** `Success` or `Error`, null while it runs. */
  result: "Success" | "Error" | null;
  /** The failure's message (2.84+), null on success. */
  details: string | null;
  /** Where it ran. */
  host: string;
}

/** An instance action: what Nova records per request on a server. */
export interface SimInstanceAction {
  /** The server. */
  serverId: string;
  /** The request id of the API call. */
  requestId: string;
  /** `live-migration`, `migrate`, `confirmResize`. */
  action: string;
  /** Start (virtual ms). */
  startTime: number;
  /** Last update (virtual ms). */
  updatedAt: number;
  /** `Error` once an event failed, else null. */
  message: string | null;
  /** Its events, in order. */
  events: SimActionEvent[];
}

/**
 * A live migration's status once it switched to post-copy (libvirt
 * migration.py `trigger_postcopy_switch`): the VM runs on the destination.
 * Nova's API does not count it as in progress (server migrations 404 it,
 * abort and force_complete refuse it).
 */
export const POST_COPY = "running (post-copy)";

/** `[libvirt] live_migration_monitor_interval`: stats saved this often (ms). */
const MONITOR_INTERVAL_MS = 5000;

/** In-progress statuses of live migrations (the simulator's view). */
export const LIVE_IN_PROGRESS = [
  "queued",
  "preparing",
  "running",
  POST_COPY,
  "post-migrating",
];
/** Statuses of a live migration that hold a concurrency slot on the source. */
const LIVE_ACTIVE = ["preparing", "running", POST_COPY, "post-migrating"];
/** In-progress statuses of cold migrations (resources claimed on dest). */
const COLD_IN_PROGRESS = ["pre-migrating", "migrating", "post-migrating"];

/**
 * Formats a time as Nova does (`2026-01-02T03:04:05.000000`, UTC, no zone).
 *
 * @example
 * ```ts
 * import { novaTime } from "./world.ts";
 * console.log(novaTime(0)); // 1970-01-01T00:00:00.000000
 * ```
 */
export function novaTime(ms: number): string {
  // Nova's database keeps whole seconds: the fraction is always zero.
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(
    /\.(\d{3})Z$/,
    ".000000",
  );
}

/**
 * Formats a time as the servers API does (`2026-01-02T03:04:05Z`).
 *
 * @example
 * ```ts
 * import { serverTime } from "./world.ts";
 * console.log(serverTime(0)); // 1970-01-01T00:00:00Z
 * ```
 */
export function serverTime(ms: number): string {
  return new Date(Math.floor(ms)).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/**
 * Nova's status of a server from its vm_state and task_state.
 *
 * @example
 * ```ts
 * import { serverStatus } from "./world.ts";
 * console.log(serverStatus("active", "migrating")); // MIGRATING
 * ```
 */
export function serverStatus(
  vmState: VmState,
  taskState: string | null,
): string {
  if (vmState === "active" || vmState === "stopped") {
    if (taskState === "migrating") return "MIGRATING";
    if (taskState !== null && taskState.startsWith("resize_")) return "RESIZE";
  }
  switch (vmState) {
    case "active":
      return "ACTIVE";
    case "stopped":
      return "SHUTOFF";
    case "paused":
      return taskState === "migrating" ? "MIGRATING" : "PAUSED";
    case "suspended":
      return "SUSPENDED";
    case "rescued":
      return "RESCUE";
    case "error":
      return "ERROR";
    case "resized":
      return "VERIFY_RESIZE";
  }
}

const VM_STATE_OF_STATUS: Record<string, [VmState, number]> = {
  ACTIVE: ["active", 1],
  SHUTOFF: ["stopped", 4],
  PAUSED: ["paused", 3],
  SUSPENDED: ["suspended", 7],
  RESCUE: ["rescued", 1],
  ERROR: ["error", 0],
};

/** The next thing due of a migration: its phase's end or Nova's timeout. */
function dueAt(m: SimMigration): number | undefined {
  const a = m.phaseEndsAt;
  const b = m.novaTimeoutAt;
  if (a === undefined) return b;
  return b === undefined ? a : Math.min(a, b);
}

/** Input of {@linkcode World.addServer}. */
export interface NewServer {
  /** Display name. */
  name: string;
  /** Host to place it on (any host, even a disabled one: admin-forced). */
  host: string;
  /** Flavor RAM. */
  ramMb: number;
  /** Flavor vCPUs. */
  vcpus?: number;
  /** Status (default ACTIVE). */
  status?: "ACTIVE" | "SHUTOFF" | "PAUSED" | "SUSPENDED" | "RESCUE" | "ERROR";
  /** UUID (default: drawn from the seed). */
  id?: string;
  /** Flavor name. */
  flavorName?: string;
  /** Flavor extra specs. */
  extraSpecs?: Record<string, string>;
  /** task_state. */
  taskState?: string | null;
  /** Project. */
  projectId?: string;
  /** Locked. */
  locked?: boolean;
  /** Why Nova refuses to live-migrate it (default: nothing, it can). */
  liveMigrationBlocker?: LiveMigrationBlocker | null;
  /** user_data, base64 (default null). */
  userData?: string | null;
  /** Guest memory dirtied per second (MB/s, default 0). */
  dirtyRateMBps?: number;
}

/**
 * The simulated cloud.
 *
 * @example
 * ```ts
 * import { World } from "./world.ts";
 * import { Prng } from "./prng.ts";
 * import { ManualClock } from "./sim_clock.ts";
 * import { parseScenario } from "./scenario.ts";
 * const world = new World(parseScenario({ hosts: [{ name: "a" }, { name: "b" }],
 *   servers: [{ name: "vm1", host: "a" }] }), new ManualClock(0), new Prng(1));
 * console.log(world.listServers().length); // 1
 * ```
 */
export class World {
  /** Hosts by name. */
  readonly hosts = new Map<string, SimHost>();
  /** Servers by id (deleted ones kept, flagged). */
  readonly servers = new Map<string, SimServer>();
  /** Migration records in creation order. */
  readonly migrations: SimMigration[] = [];
  /** Instance actions, by `serverId requestId`. */
  readonly instanceActions = new Map<string, SimInstanceAction>();
  /** Traits Placement knows. */
  readonly traits = new Set<string>();
  /** Migrations Nova accepted, per server id. */
  readonly acceptedMigrations = new Map<string, number>();
  /**
   * Nova's clock minus the world's (ms, default 0): the times Nova shows
   * (records, instance actions, its answers' `Date`) and the
   * `changes-since` it filters by are on it; the world runs on its own.
   */
  novaClockOffsetMs = 0;

  /** `ms` of the world's clock as Nova's clock reads it. */
  novaMs(ms: number): number {
    return ms + this.novaClockOffsetMs;
  }
  readonly #scenario: Scenario;
  readonly #clock: SimClock;
  readonly #prng: Prng;
  readonly #pendingFaults = new Map<string, Map<MigrationFaultKind, number>>();
  #nextMigrationId = 1;
  #nextCreated: number;
  readonly #events: { at: number; apply: (at: number) => void }[] = [];
  #building = true;
  /** Nova's versioned notifications of everything that happens here. */
  readonly notifier = new SimNotifier();

  /** Builds the cloud described by a scenario. */
  constructor(scenario: Scenario, clock: SimClock, prng: Prng) {
    this.#scenario = scenario;
    this.#clock = clock;
    this.#prng = prng;
    const now = clock.now();
    this.#nextCreated = now - 86_400_000;
    scenario.hosts.forEach((h, i) => {
      for (const t of h.traits) this.traits.add(t);
      this.hosts.set(h.name, {
        name: h.name,
        ramMb: h.ramMb,
        vcpus: h.vcpus,
        // Nova reports a disabled service to Placement as a trait.
        traits: [
          ...new Set([
            ...h.traits,
            ...(h.enabled ? [] : ["COMPUTE_STATUS_DISABLED"]),
          ]),
        ].sort(),
        rpGeneration: 1,
        enabled: h.enabled,
        disabledReason: h.enabled ? null : (h.disabledReason ?? null),
        state: h.state,
        forcedDown: false,
        maxConcurrentLiveMigrations: h.maxConcurrentLiveMigrations,
        zone: h.zone,
        hypervisorId: prng.uuid(),
        hypervisorIntId: i + 1,
        serviceId: prng.uuid(),
        serviceIntId: i + 10,
        hostIp: `192.168.${Math.floor(i / 250)}.${(i % 250) + 1}`,
        updatedAt: now,
        copyMbPerSecond: h.copyMbPerSecond ?? scenario.timing.liveMbPerSecond,
        maxDowntimeMs: h.maxDowntimeMs,
        permitPostCopy: h.permitPostCopy,
        completionTimeoutPerGiB: h.completionTimeoutPerGiB,
        timeoutAction: h.timeoutAction,
      });
    });
    for (
      const t of [
        "COMPUTE_STATUS_DISABLED",
        "HW_CPU_X86_AVX2",
        "COMPUTE_NET_VIF_MODEL_VIRTIO",
      ]
    ) {
      this.traits.add(t);
    }
    for (const s of scenario.servers) {
      this.addServer({
        name: s.name,
        host: s.host,
        ramMb: s.ramMb,
        vcpus: s.vcpus,
        status: s.status,
        taskState: s.taskState,
        projectId: s.projectId,
        locked: s.locked,
        liveMigrationBlocker: s.liveMigrationBlocker ?? null,
        userData: s.userData ?? null,
        dirtyRateMBps: s.dirtyRateMBps ?? 0,
        ...(s.id === undefined ? {} : { id: s.id }),
        ...(s.flavorName === undefined ? {} : { flavorName: s.flavorName }),
        ...(s.extraSpecs === undefined ? {} : { extraSpecs: s.extraSpecs }),
      });
    }
    for (const g of scenario.serverGroups) {
      for (let i = 0; i < g.count; i++) {
        const ramMb = g.ramMb[i % g.ramMb.length] ?? 2048;
        this.addServer({
          name: `${g.namePrefix}-${g.host}-${i + 1}`,
          host: g.host,
          ramMb,
          vcpus: g.vcpus,
          status: g.status,
        });
      }
    }
    for (const ev of scenario.events) {
      const at = now + ev.atSeconds * 1000;
      if ("addServer" in ev) {
        const a = ev.addServer;
        this.#events.push({
          at,
          apply: () => {
            this.addServer({
              name: a.name,
              host: a.host,
              ramMb: a.ramMb,
              vcpus: a.vcpus,
              status: a.status,
            });
          },
        });
      } else if ("deleteServer" in ev) {
        const ref = ev.deleteServer;
        this.#events.push({
          at,
          apply: () => {
            const srv = this.findServerByRef(ref);
            if (srv !== undefined) this.deleteServer(srv.id);
          },
        });
      } else {
        const ref = ev.errorServer;
        const message = ev.message;
        this.#events.push({
          at,
          apply: () => {
            const srv = this.findServerByRef(ref);
            if (srv !== undefined) this.setServerError(srv.id, message);
          },
        });
      }
    }
    this.#events.sort((a, b) => a.at - b.at);
    this.#building = false;
    const f = scenario.faults;
    const add = (
      list: (string | { server: string; times: number })[],
      kind: MigrationFaultKind,
    ) => {
      for (const item of list) {
        const ref = typeof item === "string" ? item : item.server;
        const times = typeof item === "string" ? 1 : item.times;
        const server = this.findServerByRef(ref);
        if (server !== undefined) {
          this.injectMigrationFault(server.id, kind, times);
        }
      }
    };
    add(f.liveMigrationFailure, "fail");
    add(f.errorOnMigration, "error");
    add(f.stuckMigration, "stuck");
    add(f.deleteDuringMigration, "delete");
    add(f.strandedMigration, "strand");
  }

  #eventTime: number | undefined;

  /** Current virtual time (while a scheduled event runs: its time). */
  now(): number {
    return this.#eventTime ?? this.#clock.now();
  }

  /**
   * Calls `listener` with every versioned notification Nova would send, as
   * it happens (routing key and oslo envelope); returns its removal.
   */
  onNotification(listener: NotificationListener): () => void {
    return this.notifier.listen(listener);
  }

  /**
   * The virtual time of the next phase change or scheduled event, or
   * undefined when nothing is due (a paced simulator wakes up then, so
   * notifications leave on time without anyone polling).
   */
  nextDueAt(): number | undefined {
    let due = this.#events[0]?.at;
    for (const m of this.migrations) {
      const at = dueAt(m);
      if (at !== undefined && (due === undefined || at < due)) due = at;
    }
    return due;
  }

  /** A server's state as a notification payload shows it (`with` overriding). */
  #snap(s: SimServer, over: Partial<InstanceSnapshot> = {}): InstanceSnapshot {
    return {
      uuid: s.id,
      name: s.name,
      projectId: s.projectId,
      userId: s.userId,
      flavor: s.flavor,
      host: s.host,
      vmState: s.vmState,
      taskState: s.taskState,
      powerState: s.powerState,
      created: s.created,
      updated: s.updated,
      locked: s.locked,
      ...over,
    };
  }

  /**
   * Changes a server as one `Instance.save()` does and sends the
   * `instance.update` that save sends. Computes have no database: their
   * saves run in nova-conductor (a remotable method), so every update is
   * published by the control plane (`nova-compute:<its CONF.host>`, seen
   * on real Zed), as nova-api's own saves are.
   */
  #save(s: SimServer, at: number, change: () => void): void {
    const old = { vmState: s.vmState, taskState: s.taskState };
    change();
    s.updated = at;
    this.notifier.instanceUpdate(this.#snap(s), old, CONTROLLER_HOST, at);
  }

  /** `instance.<action>.<phase>` of a server from `host`. */
  #action(
    action: string,
    phase: "start" | "end",
    s: SimServer,
    host: string,
    at: number,
    over: Partial<InstanceSnapshot> = {},
  ): void {
    this.notifier.instanceAction(action, phase, this.#snap(s, over), host, at);
  }

  /** The scenario this world was built from. */
  get scenario(): Scenario {
    return this.#scenario;
  }

  /** A server by id or name (not deleted). */
  findServerByRef(ref: string): SimServer | undefined {
    const byId = this.servers.get(ref);
    if (byId !== undefined && !byId.deleted) return byId;
    for (const s of this.servers.values()) {
      if (s.name === ref && !s.deleted) return s;
    }
    return undefined;
  }

  /** Makes the next `times` migrations of a server go wrong in a given way. */
  injectMigrationFault(
    serverId: string,
    kind: MigrationFaultKind,
    times = 1,
  ): void {
    let m = this.#pendingFaults.get(serverId);
    if (m === undefined) {
      m = new Map();
      this.#pendingFaults.set(serverId, m);
    }
    m.set(kind, (m.get(kind) ?? 0) + times);
  }

  #takeFault(serverId: string, type: SimMigration["type"]): MigrationFaultKind {
    const m = this.#pendingFaults.get(serverId);
    const order: MigrationFaultKind[] = type === "live-migration"
      ? ["delete", "error", "stuck", "fail", "strand"]
      : ["delete", "error", "stuck"];
    for (const kind of order) {
      const n = m?.get(kind) ?? 0;
      if (n > 0) {
        m?.set(kind, n - 1);
        return kind;
      }
    }
    if (
      type === "live-migration" &&
      this.#scenario.faults.liveMigrationFailureRate > 0 &&
      this.#prng.next() < this.#scenario.faults.liveMigrationFailureRate
    ) return "fail";
    return "none";
  }

  /** Adds a server on any host (even a disabled one: admin-forced placement). */
  addServer(input: NewServer): SimServer {
    if (!this.hosts.has(input.host)) {
      throw new RangeError(`host "${input.host}" is not in the scenario`);
    }
    const [vmState, powerState] =
      VM_STATE_OF_STATUS[input.status ?? "ACTIVE"] ?? ["active", 1];
    const id = input.id ?? this.#prng.uuid();
    if (this.servers.has(id)) {
      throw new RangeError(`server id "${id}" already exists`);
    }
    const created = this.#building ? this.#nextCreated : this.now();
    this.#nextCreated += 1000;
    const server: SimServer = {
      id,
      name: input.name,
      projectId: input.projectId ?? "demo-project",
      userId: "demo-user",
      flavor: {
        name: input.flavorName ?? `m1.ram${input.ramMb}`,
        ramMb: input.ramMb,
        vcpus: input.vcpus ?? 1,
        disk: 20,
        ...(input.extraSpecs === undefined
          ? {}
          : { extraSpecs: { ...input.extraSpecs } }),
      },
      host: input.host,
      vmState,
      vmStateBeforeResize: null,
      taskState: input.taskState ?? null,
      powerState,
      fault: vmState === "error"
        ? { code: 500, message: "Simulated failure at creation", created }
        : null,
      created,
      updated: created,
      deleted: false,
      locked: input.locked ?? false,
      liveMigrationBlocker: input.liveMigrationBlocker ?? null,
      userData: input.userData ?? null,
      dirtyRateMBps: input.dirtyRateMBps ?? 0,
    };
    this.servers.set(id, server);
    if (!this.#building) this.#notifyCreate(server, created);
    return server;
  }

  /**
   * What a boot on `server.host` sends: `instance.create.start` while it
   * builds, the save that makes it active, `instance.create.end`.
   */
  #notifyCreate(server: SimServer, at: number): void {
    const host = server.host ?? CONTROLLER_HOST;
    const building = {
      vmState: "building",
      taskState: "spawning",
      powerState: 0,
    };
    this.#action("create", "start", server, host, at, building);
    this.notifier.instanceUpdate(
      this.#snap(server),
      building,
      CONTROLLER_HOST,
      at,
    );
    this.#action("create", "end", server, host, at);
  }

  /**
   * What deleting a server sends: the API's save (task_state deleting),
   * then on its host `instance.delete.start`, `instance.shutdown.*`, the
   * save to vm_state deleted, `instance.delete.end`.
   */
  #notifyDelete(s: SimServer, at: number): void {
    const host = s.host ?? CONTROLLER_HOST;
    const before = { vmState: s.vmState, taskState: s.taskState };
    const deleting = { taskState: "deleting" };
    this.notifier.instanceUpdate(
      this.#snap(s, deleting),
      before,
      CONTROLLER_HOST,
      at,
    );
    this.#action("delete", "start", s, host, at, deleting);
    this.#action("shutdown", "start", s, host, at, deleting);
    this.#action("shutdown", "end", s, host, at, deleting);
    const deleted = {
      vmState: "deleted",
      taskState: null,
      powerState: 0,
      deletedAt: at,
    };
    this.notifier.instanceUpdate(
      this.#snap(s, deleted),
      { vmState: s.vmState, taskState: "deleting" },
      CONTROLLER_HOST,
      at,
    );
    this.#action("delete", "end", s, host, at, deleted);
  }

  /** Deletes a server now; its in-progress migration ends in error. */
  deleteServer(id: string): void {
    const s = this.servers.get(id);
    if (s === undefined || s.deleted) throw new RangeError(`no server "${id}"`);
    const now = this.now();
    this.#notifyDelete(s, now);
    s.deleted = true;
    s.taskState = null;
    s.updated = now;
    for (const m of this.migrations) {
      if (m.serverId === id && this.#inProgress(m)) {
        this.#setStatus(m, "error", now);
        m.phaseEndsAt = undefined;
        this.#startQueued(m.source, now);
      }
    }
  }

  /** Puts a server into ERROR with a fault. */
  setServerError(id: string, message: string): void {
    const s = this.servers.get(id);
    if (s === undefined || s.deleted) throw new RangeError(`no server "${id}"`);
    const now = this.now();
    this.#save(s, now, () => {
      s.vmState = "error";
      s.taskState = null;
      s.fault = { code: 500, message, created: now };
    });
  }

  /**
   * `os-resetState`: an admin sets vm_state to active or error; task_state is
   * cleared (the fault record stays, shown only while ERROR).
   */
  resetState(id: string, state: "active" | "error"): void {
    const s = this.servers.get(id);
    if (s === undefined || s.deleted) throw new RangeError(`no server "${id}"`);
    this.#save(s, this.now(), () => {
      s.vmState = state;
      s.taskState = null;
      if (state === "active") s.powerState = 1;
    });
  }

  /** Non-deleted servers. */
  listServers(): SimServer[] {
    return [...this.servers.values()].filter((s) => !s.deleted);
  }

  #inProgress(m: SimMigration): boolean {
    return m.type === "live-migration"
      ? m.status === "accepted" || LIVE_IN_PROGRESS.includes(m.status)
      : COLD_IN_PROGRESS.includes(m.status);
  }

  /** RAM, vCPUs and disk used on every host, counting scheduler claims. */
  usageByHost(): Map<string, { ramMb: number; vcpus: number; diskGb: number }> {
    const out = new Map<
      string,
      { ramMb: number; vcpus: number; diskGb: number }
    >();
    for (const h of this.hosts.keys()) {
      out.set(h, { ramMb: 0, vcpus: 0, diskGb: 0 });
    }
    const add = (host: string | null, s: SimServer) => {
      const u = host === null ? undefined : out.get(host);
      if (u === undefined) return;
      u.ramMb += s.flavor.ramMb;
      u.vcpus += s.flavor.vcpus;
      u.diskGb += s.flavor.disk;
    };
    for (const s of this.servers.values()) {
      if (!s.deleted) add(s.host, s);
    }
    for (const m of this.migrations) {
      const s = this.servers.get(m.serverId);
      if (s === undefined || s.deleted) continue;
      if (this.#inProgress(m) && m.status !== "accepted") add(m.dest, s);
      if (m.type !== "live-migration" && m.status === "finished") {
        add(m.source, s);
      }
    }
    return out;
  }

  /** RAM and vCPUs used on a host, counting scheduler claims. */
  usage(host: string): { ramMb: number; vcpus: number; diskGb: number } {
    return this.usageByHost().get(host) ?? { ramMb: 0, vcpus: 0, diskGb: 0 };
  }

  /** The host the scheduler picks for a server, or undefined (NoValidHost). */
  schedule(
    server: SimServer,
    source: string,
    ramMb = server.flavor.ramMb,
  ): string | undefined {
    const usage = this.usageByHost();
    let best: { name: string; free: number } | undefined;
    for (const h of this.hosts.values()) {
      if (
        h.name === source || !h.enabled || h.state !== "up" || h.forcedDown
      ) continue;
      const u = usage.get(h.name) ?? { ramMb: 0, vcpus: 0 };
      const freeRam = h.ramMb - u.ramMb;
      if (
        freeRam < ramMb ||
        h.vcpus - u.vcpus < server.flavor.vcpus
      ) continue;
      if (best === undefined || freeRam > best.free) {
        best = { name: h.name, free: freeRam };
      }
    }
    return best?.name;
  }

  /** Whether the scheduler accepts a requested host for a server. */
  #fits(host: string, server: SimServer): boolean {
    const h = this.hosts.get(host);
    if (h === undefined || !h.enabled || h.state !== "up" || h.forcedDown) {
      return false;
    }
    const u = this.usage(host);
    return h.ramMb - u.ramMb >= server.flavor.ramMb &&
      h.vcpus - u.vcpus >= server.flavor.vcpus;
  }

  #duration(ramMb: number, mbPerSecond: number): number {
    const j = this.#scenario.timing.jitter;
    const factor = 1 + j * (2 * this.#prng.next() - 1);
    return Math.max(1, (ramMb / mbPerSecond) * 1000 * factor);
  }

  #server(id: string): SimServer {
    const s = this.servers.get(id);
    if (s === undefined || s.deleted) {
      throw new NovaFault(404, `Instance ${id} could not be found.`);
    }
    return s;
  }

  #checkState(
    s: SimServer,
    action: string,
    vmStates: VmState[],
    taskStates: (string | null)[] = [null],
  ): void {
    if (s.locked) {
      throw new NovaFault(409, `Instance ${s.id} is locked`);
    }
    if (!vmStates.includes(s.vmState)) {
      throw new NovaFault(
        409,
        `Cannot '${action}' instance ${s.id} while it is in vm_state ${s.vmState}`,
      );
    }
    if (!taskStates.includes(s.taskState)) {
      throw new NovaFault(
        409,
        `Cannot '${action}' instance ${s.id} while it is in task_state ${s.taskState}`,
      );
    }
  }

  #newMigration(
    s: SimServer,
    type: SimMigration["type"],
    status: string,
    dest: string | null,
    copyMs: number,
    now: number,
  ): SimMigration {
    const m: SimMigration = {
      id: this.#nextMigrationId++,
      uuid: this.#prng.uuid(),
      serverId: s.id,
      type,
      status,
      source: s.host ?? "",
      dest,
      createdAt: now,
      updatedAt: now,
      phaseEndsAt: undefined,
      copyMs,
      copyStartedAt: undefined,
      fault: this.#takeFault(s.id, type),
      memoryTotalBytes: s.flavor.ramMb * 1024 * 1024,
      dirtyBytesPerMs: type === "live-migration"
        ? (s.dirtyRateMBps * 1024 * 1024) / 1000
        : 0,
      projectId: s.projectId,
      userId: s.userId,
      forced: false,
      newRamMb: s.flavor.ramMb,
      touched: false,
      visibleAt: type === "live-migration"
        ? now + this.#scenario.timing.recordDelaySeconds * 1000
        : now,
      scheduled: type !== "live-migration",
    };
    this.migrations.push(m);
    this.acceptedMigrations.set(
      s.id,
      (this.acceptedMigrations.get(s.id) ?? 0) + 1,
    );
    return m;
  }

  /**
   * Records the instance action of an accepted server action, as Nova's
   * API does; a migration it started adds its events to it.
   */
  recordAction(
    serverId: string,
    requestId: string,
    action: string,
    migration?: SimMigration,
  ): SimInstanceAction {
    const now = this.now();
    const a: SimInstanceAction = {
      serverId,
      requestId,
      action,
      startTime: now,
      updatedAt: now,
      message: null,
      events: [],
    };
    this.instanceActions.set(`${serverId} ${requestId}`, a);
    if (migration !== undefined) migration.requestId = requestId;
    return a;
  }

  /** Adds a finished event to the action that started `m`, if recorded. */
  #actionEvent(
    m: SimMigration,
    event: string,
    host: string,
    at: number,
    error?: string,
  ): void {
    if (m.requestId === undefined) return;
    const a = this.instanceActions.get(`${m.serverId} ${m.requestId}`);
    if (a === undefined) return;
    a.events.push({
      event,
      startTime: at,
      finishTime: at,
      result: error === undefined ? "Success" : "Error",
      details: error ?? null,
      host,
    });
    a.updatedAt = at;
    if (error !== undefined) a.message = "Error";
  }

  #setStatus(m: SimMigration, status: string, at: number): void {
    m.status = status;
    m.updatedAt = at;
    m.touched = true;
  }

  /**
   * `os-migrateLive`: accepted (202) or refused with a {@linkcode NovaFault}.
   * With a host and `force` (before 2.68) the scheduler is skipped and the
   * server goes there even if that host is disabled (an admin-forced
   * migration); with a host and no `force` the scheduler checks that host
   * asynchronously, as it checks its own pick.
   */
  liveMigrate(
    serverId: string,
    host: string | null,
    force = false,
  ): SimMigration {
    this.advance();
    const s = this.#server(serverId);
    // Nova's decorators run in this order: vTPM, SEV, lock, state.
    if (s.liveMigrationBlocker !== null) {
      // NotSupported: 409 before Xena, 400 since (nova commit 1b6a6e3916).
      throw new NovaFault(
        400,
        `Operation 'live-migration' not supported for ${
          s.liveMigrationBlocker === "vtpm" ? "vTPM" : "SEV"
        }-enabled instance (${s.id}).`,
      );
    }
    this.#checkState(s, "os-migrateLive", ["active", "paused"]);
    if (host !== null && !this.hosts.has(host)) {
      throw new NovaFault(400, `Compute host ${host} could not be found.`);
    }
    const now = this.now();
    const m = this.#newMigration(
      s,
      "live-migration",
      "accepted",
      host,
      this.#duration(
        s.flavor.ramMb,
        this.hosts.get(s.host ?? "")?.copyMbPerSecond ??
          this.#scenario.timing.liveMbPerSecond,
      ),
      now,
    );
    m.forced = host !== null && force;
    // The conductor writes the record, then asks the scheduler: nothing
    // of the migration happens before its record exists.
    m.phaseEndsAt = m.visibleAt + this.#scenario.timing.scheduleSeconds * 1000;
    this.#save(s, now, () => {
      s.taskState = "migrating";
    });
    return m;
  }

  /** `migrate`: accepted (202) or refused (409, or 400 for no valid host). */
  coldMigrate(serverId: string, host: string | null): SimMigration {
    return this.#resizeOrMigrate(serverId, host, undefined);
  }

  /**
   * A user's own resize to a flavor with `newRamMb` (Nova's `resize` action,
   * migration_type `resize`): the server moves to a host the scheduler picks
   * and waits in VERIFY_RESIZE for its owner to confirm or revert.
   */
  resize(serverId: string, newRamMb: number): SimMigration {
    return this.#resizeOrMigrate(serverId, null, newRamMb);
  }

  #resizeOrMigrate(
    serverId: string,
    host: string | null,
    newRamMb: number | undefined,
  ): SimMigration {
    this.advance();
    const s = this.#server(serverId);
    const action = newRamMb === undefined ? "migrate" : "resize";
    this.#checkState(s, action, ["active", "stopped"]);
    if (host !== null && !this.hosts.has(host)) {
      throw new NovaFault(404, `Compute host ${host} could not be found.`);
    }
    const source = s.host ?? "";
    const now = this.now();
    // The API saves task_state resize_prep, then the conductor asks the
    // scheduler (a named host too: it is the requested destination).
    this.#save(s, now, () => {
      s.taskState = "resize_prep";
    });
    this.notifier.selectDestinations("start", this.#snap(s), now);
    const dest = host ?? this.schedule(s, source, newRamMb);
    if (dest === undefined) {
      const message =
        "No valid host was found. There are not enough hosts available.";
      // scheduler_utils.set_vm_state_and_notify: task_state back to None.
      this.#save(s, now, () => {
        s.taskState = null;
      });
      this.notifier.computeTaskError(
        "migrate_server",
        s.id,
        s.vmState,
        "NoValidHost",
        message,
        now,
      );
      throw new NovaFault(400, message);
    }
    this.notifier.selectDestinations("end", this.#snap(s), now);
    const m = this.#newMigration(
      s,
      newRamMb === undefined ? "migration" : "resize",
      "pre-migrating",
      dest,
      this.#duration(s.flavor.ramMb, this.#scenario.timing.coldMbPerSecond),
      now,
    );
    m.newRamMb = newRamMb ?? s.flavor.ramMb;
    m.phaseEndsAt = now + this.#scenario.timing.prepareSeconds * 1000;
    s.vmStateBeforeResize = s.vmState;
    s.taskState = "resize_prep";
    s.updated = now;
    this.#action("resize_prep", "start", s, dest, now);
    this.#action("resize_prep", "end", s, dest, now);
    return m;
  }

  /**
   * Powers a server on (`active`) or off (`stopped`), as `os-start` and
   * `os-stop` do; refused while a task runs.
   */
  setPower(serverId: string, on: boolean): void {
    this.advance();
    const s = this.#server(serverId);
    const action = on ? "start" : "stop";
    this.#checkState(s, action, on ? ["stopped"] : ["active", "rescued"]);
    const now = this.now();
    const host = s.host ?? CONTROLLER_HOST;
    const notifyAction = on ? "power_on" : "power_off";
    this.#save(s, now, () => {
      s.taskState = on ? "powering-on" : "powering-off";
    });
    this.#action(notifyAction, "start", s, host, now);
    this.#save(s, now, () => {
      s.vmState = on ? "active" : "stopped";
      s.powerState = on ? 1 : 4;
      s.taskState = null;
    });
    this.#action(notifyAction, "end", s, host, now);
  }

  /** `confirmResize`: 204 or a {@linkcode NovaFault}. */
  confirmResize(serverId: string): void {
    this.advance();
    const s = this.#server(serverId);
    this.#checkState(s, "confirmResize", ["resized"]);
    const m = [...this.migrations].reverse().find((x) =>
      x.serverId === serverId && x.type !== "live-migration" &&
      x.status === "finished"
    );
    if (m === undefined) {
      throw new NovaFault(400, "Instance has not been resized.");
    }
    const now = this.now();
    this.#action("resize_confirm", "start", s, m.source, now);
    this.#save(s, now, () => {
      s.vmState = s.vmStateBeforeResize ?? "active";
      s.vmStateBeforeResize = null;
    });
    this.#action("resize_confirm", "end", s, m.source, now);
    this.#setStatus(m, "confirmed", now);
  }

  /**
   * Forces a running live migration to complete
   * (`POST /servers/{id}/migrations/{mid}/action` `force_complete`, 2.22+),
   * as Nova's libvirt driver does: post-copy where the source host permits
   * it (the record goes `running (post-copy)`, the VM runs on the
   * destination, which pulls the rest at the copy rate), else the guest is
   * paused (it dirties nothing) until the copy converges, and runs again on
   * the destination (Nova's power_state stays running throughout: its
   * power-state sync skips an instance with a task_state). With
   * `requestId` the instance action `live_migration_force_complete` is
   * recorded.
   */
  forceCompleteLiveMigration(
    serverId: string,
    migrationId: number,
    requestId?: string,
  ): void {
    this.advance();
    const s = this.#server(serverId);
    // Nova's decorators: the lock, then vm_state active, task_state migrating.
    if (s.locked) throw new NovaFault(409, `Instance ${s.id} is locked`);
    if (s.taskState !== "migrating" || s.vmState !== "active") {
      throw new NovaFault(
        409,
        s.vmState !== "active"
          ? `Cannot 'force_complete' instance ${serverId} while it is in vm_state ${s.vmState}`
          : s.taskState === null
          ? `Instance ${serverId} is in an invalid state for 'force_complete'`
          : `Cannot 'force_complete' instance ${serverId} while it is in task_state ${s.taskState}`,
      );
    }
    // MigrationNotFoundForInstance and InvalidMigrationState are both a 400.
    const m = this.#migrationOf(serverId, migrationId, 400);
    if (m.status !== "running") {
      throw new NovaFault(
        400,
        `Migration ${migrationId} state of instance ${serverId} is ${m.status}. Cannot force complete while the migration is in this state.`,
      );
    }
    const now = this.now();
    this.#ownAction(
      s,
      requestId,
      "live_migration_force_complete",
      "compute_live_migration_force_complete",
      now,
    );
    this.#action("live_migration_force_complete", "start", s, m.source, now);
    this.#action("live_migration_force_complete", "end", s, m.source, now);
    // The driver only queues the task; the copy's monitor switches.
    this.#switchOver(m, now);
    this.advance();
  }

  /** The live migration `migrationId` of a server, or Nova's not-found. */
  #migrationOf(
    serverId: string,
    migrationId: number,
    status: 400 | 404,
  ): SimMigration {
    const m = this.migrations.find((x) =>
      x.id === migrationId && x.serverId === serverId
    );
    if (m === undefined) {
      throw new NovaFault(
        status,
        `Migration ${migrationId} not found for instance ${serverId}`,
      );
    }
    return m;
  }

  /**
   * Records the instance action of an action on a migration (force
   * complete, abort) with its one compute event, as Nova's API and the
   * compute's `wrap_instance_event` do.
   */
  #ownAction(
    s: SimServer,
    requestId: string | undefined,
    action: string,
    event: string,
    at: number,
  ): void {
    if (requestId === undefined) return;
    const a = this.recordAction(s.id, requestId, action);
    a.events.push({
      event,
      startTime: at,
      finishTime: at,
      result: "Success",
      details: null,
      host: s.host ?? "",
    });
  }

  /**
   * The libvirt driver's `force-complete` task (libvirt migration.py
   * `run_tasks`): post-copy where permitted, else pause; nothing more once
   * switched.
   */
  #switchOver(m: SimMigration, at: number): void {
    if (m.switchedTo !== undefined) return;
    const now = this.memoryProgress(m, at);
    // A stuck copy (the fault) moves again once nothing else runs.
    if (m.fault === "stuck") m.fault = "none";
    m.track = { at, remaining: now.remaining, processed: now.processed };
    if (this.hosts.get(m.source)?.permitPostCopy === true) {
      m.switchedTo = "post-copy";
      this.#setStatus(m, POST_COPY, at);
    } else {
      // The guest pauses, but Nova's power_state stays: the compute's
      // _sync_instance_power_state skips an instance with a task_state.
      m.switchedTo = "paused";
    }
    m.phaseEndsAt = this.#copyEndsAt(m);
  }

  /** Arms Nova's own completion timeout as a copy starts. */
  #armNovaTimeout(m: SimMigration, at: number): void {
    const perGiB = this.hosts.get(m.source)?.completionTimeoutPerGiB ?? 0;
    if (perGiB === 0) return;
    // libvirt driver: int(timeout * data_gb), RAM of at least 2 GiB; the
    // monitor looks every 0.5 s and acts once elapsed > the bound.
    const gib = Math.max(2, m.memoryTotalBytes / 2 ** 30);
    m.novaTimeoutAt = at + Math.trunc(perGiB * gib) * 1000 + 500;
  }

  /**
   * Nova's `live_migration_timeout_action` once a copy passed its
   * completion timeout (never in post-copy): `force_complete` as the
   * driver's own task (no force-complete notifications, no instance
   * action: the API was not called), or `abort` of the libvirt job, which
   * the monitor sees cancelled and rolls back (no abort notifications:
   * those are the compute manager's, for the API's abort).
   */
  #novaTimeout(m: SimMigration, at: number): void {
    const s = this.servers.get(m.serverId);
    if (m.status !== "running" || s === undefined || s.deleted) return;
    if (this.hosts.get(m.source)?.timeoutAction === "force_complete") {
      this.#switchOver(m, at);
      return;
    }
    this.#finishLive(m, s, "cancelled", at);
  }

  /**
   * Aborts a live migration (`DELETE /servers/{id}/migrations/{mid}`,
   * 2.24+; queued or preparing ones 2.65+): the VM runs on the source
   * again (its guest resumed if force_complete paused it). With
   * `requestId` the instance action `live_migration_cancel` is recorded.
   */
  abortLiveMigration(
    serverId: string,
    migrationId: number,
    microversion: number,
    requestId?: string,
  ): void {
    this.advance();
    const s = this.#server(serverId);
    if (s.locked) throw new NovaFault(409, `Instance ${s.id} is locked`);
    if (s.taskState !== "migrating") {
      throw new NovaFault(
        409,
        s.taskState === null
          ? `Instance ${serverId} is in an invalid state for 'abort live migration'`
          : `Cannot 'abort live migration' instance ${serverId} while it is in task_state ${s.taskState}`,
      );
    }
    const m = this.#migrationOf(serverId, migrationId, 404);
    const abortable = microversion >= 65
      ? ["running", "queued", "preparing"]
      : ["running"];
    if (m.type !== "live-migration" || !abortable.includes(m.status)) {
      throw new NovaFault(
        400,
        `Migration ${migrationId} state of instance ${serverId} is ${m.status}. Cannot abort live migration while the migration is in this state.`,
      );
    }
    const now = this.now();
    const wasActive = LIVE_ACTIVE.includes(m.status);
    const copying = m.status === "running";
    this.#ownAction(
      s,
      requestId,
      "live_migration_cancel",
      "compute_live_migration_abort",
      now,
    );
    this.#action("live_migration_abort", "start", s, m.source, now);
    // A running copy is stopped by the driver and rolled back after the
    // abort ends; a waiting one is dropped with a save between the two.
    if (copying) {
      this.#action("live_migration_abort", "end", s, m.source, now);
      this.#rollback(m, s, now);
    } else {
      this.#save(s, now, () => {
        s.taskState = null;
      });
      this.#action("live_migration_abort", "end", s, m.source, now);
    }
    this.#setStatus(m, "cancelled", now);
    m.phaseEndsAt = undefined;
    m.novaTimeoutAt = undefined;
    if (wasActive) this.#startQueued(m.source, now);
  }

  /** Enables or disables a compute service. */
  setService(
    host: SimHost,
    status: "enabled" | "disabled" | undefined,
    reason: string | undefined,
    forcedDown: boolean | undefined,
  ): void {
    const now = this.now();
    if (status === "enabled") {
      host.enabled = true;
      host.disabledReason = null;
    } else if (status === "disabled") {
      host.enabled = false;
      host.disabledReason = reason ?? null;
    }
    if (forcedDown !== undefined) host.forcedDown = forcedDown;
    host.updatedAt = now;
    if (status !== undefined || forcedDown !== undefined) {
      this.notifier.serviceUpdate({
        host: host.name,
        uuid: host.serviceId,
        disabled: !host.enabled,
        disabledReason: host.disabledReason,
        forcedDown: host.forcedDown,
        up: host.state === "up",
        zone: host.zone,
        lastSeenUp: now,
      }, now);
    }
    // Nova reports a disabled service to Placement as a trait.
    const traits = new Set(host.traits);
    if (host.enabled) traits.delete("COMPUTE_STATUS_DISABLED");
    else traits.add("COMPUTE_STATUS_DISABLED");
    const next = [...traits].sort();
    if (next.join(",") !== host.traits.join(",")) {
      host.traits = next;
      host.rpGeneration++;
    }
  }

  /** Live migrations holding a slot on a host. */
  activeLiveMigrations(host: string): number {
    return this.migrations.filter((m) =>
      m.type === "live-migration" && m.source === host &&
      LIVE_ACTIVE.includes(m.status)
    ).length;
  }

  #startQueued(source: string, at: number): void {
    const h = this.hosts.get(source);
    const limit = h?.maxConcurrentLiveMigrations ?? 1;
    let active = this.activeLiveMigrations(source);
    for (const m of this.migrations) {
      if (active >= limit) return;
      if (
        m.type !== "live-migration" || m.source !== source ||
        m.status !== "queued"
      ) continue;
      this.#setStatus(m, "preparing", at);
      m.slotAt = at;
      m.phaseEndsAt = at + this.#scenario.timing.prepareSeconds * 1000;
      active++;
      const s = this.servers.get(m.serverId);
      if (s !== undefined && m.dest !== null) {
        this.#action("live_migration_pre", "start", s, m.dest, at);
      }
    }
  }

  /** Runs every phase change due up to the clock's now, in time order. */
  advance(): void {
    const now = this.now();
    for (;;) {
      let next: SimMigration | undefined;
      let nextAt = now;
      for (const m of this.migrations) {
        const due = dueAt(m);
        if (due === undefined || due > now) continue;
        if (
          next === undefined || nextAt > due ||
          (nextAt === due && m.id < next.id)
        ) {
          next = m;
          nextAt = due;
        }
      }
      const ev = this.#events[0];
      if (
        ev !== undefined && ev.at <= now &&
        (next === undefined || ev.at <= nextAt)
      ) {
        this.#events.shift();
        this.#eventTime = ev.at;
        try {
          ev.apply(ev.at);
        } finally {
          this.#eventTime = undefined;
        }
        continue;
      }
      if (next === undefined) return;
      const at = nextAt;
      if (next.novaTimeoutAt === at) {
        next.novaTimeoutAt = undefined;
        this.#novaTimeout(next, at);
        continue;
      }
      next.phaseEndsAt = undefined;
      if (next.type === "live-migration") this.#stepLive(next, at);
      else this.#stepCold(next, at);
    }
  }

  /**
   * `_rollback_live_migration` on the source: rollback.start, the save of
   * task_state None, rollback.end. The destination's clean-up
   * (`rollback_dest.*`, a cast) is not sent: real Zed skips it when the
   * driver's migrate data needs no clean-up there (shared storage, and
   * the lane's driver, checked in tests/openstack/notifications_test.ts).
   */
  #rollback(m: SimMigration, s: SimServer, at: number): void {
    this.#action("live_migration_rollback", "start", s, m.source, at);
    this.#save(s, at, () => {
      s.taskState = null;
    });
    this.#action("live_migration_rollback", "end", s, m.source, at);
  }

  #finishLive(m: SimMigration, s: SimServer, status: string, at: number): void {
    if (status === "completed") {
      // The source's instance object still shows itself and migrating.
      this.#action("live_migration_post", "end", s, m.source, at, {
        host: m.source,
        taskState: "migrating",
      });
    } else if (s.deleted) {
      // Deleted mid-copy: its delete notifications went out already.
    } else if (s.vmState === "error") {
      // The driver raised: the caller saved the instance in ERROR.
    } else {
      this.#rollback(m, s, at);
    }
    // Real Zed records compute_live_migration as a Success even when the
    // copy then fails: the copy runs in the compute's executor after the
    // event has ended, so a failed copy leaves no details in the action.
    this.#actionEvent(m, "compute_live_migration", m.source, at);
    this.#setStatus(m, status, at);
    m.phaseEndsAt = undefined;
    m.novaTimeoutAt = undefined;
    // A stranded server keeps task_state migrating until os-resetState.
    if (m.postFailedAt === undefined) s.taskState = null;
    s.updated = at;
    this.#startQueued(m.source, at);
  }

  #stepLive(m: SimMigration, at: number): void {
    const s = this.servers.get(m.serverId);
    if (s === undefined || s.deleted) {
      this.#setStatus(m, "error", at);
      this.#startQueued(m.source, at);
      return;
    }
    const t = this.#scenario.timing;
    switch (m.status) {
      case "accepted": {
        const dest = m.dest === null
          ? this.schedule(s, m.source)
          : m.dest !== m.source && (m.forced || this.#fits(m.dest, s))
          ? m.dest
          : undefined;
        // A forced host skips the scheduler (no select_destinations).
        if (!m.forced) {
          this.notifier.selectDestinations("start", this.#snap(s), at);
        }
        if (dest === undefined) {
          const message = m.dest === null
            ? "No valid host was found. There are not enough hosts available."
            : `No valid host was found. Host ${m.dest} cannot take the instance.`;
          // Since 2.34 the checks are asynchronous: the VM stays ACTIVE.
          this.#setStatus(m, "error", at);
          // set_vm_state_and_notify: the save, then the conductor's error.
          this.#save(s, at, () => {
            s.taskState = null;
          });
          this.notifier.computeTaskError(
            "migrate_server",
            s.id,
            s.vmState,
            "NoValidHost",
            message,
            at,
          );
          // The conductor's event says why (Nova's NoValidHost message).
          this.#actionEvent(
            m,
            "conductor_live_migrate_instance",
            "nova-conductor",
            at,
            message,
          );
          return;
        }
        if (!m.forced) {
          this.notifier.selectDestinations("end", this.#snap(s), at);
        }
        this.#actionEvent(
          m,
          "conductor_live_migrate_instance",
          "nova-conductor",
          at,
        );
        m.dest = dest;
        m.scheduled = true;
        this.#setStatus(m, "queued", at);
        this.#startQueued(m.source, at);
        return;
      }
      case "preparing":
        if (m.dest !== null) {
          this.#action("live_migration_pre", "end", s, m.dest, at);
        }
        this.#setStatus(m, "running", at);
        m.copyStartedAt = at;
        if (m.fault === "stuck") m.phaseEndsAt = undefined;
        else if (m.fault === "delete") m.phaseEndsAt = at + m.copyMs / 2;
        else if (m.dirtyBytesPerMs > 0) {
          m.track = { at, remaining: m.memoryTotalBytes, processed: 0 };
          m.phaseEndsAt = this.#copyEndsAt(m);
        } else m.phaseEndsAt = at + m.copyMs;
        this.#armNovaTimeout(m, at);
        return;
      case POST_COPY:
      case "running":
        if (m.movedAt !== undefined || m.postFailedAt !== undefined) {
          this.#finishLive(m, s, "completed", at);
          return;
        }
        if (m.fault === "delete") {
          this.#notifyDelete(s, at);
          s.deleted = true;
          s.updated = at;
          this.#finishLive(m, s, "error", at);
          return;
        }
        if (m.fault === "fail") {
          this.#finishLive(m, s, "error", at);
          return;
        }
        if (m.fault === "error") {
          // As real Zed, when the driver raises during the copy: ERROR with
          // no fault (wrap_instance_fault never sees the executor's
          // exception), saved (its instance.update).
          this.#save(s, at, () => {
            s.vmState = "error";
            s.taskState = null;
          });
          this.#finishLive(m, s, "error", at);
          return;
        }
        if (m.fault === "strand") {
          this.#strand(m, s, at);
          m.postFailedAt = at;
          m.phaseEndsAt = at + t.liveCompleteSeconds * 1000;
          return;
        }
        // Real Zed live migrations never show post-migrating: the server
        // is ACTIVE on the destination first, the record completes after.
        this.#notifyMoved(m, s, at);
        m.movedAt = at;
        m.phaseEndsAt = at + t.liveCompleteSeconds * 1000;
        return;
      default:
        return;
    }
  }

  /**
   * The end of a live migration's copy: `_post_live_migration` on the
   * source (post.start), which calls the destination
   * (post_dest.start, the save that moves the instance, post_dest.end);
   * the source's post.end follows when the record completes.
   */
  #notifyMoved(m: SimMigration, s: SimServer, at: number): void {
    const dest = m.dest ?? m.source;
    this.#action("live_migration_post", "start", s, m.source, at);
    this.#action("live_migration_post_dest", "start", s, dest, at);
    this.#save(s, at, () => {
      s.host = dest;
      s.taskState = null;
    });
    this.#action("live_migration_post_dest", "end", s, dest, at);
  }

  /**
   * The `strand` fault, as real Zed when the destination's
   * `post_live_migration_at_destination` fails in Neutron's
   * `migrate_instance_finish` (a 401 to an expired user token, Nova's
   * `Unauthorized`: "Not authorized."): the source's post.start, the
   * destination's event failed, and no post_dest notification nor the
   * save that moves the instance (host and task_state stay); the source
   * catches the error and completes the record as usual.
   */
  #strand(m: SimMigration, s: SimServer, at: number): void {
    this.#action("live_migration_post", "start", s, m.source, at);
    this.#actionEvent(
      m,
      "compute_post_live_migration_at_destination",
      m.dest ?? m.source,
      at,
      "Not authorized.",
    );
  }

  #stepCold(m: SimMigration, at: number): void {
    const s = this.servers.get(m.serverId);
    if (s === undefined || s.deleted) {
      this.#setStatus(m, "error", at);
      return;
    }
    const t = this.#scenario.timing;
    switch (m.status) {
      case "pre-migrating":
        this.#setStatus(m, "migrating", at);
        this.#save(s, at, () => {
          s.taskState = "resize_migrating";
        });
        this.#action("resize", "start", s, m.source, at);
        m.copyStartedAt = at;
        if (m.fault === "stuck") m.phaseEndsAt = undefined;
        else if (m.fault === "delete") m.phaseEndsAt = at + m.copyMs / 2;
        else m.phaseEndsAt = at + m.copyMs;
        return;
      case "migrating":
        if (m.fault === "delete") {
          this.#notifyDelete(s, at);
          s.deleted = true;
          s.taskState = null;
          s.updated = at;
          this.#setStatus(m, "error", at);
          return;
        }
        if (m.fault === "error" || m.fault === "fail") {
          this.#save(s, at, () => {
            s.vmState = "error";
            s.taskState = null;
            s.fault = {
              code: 500,
              message:
                `Simulated cold migration failure of ${s.id} to ${m.dest}`,
              created: at,
            };
          });
          this.#setStatus(m, "error", at);
          return;
        }
        this.#setStatus(m, "post-migrating", at);
        this.#action("resize", "end", s, m.source, at);
        this.#save(s, at, () => {
          s.taskState = "resize_finish";
        });
        this.#action("resize_finish", "start", s, m.dest ?? m.source, at);
        m.phaseEndsAt = at + t.postSeconds * 1000;
        return;
      case "post-migrating":
        this.#setStatus(m, "finished", at);
        this.#save(s, at, () => {
          s.host = m.dest;
          if (m.type === "resize") {
            s.flavor = {
              ...s.flavor,
              name: `m1.ram${m.newRamMb}`,
              ramMb: m.newRamMb,
            };
          }
          s.vmState = "resized";
          s.taskState = null;
        });
        this.#action("resize_finish", "end", s, m.dest ?? m.source, at);
        return;
      default:
        return;
    }
  }

  /**
   * Memory progress of a live migration at virtual time `at`, as libvirt's
   * job info (Nova's `memory_processed_bytes` counts every byte sent,
   * dirtied pages sent again included, so it passes the total when the
   * guest dirties memory).
   */
  memoryProgress(
    m: SimMigration,
    at: number,
  ): { processed: number; remaining: number } {
    const total = m.memoryTotalBytes;
    if (
      m.status === "queued" || m.status === "preparing" ||
      m.status === "accepted"
    ) {
      return { processed: 0, remaining: total };
    }
    if (
      (m.status !== "running" && m.status !== POST_COPY) ||
      m.copyStartedAt === undefined
    ) {
      return { processed: total, remaining: 0 };
    }
    if (m.track !== undefined) {
      const p = this.#tracked(m, at);
      return {
        processed: Math.floor(p.processed),
        remaining: Math.max(0, Math.ceil(p.remaining)),
      };
    }
    const fraction = m.fault === "stuck"
      ? Math.min(0.9, (at - m.copyStartedAt) / Math.max(1, m.copyMs))
      : Math.min(1, (at - m.copyStartedAt) / Math.max(1, m.copyMs));
    const processed = Math.floor(total * fraction);
    return { processed, remaining: total - processed };
  }

  /**
   * The progress Nova's API shows (the migration record's fields): the
   * libvirt monitor saves the job's stats at the copy's start and then
   * every `live_migration_monitor_interval` (5 s); before the first save
   * the fields are null.
   */
  savedProgress(
    m: SimMigration,
    at: number,
  ): { processed: number; remaining: number } | null {
    const start = m.copyStartedAt;
    if (start === undefined || m.type !== "live-migration") return null;
    const last = start + Math.floor((at - start) / MONITOR_INTERVAL_MS) *
        MONITOR_INTERVAL_MS;
    return this.memoryProgress(m, Math.max(start, last));
  }

  /**
   * When Nova last wrote the record: its last change of status, or the
   * copy monitor's last save of its figures (libvirt's `save_stats`, every
   * monitor interval from the copy's start while it runs). A save that
   * changes no figure writes nothing (oslo's `save()` of an unchanged
   * object): a copy whose figures stand still keeps its time.
   */
  recordUpdatedAt(m: SimMigration, at: number): number {
    const start = m.copyStartedAt;
    if (
      start === undefined || m.type !== "live-migration" ||
      !m.status.startsWith("running") || at < start
    ) return m.updatedAt;
    const last = start + Math.floor((at - start) / MONITOR_INTERVAL_MS) *
        MONITOR_INTERVAL_MS;
    const before = last - MONITOR_INTERVAL_MS;
    // the tracked model runs forward from its mark only
    if (before >= start && before >= (m.track?.at ?? -Infinity)) {
      const now = this.memoryProgress(m, last);
      const then = this.memoryProgress(m, before);
      if (
        now.processed === then.processed && now.remaining === then.remaining
      ) return m.updatedAt;
    }
    return Math.max(m.updatedAt, last);
  }

  /** When a tracked copy ends (undefined: it does not converge). */
  #copyEndsAt(m: SimMigration): number | undefined {
    return this.#tracked(m, m.track?.at ?? this.now()).endsAt;
  }

  /**
   * Pre-copy as a fluid: the host sends `c` bytes per ms, the guest dirties
   * `d` (none once paused or in post-copy), so what remains falls at c - d
   * until it fits in the maximum downtime at rate c, then the switch-over
   * sends that; with d >= c it never falls (it hovers, bounded by the
   * RAM) and the copy does not end. Without a dirty rate this is the
   * plain copy: RAM / c.
   */
  #tracked(
    m: SimMigration,
    at: number,
  ): { remaining: number; processed: number; endsAt: number | undefined } {
    const tr = m.track ?? { at, remaining: m.memoryTotalBytes, processed: 0 };
    const c = m.memoryTotalBytes / Math.max(1, m.copyMs);
    const d = m.switchedTo === undefined ? m.dirtyBytesPerMs : 0;
    const fits = c * (this.hosts.get(m.source)?.maxDowntimeMs ?? 500);
    const above = Math.max(0, tr.remaining - fits);
    const dt = Math.max(0, at - tr.at);
    if (above > 0 && d >= c) {
      return {
        remaining: Math.min(m.memoryTotalBytes, tr.remaining + (d - c) * dt),
        processed: tr.processed + c * dt,
        endsAt: undefined,
      };
    }
    const converged = above === 0 ? 0 : above / (c - d);
    const length = converged + (tr.remaining - above) / c;
    const t = Math.min(dt, length);
    return {
      remaining: t <= converged
        ? tr.remaining - (c - d) * t
        : tr.remaining - above - c * (t - converged),
      processed: tr.processed + c * t,
      endsAt: tr.at + length,
    };
  }
}
