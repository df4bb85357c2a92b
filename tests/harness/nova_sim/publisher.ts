/**
 * Publishes the simulator's notifications to a real RabbitMQ as Nova's
 * oslo.messaging rabbit driver does: the topic exchange `nova` declared as
 * oslo declares it by default (durable false, auto-delete false), the
 * default queue of each routing key (`versioned_notifications.info`,
 * `.error`: oslo declares them so that no notification is lost before
 * anyone consumes), and each envelope as a JSON body
 * (`application/json`, utf-8). While the broker is away, messages wait and
 * leave in order once it is back (oslo's notifier retries without end by
 * default, holding the sender).
 *
 * @module
 */

import { Buffer } from "node:buffer";
import amqp from "amqplib";
import type { NotificationRoutingKey, OsloEnvelope } from "./notifier.ts";

/** Nova's exchange (`control_exchange`). */
const EXCHANGE = "nova";
const KEYS: NotificationRoutingKey[] = [
  "versioned_notifications.info",
  "versioned_notifications.error",
];

/** A running publisher. */
export interface NotificationPublisher {
  /** Sends one notification (queued while the broker is away). */
  publish(key: NotificationRoutingKey, envelope: OsloEnvelope): void;
  /** Messages sent to the broker so far. */
  readonly published: number;
  /** Resolves once every queued message has been handed to the broker. */
  flushed(): Promise<void>;
  /** Stops (queued messages are dropped) and closes the connection. */
  close(): Promise<void>;
}

/**
 * Connects to `url` and keeps publishing what {@linkcode NotificationPublisher.publish}
 * gets; resolves once the first connection is up and the exchange declared.
 *
 * @example
 * ```ts ignore
 * import { startNotificationPublisher } from "./publisher.ts";
 * const pub = await startNotificationPublisher("amqp://guest:guest@127.0.0.1:5672/");
 * sim.onNotification((key, env) => pub.publish(key, env));
 * await pub.close();
 * ```
 */
export async function startNotificationPublisher(
  url: string,
  options: { retryMs?: number } = {},
): Promise<NotificationPublisher> {
  const retryMs = options.retryMs ?? 200;
  const queue: [NotificationRoutingKey, OsloEnvelope][] = [];
  let channel: amqp.Channel | undefined;
  let connection: amqp.ChannelModel | undefined;
  let published = 0;
  let closed = false;
  let waiters: (() => void)[] = [];
  const settle = () => {
    if (queue.length > 0) return;
    for (const w of waiters) w();
    waiters = [];
  };
  const pump = () => {
    while (channel !== undefined && queue.length > 0) {
      const [key, env] = queue[0] ?? [];
      if (key === undefined || env === undefined) break;
      try {
        channel.publish(
          EXCHANGE,
          key,
          Buffer.from(JSON.stringify(env), "utf-8"),
          {
            contentType: "application/json",
            contentEncoding: "utf-8",
          },
        );
      } catch {
        break; // the channel is closing: wait for the next one
      }
      queue.shift();
      published++;
    }
    settle();
  };
  const connect = async (): Promise<void> => {
    const conn = await amqp.connect(url);
    conn.on("error", () => {});
    const ch = await conn.createChannel();
    ch.on("error", () => {});
    await ch.assertExchange(EXCHANGE, "topic", {
      durable: false,
      autoDelete: false,
    });
    for (const key of KEYS) {
      await ch.assertQueue(key, { durable: false, autoDelete: false });
      await ch.bindQueue(key, EXCHANGE, key);
    }
    connection = conn;
    channel = ch;
    const lost = () => {
      if (channel !== ch) return;
      channel = undefined;
      connection = undefined;
      void conn.close().catch(() => {});
      if (!closed) void reconnect();
    };
    conn.on("close", lost);
    ch.on("close", lost);
    pump();
  };
  const reconnect = async () => {
    while (!closed) {
      await new Promise((r) => setTimeout(r, retryMs));
      if (closed) return;
      try {
        await connect();
        return;
      } catch {
        // Not back yet.
      }
    }
  };
  await connect();
  return {
    publish(key, envelope) {
      if (closed) return;
      queue.push([key, envelope]);
      pump();
    },
    get published() {
      return published;
    },
    flushed() {
      if (queue.length === 0) return Promise.resolve();
      return new Promise((resolve) => waiters.push(resolve));
    },
    async close() {
      closed = true;
      queue.length = 0;
      settle();
      const c = connection;
      channel = undefined;
      connection = undefined;
      await c?.close().catch(() => {});
    },
  };
}
