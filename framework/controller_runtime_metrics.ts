/**
 * The reconcile and leader election series under controller-runtime's names,
 * labels and semantics (its `pkg/internal/controller/metrics` and
 * `pkg/metrics/leaderelection.go`), so that dashboards and alerts made for
 * kubebuilder operators read them unchanged:
 *
 * | series                                                   | type      | labels            |
 * | -------------------------------------------------------- | --------- | ----------------- |
 * | `controller_runtime_reconcile_total`                     | counter   | controller, result (success, error, requeue, requeue_after) |
 * | `controller_runtime_reconcile_errors_total`              | counter   | controller        |
 * | `controller_runtime_terminal_reconcile_errors_total`     | counter   | controller        |
 * | `controller_runtime_reconcile_time_seconds`              | histogram | controller        |
 * | `controller_runtime_max_concurrent_reconciles`           | gauge     | controller        |
 * | `controller_runtime_active_workers`                      | gauge     | controller        |
 * | `leader_election_master_status`                          | gauge     | name (the Lease)  |
 *
 * The framework's finer outcomes ({@linkcode FrameworkOutcome}) map onto
 * controller-runtime's four results with {@linkcode controllerRuntimeResult}.
 *
 * @module
 */

import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** controller-runtime's results of `controller_runtime_reconcile_total`. */
export type ControllerRuntimeResult =
  | "success"
  | "error"
  | "requeue"
  | "requeue_after";

/** Every result, each series set to 0 when a controller starts (as controller-runtime's initMetrics). */
export const CONTROLLER_RUNTIME_RESULTS: readonly ControllerRuntimeResult[] = [
  "error",
  "requeue_after",
  "requeue",
  "success",
];

/**
 * The framework's outcome of one pass: the handler returned without a
 * requeue (`success`), asked for one (`requeue`, with its delay), or threw
 * (`temporary_error`, `permanent_error`, `unavailable`, `error`).
 */
export type FrameworkOutcome =
  | "success"
  | "requeue"
  | "temporary_error"
  | "permanent_error"
  | "unavailable"
  | "error";

/**
 * controller-runtime's result for a framework outcome: every thrown error is
 * `error`; a requeue after a delay is `requeue_after`, an immediate one
 * (delay 0) `requeue`.
 *
 * @example
 * ```ts
 * import { controllerRuntimeResult } from "./controller_runtime_metrics.ts";
 * console.assert(controllerRuntimeResult("requeue", 2000) === "requeue_after");
 * console.assert(controllerRuntimeResult("requeue", 0) === "requeue");
 * console.assert(controllerRuntimeResult("unavailable") === "error");
 * ```
 */
export function controllerRuntimeResult(
  outcome: FrameworkOutcome,
  requeueAfterMs?: number,
): ControllerRuntimeResult {
  switch (outcome) {
    case "success":
      return "success";
    case "requeue":
      return (requeueAfterMs ?? 0) > 0 ? "requeue_after" : "requeue";
    default:
      return "error";
  }
}

/**
 * controller-runtime's buckets of `controller_runtime_reconcile_time_seconds`
 * (5 ms to 60 s).
 */
export const RECONCILE_TIME_BUCKETS: readonly number[] = [
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.15,
  0.2,
  0.25,
  0.3,
  0.35,
  0.4,
  0.45,
  0.5,
  0.6,
  0.7,
  0.8,
  0.9,
  1.0,
  1.25,
  1.5,
  1.75,
  2.0,
  2.5,
  3.0,
  3.5,
  4.0,
  4.5,
  5,
  6,
  7,
  8,
  9,
  10,
  15,
  20,
  25,
  30,
  40,
  50,
  60,
];

/**
 * The families on one registry.
 *
 * @example
 * ```ts
 * import { Registry } from "prom-client";
 * import { ControllerRuntimeMetrics } from "./controller_runtime_metrics.ts";
 * const registry = new Registry();
 * const m = new ControllerRuntimeMetrics(registry);
 * m.started("pods", 2);
 * m.reconciled("pods", "requeue", 0.2, 5000);
 * m.leading("my-lease", true);
 * const text = await registry.metrics();
 * console.assert(text.includes('controller_runtime_reconcile_total{controller="pods",result="requeue_after"} 1'));
 * console.assert(text.includes('controller_runtime_max_concurrent_reconciles{controller="pods"} 2'));
 * console.assert(text.includes('leader_election_master_status{name="my-lease"} 1'));
 * ```
 */
export class ControllerRuntimeMetrics {
  readonly #total: Counter<"controller" | "result">;
  readonly #errors: Counter<"controller">;
  readonly #terminal: Counter<"controller">;
  readonly #time: Histogram<"controller">;
  readonly #maxConcurrent: Gauge<"controller">;
  readonly #active: Gauge<"controller">;
  readonly #leader: Gauge<"name">;

  /** Registers the families on `registry`. */
  constructor(registry: Registry) {
    const registers = [registry];
    const labelNames = ["controller"] as const;
    this.#total = new Counter({
      name: "controller_runtime_reconcile_total",
      help: "Total number of reconciliations per controller",
      labelNames: ["controller", "result"],
      registers,
    });
    this.#errors = new Counter({
      name: "controller_runtime_reconcile_errors_total",
      help: "Total number of reconciliation errors per controller",
      labelNames,
      registers,
    });
    this.#terminal = new Counter({
      name: "controller_runtime_terminal_reconcile_errors_total",
      help: "Total number of terminal reconciliation errors per controller",
      labelNames,
      registers,
    });
    this.#time = new Histogram({
      name: "controller_runtime_reconcile_time_seconds",
      help: "Length of time per reconciliation per controller",
      labelNames,
      buckets: [...RECONCILE_TIME_BUCKETS],
      registers,
    });
    this.#maxConcurrent = new Gauge({
      name: "controller_runtime_max_concurrent_reconciles",
      help: "Maximum number of concurrent reconciles per controller",
      labelNames,
      registers,
    });
    this.#active = new Gauge({
      name: "controller_runtime_active_workers",
      help: "Number of currently used workers per controller",
      labelNames,
      registers,
    });
    this.#leader = new Gauge({
      name: "leader_election_master_status",
      help:
        "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
      labelNames: ["name"],
      registers,
    });
  }

  /**
   * A controller's workers start: its series exist from now on, at 0
   * (controller-runtime's initMetrics), with its worker count.
   */
  started(controller: string, maxConcurrent: number): void {
    for (const result of CONTROLLER_RUNTIME_RESULTS) {
      this.#total.inc({ controller, result }, 0);
    }
    this.#errors.inc({ controller }, 0);
    this.#terminal.inc({ controller }, 0);
    this.#maxConcurrent.set({ controller }, maxConcurrent);
    this.#active.set({ controller }, 0);
  }

  /** A worker took a key (+1) or finished with it (-1). */
  working(controller: string, delta: 1 | -1): void {
    this.#active.inc({ controller }, delta);
  }

  /** One pass ended with `outcome` after `seconds`. */
  reconciled(
    controller: string,
    outcome: FrameworkOutcome,
    seconds: number,
    requeueAfterMs?: number,
  ): void {
    const result = controllerRuntimeResult(outcome, requeueAfterMs);
    this.#total.inc({ controller, result });
    if (result === "error") this.#errors.inc({ controller });
    if (outcome === "permanent_error") this.#terminal.inc({ controller });
    this.#time.observe({ controller }, seconds);
  }

  /** This process holds (true) or does not hold (false) the Lease `name`. */
  leading(name: string, leading: boolean): void {
    this.#leader.set({ name }, leading ? 1 : 0);
  }
}
