/**
 * Nova's versioned notifications over AMQP 0-9-1 (`npm:amqplib`): the
 * {@linkcode NotificationFeed} of one process. It binds a queue of its own
 * (server-named, exclusive, auto-deleted: it never takes a message from
 * another consumer and disappears with the connection) to Nova's topic
 * exchange `nova` for `versioned_notifications.info` and `.error`, parses
 * each message once (`notification_parse.ts`), and after any loss
 * reconnects with bounded exponential backoff on the injected clock; each
 * (re)subscribe starts a new epoch. The reconnect loop is ours rather than
 * amqplib's `recovery` option because a channel can close while its
 * connection lives (a refused declaration, a cancelled consumer), and the
 * epoch and state must change exactly when the queue is bound again.
 *
 * The broker URL carries a password: it is never logged; errors are
 * logged with every occurrence of it (and of the password) redacted.
 *
 * @module
 */

import amqp from "amqplib";
import { redactedError, validateAmqpUrl } from "./amqp_url.ts";
import { type Clock, systemClock } from "./clock.ts";
import { FeedListeners, type StateListener } from "./feed_listeners.ts";
import { type Logger, silentLogger } from "./logger.ts";
import {
  NOTIFICATION_ROUTING_KEYS,
  parseNovaNotification,
} from "./notification_parse.ts";
import type {
  FeedState,
  NotificationFeed,
  NovaNotification,
} from "./notification_types.ts";

/** Nova's notification exchange (`control_exchange`, default `nova`). */
export const NOVA_EXCHANGE = "nova";

/** What the feed reports for metrics; every hook is optional. */
export interface NotificationFeedObserver {
  /** A notification parsed and delivered. */
  received?(eventType: string): void;
  /** A message that could not be parsed (dropped). */
  malformed?(): void;
  /** The feed's state changed. */
  state?(state: FeedState): void;
  /** A reconnect attempt is scheduled after a loss or a failed attempt. */
  reconnect?(): void;
}

/** Options of {@linkcode startNotificationFeed}. */
export interface NotificationFeedOptions {
  /** `amqp://user:password@host:port/vhost` or `amqps://...`. */
  url: string;
  /** Clock of the backoff (default: the system clock). */
  clock?: Clock;
  /** Logger (default: silent). */
  logger?: Logger;
  /** Metrics hooks. */
  observer?: NotificationFeedObserver;
  /** First reconnect delay, ms (default 500). */
  initialBackoffMs?: number;
  /** Longest reconnect delay, ms (default 30 000). */
  maxBackoffMs?: number;
  /** TCP connect timeout, ms (default 10 000). */
  connectTimeoutMs?: number;
  /** AMQP heartbeat, s, unless the URL sets one (default 10). */
  heartbeatSeconds?: number;
}

/**
 * Reconnect delay after `failures` failed or lost subscriptions in a row:
 * `initial * 2^(failures-1)`, at most `max`.
 *
 * @example
 * ```ts
 * import { reconnectDelayMs } from "./notifications.ts";
 * console.log([1, 2, 3, 10].map((n) => reconnectDelayMs(n, 500, 4000))); // [500, 1000, 2000, 4000]
 * ```
 */
export function reconnectDelayMs(
  failures: number,
  initialMs: number,
  maxMs: number,
): number {
  const exp = Math.min(Math.max(0, failures - 1), 30);
  return Math.min(maxMs, initialMs * 2 ** exp);
}

/**
 * Starts consuming Nova's notifications; the feed is `down` until its queue
 * is bound, then `up` with epoch 1. It never throws for a broker that is
 * away: it keeps trying (see {@linkcode NotificationFeedOptions}).
 *
 * @example
 * ```ts ignore
 * import { startNotificationFeed } from "./notifications.ts";
 * const feed = startNotificationFeed({ url: "amqp://guest:guest@127.0.0.1:5672/" });
 * const stop = feed.listen((n) => console.log(n.eventType, n.instance?.uuid));
 * // ...
 * stop();
 * await feed.close();
 * ```
 */
export function startNotificationFeed(
  options: NotificationFeedOptions,
): NotificationFeed {
  validateAmqpUrl(options.url);
  return new AmqpNotificationFeed(options);
}

class AmqpNotificationFeed implements NotificationFeed {
  readonly #opts: NotificationFeedOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #broker: string;
  readonly #listeners: FeedListeners;
  readonly #stop = new AbortController();
  #state: FeedState = "down";
  #epoch = 0;
  #malformed = 0;
  #connection: amqp.ChannelModel | undefined;
  readonly #running: Promise<void>;

