import assert from "node:assert/strict";
import amqp from "amqplib";
import { Buffer } from "node:buffer";
import { SimNotifier } from "../tests/harness/nova_sim/notifier.ts";
import { startCuttingProxy } from "../tests/harness/cutting_proxy.ts";
import { startFreezingProxy } from "../tests/harness/freezing_proxy.ts";
import { freePort } from "../tests/harness/processes.ts";
import { rabbitMqMissing, startRabbitMq } from "../tests/harness/rabbitmq.ts";
import type { Clock } from "./clock.ts";
import type { Logger } from "./logger.ts";
import type { FeedState, NovaNotification } from "./notification_types.ts";
import {
  ExchangeMissingError,
  startNotificationFeed,
} from "./notifications.ts";

/** A clock whose sleeps are recorded and end at once (after a turn). */
function recordingClock(): Clock & { sleeps: number[] } {
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => 0,
    sleep: (ms, signal) => {
      sleeps.push(ms);
      return new Promise((resolve, reject) => {
        if (signal?.aborted) return reject(signal.reason);
        setTimeout(resolve, 5);
      });
    },
  };
}

function recordingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const log = (obj: Record<string, unknown>, msg?: string) =>
    lines.push(`${msg ?? ""} ${JSON.stringify(obj)}`);
  return { lines, debug: log, info: log, warn: log };
}

Deno.test("the feed backs off on its clock while the broker is away, probing its port at the shortest backoff, and never logs the URL", async () => {
  const clock = recordingClock();
  const logger = recordingLogger();
  // where each reconnect's wait begins among the clock's sleeps
  const marks: number[] = [];
  const port = freePort(); // nothing listens there
  const feed = startNotificationFeed({
    url: `amqp://nova:topsecret@127.0.0.1:${port}/`,
    clock,
    logger,
    initialBackoffMs: 100,
    maxBackoffMs: 800,
    observer: { reconnect: () => marks.push(clock.sleeps.length) },
  });
  try {
    while (marks.length < 7) {
      await new Promise((r) => setTimeout(r, 10));
    }
  } finally {
    await feed.close();
  }
  // The waits between attempts double up to the cap, each slept in steps
  // of the shortest backoff (the port is probed after each).
  const waits = marks.slice(0, 6).map((m, i) =>
    clock.sleeps.slice(m, marks[i + 1]).reduce((a, b) => a + b, 0)
  );
  assert.deepEqual(waits, [100, 200, 400, 800, 800, 800]);
  assert.ok(clock.sleeps.every((ms) => ms <= 100), String(clock.sleeps));
  assert.equal(feed.state, "down");
  assert.equal(feed.epoch, 0);
  assert.ok(logger.lines.length > 0);
  for (const line of logger.lines) {
    assert.ok(!line.includes("topsecret"), line);
  }
  assert.ok(logger.lines.some((l) => l.includes(`127.0.0.1:${port}`)));
});

const missing = await rabbitMqMissing();
if (missing !== undefined) {
  console.error(
    `openstack/notifications_test.ts: broker tests skipped: ${missing}`,
  );
}

/** Waits until `check` holds, polling every 20 ms, for at most `ms`. */
async function until(what: string, check: () => boolean, ms = 20_000) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

