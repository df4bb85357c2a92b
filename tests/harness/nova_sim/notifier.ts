/**
 * Nova's versioned notifications, as the simulator emits them: the payloads
 * (`nova_object.*` as nova/notifications/objects/*.py serialise them), the
 * oslo.messaging message (`message_id`, `publisher_id`, `event_type`,
 * `priority`, `payload`, `timestamp`, plus `_unique_id` and the sanitised
 * `_context_*` keys the rabbit driver adds) and its 2.0 envelope
 * (`{"oslo.version": "2.0", "oslo.message": "<json>"}`), sent with routing
 * key `versioned_notifications.<priority>` on the topic exchange `nova`.
 * Checked against Nova Zed (26.x) and oslo.messaging 14.0 (Debian bookworm).
 *
 * @module
 */

/** The oslo.messaging 2.0 envelope, as it travels on the wire. */
export interface OsloEnvelope {
  /** Always `2.0`. */
  "oslo.version": "2.0";
  /** The message as JSON text. */
  "oslo.message": string;
}

/** The message inside an envelope (the fields a consumer reads). */
export interface OsloNotification {
  /** A fresh UUID per message. */
  message_id: string;
  /** `nova-compute:<host>`, `nova-conductor:<host>`, `nova-scheduler:<host>`. */
  publisher_id: string;
  /** e.g. `instance.live_migration_post.end`. */
  event_type: string;
  /** `INFO` or `ERROR` (oslo upper-cases it). */
  priority: "INFO" | "ERROR";
  /** The versioned payload. */
  payload: VersionedObject;
  /** Python's `str(datetime.utcnow())`: `YYYY-MM-DD hh:mm:ss.ffffff`. */
  timestamp: string;
  /** More keys the driver adds (`_unique_id`, `_context_*`). */
  [key: string]: unknown;
}

/** A serialised Nova versioned object. */
export interface VersionedObject {
  /** e.g. `InstanceActionPayload`. */
  "nova_object.name": string;
  /** Always `nova`. */
  "nova_object.namespace": "nova";
  /** The object's version. */
  "nova_object.version": string;
  /** Its fields. */
  "nova_object.data": Record<string, unknown>;
}

/** Routing keys Nova publishes versioned notifications with. */
export type NotificationRoutingKey =
  | "versioned_notifications.info"
  | "versioned_notifications.error";

/** A listener of the simulator's notifications. */
export type NotificationListener = (
  routingKey: NotificationRoutingKey,
  envelope: OsloEnvelope,
) => void;

/** The instance state a payload is a snapshot of. */
export interface InstanceSnapshot {
  /** Server UUID. */
  uuid: string;
  /** Display name. */
  name: string;
  /** Project. */
  projectId: string;
  /** User. */
  userId: string;
  /** Flavor. */
  flavor: { name: string; ramMb: number; vcpus: number; disk: number };
  /** Compute host (and node: the simulator's node is its host). */
  host: string | null;
  /** vm_state (`deleted` only in delete payloads). */
  vmState: string;
  /** task_state. */
  taskState: string | null;
  /** power_state as a number (1 running, 3 paused, 4 shutdown, ...). */
  powerState: number;
  /** Created (ms). */
  created: number;
  /** Last update (ms). */
  updated: number;
  /** Locked. */
  locked: boolean;
  /** Deleted at (ms), only for a deleted instance. */
  deletedAt?: number;
}

/** Nova's names of power states (`InstancePowerState.ALL`), by number. */
const POWER_STATE_NAMES: Record<number, string> = {
  0: "pending",
  1: "running",
  3: "paused",
  4: "shutdown",
  6: "crashed",
  7: "suspended",
};

/** The control-plane host of the simulated nova-api/conductor/scheduler. */
export const CONTROLLER_HOST = "controller";

/**
 * Python's `str(datetime)` of a UTC time: `2026-01-02 03:04:05.123000`, and
 * without the fraction when its microseconds are 0 (as Python prints it).
 *
 * @example
 * ```ts
 * import { osloTimestamp } from "./notifier.ts";
 * console.log(osloTimestamp(1500)); // 1970-01-01 00:00:01.500000
 * console.log(osloTimestamp(0)); // 1970-01-01 00:00:00
 * ```
 */
export function osloTimestamp(ms: number): string {
  const whole = Math.floor(ms);
  const iso = new Date(whole).toISOString(); // 1970-01-01T00:00:01.500Z
  const base = iso.slice(0, 19).replace("T", " ");
  const millis = whole % 1000;
  return millis === 0 ? base : `${base}.${String(millis).padStart(3, "0")}000`;
}

/** The traceback an exception that crossed oslo.messaging RPC carries. */
function remoteTraceback(exception: string, message: string): string {
  return [
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3/dist-packages/nova/scheduler/manager.py", line 455, in _ensure_sufficient_hosts',
    `    raise exception.${exception}(reason=reason)`,
    `nova.exception.${exception}: ${message}`,
    "",
  ].join("\n");
}