  constructor(opts: NotificationFeedOptions) {
    this.#opts = opts;
    this.#clock = opts.clock ?? systemClock;
    this.#log = opts.logger ?? silentLogger;
    this.#listeners = new FeedListeners((kind, e) =>
      this.#log.warn(
        { error: e instanceof Error ? e.message : String(e) },
        `Nova notifications: a ${kind} failed`,
      )
    );
    const u = new URL(opts.url);
    this.#broker = `${u.protocol}//${u.host}`;
    this.#running = this.#run();
  }

  get state(): FeedState {
    return this.#state;
  }

  get epoch(): number {
    return this.#epoch;
  }

  listen(listener: (n: NovaNotification) => void): () => void {
    return this.#listeners.listen(listener);
  }

  onState(listener: StateListener): () => void {
    return this.#listeners.onState(listener);
  }

  async close(): Promise<void> {
    if (this.#stop.signal.aborted) return this.#running;
    this.#stop.abort(new Error("notification feed closed"));
    await this.#connection?.close().catch(() => {});
    await this.#running;
  }

  async #run(): Promise<void> {
    let failures = 0;
    const initial = this.#opts.initialBackoffMs ?? 500;
    const max = this.#opts.maxBackoffMs ?? 30_000;
    while (!this.#stop.signal.aborted) {
      let subscribed = false;
      try {
        await this.#subscribe(() => {
          subscribed = true;
          failures = 0;
        });
      } catch (e) {
        if (!this.#stop.signal.aborted) {
          this.#log.warn(
            { broker: this.#broker, error: redactedError(e, this.#opts.url) },
            "Nova notifications: subscription failed",
          );
        }
      }
      this.#setState("down");
      if (this.#stop.signal.aborted) break;
      if (subscribed) {
        this.#log.warn(
          { broker: this.#broker, epoch: this.#epoch },
          "Nova notifications: connection lost; the drains poll until it is back",
        );
      }
      failures++;
      const delayMs = reconnectDelayMs(failures, initial, max);
      this.#opts.observer?.reconnect?.();
      try {
        await this.#clock.sleep(delayMs, this.#stop.signal);
      } catch {
        break;
      }
    }
  }

  /** One connection: declare, bind, consume; resolves when it is lost. */
  async #subscribe(onBound: () => void): Promise<void> {
    const conn = await amqp.connect(this.#urlWithHeartbeat(), {
      timeout: this.#opts.connectTimeoutMs ?? 10_000,
    });
    this.#connection = conn;
    const lost = Promise.withResolvers<void>();
    conn.on("error", (e: Error) => {
      this.#log.warn(
        { broker: this.#broker, error: redactedError(e, this.#opts.url) },
        "Nova notifications: connection error",
      );
    });
    conn.on("close", () => lost.resolve());
    try {
      if (this.#stop.signal.aborted) return;
      const ch = await this.#channelWithExchange(conn);
      ch.on("close", () => lost.resolve());
      const q = await ch.assertQueue("", {
        exclusive: true,
        autoDelete: true,
        durable: false,
      });
      for (const key of NOTIFICATION_ROUTING_KEYS) {
        await ch.bindQueue(q.queue, NOVA_EXCHANGE, key);
      }
      await ch.consume(q.queue, (msg) => {
        // null: the broker cancelled the consumer (its queue is gone).
        if (msg === null) lost.resolve();
        else this.#deliver(msg.content, msg.fields.routingKey);
      }, { noAck: true });
      onBound();
      this.#epoch++;
      this.#setState("up");
      this.#log.info(
        { broker: this.#broker, epoch: this.#epoch },
        "Nova notifications: subscribed",
      );
      await lost.promise;
    } finally {
      this.#connection = undefined;
      await conn.close().catch(() => {});
    }
  }

  /**
   * A channel on which the `nova` exchange exists: checked passively (any
   * durability Nova chose matches), else declared as oslo.messaging declares
   * it by default (topic, durable false, auto-delete false), because a
   * declaration that differs from Nova's closes the channel.
   */
  async #channelWithExchange(conn: amqp.ChannelModel): Promise<amqp.Channel> {
    const quiet = (e: Error) =>
      this.#log.debug(
        { error: redactedError(e, this.#opts.url) },
        "Nova notifications: channel error",
      );
    const probe = await conn.createChannel();
    probe.on("error", quiet);
    try {
      await probe.checkExchange(NOVA_EXCHANGE);
      return probe;
    } catch (e) {
      if ((e as { code?: unknown }).code !== 404) throw e;
    }
    const ch = await conn.createChannel();
    ch.on("error", quiet);
    await ch.assertExchange(NOVA_EXCHANGE, "topic", {
      durable: false,
      autoDelete: false,
    });
    return ch;
  }

  #urlWithHeartbeat(): string {
    const u = new URL(this.#opts.url);
    if (!u.searchParams.has("heartbeat")) {
      u.searchParams.set(
        "heartbeat",
        String(this.#opts.heartbeatSeconds ?? 10),
      );
    }
    return u.toString();
  }

  #deliver(body: Uint8Array, routingKey: string): void {
    const r = parseNovaNotification(body, routingKey);
    if (!r.ok) {
      this.#malformed++;
      this.#opts.observer?.malformed?.();
      // The first, then every 1000th: a misconfigured driver must not flood.
      if (this.#malformed % 1000 === 1) {
        this.#log.warn(
          { routingKey, error: r.error, malformed: this.#malformed },
          "Nova notifications: dropped a message that is not a versioned notification",
        );
      }
      return;
    }
    this.#opts.observer?.received?.(r.notification.eventType);
    this.#listeners.deliver(r.notification);
  }

  #setState(state: FeedState): void {
    if (this.#state === state) return;
    this.#state = state;
    this.#opts.observer?.state?.(state);
    this.#listeners.stateChanged(state, this.#epoch);
  }
}
