/**
 * Prometheus metrics of the eviction controller, on the operator's registry.
 * @module
 */

import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** Migration kinds as metric labels; `unknown` when the status lost track. */
export type KindLabel = "live" | "cold" | "unknown";

/**
 * The eviction controller's metrics (each one's help says what it counts).
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
  readonly registry: Registry;
  readonly started: Counter<"kind">;
  readonly succeeded: Counter<"kind">;
  readonly failed: Counter<"kind">;
  readonly inFlight: Gauge<"hypervisor">;
  readonly migrationDuration: Histogram<"kind">;
  readonly drainDuration: Histogram;
  readonly finalizerGaveUp: Counter<"hypervisor">;
  readonly looks: Counter<"source">;
  readonly convergenceActions: Counter<"action" | "reason">;

  constructor(registry: Registry) {
    this.registry = registry;
    const registers = [registry];
    const counter = <L extends string>(
      name: string,
      help: string,
      labelNames: L[],
    ) => new Counter<L>({ name, help, labelNames, registers });
    this.started = counter(
      "evictor_migrations_started_total",
      "Migrations Nova accepted, by kind.",
      ["kind"],
    );
    this.succeeded = counter(
      "evictor_migrations_succeeded_total",
      "Migrations whose VM left the drained host, by kind.",
      ["kind"],
    );
    this.failed = counter(
      "evictor_migrations_failed_total",
      "Failed migration attempts, by kind.",
      ["kind"],
    );
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
    this.finalizerGaveUp = counter(
      "evictor_eviction_finalizer_gave_up_total",
      "Deleted Evictions whose finalizer stopped waiting for migrations from the host to settle (bound reached).",
      ["hypervisor"],
    );
    this.looks = counter(
      "evictor_drain_looks_total",
      "Drain passes that planned from the informer's snapshot of the host (source view) or read Nova (source nova).",
      ["source"],
    );
    this.convergenceActions = counter(
      "evictor_convergence_actions_total",
      "Force-completes and aborts of live copies sent to Nova, by action (force_complete, abort) and reason (timeout: the policy's bound; stuck: the flat migration timeout; requested: a person asked).",
      ["action", "reason"],
    );
  }
}
