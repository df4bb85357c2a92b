/**
 * Nova's versioned notifications over AMQP 0-9-1 (`npm:amqplib`): the
 * {@linkcode NotificationFeed} of one process. It binds a queue of its own
 * (server-named, exclusive, auto-deleted: it never takes a message from
 * another consumer and disappears with the connection) to Nova's topic
 * exchange (`control_exchange`, default `nova`) for
 * `versioned_notifications.info` and `.error`, parses each message once
 * (`notification_parse.ts`), and after any loss reconnects with bounded
 * exponential backoff on the injected clock; each (re)subscribe starts a
 * new epoch. While the broker is away (its port refuses connections) the
 * port is probed at the shortest backoff, and the feed reconnects as soon
 * as it accepts one, with the backoff reset: an outage never leaves the
 * feed down for a long backoff after the broker is back. A close never
 * waits on the broker: a connection cut or frozen as it closes is dropped
 * after {@linkcode CLOSE_TIMEOUT_MS}.
 *
 * The exchange is only ever checked, never declared: an exchange that does
 * not exist means Nova publishes elsewhere (another `control_exchange`,
 * vhost or broker), and an empty exchange of our own would hide that
 * behind a feed that is up and silent. The consumer is bounded: a prefetch
 * limit (messages are acknowledged once delivered), a size limit checked
 * before parsing, and AMQP heartbeats so that a connection that stops
 * forwarding without closing is dropped within three heartbeats. The reconnect loop is ours rather than
 * amqplib's `recovery` option because a channel can close while its
 * connection lives (a refused declaration, a cancelled consumer), and the
 * epoch and state must change exactly when the queue is bound again.
 *
 * The broker URL carries a password: it is never logged; errors are
 * logged with every occurrence of it (and of the password) redacted.
 *
 * @module
 */

import { doublingDelayMs } from "./backoff.ts";
import amqp from "amqplib";
import {
  amqpVhost,
  missingExchangeMessage,
  parseAccessRefusal,
  refusalMessage,
} from "./amqp_refusals.ts";
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
/** Messages larger than this are dropped unparsed by default (1 MiB). */
export const DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024;
/** AMQP heartbeat by default, s: a silent connection is dropped within 3. */
export const DEFAULT_HEARTBEAT_SECONDS = 5;
/** Unacknowledged messages the broker may push ahead by default. */
export const DEFAULT_PREFETCH = 64;
/**
 * The longest wait (real ms) for the broker to confirm a close; then the
 * socket is dropped (a cut or frozen connection never confirms).
 */
export const CLOSE_TIMEOUT_MS = 2_000;

/**
 * The broker has no exchange of the configured name (Nova publishes
 * elsewhere); the message is one line naming it, the vhost and the Nova
 * settings to check.
 */
export class ExchangeMissingError extends Error {
  override name = "ExchangeMissingError";
  /** The exchange looked for. */
  readonly exchange: string;
  /** The vhost it was looked for in. */
  readonly vhost: string;

  /** Creates the error for `exchange` in `vhost`. */
  constructor(exchange: string, vhost: string) {
    super(missingExchangeMessage(exchange, vhost));
    this.exchange = exchange;
    this.vhost = vhost;
  }
}

/** A feed on AMQP: a {@linkcode NotificationFeed} with its first attempt. */
export interface AmqpNotificationFeed extends NotificationFeed {
  /**
   * Settles when the first subscription attempt has: resolves when it
   * subscribed, failed for a reason that may pass (a broker away, a
   * permission missing) or the feed was closed; rejects with an
   * {@linkcode ExchangeMissingError} when the broker answered that the
   * exchange does not exist (a configuration error, for start-up to report).
   */
  readonly firstAttempt: Promise<void>;
}

/** What the feed reports for metrics; every hook is optional. */
export interface NotificationFeedObserver {
  /** A notification parsed and delivered. */
  received?(eventType: string): void;
  /** A message that could not be parsed (dropped). */
  malformed?(): void;
  /** A message dropped unparsed, by reason. */
  dropped?(reason: "too_large"): void;
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
  /**
   * AMQP heartbeat, s, unless the URL sets one (default
   * {@linkcode DEFAULT_HEARTBEAT_SECONDS}); the broker may lower it.
   */
  heartbeatSeconds?: number;
  /** Nova's `control_exchange` (default {@linkcode NOVA_EXCHANGE}). */
  exchange?: string;
  /**
   * Larger messages are dropped before parsing (default
   * {@linkcode DEFAULT_MAX_MESSAGE_BYTES}).
   */
  maxMessageBytes?: number;
  /** Unacknowledged messages in flight (default {@linkcode DEFAULT_PREFETCH}). */
  prefetch?: number;
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
): AmqpNotificationFeed {
  validateAmqpUrl(options.url);
  return new AmqpFeed(options);
}

