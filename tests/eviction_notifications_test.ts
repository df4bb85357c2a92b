/**
 * Drains driven by Nova's notifications (issue 23), against the real API
 * server and the Nova simulator publishing to a real RabbitMQ, consumed by
 * the operator's AMQP source (openstack/notifications.ts): passes that
 * only start plan from each host's view without calling Nova; the broker
 * stopped mid-drain makes the drain poll at once and relist when it is
 * back; a VM forced onto a finished host reopens its drain within a second
 * of the event. What a broker cannot be made to do on cue (drop one
 * event; duplicate and reorder them) goes through an in-process feed of
 * the same notifications (tests/harness/sim_feed.ts): the relist finds
 * the dropped event and counts it; duplicates and reordering change
 * nothing. A third party's update placing moved VMs back on the host
 * (through the broker) makes the drain look before any start of them.
 */
import assert from "node:assert/strict";
import amqp from "amqplib";
import { Buffer } from "node:buffer";
import type { Eviction } from "../models/mod.ts";
import type { NovaNotification } from "../openstack/notification_types.ts";
import { metricSum } from "./_monitoring.ts";
import { sharedEnvtest } from "./harness/envtest.ts";
import {
  drained,
  type DrainEnv,
  type DrainEnvOptions,
  eventsOf,
  migratedTwice,
  serversOn,
  startDrainEnv,
  uniqueSuffix,
  waitFor,
} from "./harness/eviction_env.ts";
import type { NovaSim, OsloEnvelope } from "./harness/nova_sim/mod.ts";
import {
  type RabbitMq,
  rabbitMqMissing,
  sharedRabbitMq,
  startRabbitMq,
} from "./harness/rabbitmq.ts";

const noBroker = await rabbitMqMissing();
/** The run's broker, for tests that leave it running. */
const viaBroker = async () => ({ amqpUrl: (await sharedRabbitMq()).url });

const POLL_MS = 200;

/** One cloud: a source host of `count` VMs and two roomy destinations. */
async function withNotifiedDrain(
  count: number,
  ramMb: number[],
  timeScale: number,
  fn: (env: DrainEnv, host: string) => Promise<void>,
  extra: Partial<DrainEnvOptions> = {},
): Promise<void> {
  const s = uniqueSuffix();
  const host = `notified-${s}`;
  const env = await startDrainEnv({
    env: await sharedEnvtest(),
    pollIntervalMs: POLL_MS,
    concurrency: "4",
    ...extra,
    scenario: {
      seed: 23,
      timeScale,
      hosts: [
        {
          name: host,
          ramMb: 1_000_000,
          vcpus: 1024,
          maxConcurrentLiveMigrations: 4,
        },
        { name: `dst1-${s}`, ramMb: 8_000_000, vcpus: 8192 },
        { name: `dst2-${s}`, ramMb: 8_000_000, vcpus: 8192 },
      ],
      serverGroups: [{ host, count, namePrefix: "vm", ramMb }],
    },
  });
  try {
    await env.hypervisor(host);
    await fn(env, host);
  } finally {
    await env.stop();
  }
}

/** Nova's list calls (servers on the host, migration records) so far. */
function listCalls(sim: NovaSim): number {
  let n = 0;
  for (const [key, count] of Object.entries(sim.counters().calls)) {
    if (!key.startsWith("GET ")) continue;
    if (key.includes("/servers/detail") || key.includes("/os-migrations")) {
      n += count;
    }
  }
  return n;
}

/** A counter's value (summed over labels) from the operator's registry. */
async function metric(env: DrainEnv, name: string): Promise<number> {
  return metricSum(await env.operator.metrics.registry.metrics(), name);
}

/**
 * Forces a VM onto the finished host of drain `name` and waits up to
 * `timeoutMs` for the drain to reopen; returns when (real ms).
 */
function forceAndWaitReopened(
  env: DrainEnv,
  host: string,
  name: string,
  timeoutMs: number,
): Promise<number> {
  env.sim.addServer({ host, name: "forced", ramMb: 2048 });
  return waitFor(
    "the drain reopened",
    async () => {
      const ev = await env.eviction(name);
      return ev.status?.finishedAt === undefined ? Date.now() : undefined;
    },
    timeoutMs,
    20,
  );
}

/** Runs `fn` with a broker of its own (stopped or reconfigured by the test). */
async function withOwnBroker(fn: (mq: RabbitMq) => Promise<void>) {
  const mq = await startRabbitMq();
  try {
    await fn(mq);
  } finally {
    await mq.stop();
  }
}

