/**
 * Prometheus metrics of the framework (prom-client): reconcile totals by
 * the framework's finer results, watch restarts, cached objects and webhook
 * requests, with the application's prefix; and, under their standard
 * unprefixed names, as client-go and controller-runtime export them so that
 * shared dashboards and alerts find them: reconciles, workers and the leader
 * Lease (`controller_runtime_*`, `leader_election_master_status`,
 * `controller_runtime_metrics.ts`), the work queues' (`workqueue_*`,
 * `workqueue_metrics.ts`), the Kubernetes client's (`rest_client_*`,
 * `rest_client_metrics.ts`) and the process's own (`process_*`,
 * `nodejs_*`).
 *
 * `<prefix>reconcile_total{result}` is kept beside
 * `controller_runtime_reconcile_total{result}`: its results tell the kinds of
 * error apart (`temporary_error`, `permanent_error`, `unavailable`, `error`:
 * all `error` there) and count every requeue as `requeue` (there
 * `requeue_after`, or `requeue` for a delay of 0).
 *
 * @module
 */

import {
  collectDefaultMetrics,
  Counter,
  Gauge,
  Histogram,
  Registry,
} from "prom-client";
import type { RequestObserver } from "./client.ts";
import { ControllerRuntimeMetrics } from "./controller_runtime_metrics.ts";
import { restClientMetrics } from "./rest_client_metrics.ts";
import { WorkQueueMetricFamilies } from "./workqueue_metrics.ts";

/** Reconcile outcomes counted by `reconcile_total{result}`. */
export type { FrameworkOutcome as ReconcileResult } from "./controller_runtime_metrics.ts";

/** Options of {@linkcode FrameworkMetrics}. */
export interface MetricsOptions {
  /** Metric name prefix; default "operator_". */
  prefix?: string;
  /**
   * Also export process metrics (CPU, memory, file descriptors, event loop)
   * under their standard unprefixed names (`process_resident_memory_bytes`);
   * default true.
   */
  processMetrics?: boolean;
  /** Registry to use; default a new one. */
  registry?: Registry;
}

/**
 * The framework's metrics on one registry.
 *
 * @example
 * ```ts
 * import { FrameworkMetrics } from "./metrics.ts";
 * const m = new FrameworkMetrics({ processMetrics: false });
 * m.reconcileTotal.inc({ controller: "x", result: "success" });
 * const text = await m.registry.metrics();
 * console.assert(text.includes('operator_reconcile_total{controller="x",result="success"} 1'));
 * m.controllerRuntime.leading("x-lease", true);
 * console.assert((await m.registry.metrics()).includes('leader_election_master_status{name="x-lease"} 1'));
 * ```
 */
export class FrameworkMetrics {
  /** The registry `/metrics` serves. */
  readonly registry: Registry;
  /** Reconciles by controller and result. */
  readonly reconcileTotal: Counter<"controller" | "result">;
  /**
   * controller-runtime's reconcile, worker and leader series
   * (`controller_runtime_*`, `leader_election_master_status{name}`).
   */
  readonly controllerRuntime: ControllerRuntimeMetrics;
  /** The work queues' `workqueue_*` series, one set per controller. */
  readonly workqueues: WorkQueueMetricFamilies;
  /** The Kubernetes client's `rest_client_*` series. */
  readonly restClient: RequestObserver;
  /** Watch restarts by kind and reason (stalled, expired, closed, error). */
  readonly watchRestarts: Counter<"kind" | "reason">;
  /** Objects in an informer cache. */
  readonly cachedObjects: Gauge<"kind">;
  /** Objects skipped because they failed their schema. */
  readonly invalidObjects: Counter<"kind">;
  /** Admission requests by path and HTTP code. */
  readonly webhookRequests: Counter<"path" | "code">;
  /** `webhook_connections_total{protocol}`: TLS connections by ALPN protocol (h2, http/1.1). */
  readonly webhookConnections: Counter<"protocol">;
  /** Admission handling durations in seconds. */
  readonly webhookDuration: Histogram<"path">;

  /** Registers the metrics. */
  constructor(options: MetricsOptions = {}) {
    const p = options.prefix ?? "operator_";
    if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(p)) {
      throw new TypeError(
        `metrics prefix must match [a-zA-Z_:][a-zA-Z0-9_:]*, got "${p}"`,
      );
    }
    const registers = [this.registry = options.registry ?? new Registry()];
    this.reconcileTotal = new Counter({
      name: `${p}reconcile_total`,
      help: "Reconciles by controller and result.",
      labelNames: ["controller", "result"],
      registers,
    });
    // No prefix: these names are shared by every Kubernetes controller.
    this.controllerRuntime = new ControllerRuntimeMetrics(this.registry);
    this.workqueues = new WorkQueueMetricFamilies(this.registry);
    this.restClient = restClientMetrics(this.registry);
    this.watchRestarts = new Counter({
      name: `${p}watch_restarts_total`,
      help: "Watch restarts by kind and reason.",
      labelNames: ["kind", "reason"],
      registers,
    });
    this.cachedObjects = new Gauge({
      name: `${p}cache_objects`,
      help: "Objects held in the informer cache.",
      labelNames: ["kind"],
      registers,
    });
    this.invalidObjects = new Counter({
      name: `${p}invalid_objects_total`,
      help: "Objects skipped because they failed their schema.",
      labelNames: ["kind"],
      registers,
    });
    this.webhookConnections = new Counter({
      name: `${p}webhook_connections_total`,
      help: "TLS connections to the webhook by negotiated protocol.",
      labelNames: ["protocol"],
      registers,
    });
    this.webhookRequests = new Counter({
      name: `${p}webhook_requests_total`,
      help: "Admission requests by path and HTTP status code.",
      labelNames: ["path", "code"],
      registers,
    });
    this.webhookDuration = new Histogram({
      name: `${p}webhook_duration_seconds`,
      help: "Time spent answering admission requests.",
      labelNames: ["path"],
      buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1],
      registers,
    });
    if (options.processMetrics ?? true) {
      try {
        // No prefix: process_* is one name across every exporter.
        collectDefaultMetrics({ register: this.registry });
      } catch {
        // some process metrics are not available on every runtime
      }
      residentMemory(this.registry);
    }
  }
}

/**
 * Replaces prom-client's memory gauges: on Linux they read
 * `/proc/self/status`, which Deno allows only under `--allow-all` (a
 * narrowed `--allow-read=/proc/self` is refused), so they read 0 in the
 * binary. Deno's own `memoryUsage()` needs no permission.
 */
function residentMemory(registry: Registry): void {
  for (const name of OS_MEMORY_GAUGES) registry.removeSingleMetric(name);
  new Gauge({
    name: "process_resident_memory_bytes",
    help: "Resident memory size in bytes.",
    registers: [registry],
    collect() {
      this.set(Deno.memoryUsage().rss);
    },
  });
}

/** prom-client's gauges that read `/proc/self/status`. */
const OS_MEMORY_GAUGES = [
  "process_resident_memory_bytes",
  "process_virtual_memory_bytes",
  "process_heap_bytes",
] as const;
