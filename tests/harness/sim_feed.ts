/**
 * The Nova simulator's notifications as a {@linkcode NotificationFeed}, in
 * process (no broker): each oslo 2.0 envelope the simulator sends is parsed
 * into a {@linkcode NovaNotification} and published to a
 * {@linkcode MemoryFeed}, which the test can take down, bring up again, or
 * make drop an event. Until the AMQP source (openstack/) lands this parses
 * the envelope itself, the few fields the drain's view reads.
 *
 * @module
 */

import type {
  NotifiedInstance,
  NovaNotification,
} from "../../openstack/notification_types.ts";
import { MemoryFeed } from "./memory_feed.ts";
import type {
  NotificationRoutingKey,
  NovaSim,
  OsloEnvelope,
} from "./nova_sim/mod.ts";

const POWER: Readonly<Record<string, number>> = {
  pending: 0,
  running: 1,
  paused: 3,
  shutdown: 4,
  crashed: 6,
  suspended: 7,
};

type Data = Record<string, unknown>;

function dataOf(o: unknown): Data | undefined {
  if (typeof o !== "object" || o === null) return undefined;
  const d = (o as Data)["nova_object.data"];
  return typeof d === "object" && d !== null ? d as Data : undefined;
}

const str = (v: unknown): string | null => typeof v === "string" ? v : null;

function instanceOf(d: Data): NotifiedInstance | undefined {
  const uuid = str(d.uuid);
  if (uuid === null) return undefined;
  const flavor = dataOf(d.flavor);
  const power = str(d.power_state);
  return {
    uuid,
    host: str(d.host),
    node: str(d.node),
    vmState: str(d.state),
    taskState: str(d.task_state),
    powerState: power === null ? null : POWER[power] ?? null,
    ...(typeof flavor?.memory_mb === "number"
      ? { flavorRamMb: flavor.memory_mb }
      : {}),
    ...(typeof flavor?.vcpus === "number" ? { flavorVcpus: flavor.vcpus } : {}),
    ...(str(d.tenant_id) === null ? {} : { tenantId: str(d.tenant_id) ?? "" }),
    ...(str(d.display_name) === null
      ? {}
      : { name: str(d.display_name) ?? "" }),
  };
}

/** Parses one envelope the simulator sent with `key`. */
export function parseSimEnvelope(
  key: NotificationRoutingKey,
  envelope: OsloEnvelope,
): NovaNotification {
  const m = JSON.parse(envelope["oslo.message"]) as Data;
  const publisherId = String(m.publisher_id);
  const stamp = String(m.timestamp).replace(" ", "T").replace(
    /(\.\d{3})\d*$/,
    "$1",
  );
  const d = dataOf(m.payload) ?? {};
  const instance = typeof d.uuid === "string" ? instanceOf(d) : undefined;
  const taskUuid = str(d.instance_uuid);
  return {
    messageId: String(m.message_id),
    eventType: String(m.event_type),
    publisherId,
    publisherHost: publisherId.split(":")[1],
    timestampMs: Date.parse(`${stamp}Z`),
    priority: key.endsWith(".error") ? "error" : "info",
    ...(instance === undefined ? {} : { instance }),
    ...(taskUuid === null ? {} : {
      task: {
        instanceUuid: taskUuid,
        reason: str(dataOf(d.reason)?.exception_message) ?? undefined,
      },
    }),
  };
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