function assertDrainedOnce(env: DrainEnv, host: string): void {
  assert.deepEqual(serversOn(env.sim, host), [], "no VM left on the host");
  assert.deepEqual(migratedTwice(env.sim, [host]), [], "no VM moved twice");
}

Deno.test({
  name:
    "notifications: a drain plans its starts from the host's view, its completions wake it, no VM moved twice",
  ignore: noBroker !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const notifications = await viaBroker();
    await withNotifiedDrain(16, [4096, 8192], 20, async (env, host) => {
      const name = `ev-${host}`;
      await env.evict(name, host);
      const ev = await drained(env, name, 90_000);
      assert.equal(ev.status?.migratedCount, 16);
      assertDrainedOnce(env, host);
      // Polling looks before every start (3 calls per VM and more); here
      // the lists are the first look, the settle looks and the relists.
      const lists = listCalls(env.sim);
      assert.ok(lists < 2 * 16, `${lists} list calls for 16 VMs`);
      const fromView = await metric(env, VIEW_LOOKS);
      assert.ok(fromView > 0, `passes planned from the view: ${fromView}`);
      assert.equal(await metric(env, VIEW_DIFFS), 0);
    }, { notifications });
  },
});

Deno.test({
  name:
    "notifications: a settling drain whose feed is live (events flowing) looks at its host twice, a settle interval apart",
  ignore: noBroker !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const notifications = await viaBroker();
    // Settle over 10 poll intervals (2 s real, 40 s simulated): polling
    // looks about 10 times meanwhile. The second look is fresh, so a VM
    // arriving meanwhile is found then, whatever the feed delivered.
    await withNotifiedDrain(4, [2048], 20, async (env, host) => {
      const lists: number[] = [];
      const stop = env.sim.onCall((c) => {
        if (!c.key.endsWith("/servers/detail")) return;
        if (new URLSearchParams(c.search).get("host") === host) {
          lists.push(c.atMs);
        }
      });
      // Another host's VMs being created: events the feed delivers, so it
      // is proven live (a silent feed looks just like a quiet host).
      const other = host.replace("notified-", "dst1-");
      let n = 0;
      const timer = setInterval(
        () =>
          env.sim.addServer({ host: other, name: `chatter${n++}`, ramMb: 512 }),
        100,
      );
      const name = `ev-${host}`;
      try {
        await env.evict(name, host);
        const ev = await drained(env, name, 90_000);
        stop();
        assertDrainedOnce(env, host);
        const emptySince = Date.parse(ev.status?.emptySince ?? "");
        assert.ok(!Number.isNaN(emptySince), "emptySince is recorded");
        // the looks from the one that found the host empty on (simulated
        // ms, as emptySince, which that pass stamps a moment after its
        // list): the latest at or before emptySince, and those after it
        const found = Math.max(...lists.filter((t) => t <= emptySince));
        const settling = lists.filter((t) => t >= found);
        assert.equal(settling.length, 2, `${settling.length} looks settling`);
        const [first = 0, second = 0] = settling;
        const apart = second - first;
        assert.ok(apart >= 39_000, `looks ${apart} simulated ms apart`);
      } finally {
        clearInterval(timer);
      }
    }, { notifications, settleMs: 2_000 });
  },
});

const VIEW_LOOKS = 'evictor_drain_looks_total{source="view"}';
const VIEW_DIFFS = "evictor_notification_view_diffs_total";

Deno.test({
  name:
    "notifications: the broker stopped mid-drain, the drain polls at once, relists when it is back, and finishes",
  ignore: noBroker !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await withOwnBroker(drainThroughBrokerStop);
  },
});