Deno.test({
  name:
    "the feed consumes Nova's notifications from a real RabbitMQ, and comes back after the broker does",
  ignore: missing !== undefined,
  async fn(t) {
    const mq = await startRabbitMq();
    // Nova's side: a publisher as oslo.messaging's (the simulator's
    // notifier), on the exchange Nova declares.
    const conn = await amqp.connect(mq.url);
    const ch = await conn.createChannel();
    await ch.assertExchange("nova", "topic", {
      durable: false,
      autoDelete: false,
    });
    const received: NovaNotification[] = [];
    const states: [FeedState, number][] = [];
    const counts = {
      malformed: 0,
      tooLarge: 0,
      byType: new Map<string, number>(),
    };
    const logger = recordingLogger();
    // The feed's user holds exactly the documented permissions.
    const feed = startNotificationFeed({
      url: mq.feedUrl,
      logger,
      initialBackoffMs: 100,
      maxBackoffMs: 500,
      maxMessageBytes: 4096,
      observer: {
        malformed: () => counts.malformed++,
        dropped: (reason) => {
          if (reason === "too_large") counts.tooLarge++;
        },
        received: (type) =>
          counts.byType.set(type, (counts.byType.get(type) ?? 0) + 1),
      },
    });
    feed.listen((n) => received.push(n));
    feed.onState((state, epoch) => states.push([state, epoch]));
    const notifier = new SimNotifier();
    notifier.listen((key, env) => {
      ch.publish("nova", key, Buffer.from(JSON.stringify(env)));
    });
    const snap = {
      uuid: "u1",
      name: "vm",
      projectId: "p",
      userId: "u",
      flavor: { name: "f", ramMb: 2048, vcpus: 2, disk: 20 },
      host: "node001",
      vmState: "active",
      taskState: "migrating",
      powerState: 1,
      created: 0,
      updated: 0,
      locked: false,
    };
    try {
      await t.step(
        "subscribes with the documented permissions: up at epoch 1, both routing keys",
        async () => {
          await feed.firstAttempt;
          await until("up", () => feed.state === "up");
          assert.equal(feed.epoch, 1);
          assert.deepEqual(states, [["up", 1]]);
          notifier.instanceUpdate(
            snap,
            { vmState: "active", taskState: null },
            "controller",
            Date.now(),
          );
          notifier.computeTaskError(
            "migrate_server",
            "u1",
            "active",
            "NoValidHost",
            "No valid host",
            Date.now(),
          );
          await until("two notifications", () => received.length === 2);
          assert.equal(received[0]?.eventType, "instance.update");
          assert.equal(received[0]?.instance?.taskState, "migrating");
          assert.equal(received[0]?.priority, "info");
          assert.equal(received[1]?.priority, "error");
          assert.equal(received[1]?.task?.instanceUuid, "u1");
          assert.equal(counts.byType.get("instance.update"), 1);
        },
      );

      await t.step(
        "a malformed message is counted and logged, the feed goes on",
        async () => {
          ch.publish(
            "nova",
            "versioned_notifications.info",
            Buffer.from("{nope"),
          );
          ch.publish(
            "nova",
            "versioned_notifications.info",
            Buffer.from(JSON.stringify({ event_type: "x" })),
          );
          notifier.instanceAction(
            "live_migration_post",
            "end",
            snap,
            "node001",
            Date.now(),
          );
          await until("the next good one", () => received.length === 3);
          assert.equal(counts.malformed, 2);
          assert.equal(
            received[2]?.eventType,
            "instance.live_migration_post.end",
          );
          assert.ok(logger.lines.some((l) => l.includes("body is not JSON")));
          assert.equal(feed.state, "up");
        },
      );

      await t.step(
        "a message above the size limit is dropped unparsed and counted; the next one is delivered",
        async () => {
          const before = received.length;
          const big = JSON.stringify({
            "oslo.version": "2.0",
            "oslo.message": JSON.stringify({
              message_id: "too-big",
              event_type: "instance.update",
              publisher_id: "nova-compute:node001",
              timestamp: "2026-12-03 08:00:00",
              payload: {
                "nova_object.data": { uuid: "u9", host: "node001" },
                padding: "x".repeat(8192),
              },
            }),
          });
          ch.publish(
            "nova",
            "versioned_notifications.info",
            Buffer.from(big),
          );
          notifier.instanceAction(
            "live_migration_post",
            "end",
            snap,
            "node001",
            Date.now(),
          );
          await until("the next one", () => received.length === before + 1);
          assert.equal(counts.tooLarge, 1);
          assert.equal(counts.malformed, 2, "dropped before parsing");
          assert.ok(!received.some((n) => n.messageId === "too-big"));
          assert.ok(
            logger.lines.some((l) =>
              l.includes("larger than --nova-notifications-max-message-bytes")
            ),
          );
        },
      );

      await t.step(
        "the broker stops: down; it is back: up again at epoch 2",
        async () => {
          await ch.close().catch(() => {});
          await conn.close().catch(() => {});
          await mq.stopBroker();
          await until("down", () => feed.state === "down");
          assert.deepEqual(states.at(-1), ["down", 1]);
          await mq.startBroker();
          // A restart lost the (non-durable) exchange: the feed waits for
          // Nova to declare it again, never declares it itself.
          const conn2 = await amqp.connect(mq.url);
          const ch2 = await conn2.createChannel();
          await ch2.assertExchange("nova", "topic", {
            durable: false,
            autoDelete: false,
          });
          await until("up again", () => feed.state === "up", 60_000);
          assert.equal(feed.epoch, 2);
          assert.deepEqual(states.at(-1), ["up", 2]);
          ch2.publish(
            "nova",
            "versioned_notifications.info",
            Buffer.from(JSON.stringify({
              "oslo.version": "2.0",
              "oslo.message": JSON.stringify({
                message_id: "after-restart",
                event_type: "instance.update",
                publisher_id: "nova-compute:node002",
                timestamp: "2026-12-03 08:00:00.000001",
                payload: {
                  "nova_object.data": { uuid: "u2", host: "node002" },
                },
              }),
            })),
          );
          await until(
            "a notification after the restart",
            () => received.some((n) => n.messageId === "after-restart"),
          );
          await conn2.close();
        },
      );

      await t.step(
        "its queue is its own: exclusive, and gone with the feed",
        async () => {
          const probe = await amqp.connect(mq.url);
          const pch = await probe.createChannel();
          pch.on("error", () => {});
          // Nova's default queues exist only when Nova declared them; ours is
          // server-named: a second feed gets a copy of each message.
          const second: NovaNotification[] = [];
          const other = startNotificationFeed({ url: mq.url });
          other.listen((n) => second.push(n));
          await until("second up", () => other.state === "up");
          const before = received.length;
          pch.publish(
            "nova",
            "versioned_notifications.info",
            Buffer.from(JSON.stringify({
              "oslo.version": "2.0",
              "oslo.message": JSON.stringify({
                message_id: "both",
                event_type: "instance.update",
                publisher_id: "nova-compute:node002",
                timestamp: "2026-12-03 08:00:00",
                payload: {
                  "nova_object.data": { uuid: "u3", host: "node002" },
                },
              }),
            })),
          );
          await until(
            "both feeds got it",
            () => received.length === before + 1 && second.length === 1,
          );
          await other.close();
          assert.equal(other.state, "down");
          await probe.close();
        },
      );

      await t.step(
        "Nova's exchange is used as Nova declared it (durable or not)",
        async () => {
          // Nova with amqp_durable_queues = true declares a durable exchange;
          // declaring it non-durable would close the channel.
          const url = await mq.addVhost("durable");
          const c = await amqp.connect(url);
          const dch = await c.createChannel();
          await dch.assertExchange("nova", "topic", {
            durable: true,
            autoDelete: false,
          });
          const durable = startNotificationFeed({ url });
          const got: NovaNotification[] = [];
          durable.listen((n) => got.push(n));
          await until("up", () => durable.state === "up");
          const n = new SimNotifier();
          n.listen((key, env) =>
            dch.publish("nova", key, Buffer.from(JSON.stringify(env)))
          );
          n.computeTaskError(
            "migrate_server",
            "u1",
            "active",
            "NoValidHost",
            "x",
            0,
          );
          await until("delivered", () => got.length === 1);
          assert.equal(durable.epoch, 1);
          await durable.close();
          await c.close();
        },
      );

      await t.step(
        "an exchange that does not exist: the first attempt fails with one line naming it, and none is made",
        async () => {
          const url = await mq.addVhost("no-nova");
          const log = recordingLogger();
          const f = startNotificationFeed({
            url,
            logger: log,
            exchange: "nova",
            initialBackoffMs: 100,
          });
          const e = await f.firstAttempt.then(() => undefined, (e) => e);
          assert.ok(e instanceof ExchangeMissingError, String(e));
          assert.equal(e.exchange, "nova");
          assert.equal(e.vhost, "no-nova");
          assert.ok(!e.message.includes("\n"));
          assert.match(e.message, /\[DEFAULT\] control_exchange/);
          // The first attempt's error is the caller's to report; the next
          // attempts log it.
          await until(
            "a later attempt logged",
            () =>
              log.lines.some((l) =>
                l.includes("'nova' does not exist in vhost 'no-nova'")
              ),
          );
          assert.equal(f.state, "down");
          await f.close();
          // Checked passively only: no exchange of that name was made.
          const c = await amqp.connect(url);
          const cch = await c.createChannel();
          cch.on("error", () => {});
          await assert.rejects(cch.checkExchange("nova"), /404/);
          await c.close();
        },
      );

      await t.step(
        "without read on its own queue (the old documented permissions): one line names it, never up",
        async () => {
          const url = await mq.addUser("noread", {
            configure: "^amq\\.gen-.*",
            write: "^amq\\.gen-.*",
            read: "^nova$",
          });
          const log = recordingLogger();
          const seen: FeedState[] = [];
          const f = startNotificationFeed({
            url,
            logger: log,
            initialBackoffMs: 100,
            maxBackoffMs: 200,
            observer: { state: (s) => seen.push(s) },
          });
          await f.firstAttempt;
          const line = log.lines.find((l) =>
            l.startsWith("Nova notifications: the broker refused")
          );
          await f.close();
          assert.ok(line !== undefined, log.lines.join("\n"));
          assert.match(
            line,
            /the broker refused read access to queue 'amq\.gen-[^']+' in vhost '\/' for user 'noread' \(BasicConsume\)/,
          );
          assert.ok(line.includes("read '^(amq\\.gen-.*|nova)$'"), line);
          assert.equal(f.epoch, 0);
          assert.ok(!seen.includes("up"));
        },
      );

      await t.step(
        "a connection that goes silent without closing is dropped within three heartbeats",
        async () => {
          const proxy = startFreezingProxy(mq.port);
          const f = startNotificationFeed({
            url: mq.feedUrl.replace(`:${mq.port}/`, `:${proxy.port}/`),
            heartbeatSeconds: 1,
            initialBackoffMs: 60_000,
          });
          try {
            await until("up", () => f.state === "up");
            proxy.freeze();
            const t0 = performance.now();
            await until("down", () => f.state === "down", 60_000);
            const ms = performance.now() - t0;
            console.log(
              `heartbeat 1 s: a silent connection dropped after ${
                (ms / 1000).toFixed(1)
              } s`,
            );
            // The bound is 3 heartbeats; timers run late on a loaded machine.
            assert.ok(ms < 20_000, `${ms} ms`);
          } finally {
            await f.close();
            await proxy.close();
          }
        },
      );

      await t.step("close: down, and no URL in any log line", async () => {
        await feed.close();
        assert.equal(feed.state, "down");
        for (const line of logger.lines) {
          assert.ok(!line.includes(mq.feedUrl), line);
          assert.ok(!line.includes("evictor-pw"), line);
        }
      });
    } finally {
      await feed.close();
      await conn.close().catch(() => {});
      await mq.stop();
    }
  },
});

