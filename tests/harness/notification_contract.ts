/**
 * What evictor relies on in Nova's notifications, as assertions run
 * against both Novas (the simulator in the main suite, real Zed in the
 * lane): the event types of a live migration and of a NoValidHost failure,
 * their order, their publishers and the payload fields the per-host view
 * reads. Where the two differ, the simulator is changed.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { NovaNotification } from "../../openstack/notification_types.ts";
import { startNotificationFeed } from "../../openstack/notifications.ts";

/** A feed's notifications, recorded from its start. */
export interface NotificationRecorder {
  /** Everything received so far, in arrival order. */
  readonly all: NovaNotification[];
  /** Those about one server (its instance, or a compute task naming it). */
  about(uuid: string): NovaNotification[];
  /** Waits until `check` holds on what was received (polls every 50 ms). */
  until(
    what: string,
    check: (all: NovaNotification[]) => boolean,
    timeoutMs?: number,
  ): Promise<void>;
  /** Closes the feed. */
  close(): Promise<void>;
}

/** Subscribes to `url` (evictor's own feed) and waits until it is up. */
export async function recordNotifications(
  url: string,
  timeoutMs = 60_000,
): Promise<NotificationRecorder> {
  const feed = startNotificationFeed({ url, initialBackoffMs: 200 });
  const all: NovaNotification[] = [];
  feed.listen((n) => all.push(n));
  const until: NotificationRecorder["until"] = async (
    what,
    check,
    ms = 120_000,
  ) => {
    const end = Date.now() + ms;
    while (!check(all)) {
      if (Date.now() > end) {
        throw new Error(
          `timed out waiting for ${what}; received:\n${
            all.map(describe).join("\n")
          }`,
        );
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  try {
    await until("the feed to subscribe", () => feed.state === "up", timeoutMs);
  } catch (error) {
    await feed.close();
    throw error;
  }
  return {
    all,
    about: (uuid) =>
      all.filter((n) =>
        n.instance?.uuid === uuid || n.task?.instanceUuid === uuid
      ),
    until,
    close: () => feed.close(),
  };
}

/** One line per notification, for failure messages. */
export function describe(n: NovaNotification): string {
  const i = n.instance;
  return `${n.eventType} from ${n.publisherId}${
    i === undefined
      ? ""
      : ` host=${i.host} state=${i.vmState} task=${i.taskState} power=${i.powerState}`
  }${n.task === undefined ? "" : ` task-error=${n.task.reason}`}`;
}

/** The events of a successful live migration, in Nova's order. */
export const LIVE_MIGRATION_EVENTS = [
  "instance.live_migration_pre.start",
  "instance.live_migration_pre.end",
  "instance.live_migration_post.start",
  "instance.live_migration_post_dest.start",
  "instance.live_migration_post_dest.end",
  "instance.live_migration_post.end",
] as const;

/** Whether a server's live migration has been announced as ended. */
export function liveMigrationEnded(ns: NovaNotification[]): boolean {
  return ns.some((n) => n.eventType === "instance.live_migration_post.end");
}

function context(ns: NovaNotification[]): string {
  return `\n${ns.map(describe).join("\n")}`;
}

/**
 * Asserts the notifications of one server's live migration from `source`
 * to `dest`: the update that starts it (task_state migrating, from the
 * API), the six `instance.live_migration_*` events in Nova's order from
 * the hosts that send them, the update that moves it (host = dest,
 * task_state null) between `post_dest.start` and `post_dest.end`, and the
 * snapshots: `post.end` still shows the source and migrating. Other
 * updates may come between (each save sends one), never a host change
 * before the move.
 */
export function assertLiveMigrationNotifications(
  ns: NovaNotification[],
  vm: { uuid: string; source: string; dest: string; ramMb: number },
): void {
  const why = context(ns);
  for (const n of ns) {
    assert.equal(n.priority, "info", `every event is info${why}`);
    assert.equal(n.instance?.uuid, vm.uuid, why);
    assert.equal(n.instance?.vmState, "active", `vm_state stays active${why}`);
    assert.equal(n.instance?.powerState, 1, `power_state running${why}`);
    assert.equal(n.instance?.flavorRamMb, vm.ramMb, `flavor memory_mb${why}`);
    assert.ok((n.instance?.flavorVcpus ?? 0) >= 1, `flavor vcpus${why}`);
    assert.ok(n.instance?.tenantId, `tenant_id${why}`);
    assert.ok(n.instance?.name, `display_name${why}`);
  }
  const migration = ns.filter((n) =>
    n.eventType.startsWith("instance.live_migration_")
  );
  assert.deepEqual(
    migration.map((n) => n.eventType),
    [...LIVE_MIGRATION_EVENTS],
    `the live migration's events in order${why}`,
  );
  const by = (type: string) => ns.findIndex((n) => n.eventType === type);
  const publisher: Record<string, string> = {
    "instance.live_migration_pre.start": vm.dest,
    "instance.live_migration_pre.end": vm.dest,
    "instance.live_migration_post.start": vm.source,
    "instance.live_migration_post_dest.start": vm.dest,
    "instance.live_migration_post_dest.end": vm.dest,
    "instance.live_migration_post.end": vm.source,
  };
  for (const n of migration) {
    assert.equal(
      n.publisherId,
      `nova-compute:${publisher[n.eventType]}`,
      `${n.eventType} is sent by ${publisher[n.eventType]}${why}`,
    );
  }
  // Every save runs in the control plane (computes save through
  // nova-conductor), so no update is published by source or destination.
  const updaters = new Set(
    ns.filter((n) => n.eventType === "instance.update").map((n) =>
      n.publisherId
    ),
  );
  for (const p of updaters) {
    assert.match(p, /^nova-compute:/, why);
    assert.ok(
      p !== `nova-compute:${vm.source}` && p !== `nova-compute:${vm.dest}`,
      `instance.update is sent by the control plane, not ${p}${why}`,
    );
  }
  const first = ns[0];
  assert.equal(
    first?.eventType,
    "instance.update",
    `an update starts it${why}`,
  );
  assert.equal(first?.instance?.taskState, "migrating", why);
  assert.equal(first?.instance?.host, vm.source, why);
  const moved = ns.findIndex((n) =>
    n.eventType === "instance.update" && n.instance?.host === vm.dest
  );
  assert.ok(moved !== -1, `an update shows the move${why}`);
  assert.equal(ns[moved]?.instance?.taskState, null, why);
  assert.equal(ns[moved]?.instance?.node, vm.dest, why);
  assert.ok(
    by("instance.live_migration_post_dest.start") < moved &&
      moved < by("instance.live_migration_post_dest.end"),
    `the move is saved between post_dest.start and post_dest.end${why}`,
  );
  for (const n of ns.slice(0, moved)) {
    assert.equal(n.instance?.host, vm.source, `no move before it${why}`);
    assert.equal(n.instance?.taskState, "migrating", why);
  }
  const destEnd = ns[by("instance.live_migration_post_dest.end")];
  assert.equal(destEnd?.instance?.host, vm.dest, why);
  assert.equal(destEnd?.instance?.taskState, null, why);
  const postEnd = ns[by("instance.live_migration_post.end")];
  assert.equal(
    postEnd?.instance?.host,
    vm.source,
    `post.end: a snapshot${why}`,
  );
  assert.equal(postEnd?.instance?.taskState, "migrating", why);
  for (let i = 1; i < ns.length; i++) {
    assert.ok(
      (ns[i]?.timestampMs ?? 0) >= (ns[i - 1]?.timestampMs ?? 0) - 1000,
      `timestamps in order (within a second across hosts)${why}`,
    );
  }
}

/**
 * Asserts the notifications of a live migration that found no valid host:
 * the update that starts it (migrating), the update that ends it
 * (task_state null, still on `source`), then
 * `compute_task.migrate_server.error` (priority error, from the
 * conductor) naming the server and Nova's NoValidHost message; nothing of
 * a migration in between.
 */
export function assertNoValidHostNotifications(
  ns: NovaNotification[],
  vm: { uuid: string; source: string },
): void {
  const why = context(ns);
  assert.ok(
    !ns.some((n) => n.eventType.startsWith("instance.live_migration_")),
    `no migration event${why}`,
  );
  const error = ns.findIndex((n) =>
    n.eventType === "compute_task.migrate_server.error"
  );
  assert.ok(error !== -1, `compute_task.migrate_server.error${why}`);
  const e = ns[error];
  assert.equal(e?.priority, "error", why);
  assert.match(e?.publisherId ?? "", /^nova-conductor:/, why);
  assert.equal(e?.task?.instanceUuid, vm.uuid, why);
  assert.match(e?.task?.reason ?? "", /^No valid host was found\./, why);
  const updates = ns.slice(0, error).filter((n) =>
    n.eventType === "instance.update"
  );
  assert.equal(
    e?.task?.reason,
    "No valid host was found. There are not enough hosts available.",
    `the reason's first line only${why}`,
  );
  assert.equal(updates[0]?.instance?.taskState, "migrating", why);
  const last = updates.at(-1);
  assert.equal(last?.instance?.taskState, null, `task_state cleared${why}`);
  for (const u of updates) {
    assert.equal(u.instance?.host, vm.source, why);
    assert.equal(u.instance?.vmState, "active", why);
  }
}

/**
 * Asserts the notifications of a live migration whose copy failed and was
 * rolled back: prepared on `dest` (`live_migration_pre.*`), then on the
 * source `live_migration_rollback.start`, the save that clears task_state
 * (still on `source`), `live_migration_rollback.end`; nothing of a
 * completion. The destination's own clean-up (`rollback_dest.*`), when
 * sent, comes from `dest`.
 */
export function assertRollbackNotifications(
  ns: NovaNotification[],
  vm: { uuid: string; source: string; dest: string },
): void {
  const why = context(ns);
  assert.ok(
    !ns.some((n) => n.eventType.startsWith("instance.live_migration_post")),
    `no completion${why}`,
  );
  const at = (type: string) => ns.findIndex((n) => n.eventType === type);
  const pre = at("instance.live_migration_pre.end");
  const start = at("instance.live_migration_rollback.start");
  const end = at("instance.live_migration_rollback.end");
  assert.ok(pre !== -1 && pre < start && start < end, `order${why}`);
  for (const i of [start, end]) {
    assert.equal(ns[i]?.publisherId, `nova-compute:${vm.source}`, why);
    assert.equal(ns[i]?.instance?.host, vm.source, why);
  }
  assert.equal(ns[start]?.instance?.taskState, "migrating", why);
  assert.equal(ns[end]?.instance?.taskState, null, why);
  const cleared = ns.findIndex((n, i) =>
    i > start && i < end && n.eventType === "instance.update" &&
    n.instance?.taskState === null
  );
  assert.ok(cleared !== -1, `the save clearing task_state${why}`);
  assert.equal(ns[cleared]?.instance?.host, vm.source, why);
  assert.equal(ns[cleared]?.instance?.vmState, "active", why);
  for (const n of ns) {
    if (n.eventType.startsWith("instance.live_migration_rollback_dest.")) {
      assert.equal(n.publisherId, `nova-compute:${vm.dest}`, why);
    }
  }
}
