/**
 * A list-and-watch view of one draining host: one list, then the events
 * since, deduplicated and folded in one total order.
 * @module
 */

import { parseNovaTime } from "../nova_time.ts";
import type { EvictionStatus } from "../../models/mod.ts";
import type { Server } from "../mod.ts";
import type {
  FeedState,
  NotifiedInstance,
  NovaNotification,
} from "../notification_types.ts";
import {
  apiStatusOf,
  byEventOrder,
  isDeletion,
  isSnapshot,
  type MigrationStep,
  migrationStepOf,
  recordEnded,
  statusRank,
  subjectOf,
} from "./notified_events.ts";
import type {
  DepartedServer,
  Observation,
  ObservedMigration,
  ObservedServer,
} from "./snapshot.ts";
import { departedIds, departureOf, latestRecords } from "./nova_records.ts";

/** Foreign events a view keeps, in case their VM becomes known. */
const PARKED_MAX = 1024;

/** When and in which state of the feed a list was taken. */
export interface ListStamp {
  /** When the list began. */
  atMs: number;
  epoch: number;
  up: boolean;
}

/** What a list of the host found. */
export type Listed = Pick<Observation, "servers" | "migrations" | "departed">;

/** Nova's time format: ISO 8601 without a zone. */
function novaTime(ms: number): string {
  return new Date(ms).toISOString().replace("Z", "");
}

/**
 * @example
 * ```ts
 * import { WatchedHost } from "./host_view.ts";
 * const listed = { id: "a", name: "a", status: "ACTIVE", host: "h", hypervisorHostname: "h",
 *   taskState: null, vmState: "active", powerState: 1, flavor: { ramMb: 1024, vcpus: 1 } };
 * const view = new WatchedHost("h", { servers: [listed], migrations: [], departed: [] },
 *   { atMs: 0, epoch: 1, up: true });
 * view.apply({ messageId: "m1", eventType: "instance.delete.end", publisherId: "nova-compute:h",
 *   publisherHost: "h", timestampMs: 5, priority: "info",
 *   instance: { uuid: "a", host: "h", node: "h", vmState: "deleted", taskState: null, powerState: 0 } });
 * const seen = view.observation({ outstandingInstances: ["a"] });
 * console.assert(seen.servers.length === 0 && seen.departed[0]?.server === null);
 * console.assert(view.trustworthy({ state: "up", epoch: 1 }));
 * ```
 */
export class WatchedHost {
  readonly host: string;
  readonly list: Readonly<Listed>;
  readonly stamp: Readonly<ListStamp>;
  readonly #events = new Map<string, NovaNotification>();
  readonly #known = new Set<string>();
  /** Events about VMs not (yet) known, newest last: one may become known. */
  readonly #parked = new Map<string, NovaNotification>();

  constructor(host: string, list: Listed, stamp: ListStamp) {
    this.host = host;
    this.list = list;
    this.stamp = stamp;
    for (const s of list.servers) this.#known.add(s.id);
    for (const m of list.migrations) this.#known.add(m.instanceUuid);
    for (const d of list.departed) this.#known.add(d.id);
  }

  listedHere(id: string): boolean {
    return this.list.servers.some((s) => s.id === id);
  }

  get eventCount(): number {
    return this.#events.size;
  }

  concerns(n: NovaNotification): boolean {
    const id = subjectOf(n);
    return n.instance?.host === this.host || n.publisherHost === this.host ||
      (id !== undefined && this.#known.has(id));
  }

  /** Whether the event was new and about the host (then kept). */
  apply(n: NovaNotification): boolean {
    if (this.#events.has(n.messageId)) return false;
    if (!this.concerns(n)) {
      this.#park(n);
      return false;
    }
    this.#events.set(n.messageId, n);
    const id = subjectOf(n);
    if (id !== undefined && !this.#known.has(id)) {
      this.#known.add(id);
      this.#adopt(id);
    }
    return true;
  }

  /** An event about a VM coming here may arrive before the one naming this host. */
  #park(n: NovaNotification): void {
    if (subjectOf(n) === undefined) return;
    this.#parked.delete(n.messageId);
    this.#parked.set(n.messageId, n);
    if (this.#parked.size > PARKED_MAX) {
      const oldest = this.#parked.keys().next();
      if (oldest.done !== true) this.#parked.delete(oldest.value);
    }
  }

  #adopt(id: string): void {
    for (const [key, n] of this.#parked) {
      if (subjectOf(n) !== id) continue;
      this.#parked.delete(key);
      this.#events.set(key, n);
    }
  }

