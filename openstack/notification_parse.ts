/**
 * Parsing of one message from Nova's notification exchange, with zod, once,
 * at the boundary: the oslo.messaging 2.0 envelope (what the `messagingv2`
 * driver sends), the message inside it, and the few payload fields evictor
 * reads. Anything else in the payload is ignored, so Nova's newer payload
 * versions parse as long as those fields keep their names.
 *
 * @module
 */

import { z } from "zod";
import { parseNovaTime } from "./nova_time.ts";
import type {
  NotifiedInstance,
  NovaNotification,
} from "./notification_types.ts";

/** Routing keys of Nova's versioned notifications (`topics` = `versioned_notifications`). */
export const NOTIFICATION_ROUTING_KEYS = [
  "versioned_notifications.info",
  "versioned_notifications.error",
] as const;

/**
 * Nova's power state names (`InstancePowerState`, the index is the number
 * `OS-EXT-STS:power_state` shows).
 */
const POWER_STATES: Record<string, number> = {
  pending: 0,
  running: 1,
  paused: 3,
  shutdown: 4,
  crashed: 6,
  suspended: 7,
};

const envelopeSchema = z.object({
  "oslo.version": z.literal("2.0"),
  "oslo.message": z.string(),
});

const messageSchema = z.object({
  message_id: z.string().min(1),
  event_type: z.string().min(1),
  publisher_id: z.string().min(1),
  timestamp: z.string(),
  payload: z.object({ "nova_object.data": z.record(z.string(), z.unknown()) }),
});

const nullableString = z.string().nullable().optional();

const instanceDataSchema = z.object({
  uuid: z.string().min(1),
  host: nullableString,
  node: nullableString,
  state: nullableString,
  task_state: nullableString,
  power_state: z.union([z.string(), z.number()]).nullable().optional(),
  tenant_id: nullableString,
  display_name: nullableString,
  flavor: z.object({
    "nova_object.data": z.object({
      memory_mb: z.number().int().nonnegative().optional(),
      vcpus: z.number().int().nonnegative().optional(),
    }),
  }).nullable().optional(),
});

const taskDataSchema = z.object({
  instance_uuid: z.string().min(1),
  reason: z.object({
    "nova_object.data": z.object({ exception_message: z.string().optional() }),
  }).nullable().optional(),
});

/** Nova's timestamp, Python's `str(datetime)`: the fraction is absent at .000000. */
/**
 * The message of an exception payload without what follows it: an
 * exception that crossed RPC (the scheduler's NoValidHost) carries the
 * remote traceback after a newline.
 */
function firstLine(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  return text.split("\n", 1)[0]?.trim();
}

function powerState(raw: string | number | null | undefined): number | null {
  if (raw === null || raw === undefined) return null;
  if (typeof raw === "number") return raw;
  return POWER_STATES[raw] ?? null;
}

function where(error: z.ZodError, prefix: string): string {
  const issue = error.issues[0];
  const path = issue === undefined || issue.path.length === 0
    ? prefix
    : `${prefix}.${issue.path.map(String).join(".")}`;
  return `${path}: ${issue?.message ?? "invalid"}`;
}

function instanceOf(
  data: Record<string, unknown>,
): NotifiedInstance | string {
  const r = instanceDataSchema.safeParse(data);
  if (!r.success) return where(r.error, "payload.nova_object.data");
  const d = r.data;
  const flavor = d.flavor?.["nova_object.data"];
  return {
    uuid: d.uuid,
    host: d.host ?? null,
    node: d.node ?? null,
    vmState: d.state ?? null,
    taskState: d.task_state ?? null,
    powerState: powerState(d.power_state),
    ...(flavor?.memory_mb === undefined
      ? {}
      : { flavorRamMb: flavor.memory_mb }),
    ...(flavor?.vcpus === undefined ? {} : { flavorVcpus: flavor.vcpus }),
    ...(d.tenant_id == null ? {} : { tenantId: d.tenant_id }),
    ...(d.display_name == null ? {} : { name: d.display_name }),
  };
}

/** The outcome of {@linkcode parseNovaNotification}. */
export type ParsedNotification =
  | { ok: true; notification: NovaNotification }
  | { ok: false; error: string };

/**
 * Parses one message body from Nova's `nova` exchange: the oslo 2.0
 * envelope, its message, and for `instance.*` events the instance the
 * payload names (for `compute_task.*` the instance and the reason). A body
 * that is not such a message gives `ok: false` with the first bad field.
 *
 * @example
 * ```ts
 * import { parseNovaNotification } from "./notification_parse.ts";
 * const message = JSON.stringify({
 *   message_id: "m1", event_type: "instance.update",
 *   publisher_id: "nova-compute:node001", priority: "INFO",
 *   timestamp: "2026-01-02 03:04:05.000001",
 *   payload: { "nova_object.data": { uuid: "u1", host: "node001", task_state: null } },
 * });
 * const body = JSON.stringify({ "oslo.version": "2.0", "oslo.message": message });
 * const r = parseNovaNotification(body, "versioned_notifications.info");
 * console.log(r.ok && r.notification.instance?.host); // node001
 * ```
 */
export function parseNovaNotification(
  body: string | Uint8Array,
  routingKey: string,
): ParsedNotification {
  const priority = routingKey === "versioned_notifications.error"
    ? "error"
    : routingKey === "versioned_notifications.info"
    ? "info"
    : undefined;
  if (priority === undefined) {
    return {
      ok: false,
      error: `unexpected routing key ${JSON.stringify(routingKey)}`,
    };
  }
  const text = typeof body === "string" ? body : new TextDecoder().decode(body);
  let outer: unknown;
  try {
    outer = JSON.parse(text);
  } catch {
    return { ok: false, error: "body is not JSON" };
  }
  const env = envelopeSchema.safeParse(outer);
  if (!env.success) {
    return {
      ok: false,
      error: `not an oslo 2.0 envelope (is Nova's driver messagingv2?): ${
        where(env.error, "envelope")
      }`,
    };
  }
  let inner: unknown;
  try {
    inner = JSON.parse(env.data["oslo.message"]);
  } catch {
    return { ok: false, error: "oslo.message is not JSON" };
  }
  const msg = messageSchema.safeParse(inner);
  if (!msg.success) return { ok: false, error: where(msg.error, "message") };
  const m = msg.data;
  const timestampMs = parseNovaTime(m.timestamp);
  if (timestampMs === undefined) {
    return {
      ok: false,
      error: `message.timestamp: expected YYYY-MM-DD hh:mm:ss[.ffffff], got ${
        JSON.stringify(m.timestamp)
      }`,
    };
  }
  const colon = m.publisher_id.indexOf(":");
  const notification: NovaNotification = {
    messageId: m.message_id,
    eventType: m.event_type,
    publisherId: m.publisher_id,
    publisherHost: colon === -1 ? undefined : m.publisher_id.slice(colon + 1),
    timestampMs,
    priority,
  };
  const data = m.payload["nova_object.data"];
  if (m.event_type.startsWith("instance.")) {
    const instance = instanceOf(data);
    if (typeof instance === "string") {
      return { ok: false, error: `${m.event_type}: ${instance}` };
    }
    notification.instance = instance;
  } else if (m.event_type.startsWith("compute_task.")) {
    const r = taskDataSchema.safeParse(data);
    if (!r.success) {
      return {
        ok: false,
        error: `${m.event_type}: ${where(r.error, "payload.nova_object.data")}`,
      };
    }
    notification.task = {
      instanceUuid: r.data.instance_uuid,
      reason: firstLine(r.data.reason?.["nova_object.data"].exception_message),
    };
  }
  return { ok: true, notification };
}
