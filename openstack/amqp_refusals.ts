/**
 * What a RabbitMQ broker's refusals mean for the notification feed, in
 * words an operator can act on: an `ACCESS_REFUSED` names the permission
 * (configure, write or read), the resource and the user; a missing
 * exchange names the Nova settings that make it.
 *
 * Pure text functions: the feed (`notifications.ts`) logs their results.
 *
 * @module
 */

/** One refused permission, parsed from RabbitMQ's `ACCESS_REFUSED` text. */
export interface AccessRefusal {
  /** `configure`, `write` or `read`. */
  permission: "configure" | "write" | "read";
  /** `queue`, `exchange` or `topic`. */
  kind: string;
  /** The queue's or exchange's name. */
  name: string;
  /** The virtual host. */
  vhost: string;
  /** The broker's user. */
  user: string;
}

// RabbitMQ (rabbit_access_control): "ACCESS_REFUSED - <perm> access to
// <kind> '<name>' in vhost '<vhost>' refused for user '<user>'".
const REFUSAL =
  /ACCESS_REFUSED - (configure|write|read) access to (\w+) '([^']*)' in vhost '([^']*)' refused for user '([^']*)'/;

/**
 * The permission an `ACCESS_REFUSED` error names, or undefined for any other
 * error.
 *
 * @example
 * ```ts
 * import { parseAccessRefusal } from "./amqp_refusals.ts";
 * const r = parseAccessRefusal(
 *   "Operation failed: BasicConsume; 403 (ACCESS-REFUSED) with message \"ACCESS_REFUSED - read access to queue 'amq.gen-x' in vhost '/' refused for user 'evictor'\"",
 * );
 * console.log(r?.permission, r?.name); // read amq.gen-x
 * ```
 */
export function parseAccessRefusal(text: string): AccessRefusal | undefined {
  const m = REFUSAL.exec(text);
  if (m === null) return undefined;
  const [, permission, kind, name, vhost, user] = m;
  if (
    permission === undefined || kind === undefined || name === undefined ||
    vhost === undefined || user === undefined
  ) {
    return undefined;
  }
  return {
    permission: permission as AccessRefusal["permission"],
    kind,
    name,
    vhost,
    user,
  };
}

/**
 * The permissions the feed's user needs on its vhost, as
 * `rabbitmqctl set_permissions` takes them: configure and write on its own
 * server-named queues, read on them (to consume) and on Nova's exchange
 * (to bind).
 *
 * @example
 * ```ts
 * import { feedPermissions } from "./amqp_refusals.ts";
 * console.log(feedPermissions("nova").read); // ^(amq\.gen-.*|nova)$
 * ```
 */
export function feedPermissions(
  exchange: string,
): { configure: string; write: string; read: string } {
  const own = "amq\\.gen-.*";
  return {
    configure: `^${own}`,
    write: `^${own}`,
    read: `^(${own}|${escapeRegExp(exchange)})$`,
  };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * One line for a refused permission: what was refused, to whom, and the
 * permissions that let the feed work.
 *
 * @example
 * ```ts
 * import { refusalMessage } from "./amqp_refusals.ts";
 * const line = refusalMessage(
 *   { permission: "read", kind: "queue", name: "amq.gen-x", vhost: "/", user: "evictor" },
 *   "nova",
 * );
 * console.log(line.startsWith("the broker refused read access to queue 'amq.gen-x'")); // true
 * ```
 */
export function refusalMessage(r: AccessRefusal, exchange: string): string {
  const p = feedPermissions(exchange);
  return `the broker refused ${r.permission} access to ${r.kind} '${r.name}' in vhost '${r.vhost}' for user '${r.user}': the feed's user needs ${r.permission} permission on it; grant configure '${p.configure}', write '${p.write}', read '${p.read}' (rabbitmqctl set_permissions -p '${r.vhost}' '${r.user}' '${p.configure}' '${p.write}' '${p.read}')`;
}

/**
 * The virtual host an AMQP URL names (`/` when its path is empty).
 *
 * @example
 * ```ts
 * import { amqpVhost } from "./amqp_refusals.ts";
 * console.log(amqpVhost("amqp://u:p@rabbit:5672/"), amqpVhost("amqp://rabbit/nova%2Fprod")); // / nova/prod
 * ```
 */
export function amqpVhost(url: string): string {
  const path = new URL(url).pathname.replace(/^\//, "");
  return path === "" ? "/" : decodeURIComponent(path);
}

/**
 * One line for Nova's exchange missing on the broker: which exchange, which
 * vhost, and the Nova settings that decide where Nova publishes.
 *
 * @example
 * ```ts
 * import { missingExchangeMessage } from "./amqp_refusals.ts";
 * console.log(missingExchangeMessage("nova", "/").includes("control_exchange")); // true
 * ```
 */
export function missingExchangeMessage(
  exchange: string,
  vhost: string,
): string {
  return `Nova's notification exchange '${exchange}' does not exist in vhost '${vhost}': Nova creates it when it first publishes; check --nova-notifications-exchange against Nova's [DEFAULT] control_exchange, the URL's vhost and host against [oslo_messaging_notifications] transport_url (else [DEFAULT] transport_url), [oslo_messaging_notifications] driver = messagingv2 and topics (versioned_notifications), and [notifications] notification_format (versioned or both)`;
}