  /** Listed while the feed was up, and up since in the same epoch: no gap. */
  trustworthy(feed: { state: FeedState; epoch: number }): boolean {
    return this.stamp.up && feed.state === "up" &&
      feed.epoch === this.stamp.epoch;
  }

  /** The list with the events folded in; `ramOf` fills flavors payloads lack. */
  observation(
    status: EvictionStatus | undefined,
    ramOf: (id: string) => number | undefined = () => undefined,
  ): Observation {
    const servers = new Map(this.list.servers.map((s) => [s.id, s]));
    const moved = new Map(this.list.departed.map((d) => [d.id, d]));
    const records = this.list.migrations.map((m) => ({ ...m }));
    for (const [id, events] of this.#bySubject()) {
      const before = servers.get(id);
      foldSnapshots(
        this.host,
        id,
        events,
        servers,
        moved,
        ramOf,
        this.#listedChangeMs(id),
      );
      foldRecords(id, events, records, before ?? servers.get(id));
    }
    const mine = records.filter((m) =>
      m.sourceCompute === this.host || m.destCompute === this.host
    );
    const listed = [...servers.values()];
    const latest = latestRecords(mine, this.host);
    const departed = departedIds(status, listed, mine, this.host).flatMap(
      (id): DepartedServer[] => {
        const known = moved.get(id);
        if (known !== undefined) return [known];
        const record = latest.get(id)?.latest;
        const server = record === undefined
          ? undefined
          : departureOf(record, ramOf(id) ?? 0);
        return server === undefined ? [] : [{ id, server }];
      },
    );
    return {
      servers: listed,
      migrations: mine,
      departed,
      listedAtMs: this.stamp.atMs,
    };
  }

  /**
   * VMs listed here that the events show elsewhere without a migration.
   *
   * @example
   * ```ts
   * import { WatchedHost } from "./host_view.ts";
   * const listed = { id: "a", name: "a", status: "ACTIVE", host: "h", hypervisorHostname: "h",
   *   taskState: null, vmState: "active", powerState: 1, flavor: { ramMb: 1024, vcpus: 1 } };
   * const view = new WatchedHost("h", { servers: [listed], migrations: [], departed: [] },
   *   { atMs: 0, epoch: 1, up: true });
   * view.apply({ messageId: "m1", eventType: "instance.update", publisherId: "nova-compute:d",
   *   publisherHost: "d", timestampMs: 5, priority: "info",
   *   instance: { uuid: "a", host: "d", node: "d", vmState: "active", taskState: null, powerState: 1 } });
   * console.assert(view.missedMoves()[0] === "a");
   * ```
   */
  missedMoves(): string[] {
    const missed: string[] = [];
    const listed = new Set(this.list.servers.map((s) => s.id));
    for (const [id, events] of this.#bySubject()) {
      if (
        events.some((n) => migrationStepOf(n.eventType, false) !== undefined)
      ) {
        continue;
      }
      if (
        this.list.migrations.some((m) =>
          m.instanceUuid === id && !recordEnded(m.status)
        )
      ) continue;
      let here = listed.has(id);
      let left = false;
      for (const n of events) {
        if (!isSnapshot(n.eventType) || n.instance === undefined) continue;
        if (isDeletion(n)) {
          left = false;
          here = false;
        } else if (n.instance.host === this.host) {
          here = true;
          left = false;
        } else if (here) left = true;
      }
      if (left) missed.push(id);
    }
    return missed.sort();
  }

