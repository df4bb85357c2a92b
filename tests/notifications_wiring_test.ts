/**
 * `--nova-notifications-url-file` in the real program (`main.ts run` with
 * the binary's permissions): the URL read from a file (a mounted Secret),
 * the feed subscribed to a real RabbitMQ where the Nova simulator
 * publishes, its metrics served, the URL in no log line; and a missing
 * file stops start-up with one line naming the flag and the file.
 */
import assert from "node:assert/strict";
import {
  NOTIFICATIONS_RECEIVED_METRIC,
  NOTIFICATIONS_UP_METRIC,
} from "../app/notification_metrics.ts";
import { INTEGRATION, uniq, waitFor } from "./_hypervisor_util.ts";
import { sharedEnvtest } from "./harness/envtest.ts";
import { startNovaSim } from "./harness/nova_sim/mod.ts";
import {
  operatorLogTail,
  STAGING_ROOT,
  startOperatorProcess,
} from "./harness/operator_process.ts";
import { freePort, makeOwnedTempDir } from "./harness/processes.ts";
import { rabbitMqMissing, sharedRabbitMq } from "./harness/rabbitmq.ts";

const missing = await rabbitMqMissing();
if (missing !== undefined) {
  console.error(`tests/notifications_wiring_test.ts: skipped: ${missing}`);
}

Deno.test({
  name:
    "--nova-notifications-url-file: the program subscribes, counts Nova's events by type in its metrics, and never logs the URL",
  ignore: missing !== undefined,
  ...INTEGRATION,
  fn: async () => {
    const env = await sharedEnvtest();
    const mq = await sharedRabbitMq();
    const label = uniq("nw");
    const sim = await startNovaSim({
      timeScale: 10,
      hosts: [{ name: `${label}-a` }, { name: `${label}-b` }],
      servers: [{ name: "vm", host: `${label}-a`, ramMb: 1024 }],
    }, { amqpUrl: mq.url });
    const dir = await makeOwnedTempDir(STAGING_ROOT, "notifications-");
    await Deno.writeTextFile(`${dir}/url`, `${mq.feedUrl}\n`);
    const port = freePort();
    const op = await startOperatorProcess({
      kubeconfigPath: env.kubeconfigPath,
      cloudsYaml: sim.cloudsYaml(),
      args: [
        `--label-selector=evictor-test=${label}`,
        "--controllers=eviction",
        "--webhook-bind-address=0",
        `--metrics-bind-address=127.0.0.1:${port}`,
        "--insecure-metrics",
        `--nova-notifications-url-file=${dir}/url`,
      ],
    });
    const scrape = async () =>
      await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    try {
      const up = await waitFor("the feed up in /metrics", async () => {
        const text = await scrape().catch(() => "");
        return new RegExp(`^${NOTIFICATIONS_UP_METRIC} 1$`, "m").test(text) &&
          text;
      }, 60_000).catch(async (err) => {
        throw new Error(`${err}\n${await operatorLogTail(op)}`);
      });
      assert.ok(up);
      sim.migrateTo("vm", `${label}-b`);
      await waitFor("post.end counted by type", async () => {
        const text = await scrape();
        return new RegExp(
          `^${NOTIFICATIONS_RECEIVED_METRIC}\\{event_type="instance.live_migration_post.end"\\} [1-9]`,
          "m",
        ).test(text);
      }, 60_000);
      const log = await op.log();
      assert.match(log, /Nova notifications: subscribed/);
      assert.ok(!log.includes(mq.feedUrl), "the URL is in the log");
    } finally {
      await op.stop();
      await sim.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name:
    "--nova-notifications-url-file: a missing file stops start-up with one line naming the flag and the file",
  ...INTEGRATION,
  fn: async () => {
    const env = await sharedEnvtest();
    const sim = await startNovaSim({ hosts: [{ name: "h" }] });
    const op = await startOperatorProcess({
      kubeconfigPath: env.kubeconfigPath,
      cloudsYaml: sim.cloudsYaml(),
      args: [
        "--webhook-bind-address=0",
        "--metrics-bind-address=0",
        `--nova-notifications-url-file=${STAGING_ROOT}/no-such-file`,
      ],
    });
    try {
      const code = await op.exited;
      assert.equal(code, 1, await op.log());
      const fatal = (await op.log()).split("\n").find((l) =>
        l.includes('"level":"fatal"') || l.includes('"level":60')
      );
      assert.ok(fatal, await op.log());
      assert.match(fatal, /--nova-notifications-url-file/);
      assert.match(fatal, /no-such-file/);
    } finally {
      await sim.close();
    }
  },
});