Deno.test("a close while connecting returns at once, without waiting out the connect timeout", async () => {
  // A broker that accepts TCP and never answers the AMQP handshake.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const accepted: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const c of listener) accepted.push(c);
  })();
  const feed = startNotificationFeed({
    url: `amqp://u:p@127.0.0.1:${listener.addr.port}/`,
    connectTimeoutMs: 120_000,
  });
  try {
    await until("the connection attempt", () => accepted.length === 1);
    const t0 = performance.now();
    await feed.close();
    const ms = performance.now() - t0;
    // Far below the connect timeout even on a loaded machine.
    assert.ok(ms < 10_000, `close took ${ms} ms`);
    assert.equal(feed.state, "down");
    await feed.firstAttempt;
  } finally {
    for (const c of accepted) c.close();
    listener.close();
    await accepting.catch(() => {});
    await feed.close();
  }
});

/**
 * A clock whose sleeps end only when the test moves it on ({@linkcode next}):
 * how long the feed waited is counted in its own time, whatever the load.
 */
function steppedClock(): Clock & {
  /** Sleeps not ended yet. */
  pending(): number;
  /** Moves the clock to the end of the earliest sleep and ends it. */
  next(): void;
} {
  let now = 0;
  const sleeps: Array<{ until: number; resolve: () => void }> = [];
  return {
    now: () => now,
    sleep: (ms, signal) =>
      new Promise((resolve, reject) => {
        if (signal?.aborted) return reject(signal.reason);
        const entry = { until: now + ms, resolve };
        sleeps.push(entry);
        signal?.addEventListener("abort", () => {
          sleeps.splice(sleeps.indexOf(entry), 1);
          reject(signal.reason);
        }, { once: true });
      }),
    pending: () => sleeps.length,
    next: () => {
      sleeps.sort((a, b) => a.until - b.until);
      const first = sleeps.shift();
      if (first === undefined) return;
      now = Math.max(now, first.until);
      first.resolve();
    },
  };
}

