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
  /**
   * `configure`, `write` or `read`: as the broker's text names it, else as
   * the refused operation needs it; undefined when neither says.
   */
  permission: "configure" | "write" | "read" | undefined;
  /** The refused AMQP operation (amqplib's name, e.g. `BasicConsume`). */
  operation: string | undefined;
  /** `queue`, `exchange` or `topic`. */
  kind: string;
  /** The queue's or exchange's name. */
  name: string;
  /** The virtual host. */
  vhost: string;
  /** The broker's user. */
  user: string;
}

// RabbitMQ (rabbit_access_control): "ACCESS_REFUSED - access to <kind>
// '<name>' in vhost '<vhost>' refused for user '<user>'" (3.10 does not
// name the permission; some versions and plugins put it first).
const REFUSAL =
  /ACCESS_REFUSED - (?:(configure|write|read) )?access to (\w+) '([^']*)' in vhost '([^']*)' refused for user '([^']*)'/;
// amqplib: "Operation failed: BasicConsume; 403 (ACCESS-REFUSED) ...".
const OPERATION = /Operation failed: (\w+);/;

/** The permission each operation of the feed needs, by resource kind. */
const NEEDS: Record<string, Record<string, AccessRefusal["permission"]>> = {
  QueueDeclare: { queue: "configure" },
  ExchangeDeclare: { exchange: "configure" },
  QueueBind: { queue: "write", exchange: "read" },
  BasicConsume: { queue: "read" },
  BasicGet: { queue: "read" },
  BasicPublish: { exchange: "write" },
};

/**
 * The refusal an `ACCESS_REFUSED` error's text describes (with the
 * permission the refused operation needs when the text does not name it),
 * or undefined for any other error.
 *
 * @example
 * ```ts
 * import { parseAccessRefusal } from "./amqp_refusals.ts";
 * const r = parseAccessRefusal(
 *   "Operation failed: BasicConsume; 403 (ACCESS-REFUSED) with message \"ACCESS_REFUSED - access to queue 'amq.gen-x' in vhost '/' refused for user 'evictor'\"",
 * );
 * console.log(r?.permission, r?.name); // read amq.gen-x
 * ```
 */
export function parseAccessRefusal(text: string): AccessRefusal | undefined {
  const m = REFUSAL.exec(text);
  if (m === null) return undefined;
  const [, named, kind, name, vhost, user] = m;
  if (
    kind === undefined || name === undefined || vhost === undefined ||
    user === undefined
  ) {
    return undefined;
  }
  const operation = OPERATION.exec(text)?.[1];
  const permission = (named as AccessRefusal["permission"]) ??
    (operation === undefined ? undefined : NEEDS[operation]?.[kind]);
  return { permission, operation, kind, name, vhost, user };
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
 *   { permission: "read", operation: "BasicConsume", kind: "queue", name: "amq.gen-x", vhost: "/", user: "evictor" },
 *   "nova",
 * );
 * console.log(line.startsWith("the broker refused read access to queue 'amq.gen-x'")); // true
 * ```
 */
export function refusalMessage(r: AccessRefusal, exchange: string): string {
  const p = feedPermissions(exchange);
  const what = r.permission === undefined ? "" : `${r.permission} `;
  const op = r.operation === undefined ? "" : ` (${r.operation})`;
  const needs = r.permission === undefined
    ? "a permission on it"
    : `${r.permission} permission on it`;
  return `the broker refused ${what}access to ${r.kind} '${r.name}' in vhost '${r.vhost}' for user '${r.user}'${op}: the feed's user needs ${needs}; grant configure '${p.configure}', write '${p.write}', read '${p.read}' (rabbitmqctl set_permissions -p '${r.vhost}' '${r.user}' '${p.configure}' '${p.write}' '${p.read}')`;
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