  /**
   * VMs shown on the host with no list behind their being here (the trust
   * rule: an event may be forged, replayed or misattributed).
   *
   * @example
   * ```ts
   * import { WatchedHost } from "./host_view.ts";
   * const view = new WatchedHost("h", { servers: [], migrations: [], departed: [] },
   *   { atMs: 0, epoch: 1, up: true });
   * view.apply({ messageId: "m1", eventType: "instance.update", publisherId: "nova-conductor:x",
   *   publisherHost: "x", timestampMs: 5, priority: "info",
   *   instance: { uuid: "a", host: "h", node: "h", vmState: "active", taskState: null, powerState: 1 } });
   * console.assert(view.unlisted()[0] === "a");
   * ```
   */
  unlisted(): string[] {
    const unlisted: string[] = [];
    for (const [id, events] of this.#bySubject()) {
      let here = this.listedHere(id);
      let listed = here;
      const listedAt = this.#listedChangeMs(id);
      for (const n of events) {
        if (!isSnapshot(n.eventType) || n.instance === undefined) continue;
        if (n.timestampMs < listedAt) continue;
        here = !isDeletion(n) && n.instance.host === this.host;
        if (!here) listed = false;
      }
      if (here && !listed) unlisted.push(id);
    }
    return unlisted.sort();
  }

  /** The list's latest change of `id` (Nova's clock): older snapshots are stale. */
  #listedChangeMs(id: string): number {
    let latest = parseNovaTime(
      this.list.servers.find((s) => s.id === id)?.updated,
    ) ?? -Infinity;
    for (const m of this.list.migrations) {
      if (m.instanceUuid !== id) continue;
      const t = parseNovaTime(m.updatedAt ?? m.createdAt) ?? -Infinity;
      if (t > latest) latest = t;
    }
    return latest;
  }

  #bySubject(): Map<string, NovaNotification[]> {
    const out = new Map<string, NovaNotification[]>();
    for (const n of [...this.#events.values()].sort(byEventOrder)) {
      const id = subjectOf(n);
      if (id === undefined) continue;
      const list = out.get(id) ?? [];
      list.push(n);
      out.set(id, list);
    }
    return out;
  }
}

/** The server a payload describes, what the list knew of it filling gaps. */
function serverOf(
  i: NotifiedInstance,
  known: Server | undefined,
  ramOf: (id: string) => number | undefined,
): Server {
  const tenantId = i.tenantId ?? known?.tenantId;
  return {
    id: i.uuid,
    name: i.name ?? known?.name ?? "",
    status: apiStatusOf(i.vmState, i.taskState),
    host: i.host,
    hypervisorHostname: i.node,
    taskState: i.taskState,
    vmState: i.vmState,
    powerState: i.powerState,
    flavor: {
      ramMb: i.flavorRamMb ?? known?.flavor.ramMb ?? ramOf(i.uuid) ?? 0,
      vcpus: i.flavorVcpus ?? known?.flavor.vcpus ?? 0,
    },
    ...(tenantId === undefined ? {} : { tenantId }),
  };
}

function observedOf(s: Server): ObservedServer {
  return {
    id: s.id,
    status: s.status,
    host: s.host,
    taskState: s.taskState,
    flavor: { ramMb: s.flavor.ramMb },
  };
}

/** The VM's host and states from the snapshot events, the latest winning. */
function foldSnapshots(
  host: string,
  id: string,
  events: readonly NovaNotification[],
  servers: Map<string, Server>,
  moved: Map<string, DepartedServer>,
  ramOf: (id: string) => number | undefined,
  listedAt: number,
): void {
  for (const n of events) {
    if (!isSnapshot(n.eventType) || n.instance === undefined) continue;
    if (n.timestampMs < listedAt) continue;
    if (isDeletion(n)) {
      servers.delete(id);
      moved.set(id, { id, server: null });
      continue;
    }
    const known = servers.get(id);
    const server = serverOf(n.instance, known, ramOf);
    if (server.host === host) {
      servers.set(id, server);
      moved.delete(id);
    } else {
      servers.delete(id);
      moved.set(id, { id, server: observedOf(server) });
    }
  }
}