/** `p`, or a rejection naming `what` after `ms` real ms. */
async function within<T>(what: string, p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`${what} did not settle in ${ms} ms`)),
          ms,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

Deno.test({
  name:
    "after an outage the feed is back within one short backoff of the broker; a close settles with the connection cut or frozen",
  ignore: missing !== undefined,
  async fn(t) {
    const mq = await startRabbitMq();
    // Nova's exchange, durable here so that it outlives the restart.
    const admin = await amqp.connect(mq.url);
    const ach = await admin.createChannel();
    await ach.assertExchange("nova", "topic", { durable: true });
    await admin.close();
    const proxied = (port: number) => {
      const u = new URL(mq.feedUrl);
      u.port = String(port);
      return u.toString();
    };
    try {
      await t.step(
        "several failed reconnects, then the broker: up after one short backoff",
        async () => {
          const clock = steppedClock();
          let reconnects = 0;
          const feed = startNotificationFeed({
            url: mq.feedUrl,
            clock,
            initialBackoffMs: 200,
            maxBackoffMs: 60_000,
            observer: { reconnect: () => reconnects++ },
          });
          try {
            await until("up", () => feed.state === "up", 60_000);
            await mq.stopBroker();
            // 200, 400, ... 6400 ms: the feed's wait is long by now.
            while (reconnects < 6) {
              await until("a wait", () => clock.pending() > 0, 60_000);
              clock.next();
            }
            await mq.startBroker();
            const backAt = clock.now();
            const isUp = () => feed.state === "up";
            while (!isUp()) {
              await until(
                "a wait, or up",
                () => clock.pending() > 0 || isUp(),
                60_000,
              );
              if (!isUp()) clock.next();
            }
            assert.ok(
              clock.now() - backAt <= 200,
              `up ${
                clock.now() - backAt
              } ms (feed clock) after the broker was back`,
            );
            assert.equal(feed.epoch, 2);
          } finally {
            await within("close", feed.close(), 30_000);
          }
        },
      );

      await t.step(
        "the connection is cut as the feed closes: close settles",
        async () => {
          const proxy = startCuttingProxy(mq.port);
          const feed = startNotificationFeed({
            url: proxied(proxy.port),
            heartbeatSeconds: 60,
          });
          try {
            await until("up", () => feed.state === "up", 60_000);
            // amqplib's Connection.Close says so: cut right after it went out,
            // the broker's CloseOk never comes back.
            proxy.cutNext("Cheers, thanks");
            await within("close", feed.close(), 20_000);
            assert.equal(proxy.seen("Cheers, thanks"), 1, "it was cut there");
            assert.equal(feed.state, "down");
          } finally {
            await proxy.close();
          }
        },
      );

      await t.step(
        "the connection is frozen as the feed closes: close settles",
        async () => {
          const proxy = startFreezingProxy(mq.port);
          const feed = startNotificationFeed({
            url: proxied(proxy.port),
            // far beyond the test: heartbeats do not end it
            heartbeatSeconds: 600,
          });
          try {
            await until("up", () => feed.state === "up", 60_000);
            proxy.freeze();
            await within("close", feed.close(), 20_000);
            assert.equal(feed.state, "down");
          } finally {
            await proxy.close();
          }
        },
      );
    } finally {
      await mq.stop();
    }
  },
});
