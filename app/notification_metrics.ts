/**
 * Metrics of the Nova notification feed on the operator's registry: the
 * messages received by event type, the malformed ones dropped, the ones
 * dropped unparsed (too large), whether the feed is up, and its reconnects.
 *
 * @module
 */
import { Counter, Gauge, type Registry } from "prom-client";
import type { NotificationFeedObserver } from "../openstack/notifications.ts";

/** Counter of the notifications received, by `event_type`. */
export const NOTIFICATIONS_RECEIVED_METRIC =
  "evictor_nova_notifications_received_total";
/** Counter of the messages that were not versioned notifications. */
export const NOTIFICATIONS_MALFORMED_METRIC =
  "evictor_nova_notifications_malformed_total";
/** Counter of the messages dropped unparsed, by `reason` (`too_large`). */
export const NOTIFICATIONS_DROPPED_METRIC =
  "evictor_nova_notifications_dropped_total";
/** Gauge: 1 while the feed's queue is bound and consuming. */
export const NOTIFICATIONS_UP_METRIC = "evictor_nova_notifications_up";
/** Counter of reconnect attempts after a loss or a failed attempt. */
export const NOTIFICATIONS_RECONNECTS_METRIC =
  "evictor_nova_notifications_reconnects_total";

/**
 * The feed's metrics, fed by its observer hooks.
 *
 * @example
 * ```ts
 * import { Registry } from "prom-client";
 * import { NotificationMetrics } from "./notification_metrics.ts";
 * const m = new NotificationMetrics();
 * const registry = new Registry();
 * m.register(registry);
 * m.observer.received?.("instance.update");
 * const text = await registry.metrics();
 * console.assert(text.includes('event_type="instance.update"} 1'));
 * ```
 */
export class NotificationMetrics {
  /** Notifications received, by event type. */
  readonly received: Counter<"event_type">;
  /** Messages dropped as malformed. */
  readonly malformed: Counter;
  /** Messages dropped unparsed, by reason. */
  readonly dropped: Counter<"reason">;
  /** 1 while up. */
  readonly up: Gauge;
  /** Reconnect attempts. */
  readonly reconnects: Counter;

  /** Creates the metrics, on no registry yet (the feed starts first). */
  constructor() {
    this.received = new Counter({
      name: NOTIFICATIONS_RECEIVED_METRIC,
      help: "Nova versioned notifications received, by event type.",
      labelNames: ["event_type"],
      registers: [],
    });
    this.malformed = new Counter({
      name: NOTIFICATIONS_MALFORMED_METRIC,
      help:
        "Messages on Nova's notification exchange that were not versioned notifications (dropped).",
      registers: [],
    });
    this.dropped = new Counter({
      name: NOTIFICATIONS_DROPPED_METRIC,
      help:
        "Messages on Nova's notification exchange dropped before parsing, by reason (too_large: above --nova-notifications-max-message-bytes).",
      labelNames: ["reason"],
      registers: [],
    });
    this.up = new Gauge({
      name: NOTIFICATIONS_UP_METRIC,
      help:
        "1 while the Nova notification feed is subscribed; 0 while the drains poll without it.",
      registers: [],
    });
    this.reconnects = new Counter({
      name: NOTIFICATIONS_RECONNECTS_METRIC,
      help:
        "Reconnect attempts of the Nova notification feed (after a loss or a failed attempt).",
      registers: [],
    });
  }

  /** Serves the metrics on `registry`. */
  register(registry: Registry): void {
    registry.registerMetric(this.received);
    registry.registerMetric(this.malformed);
    registry.registerMetric(this.dropped);
    registry.registerMetric(this.up);
    registry.registerMetric(this.reconnects);
  }

  /** The hooks to give the feed. */
  readonly observer: NotificationFeedObserver = {
    received: (eventType) => this.received.inc({ event_type: eventType }),
    malformed: () => this.malformed.inc(),
    dropped: (reason) => this.dropped.inc({ reason }),
    state: (state) => this.up.set(state === "up" ? 1 : 0),
    reconnect: () => this.reconnects.inc(),
  };
}
