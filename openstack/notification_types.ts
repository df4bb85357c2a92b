/**
 * What evictor takes from Nova's versioned notifications (issue 23): one
 * message, parsed once at the boundary, and the feed that delivers them.
 * The transport (AMQP, `openstack/notifications.ts`) fills these; the
 * drain's per-host view consumes them. Both Novas (real and the simulator)
 * publish the same envelope: `{"oslo.version": "2.0", "oslo.message":
 * "<json>"}` on the topic exchange `nova`, routing keys
 * `versioned_notifications.info` and `versioned_notifications.error`.
 *
 * @module
 */

/**
 * The instance a notification's payload describes (`nova_object.data` of
 * an InstancePayload or one of its subclasses), as a snapshot taken where
 * the event was sent: `instance.live_migration_post.end` still shows the
 * source host, the move itself shows in `instance.update` (host = the
 * destination, task state null) and `instance.live_migration_post_dest.end`.
 */
export interface NotifiedInstance {
  /** Server UUID. */
  uuid: string;
  /** Compute service host, null while unscheduled. */
  host: string | null;
  /** Hypervisor node. */
  node: string | null;
  /** vm_state: active, stopped, paused, suspended, resized, error, ... */
  vmState: string | null;
  /** task_state: migrating, resize_prep, deleting, ... or null. */
  taskState: string | null;
  /**
   * Power state as a number, the way `OS-EXT-STS:power_state` has it
   * (the payload's name mapped: pending 0, running 1, paused 3, shutdown 4,
   * crashed 6, suspended 7), null when the payload has none.
   */
  powerState: number | null;
  /** Flavor RAM in MiB when the payload carries the flavor. */
  flavorRamMb?: number;
  /** Flavor vCPUs when the payload carries the flavor. */
  flavorVcpus?: number;
  /** Project (tenant_id). */
  tenantId?: string;
  /** Display name. */
  name?: string;
}

/** One versioned notification from Nova. */
export interface NovaNotification {
  /** oslo message id: the key duplicates are dropped by. */
  messageId: string;
  /** e.g. `instance.update`, `instance.live_migration_post.end`, `compute_task.migrate_server.error`. */
  eventType: string;
  /** `nova-compute:node001`, `nova-conductor:...`, `nova-api:...`. */
  publisherId: string;
  /** The host part of the publisher id (`node001`), or undefined. */
  publisherHost: string | undefined;
  /** Nova's timestamp (UTC, `YYYY-MM-DD hh:mm:ss.ffffff`) in epoch ms. */
  timestampMs: number;
  /** From the routing key: `info` or `error`. */
  priority: "info" | "error";
  /** The instance the payload names, for `instance.*` events. */
  instance?: NotifiedInstance;
  /**
   * The instance a `compute_task.*` payload names (its `instance_uuid`)
   * and the reason's message (for example "No valid host was found.").
   */
  task?: { instanceUuid: string; reason: string | undefined };
}

/** The feed's connection, as a view must know it. */
export type FeedState =
  /** Bound and consuming: events from now on arrive. */
  | "up"
  /** Lost (broker gone, channel closed): events may be missing. */
  | "down";

/**
 * Nova's notifications as they arrive, from one process's own queue.
 * Each (re)subscribe starts a new epoch; a view built in an earlier epoch
 * may have missed events and must relist.
 */
export interface NotificationFeed {
  /** Registers a listener of every notification; returns its removal. */
  listen(listener: (n: NovaNotification) => void): () => void;
  /** Registers a listener of state changes; returns its removal. */
  onState(listener: (state: FeedState, epoch: number) => void): () => void;
  /** The state now. */
  readonly state: FeedState;
  /** Increments at each (re)subscribe. */
  readonly epoch: number;
  /** Stops consuming and closes the connection. */
  close(): Promise<void>;
}