/** A payload's datetime (oslo.versionedobjects: ISO 8601 with `Z`). */
function payloadTime(ms: number | undefined): string | null {
  if (ms === undefined) return null;
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(
    /\.\d{3}Z$/,
    "Z",
  );
}

function flavorPayload(f: InstanceSnapshot["flavor"]): VersionedObject {
  return {
    "nova_object.name": "FlavorPayload",
    "nova_object.namespace": "nova",
    "nova_object.version": "1.4",
    "nova_object.data": {
      flavorid: f.name,
      name: f.name,
      root_gb: f.disk,
      vcpus: f.vcpus,
      ephemeral_gb: 0,
      memory_mb: f.ramMb,
      disabled: false,
      rxtx_factor: 1.0,
      extra_specs: {},
      projects: null,
      swap: 0,
      is_public: true,
      vcpu_weight: 0,
      description: null,
    },
  };
}

/** InstancePayload 1.8's fields for a snapshot. */
function instanceData(
  s: InstanceSnapshot,
  requestId: string | null,
): Record<string, unknown> {
  return {
    uuid: s.uuid,
    user_id: s.userId,
    tenant_id: s.projectId,
    reservation_id: `r-${s.uuid.slice(0, 8)}`,
    display_name: s.name,
    display_description: s.name,
    host_name: s.name,
    host: s.host,
    node: s.host,
    os_type: null,
    architecture: "x86_64",
    availability_zone: "nova",
    flavor: flavorPayload(s.flavor),
    image_uuid: "155d900f-4e14-4e4c-a73d-069cbf4541e6",
    key_name: null,
    kernel_id: "",
    ramdisk_id: "",
    created_at: payloadTime(s.created),
    launched_at: payloadTime(s.created),
    terminated_at: payloadTime(s.deletedAt),
    deleted_at: payloadTime(s.deletedAt),
    updated_at: payloadTime(s.updated),
    state: s.vmState,
    power_state: POWER_STATE_NAMES[s.powerState] ?? "pending",
    task_state: s.taskState,
    progress: 0,
    ip_addresses: [],
    block_devices: [],
    metadata: {},
    locked: s.locked,
    auto_disk_config: "MANUAL",
    request_id: requestId,
    action_initiator_user: "admin",
    action_initiator_project: "admin",
    locked_reason: null,
  };
}

/**
 * Emits the simulator's notifications to its listeners, with fresh message
 * ids (random, as Nova's; they do not draw from the scenario's seed, so a
 * seeded run's servers and timings stay what they were).
 */
export class SimNotifier {
  readonly #listeners = new Set<NotificationListener>();

