/**
 * Prometheus metrics of the eviction controller, on the operator's registry
 * (served on `/metrics` with the framework's own).
 *
 * @module
 */

import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** Migration kinds as metric labels; `unknown` when the status lost track. */
export type KindLabel = "live" | "cold" | "unknown";

/**
 * The eviction controller's metrics.
 *
 * @example
 * ```ts
 * import { Registry } from "prom-client";
 * import { EvictionMetrics } from "./metrics.ts";
 * const m = new EvictionMetrics(new Registry());
 * m.started.inc({ kind: "live" });
 * const text = await m.registry.metrics();
 * console.assert(text.includes('evictor_migrations_started_total{kind="live"} 1'));
 * ```
 */
export class EvictionMetrics {
  /** The registry the metrics live on. */
  readonly registry: Registry;
  /** Migrations Nova accepted, by kind. */
  readonly started: Counter<"kind">;
  /** Migrations whose VM left the host, by kind. */
  readonly succeeded: Counter<"kind">;
  /** Failed attempts (refused starts, async failures, VMs in ERROR), by kind. */
  readonly failed: Counter<"kind">;
  /** Migrations in flight, per hypervisor being drained. */
  readonly inFlight: Gauge<"hypervisor">;
  /** Seconds from trigger to the VM leaving the host, by kind. */
  readonly migrationDuration: Histogram<"kind">;
  /** Seconds from drain start to an empty host. */
  readonly drainDuration: Histogram;
  /** Notified views demoted to polling, by scope (host, feed) and reason (wrong, deaf). */
  readonly demotions: Counter<"scope" | "reason">;
  /** Whether the notification feed is demoted for every host (the gauge's source; set by the controller). */
  feedDemoted: () => boolean = () => false;
  /** Nova API calls made by the controller, by call and outcome. */
  readonly novaCalls: Counter<"call" | "outcome">;
  /** Deleted Evictions whose finalizer stopped waiting for migrations. */
  readonly finalizerGaveUp: Counter<"hypervisor">;
  /** Passes that planned from a host's notified view, or from a look at Nova. */
  readonly looks: Counter<"source">;
  /** VMs on which a relist found a host's notified view differing (missed events). */
  readonly viewDiffs: Counter<"hypervisor">;

  /** Registers the metrics on `registry`. */
  constructor(registry: Registry) {
    this.registry = registry;
    const registers = [registry];
    this.started = new Counter({
      name: "evictor_migrations_started_total",
      help: "Migrations Nova accepted, by kind.",
      labelNames: ["kind"],
      registers,
    });
    this.succeeded = new Counter({
      name: "evictor_migrations_succeeded_total",
      help: "Migrations whose VM left the drained host, by kind.",
      labelNames: ["kind"],
      registers,
    });
    this.failed = new Counter({
      name: "evictor_migrations_failed_total",
      help: "Failed migration attempts, by kind.",
      labelNames: ["kind"],
      registers,
    });
    this.inFlight = new Gauge({
      name: "evictor_migrations_in_flight",
      help: "Migrations in flight, per drained hypervisor.",
      labelNames: ["hypervisor"],
      registers,
    });
    this.migrationDuration = new Histogram({
      name: "evictor_migration_duration_seconds",
      help: "Time from trigger to the VM leaving the drained host.",
      labelNames: ["kind"],
      buckets: [5, 15, 30, 60, 120, 300, 600, 1200, 3600],
      registers,
    });
    this.drainDuration = new Histogram({
      name: "evictor_drain_duration_seconds",
      help: "Time from drain start to an empty host.",
      buckets: [60, 300, 900, 1800, 3600, 7200, 14400, 43200],
      registers,
    });
    this.novaCalls = new Counter({
      name: "evictor_nova_calls_total",
      help: "Nova API calls made by the eviction controller.",
      labelNames: ["call", "outcome"],
      registers,
    });
    this.finalizerGaveUp = new Counter({
      name: "evictor_eviction_finalizer_gave_up_total",
      help:
        "Deleted Evictions whose finalizer stopped waiting for migrations from the host to settle (bound reached).",
      labelNames: ["hypervisor"],
      registers,
    });
    this.looks = new Counter({
      name: "evictor_drain_looks_total",
      help:
        "Drain passes that planned from a host's notified view (source view) or read Nova (source nova), with notifications on.",
      labelNames: ["source"],
      registers,
    });
    this.demotions = new Counter({
      name: "evictor_nova_notifications_demotions_total",
      help:
        "Notified views demoted to polling: one host's (scope host) when a relist found it wrong or a start of ours was not heard of in time (reason wrong or deaf), or the whole feed's (scope feed) after repeated host demotions.",
      labelNames: ["scope", "reason"],
      registers,
    });
    // Every host series exists from the start: the first demotion shows
    // in increase(), and the alert's series are never missing.
    for (const reason of ["wrong", "deaf"]) {
      this.demotions.inc({ scope: "host", reason }, 0);
    }
    const demoted = () => this.feedDemoted();
    new Gauge({
      name: "evictor_nova_notifications_feed_demoted",
      help:
        "1 while Nova's notification feed is demoted for every host (drains poll), else 0.",
      registers,
      collect() {
        this.set(demoted() ? 1 : 0);
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