async function drainThroughBrokerStop(mq: RabbitMq): Promise<void> {
  // Long migrations (64 GB, 13 s real each at 5x): the drain outlasts the
  // broker's stop and start (some seconds each on a loaded machine).
  await withNotifiedDrain(16, [65536], 5, async (env, host) => {
    const feed = env.feed;
    assert.ok(feed);
    await waitFor("the feed up", () => feed.state === "up" ? true : undefined);
    // when the feed's state changed, and when the host was listed (real ms)
    const changes: Array<[string, number]> = [];
    const lists: number[] = [];
    const stopStates = feed.onState((state) =>
      changes.push([state, Date.now()])
    );
    const stopCalls = env.sim.onCall((c) => {
      if (c.key.endsWith("/servers/detail")) lists.push(Date.now());
    });
    const listedWithin = (what: string, from: number, ms: number) =>
      waitFor(
        what,
        () => lists.find((t) => t >= from && t <= from + ms),
        ms + 500,
        10,
      );
    try {
      const name = `ev-${host}`;
      await env.evict(name, host);
      await waitFor(
        "the first migrations",
        () =>
          env.sim.state().migrations.some((m) => m.source === host)
            ? true
            : undefined,
      );
      await new Promise((r) => setTimeout(r, 3 * POLL_MS));
      await mq.stopBroker();
      const downAt = changes.find(([s]) => s === "down")?.[1];
      assert.ok(downAt !== undefined, "the feed noticed the broker's stop");
      await listedWithin(
        "a look at Nova after the feed went down",
        downAt,
        POLL_MS,
      );
      await mq.startBroker();
      const upAt = await waitFor(
        "the feed up again",
        () => changes.find(([s, t]) => s === "up" && t > downAt)?.[1],
        60_000,
        10,
      );
      await listedWithin("the relist after the feed is back", upAt, 1_000);
      const fromViewBefore = await metric(env, VIEW_LOOKS);
      const runningAtUp = (await env.eviction(name)).status?.finishedAt ===
        undefined;
      await drained(env, name, 180_000);
      assertDrainedOnce(env, host);
      if (runningAtUp) {
        assert.ok(
          await metric(env, VIEW_LOOKS) > fromViewBefore,
          "planned from the view again after the relist",
        );
      }
    } finally {
      stopStates();
      stopCalls();
    }
  }, { notifications: { amqpUrl: mq.url } });
}

Deno.test({
  name: "notifications: a dropped event is found by the relist and counted",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await withNotifiedDrain(6, [8192], 20, async (env, host) => {
      const feed = env.memoryFeed;
      assert.ok(feed);
      feed.drop = (n) => n.eventType === "instance.live_migration_post.end";
      const name = `ev-${host}`;
      await env.evict(name, host);
      await drained(env, name, 90_000);
      assert.equal(feed.lost, 1, "one completion was never delivered");
      assertDrainedOnce(env, host);
      // counted once no event told it a poll interval after the relist
      // (events may lag): at the drain's next look
      await waitFor(
        "the relist's count of the VM the view got wrong",
        async () => await metric(env, VIEW_DIFFS) >= 1 ? true : undefined,
        30_000,
        50,
      );
    }, { notifications: {} });
  },
});

Deno.test({
  name: "notifications: duplicated and reordered events change nothing",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    // Events are held in batches of three, then each delivered twice, in
    // reverse order (a batch is let go after 30 ms if not full).
    let held: NovaNotification[] = [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    const flush = (publish: (n: NovaNotification) => void) => {
      clearTimeout(timer);
      const batch = held.reverse();
      held = [];
      for (const n of batch) publish(n);
      for (const n of batch) publish(n);
    };
    const deliver = (
      n: NovaNotification,
      publish: (n: NovaNotification) => void,
    ) => {
      held.push(n);
      if (held.length >= 3) flush(publish);
      else {
        clearTimeout(timer);
        timer = setTimeout(() => flush(publish), 30);
      }
    };
    try {
      await withNotifiedDrain(12, [4096, 8192], 20, async (env, host) => {
        const name = `ev-${host}`;
        await env.evict(name, host);
        const ev = await drained(env, name, 90_000);
        assert.equal(ev.status?.migratedCount, 12);
        assertDrainedOnce(env, host);
        assert.equal(await metric(env, VIEW_DIFFS), 0);
      }, { notifications: { deliver } });
    } finally {
      clearTimeout(timer);
    }
  },
});

Deno.test({
  name:
    "notifications: a VM forced onto a finished host reopens its drain within a second of the event",
  ignore: noBroker !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const notifications = await viaBroker();
    await withNotifiedDrain(2, [4096], 20, async (env, host) => {
      const feed = env.feed;
      assert.ok(feed);
      const name = `ev-${host}`;
      await env.evict(name, host);
      await drained(env, name, 60_000);
      // A finished drain looks again after as long as it has been finished
      // (finishedLookMs): after 6 s its own looks are >= 6 s apart, so a
      // reopening within a second is the event's.
      await new Promise((r) => setTimeout(r, 6_000));
      let eventAt: number | undefined;
      const stop = feed.listen((n) => {
        if (n.instance?.host === host && eventAt === undefined) {
          eventAt = Date.now();
        }
      });
      try {
        const reopened = await forceAndWaitReopened(env, host, name, 5_000);
        assert.ok(eventAt !== undefined, "the arrival was notified");
        assert.ok(
          reopened - eventAt <= 1_000,
          `reopened ${reopened - eventAt} ms after the event`,
        );
      } finally {
        stop();
      }
      await drained(env, name, 60_000);
      assertDrainedOnce(env, host);
    }, { notifications });
  },
});

