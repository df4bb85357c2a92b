/**
 * A lane drain with Nova's notifications on: the operator reads the
 * broker URL from a file (as a Secret would give it), as the feed's user
 * that holds exactly the documented permissions, with its metrics on a
 * port of its own; the drain begins once the feed is up.
 *
 * @module
 */
import { NOTIFICATIONS_UP_METRIC } from "../../app/notification_metrics.ts";
import { scrapeMetrics } from "../_monitoring.ts";
import { STAGING_ROOT } from "../harness/operator_process.ts";
import { freePort, makeOwnedTempDir } from "../harness/processes.ts";
import { laneCloud, type ServerSpec } from "./contract_backends.ts";
import { type Lane, until, withLane } from "./lane.ts";

/** Runs `fn` with a notified operator on `hosts`, once its feed is up. */
export async function withNotifiedLane(
  servers: ServerSpec[],
  hosts: string | string[],
  args: string[],
  fn: (lane: Lane, scrape: () => Promise<string>) => Promise<void>,
): Promise<void> {
  const cloud = await laneCloud();
  if (!cloud.amqpUrl) {
    throw new Error("the lane's Nova publishes to no broker");
  }
  const dir = await makeOwnedTempDir(STAGING_ROOT, "notified-lane-");
  await Deno.writeTextFile(`${dir}/url`, `${cloud.feedAmqpUrl}\n`);
  const port = freePort();
  const scrape = () => scrapeMetrics(`http://127.0.0.1:${port}/metrics`);
  try {
    await withLane(servers, typeof hosts === "string" ? [hosts] : hosts, [
      ...args,
      `--metrics-bind-address=127.0.0.1:${port}`,
      "--insecure-metrics",
      `--nova-notifications-url-file=${dir}/url`,
    ], async (lane) => {
      await until(
        "the notification feed up",
        async () =>
          new RegExp(`^${NOTIFICATIONS_UP_METRIC} 1$`, "m").test(
              await scrape().catch(() => ""),
            )
            ? true
            : undefined,
        60_000,
        lane.diagnostics,
      );
      await fn(lane, scrape);
    });
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
