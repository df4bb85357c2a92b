/**
 * The Nova simulator's notifications as a {@linkcode NotificationFeed}, in
 * process (no broker): each oslo 2.0 envelope the simulator sends is parsed
 * into a {@linkcode NovaNotification} and published to a
 * {@linkcode MemoryFeed}, which the test can take down, bring up again, or
 * make drop an event: what a broker cannot be made to do on cue.
 *
 * @module
 */

import { parseNovaNotification } from "../../openstack/notification_parse.ts";
import type { NovaNotification } from "../../openstack/notification_types.ts";
import { MemoryFeed } from "./memory_feed.ts";
import type {
  NotificationRoutingKey,
  NovaSim,
  OsloEnvelope,
} from "./nova_sim/mod.ts";

/**
 * Parses one envelope the simulator sent with `key`, as the AMQP source
 * does with a message from the broker (openstack/notification_parse.ts).
 */
export function parseSimEnvelope(
  key: NotificationRoutingKey,
  envelope: OsloEnvelope,
): NovaNotification {
  const parsed = parseNovaNotification(JSON.stringify(envelope), key);
  if (!parsed.ok) {
    throw new Error(`the simulator sent a bad notification: ${parsed.error}`);
  }
  return parsed.notification;
}

/**
 * A feed of `sim`'s notifications; `deliver` may hold, reorder or repeat
 * them (default: each at once).
 */
export function simFeed(
  sim: Pick<NovaSim, "onNotification">,
  deliver?: (
    n: NovaNotification,
    publish: (n: NovaNotification) => void,
  ) => void,
): { feed: MemoryFeed; stop: () => void } {
  const feed = new MemoryFeed();
  const publish = (n: NovaNotification) => feed.publish(n);
  const stop = sim.onNotification((key, envelope) => {
    const n = parseSimEnvelope(key, envelope);
    if (deliver === undefined) publish(n);
    else deliver(n, publish);
  });
  return { feed, stop };
}