  /** Registers a listener; returns its removal. */
  listen(listener: NotificationListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Whether anyone listens (the simulator paces itself only then). */
  get active(): boolean {
    return this.#listeners.size > 0;
  }

  /** Sends one notification to every listener. */
  emit(
    eventType: string,
    publisherId: string,
    priority: "INFO" | "ERROR",
    payload: VersionedObject,
    at: number,
  ): void {
    if (this.#listeners.size === 0) return;
    const requestId = `req-${crypto.randomUUID()}`;
    const message: OsloNotification = {
      message_id: crypto.randomUUID(),
      publisher_id: publisherId,
      event_type: eventType,
      priority,
      payload,
      timestamp: osloTimestamp(at),
      _unique_id: crypto.randomUUID().replaceAll("-", ""),
      _context_request_id: requestId,
      _context_user: "admin",
      _context_project_id: "admin",
      _context_is_admin: true,
      _context_read_deleted: "no",
    };
    const envelope: OsloEnvelope = {
      "oslo.version": "2.0",
      "oslo.message": JSON.stringify(message),
    };
    const key: NotificationRoutingKey = priority === "ERROR"
      ? "versioned_notifications.error"
      : "versioned_notifications.info";
    for (const l of [...this.#listeners]) l(key, envelope);
  }

  /**
   * `instance.<action>.<phase>` with an InstanceActionPayload, from
   * `nova-compute:<host>` (compute_utils.notify_about_instance_action).
   */
  instanceAction(
    action: string,
    phase: "start" | "end" | "error",
    s: InstanceSnapshot,
    publisherHost: string,
    at: number,
  ): void {
    this.emit(
      `instance.${action}.${phase}`,
      `nova-compute:${publisherHost}`,
      phase === "error" ? "ERROR" : "INFO",
      {
        "nova_object.name": "InstanceActionPayload",
        "nova_object.namespace": "nova",
        "nova_object.version": "1.8",
        "nova_object.data": { ...instanceData(s, null), fault: null },
      },
      at,
    );
  }

  /**
   * `instance.update` with an InstanceUpdatePayload: sent by every
   * `Instance.save()` (notify_on_state_change = vm_and_task_state), from
   * `nova-compute:<CONF.host of the saving service>` (nova-api and
   * nova-conductor included: send_update's service defaults to compute).
   */
  instanceUpdate(
    s: InstanceSnapshot,
    old: { vmState: string; taskState: string | null },
    publisherHost: string,
    at: number,
  ): void {
    this.emit(
      "instance.update",
      `nova-compute:${publisherHost}`,
      "INFO",
      {
        "nova_object.name": "InstanceUpdatePayload",
        "nova_object.namespace": "nova",
        "nova_object.version": "2.0",
        "nova_object.data": {
          ...instanceData(s, null),
          state_update: {
            "nova_object.name": "InstanceStateUpdatePayload",
            "nova_object.namespace": "nova",
            "nova_object.version": "1.0",
            "nova_object.data": {
              old_state: old.vmState,
              state: s.vmState,
              old_task_state: old.taskState,
              new_task_state: s.taskState,
            },
          },
          audit_period: {
            "nova_object.name": "AuditPeriodPayload",
            "nova_object.namespace": "nova",
            "nova_object.version": "1.0",
            "nova_object.data": {
              audit_period_beginning: payloadTime(
                Date.UTC(
                  new Date(at).getUTCFullYear(),
                  new Date(at).getUTCMonth(),
                  1,
                ),
              ),
              audit_period_ending: payloadTime(at),
            },
          },
          old_display_name: null,
          tags: [],
        },
      },
      at,
    );
  }

  /**
   * `service.update` with a ServiceStatusPayload, from the service itself
   * (`nova-compute:<host>`): sent by every save that sets disabled,
   * disabled_reason or forced_down (an API call, even to the same value).
   */
  serviceUpdate(
    svc: {
      host: string;
      uuid: string;
      disabled: boolean;
      disabledReason: string | null;
      forcedDown: boolean;
      up: boolean;
      zone: string;
      lastSeenUp: number;
    },
    at: number,
  ): void {
    this.emit(
      "service.update",
      `nova-compute:${svc.host}`,
      "INFO",
      {
        "nova_object.name": "ServiceStatusPayload",
        "nova_object.namespace": "nova",
        "nova_object.version": "1.1",
        "nova_object.data": {
          host: svc.host,
          binary: "nova-compute",
          topic: "compute",
          report_count: 1,
          disabled: svc.disabled,
          disabled_reason: svc.disabledReason,
          availability_zone: svc.zone,
          last_seen_up: svc.up ? payloadTime(svc.lastSeenUp) : null,
          forced_down: svc.forcedDown,
          version: 61,
          uuid: svc.uuid,
        },
      },
      at,
    );
  }

  /** `scheduler.select_destinations.<phase>` from nova-scheduler. */
  selectDestinations(
    phase: "start" | "end",
    s: InstanceSnapshot,
    at: number,
  ): void {
    this.emit(
      `scheduler.select_destinations.${phase}`,
      `nova-scheduler:${CONTROLLER_HOST}`,
      "INFO",
      {
        "nova_object.name": "RequestSpecPayload",
        "nova_object.namespace": "nova",
        "nova_object.version": "1.1",
        "nova_object.data": {
          availability_zone: null,
          flavor: flavorPayload(s.flavor),
          ignore_hosts: null,
          instance_uuid: s.uuid,
          num_instances: 1,
          numa_topology: null,
          project_id: s.projectId,
          scheduler_hints: {},
          security_groups: ["default"],
          force_hosts: null,
          force_nodes: null,
          instance_group: null,
          requested_destination: null,
          retry: null,
          user_id: s.userId,
        },
      },
      at,
    );
  }

  /**
   * `compute_task.<action>.error` (priority ERROR, routing key
   * `versioned_notifications.error`) from nova-conductor, with a
   * ComputeTaskPayload: what scheduler_utils.set_vm_state_and_notify sends
   * after a NoValidHost.
   */
  computeTaskError(
    action: string,
    instanceUuid: string,
    vmState: string,
    exception: string,
    message: string,
    at: number,
  ): void {
    this.emit(
      `compute_task.${action}.error`,
      `nova-conductor:${CONTROLLER_HOST}`,
      "ERROR",
      {
        "nova_object.name": "ComputeTaskPayload",
        "nova_object.namespace": "nova",
        "nova_object.version": "1.0",
        "nova_object.data": {
          instance_uuid: instanceUuid,
          reason: {
            "nova_object.name": "ExceptionPayload",
            "nova_object.namespace": "nova",
            "nova_object.version": "1.1",
            "nova_object.data": {
              function_name: "_live_migrate",
              module_name: "nova.conductor.manager",
              exception,
              // The scheduler's exception crossed RPC: its text carries
              // the remote traceback after the message (seen on real Zed).
              exception_message: `${message}\n${
                remoteTraceback(exception, message)
              }`,
              traceback: remoteTraceback(exception, message),
            },
          },
          request_spec: null,
          state: vmState,
        },
      },
      at,
    );
  }
}