const DEMOTIONS = "evictor_nova_notifications_demotions_total";
const HOSTS_DEMOTED = "evictor_nova_notifications_hosts_demoted";

/** The Eviction's drain time on the simulator's clock (status times). */
function makespanMs(ev: Eviction): number {
  return Date.parse(ev.status?.finishedAt ?? "") -
    Date.parse(ev.status?.startedAt ?? "");
}

Deno.test({
  name:
    "notifications: a feed listening where Nova never publishes is demoted (deaf or wrong) within the probe bound, the drain polls and moves each VM once",
  ignore: noBroker !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await withOwnBroker(async (mq) => {
      // A vhost of its own, with an exchange `nova` nobody publishes to:
      // the operator subscribes there, the simulator publishes on `/`.
      const deaf = await mq.addVhost("deaf");
      const conn = await amqp.connect(deaf);
      const ch = await conn.createChannel();
      await ch.assertExchange("nova", "topic", { durable: false });
      await conn.close();
      // 12 VMs of 32 GB at 5x (6.4 s real each), 4 at once: ~20 s real.
      const polled = await drainMakespan({});
      let demoted:
        | {
          ms: number;
          events: string[];
          hosts: number;
          condition: { reason: string; message: string };
        }
        | undefined;
      const notified = await drainMakespan(
        { notifications: { amqpUrl: mq.url, listenUrl: deaf } },
        async (env, name) => {
          const startedAt = Date.now();
          demoted = await waitFor(
            "the demotion",
            async () => {
              const n = await metric(env, DEMOTIONS);
              if (n === 0) return undefined;
              const ms = Date.now() - startedAt;
              // the Event is written a moment after the metric counts
              const events = await waitFor(
                "the demotion's Event",
                async () => {
                  const all = (await eventsOf(env, name)).map((e) =>
                    `${e.reason}: ${e.message}`
                  );
                  return all.some((e) =>
                      e.startsWith("NotificationViewDemoted")
                    )
                    ? all
                    : undefined;
                },
                10_000,
                50,
              );
              // The deafness shows while the feed is up: the gauge, and
              // the Eviction's condition (at its next status write).
              const hosts = await metric(env, HOSTS_DEMOTED);
              const condition = await waitFor(
                "the NovaNotifications condition",
                async () => {
                  const ev = await env.eviction(name);
                  const c = ev.status?.conditions?.find((x) =>
                    x.type === "NovaNotifications"
                  );
                  return c?.status === "False" ? c : undefined;
                },
                10_000,
                50,
              );
              return { ms, events, hosts, condition };
            },
            60_000,
            50,
          );
        },
      );
      assert.ok(demoted !== undefined);
      assert.equal(demoted.hosts, 1, "the host counts as demoted");
      assert.ok(
        ["Deaf", "ViewWrong"].includes(demoted.condition.reason),
        demoted.condition.reason,
      );
      assert.match(demoted.condition.message, /the drain polls Nova/);
      // the bound: max(10 s, 2 poll intervals) real after the first
      // start's answer, plus a pass
      assert.ok(demoted.ms <= 10_000 + 5_000, `demoted after ${demoted.ms} ms`);
      assert.ok(
        // deaf (a start not heard of) or wrong (a relist that found the
        // silent view wrong first): either says the feed cannot be trusted
        demoted.events.some((e) =>
          e.startsWith("NotificationViewDemoted") &&
          (e.includes("(deaf)") || e.includes("(wrong)"))
        ),
        `an Event says why: ${demoted.events.join(" | ")}`,
      );
      assert.ok(
        notified <= 1.5 * polled,
        `notified (deaf) ${notified} ms against polling ${polled} ms`,
      );
    });
  },
});

/**
 * Drains 12 VMs of 32 GB at 5x with `extra`, runs `during` beside it, and
 * returns the drain's makespan on the simulator's clock.
 */