class AmqpFeed implements AmqpNotificationFeed {
  readonly #opts: NotificationFeedOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #broker: string;
  readonly #listeners: FeedListeners;
  readonly #stop = new AbortController();
  #state: FeedState = "down";
  #epoch = 0;
  readonly #exchange: string;
  #malformed = 0;
  #tooLarge = 0;
  #connection: amqp.ChannelModel | undefined;
  readonly #first = Promise.withResolvers<void>();
  #firstSettled = false;
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
    this.#exchange = opts.exchange ?? NOVA_EXCHANGE;
    // Whoever does not wait for the first attempt must not see it reject.
    this.#first.promise.catch(() => {});
    this.#running = this.#run();
  }

  get firstAttempt(): Promise<void> {
    return this.#first.promise;
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
    this.#settleFirst();
    const conn = this.#connection;
    if (conn !== undefined) await closeWithin(conn, CLOSE_TIMEOUT_MS);
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
          // The backoff starts again from its minimum after a success.
          failures = 0;
          this.#settleFirst();
        });
      } catch (e) {
        if (!this.#stop.signal.aborted) this.#failed(e);
      }
      this.#settleFirst();
      this.#setState("down");
      if (this.#stop.signal.aborted) break;
      if (subscribed) {
        this.#log.warn(
          { broker: this.#broker, epoch: this.#epoch },
          "Nova notifications: connection lost; the drains poll until it is back",
        );
      }
      failures++;
      const delayMs = doublingDelayMs(failures, initial, max);
      this.#opts.observer?.reconnect?.();
      try {
        // The broker came back during the wait: the next wait is short.
        if (await this.#backOff(delayMs, initial)) failures = 0;
      } catch {
        break;
      }
    }
  }

  /**
   * Waits out a reconnect delay. While the broker's port refuses
   * connections (the broker is away) it is probed every `stepMs` (a TCP
   * connect, no AMQP, no login), and the wait ends when it accepts one:
   * the broker is back. A broker that answers but refuses the feed
   * (credentials, permissions, no exchange) is left alone for the whole
   * delay. Returns whether the broker came back.
   */
  async #backOff(delayMs: number, stepMs: number): Promise<boolean> {
    const signal = this.#stop.signal;
    if (delayMs <= stepMs || await this.#reachable(stepMs)) {
      await this.#clock.sleep(delayMs, signal);
      return false;
    }
    for (let waited = 0; waited < delayMs; waited += stepMs) {
      await this.#clock.sleep(Math.min(stepMs, delayMs - waited), signal);
      if (signal.aborted) return false;
      if (await this.#reachable(stepMs)) return true;
    }
    return false;
  }

  /** Whether the broker's port accepts a TCP connection within `timeoutMs` (real). */
  async #reachable(timeoutMs: number): Promise<boolean> {
    const u = new URL(this.#opts.url);
    const port = u.port === ""
      ? (u.protocol === "amqps:" ? 5671 : 5672)
      : Number(u.port);
    const attempt = Deno.connect({
      hostname: u.hostname.replace(/^\[(.*)\]$/, "$1"),
      port,
    });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), timeoutMs);
    });
    try {
      const conn = await Promise.race([attempt, late]);
      if (conn === undefined) {
        attempt.then((c) => c.close(), () => {});
        return false;
      }
      conn.close();
      return true;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Settles {@linkcode firstAttempt} once: rejected with `error`, if given. */
  #settleFirst(error?: Error): void {
    if (this.#firstSettled) return;
    this.#firstSettled = true;
    if (error === undefined) this.#first.resolve();
    else this.#first.reject(error);
  }

  /** Logs a failed attempt in one line that says what to fix. */
  #failed(e: unknown): void {
    const error = redactedError(e, this.#opts.url);
    if (e instanceof ExchangeMissingError) {
      // The first attempt's is the caller's to report (start-up stops with
      // it): one line, not two. Later ones (a broker reset) are logged.
      if (!this.#firstSettled) return this.#settleFirst(e);
      this.#log.warn(
        { broker: this.#broker, exchange: e.exchange, vhost: e.vhost },
        `Nova notifications: ${e.message}`,
      );
      return;
    }
    const refusal = parseAccessRefusal(error);
    if (refusal !== undefined) {
      this.#log.warn(
        { broker: this.#broker, ...refusal },
        `Nova notifications: ${refusalMessage(refusal, this.#exchange)}`,
      );
      return;
    }
    this.#log.warn(
      { broker: this.#broker, error },
      "Nova notifications: subscription failed",
    );
  }

  /**
   * Connects, or rejects as soon as the feed is closed: a close never
   * waits out the connect timeout (a connection made after all is closed).
   */
  async #connect(): Promise<amqp.ChannelModel> {
    const signal = this.#stop.signal;
    signal.throwIfAborted();
    const pending = amqp.connect(this.#urlWithHeartbeat(), {
      timeout: this.#opts.connectTimeoutMs ?? 10_000,
    });
    const aborted = Promise.withResolvers<never>();
    const onAbort = () => {
      pending.then((c) => c.close()).catch(() => {});
      aborted.reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      return await Promise.race([pending, aborted.promise]);
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }

  /** One connection: check, declare, bind, consume; resolves when lost. */
  async #subscribe(onBound: () => void): Promise<void> {
    const conn = await this.#connect();
    this.#connection = conn;
    const lost = Promise.withResolvers<void>();
    conn.on("error", (e: Error) => {
      this.#log.warn(
        { broker: this.#broker, error: redactedError(e, this.#opts.url) },
        "Nova notifications: connection error",
      );
    });
    conn.on("close", () => lost.resolve());
    // A close ends the subscription whatever the broker does (closeWithin).
    const onStop = () => lost.resolve();
    this.#stop.signal.addEventListener("abort", onStop, { once: true });
    try {
      if (this.#stop.signal.aborted) return;
      const ch = await this.#channelWithExchange(conn);
      ch.on("close", () => lost.resolve());
      await ch.prefetch(this.#opts.prefetch ?? DEFAULT_PREFETCH);
      const q = await ch.assertQueue("", {
        exclusive: true,
        autoDelete: true,
        durable: false,
      });
      for (const key of NOTIFICATION_ROUTING_KEYS) {
        await ch.bindQueue(q.queue, this.#exchange, key);
      }
      await ch.consume(q.queue, (msg) => {
        // null: the broker cancelled the consumer (its queue is gone).
        if (msg === null) return lost.resolve();
        // Acknowledged once handled (dropped or delivered): the prefetch
        // limit then bounds what the broker pushes ahead of us.
        try {
          this.#deliver(msg.content, msg.fields.routingKey);
        } finally {
          ch.ack(msg);
        }
      }, { noAck: false });
      onBound();
      this.#epoch++;
      this.#setState("up");
      this.#log.info(
        { broker: this.#broker, epoch: this.#epoch },
        "Nova notifications: subscribed",
      );
      await lost.promise;
    } finally {
      this.#stop.signal.removeEventListener("abort", onStop);
      this.#connection = undefined;
      await closeWithin(conn, CLOSE_TIMEOUT_MS);
    }
  }

  /**
   * A channel on which Nova's exchange exists, checked passively (any
   * durability Nova chose matches; declaring it would close the channel
   * where it differs, and create an empty one where Nova publishes
   * elsewhere). A missing one is an {@linkcode ExchangeMissingError}.
   */
  async #channelWithExchange(conn: amqp.ChannelModel): Promise<amqp.Channel> {
    const ch = await conn.createChannel();
    ch.on("error", (e: Error) =>
      this.#log.debug(
        { error: redactedError(e, this.#opts.url) },
        "Nova notifications: channel error",
      ));
    try {
      await ch.checkExchange(this.#exchange);
    } catch (e) {
      if ((e as { code?: unknown }).code !== 404) throw e;
      throw new ExchangeMissingError(this.#exchange, amqpVhost(this.#opts.url));
    }
    return ch;
  }

  #urlWithHeartbeat(): string {
    const u = new URL(this.#opts.url);
    if (!u.searchParams.has("heartbeat")) {
      u.searchParams.set(
        "heartbeat",
        String(this.#opts.heartbeatSeconds ?? DEFAULT_HEARTBEAT_SECONDS),
      );
    }
    return u.toString();
  }

  #deliver(body: Uint8Array, routingKey: string): void {
    const max = this.#opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    if (body.byteLength > max) {
      this.#tooLarge++;
      this.#opts.observer?.dropped?.("too_large");
      // The first, then every 1000th, as for malformed messages.
      if (this.#tooLarge % 1000 === 1) {
        this.#log.warn(
          { routingKey, bytes: body.byteLength, maxBytes: max },
          "Nova notifications: dropped a message larger than --nova-notifications-max-message-bytes",
        );
      }
      return;
    }
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

/**
 * Closes `conn`: settles when the broker confirmed the close, when the
 * connection is closed anyway (cut: the socket ended), or after
 * `timeoutMs` (frozen: nothing comes back), when the socket is dropped,
 * which closes the connection's channels and fails their pending calls.
 * amqplib's own close settles only on the broker's confirmation.
 */
async function closeWithin(
  conn: amqp.ChannelModel,
  timeoutMs: number,
): Promise<void> {
  const closed = Promise.withResolvers<void>();
  const onClose = () => closed.resolve();
  conn.once("close", onClose);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), timeoutMs);
  });
  try {
    const how = await Promise.race([
      conn.close().catch(() => {}),
      closed.promise,
      late,
    ]);
    if (how === "late") {
      // amqplib's socket: an error on it closes the connection at once.
      const inner = conn as unknown as {
        connection?: { stream?: { destroy(error?: Error): void } };
      };
      inner.connection?.stream?.destroy(
        new Error(`the broker did not confirm the close in ${timeoutMs} ms`),
      );
    }
  } finally {
    clearTimeout(timer);
    conn.removeListener("close", onClose);
  }
}