/** Each step raises its record's status; a step after the latest record's end begins a new one. */
function foldRecords(
  id: string,
  events: readonly NovaNotification[],
  records: ObservedMigration[],
  server: Server | undefined,
): void {
  const cold = (server?.status ?? "").toUpperCase() === "SHUTOFF";
  let cur = latestOf(records.filter((m) => m.instanceUuid === id));
  let aborting = false;
  for (const n of events) {
    const step = migrationStepOf(n.eventType, cold);
    if (step === undefined) continue;
    if (cur === undefined || endedBefore(cur, n)) {
      cur = newRecord(id, n, step, server);
      records.push(cur);
      aborting = false;
    }
    if (n.eventType.endsWith("_abort.start")) aborting = true;
    const status = step.status === "failed" && aborting
      ? "cancelled"
      : step.status;
    if (status !== undefined && statusRank(status) > statusRank(cur.status)) {
      cur.status = status;
      cur.updatedAt = novaTime(n.timestampMs);
    }
    if (step.onDestination && n.publisherHost !== undefined) {
      cur.destCompute ??= n.publisherHost;
    }
  }
  // A cold move's events do not say whether it is a migration or a user's
  // resize; a flavor that changed says resize (a migration keeps it).
  const listedRamMb = server?.flavor.ramMb;
  const resized = listedRamMb !== undefined &&
    events.some((n) =>
      isSnapshot(n.eventType) && n.instance?.flavorRamMb !== undefined &&
      n.instance.flavorRamMb !== listedRamMb
    );
  if (!resized) return;
  for (const m of records) {
    if (
      m.id === undefined && m.instanceUuid === id &&
      m.migrationType === "migration"
    ) {
      m.migrationType = "resize";
    }
  }
}

function latestOf(
  records: readonly ObservedMigration[],
): ObservedMigration | undefined {
  let best: ObservedMigration | undefined;
  for (const m of records) {
    if (best === undefined) {
      best = m;
      continue;
    }
    const a = parseNovaTime(m.createdAt) ?? -Infinity;
    const b = parseNovaTime(best.createdAt) ?? -Infinity;
    if (a > b || (a === b && idRank(m) > idRank(best))) best = m;
  }
  return best;
}

/** Nova keeps a record's times in whole seconds (the view's own records: ms). */
const RECORD_TIME_PRECISION_MS = 1000;

/** Whether a record ended before step `n` (a step in its end's second is its own). */
function endedBefore(m: ObservedMigration, n: NovaNotification): boolean {
  if (!recordEnded(m.status)) return false;
  const end = parseNovaTime(m.updatedAt ?? m.createdAt);
  if (end === undefined) return false;
  const ownRecord = m.id === undefined;
  return ownRecord
    ? n.timestampMs > end
    : n.timestampMs >= end + RECORD_TIME_PRECISION_MS;
}

/** Ties of creation time: later id first, the view's own (no id) last. */
function idRank(m: ObservedMigration): number {
  return m.id === undefined ? Infinity : Number(m.id);
}

/** A record for a migration the list did not show, from its first event. */
function newRecord(
  id: string,
  n: NovaNotification,
  step: MigrationStep,
  server: Server | undefined,
): ObservedMigration {
  const fromPayload = step.payloadIsSource ? n.instance?.host : undefined;
  const fromPublisher = step.onDestination ? undefined : n.publisherHost;
  return {
    instanceUuid: id,
    migrationType: step.migrationType,
    status: "accepted",
    sourceCompute: fromPayload ?? server?.host ?? fromPublisher ?? null,
    destCompute: step.onDestination ? n.publisherHost ?? null : null,
    createdAt: novaTime(n.timestampMs),
    updatedAt: null,
  };
}
