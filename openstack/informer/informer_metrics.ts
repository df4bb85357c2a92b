/**
 * Metrics of what the informer finds wrong with itself, registered in
 * both modes so the alerts' series exist from the start.
 * @module
 */

import { Counter, Gauge, type Registry } from "prom-client";

/**
 * @example
 * ```ts
 * import { Registry } from "prom-client";
 * import { InformerMetrics } from "./informer_metrics.ts";
 * const m = new InformerMetrics(new Registry());
 * m.demotions.inc({ scope: "host", reason: "wrong" });
 * const text = await m.registry.metrics();
 * console.assert(text.includes("evictor_nova_notifications_feed_demoted 0"));
 * ```
 */
export class InformerMetrics {
  readonly registry: Registry;
  readonly demotions: Counter<"scope" | "reason">;
  readonly viewDiffs: Counter<"hypervisor">;
  /** `feedDemoted` and `demotedHosts` are the gauges' sources. */
  constructor(
    registry: Registry,
    feedDemoted: () => boolean = () => false,
    demotedHosts: () => Record<"wrong" | "deaf", number> = () => ({
      wrong: 0,
      deaf: 0,
    }),
  ) {
    this.registry = registry;
    const registers = [registry];
    this.demotions = new Counter({
      name: "evictor_nova_notifications_demotions_total",
      help:
        "Notified views demoted to polling: one host's (scope host) when a relist found it wrong or a start of ours was not heard of in time (reason wrong or deaf), or the whole feed's (scope feed) after repeated host demotions.",
      labelNames: ["scope", "reason"],
      registers,
    });
    // the first demotion shows in increase(), and the alerts' series exist
    for (const reason of ["wrong", "deaf"]) {
      this.demotions.inc({ scope: "host", reason }, 0);
    }
    new Gauge({
      name: "evictor_nova_notifications_feed_demoted",
      help:
        "1 while Nova's notification feed is demoted for every host (drains poll), else 0.",
      registers,
      collect() {
        this.set(feedDemoted() ? 1 : 0);
      },
    });
    // A single deaf host shows here (the feed stays up): its drain polls.
    new Gauge({
      name: "evictor_nova_notifications_hosts_demoted",
      help:
        "Hosts whose notified view is demoted to polling now, until trusted again, by reason (deaf: a start of ours was not heard of in time; wrong: a relist found the view wrong).",
      labelNames: ["reason"],
      registers,
      collect() {
        const now = demotedHosts();
        for (const reason of ["wrong", "deaf"] as const) {
          this.set({ reason }, now[reason]);
        }
      },
    });
    this.viewDiffs = new Counter({
      name: "evictor_notification_view_diffs_total",
      help:
        "VMs on which a relist found a host's notified view differing from Nova (events missed or misread).",
      labelNames: ["hypervisor"],
      registers,
    });
  }
}
