// Builders of Nova's notifications and lists for the host view's tests.
import {
  type Migration,
  NotFoundError,
  type Server,
} from "../../openstack/mod.ts";
import type {
  NotifiedInstance,
  NovaNotification,
} from "../../openstack/notification_types.ts";

export const HOST = "node042";
export const DEST = "node007";
/** The list's time; events at T0 + ms. */
export const T0 = Date.parse("2026-11-29T12:00:00Z");

let counter = 0;

/** A server listed on `host`. */
export function listed(
  id: string,
  overrides: Partial<Server> = {},
): Server {
  return {
    id,
    name: id,
    status: "ACTIVE",
    host: HOST,
    hypervisorHostname: HOST,
    taskState: null,
    vmState: "active",
    powerState: 1,
    flavor: { ramMb: 1024, vcpus: 1 },
    ...overrides,
  };
}

/** A migration record as Nova lists it. */
export function record(
  id: number,
  instanceUuid: string,
  status: string,
  overrides: Partial<Migration> = {},
): Migration {
  const t = new Date(T0 - 1000).toISOString().replace("Z", "");
  return {
    id,
    uuid: `m-${id}`,
    instanceUuid,
    migrationType: "live-migration",
    status,
    sourceCompute: HOST,
    destCompute: DEST,
    sourceNode: HOST,
    destNode: DEST,
    destHost: null,
    createdAt: t,
    updatedAt: t,
    ...overrides,
  };
}

/** The instance payload of `id`. */
export function instance(
  id: string,
  overrides: Partial<NotifiedInstance> = {},
): NotifiedInstance {
  return {
    uuid: id,
    host: HOST,
    node: HOST,
    vmState: "active",
    taskState: null,
    powerState: 1,
    flavorRamMb: 1024,
    ...overrides,
  };
}

/** A notification of `eventType` sent by `publisher` at T0 + `ms`. */
export function notification(
  eventType: string,
  ms: number,
  publisher: string,
  body: Pick<NovaNotification, "instance" | "task">,
  messageId = `msg-${++counter}`,
): NovaNotification {
  const [service, host] = publisher.split(":");
  return {
    messageId,
    eventType,
    publisherId: publisher,
    publisherHost: host ?? service,
    timestampMs: T0 + ms,
    priority: eventType.endsWith(".error") ? "error" : "info",
    ...body,
  };
}

const compute = (host: string) => `nova-compute:${host}`;
/** Real Zed: every instance.update comes from the control plane (computes save through nova-conductor). */
const CONTROL = compute("controller");

/**
 * The events of one live migration of `id` from `from` to `to`, as real
 * Zed sends them (issue 23), from `ms` on, one millisecond apart;
 * `outcome` completed, failed (rollback) or error (the conductor).
 */
export function liveMigration(
  id: string,
  ms: number,
  outcome: "completed" | "failed" | "error",
  from = HOST,
  to = DEST,
): NovaNotification[] {
  const moving = instance(id, {
    host: from,
    node: from,
    taskState: "migrating",
  });
  const out = [
    notification("instance.update", ms, CONTROL, { instance: moving }),
  ];
  if (outcome === "error") {
    return [
      ...out,
      notification(
        "compute_task.migrate_server.error",
        ms + 1,
        "nova-conductor:c",
        {
          task: { instanceUuid: id, reason: "No valid host was found." },
        },
      ),
      notification("instance.update", ms + 2, CONTROL, {
        instance: instance(id, { host: from, node: from }),
      }),
    ];
  }
  out.push(
    notification("instance.live_migration_pre.start", ms + 1, compute(to), {
      instance: moving,
    }),
    notification("instance.live_migration_pre.end", ms + 2, compute(to), {
      instance: moving,
    }),
  );
  if (outcome === "failed") {
    return [
      ...out,
      notification(
        "instance.live_migration_rollback.start",
        ms + 3,
        compute(from),
        { instance: moving },
      ),
      notification("instance.update", ms + 4, CONTROL, {
        instance: instance(id, { host: from, node: from }),
      }),
      notification(
        "instance.live_migration_rollback.end",
        ms + 5,
        compute(from),
        {
          instance: instance(id, { host: from, node: from }),
        },
      ),
    ];
  }
  const moved = instance(id, { host: to, node: to });
  return [
    ...out,
    notification("instance.live_migration_post.start", ms + 3, compute(from), {
      instance: moving,
    }),
    notification(
      "instance.live_migration_post_dest.start",
      ms + 4,
      compute(to),
      { instance: moving },
    ),
    notification("instance.update", ms + 5, CONTROL, { instance: moved }),
    notification("instance.live_migration_post_dest.end", ms + 6, compute(to), {
      instance: moved,
    }),
    // still the source's snapshot: host = source, task_state migrating
    notification("instance.live_migration_post.end", ms + 7, compute(from), {
      instance: moving,
    }),
  ];
}

/**
 * A Nova that answers the lister's calls from what a test set: the
 * servers on each host, the migration records, the servers elsewhere
 * (any other id is 404); every call is recorded.
 */
export class FixedNova {
  servers: Server[] = [];
  migrations: Migration[] = [];
  elsewhere = new Map<string, Server>();
  /** Calls made, as `name arg`. */
  readonly calls: string[] = [];

  /** Sets what the next lists show. */
  show(servers: Server[], migrations: Migration[] = []): this {
    this.servers = servers;
    this.migrations = migrations;
    return this;
  }

  listServersOnHost(host: string): Promise<Server[]> {
    this.calls.push(`listServersOnHost ${host}`);
    return Promise.resolve(this.servers.filter((s) => s.host === host));
  }

  listMigrations(
    filter: { host?: string; changesSince?: Date | string },
  ): Promise<Migration[]> {
    const since = filter.changesSince === undefined
      ? undefined
      : new Date(filter.changesSince).getTime();
    this.calls.push(
      `listMigrations ${filter.host}${since === undefined ? "" : " since"}`,
    );
    return Promise.resolve(
      this.migrations.filter((m) =>
        (m.sourceCompute === filter.host || m.destCompute === filter.host) &&
        (since === undefined ||
          Date.parse(`${m.updatedAt ?? m.createdAt}Z`) >= since)
      ),
    );
  }

  getServer(id: string): Promise<Server> {
    this.calls.push(`getServer ${id}`);
    const s = this.elsewhere.get(id);
    return s === undefined
      ? Promise.reject(new NotFoundError(`server ${id} not found`))
      : Promise.resolve(s);
  }
}