async function drainMakespan(
  extra: Partial<DrainEnvOptions>,
  during?: (env: DrainEnv, name: string) => Promise<void>,
): Promise<number> {
  let ms = 0;
  await withNotifiedDrain(12, [32768], 5, async (env, host) => {
    const name = `ev-${host}`;
    await env.evict(name, host);
    const watching = during?.(env, name);
    const ev = await drained(env, name, 180_000);
    await watching;
    assertDrainedOnce(env, host);
    assert.equal(ev.status?.migratedCount, 12);
    ms = makespanMs(ev);
  }, extra);
  return ms;
}

Deno.test({
  name:
    "notifications: a VM sent to a Succeeded host with its events lost reopens the drain within a few poll intervals",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    let lose = false;
    const deliver = (
      n: NovaNotification,
      publish: (n: NovaNotification) => void,
    ) => {
      if (!lose) publish(n);
    };
    await withNotifiedDrain(2, [4096], 20, async (env, host) => {
      const name = `ev-${host}`;
      await env.evict(name, host);
      await drained(env, name, 60_000);
      lose = true;
      // A second after Succeeded a VM lands on the host; no event of it
      // arrives. A view trusted as live would wait for the slow check
      // (60 poll intervals: 12 s); one not proven live looks at the
      // polling pace (the gap since the finish, doubling).
      await new Promise((r) => setTimeout(r, 1_000));
      const sentAt = Date.now();
      const reopened = await forceAndWaitReopened(env, host, name, 15_000);
      assert.ok(
        reopened - sentAt <= 10 * POLL_MS + 1_000,
        `reopened ${reopened - sentAt} ms after the VM came`,
      );
      lose = false;
      await drained(env, name, 60_000);
      assertDrainedOnce(env, host);
    }, { notifications: { deliver } });
  },
});

/**
 * `envelope` (an `instance.update` of a VM that left `host`) forged to
 * place the VM back on `host` at rest: a new message id, stamped `at`.
 */
function forgedBack(
  envelope: OsloEnvelope,
  host: string,
  at: string,
): OsloEnvelope {
  const message = JSON.parse(envelope["oslo.message"]);
  const data = message.payload["nova_object.data"];
  Object.assign(data, { host, node: host, state: "active", task_state: null });
  message.message_id = crypto.randomUUID();
  message.timestamp = at;
  return { ...envelope, "oslo.message": JSON.stringify(message) };
}

Deno.test({
  name:
    "notifications: a third party's update placing moved VMs back on the drained host at rest moves nothing twice, and the drain says what it saw",
  ignore: noBroker !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const notifications = await viaBroker();
    await withNotifiedDrain(6, [8192], 20, async (env, host) => {
      // each VM's update that shows it elsewhere at rest, and Nova's last stamp
      const left = new Map<string, OsloEnvelope>();
      let latest = "";
      const stop = env.sim.onNotification((_key, envelope) => {
        const message = JSON.parse(envelope["oslo.message"]);
        latest = message.timestamp;
        const data = message.payload?.["nova_object.data"];
        if (
          message.event_type === "instance.update" && data?.host !== host &&
          data?.task_state === null
        ) left.set(data.uuid, envelope);
      });
      const conn = await amqp.connect(notifications.amqpUrl);
      try {
        const ch = await conn.createChannel();
        const name = `ev-${host}`;
        await env.evict(name, host);
        await waitFor(
          "two VMs moved",
          () => Promise.resolve(left.size >= 2 ? true : undefined),
          60_000,
          20,
        );
        for (const envelope of [...left.values()].slice(0, 2)) {
          ch.publish(
            "nova",
            "versioned_notifications.info",
            Buffer.from(JSON.stringify(forgedBack(envelope, host, latest))),
          );
        }
        const ev = await drained(env, name, 90_000);
        assert.equal(ev.status?.migratedCount, 6, "each VM counted once");
        assertDrainedOnce(env, host);
        assert.ok(await metric(env, VIEW_DIFFS) >= 1, "the relist counted it");
        const said = (await eventsOf(env, name)).map((e) =>
          `${e.reason}: ${e.message}`
        );
        assert.ok(
          said.some((e) =>
            e.startsWith("NotificationViewDemoted") && e.includes("(wrong)")
          ),
          `an Event says what the drain saw: ${said.join(" | ")}`,
        );
      } finally {
        stop();
        await conn.close();
      }
    }, { notifications });
  },
});
