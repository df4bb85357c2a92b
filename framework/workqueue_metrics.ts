/**
 * The work queues' metrics under client-go's and controller-runtime's
 * names and labels (`workqueue_depth{name,controller}`,
 * `workqueue_adds_total`, `workqueue_queue_duration_seconds`,
 * `workqueue_work_duration_seconds`, `workqueue_unfinished_work_seconds`,
 * `workqueue_longest_running_processor_seconds`, `workqueue_retries_total`),
 * so that dashboards and alerts made for controller-runtime operators read
 * them unchanged. `name` and `controller` are both the controller's name, as
 * controller-runtime sets them.
 *
 * @module
 */

import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { Clock } from "./clock.ts";
import type { QueueMetrics } from "./queue.ts";

/** The labels of every work queue series. */
type QueueLabel = "name" | "controller";

/**
 * controller-runtime's buckets for both durations:
 * `prometheus.ExponentialBuckets(10e-9, 10, 12)`, 10 ns to 1000 s.
 */
export const WORKQUEUE_DURATION_BUCKETS: readonly number[] = [
  1e-8,
  1e-7,
  1e-6,
  1e-5,
  1e-4,
  1e-3,
  1e-2,
  1e-1,
  1,
  10,
  100,
  1000,
];

/**
 * The families on one registry; {@linkcode WorkQueueMetricFamilies.forQueue}
 * gives each queue its {@linkcode QueueMetrics}. Depth, unfinished work and
 * the longest running processor are read from the queues when scraped.
 *
 * @example
 * ```ts
 * import { Registry } from "prom-client";
 * import { ManualClock } from "./clock.ts";
 * import { WorkQueue } from "./queue.ts";
 * import { WorkQueueMetricFamilies } from "./workqueue_metrics.ts";
 * const registry = new Registry();
 * const clock = new ManualClock(0);
 * const families = new WorkQueueMetricFamilies(registry);
 * const q = new WorkQueue({ clock, metrics: families.forQueue(() => "pods", clock) });
 * q.add("a");
 * clock.advance(2000);
 * q.tryGet();
 * const text = await registry.metrics();
 * console.assert(text.includes('workqueue_queue_duration_seconds_sum{name="pods",controller="pods"} 2'));
 * ```
 */
export class WorkQueueMetricFamilies {
  readonly #queues = new Set<QueueTimes>();
  readonly #adds: Counter<QueueLabel>;
  readonly #retries: Counter<QueueLabel>;
  readonly #latency: Histogram<QueueLabel>;
  readonly #workDuration: Histogram<QueueLabel>;

  /** Registers the seven families on `registry`. */
  constructor(registry: Registry) {
    const registers = [registry];
    const labelNames: QueueLabel[] = ["name", "controller"];
    const queues = this.#queues;
    new Gauge({
      name: "workqueue_depth",
      help: "Current depth of workqueue",
      labelNames,
      registers,
      collect() {
        for (const q of queues) this.set(q.labels(), q.depth);
      },
    });
    this.#adds = new Counter({
      name: "workqueue_adds_total",
      help: "Total number of adds handled by workqueue",
      labelNames,
      registers,
    });
    this.#latency = new Histogram({
      name: "workqueue_queue_duration_seconds",
      help:
        "How long in seconds an item stays in workqueue before being requested",
      labelNames,
      buckets: [...WORKQUEUE_DURATION_BUCKETS],
      registers,
    });
    this.#workDuration = new Histogram({
      name: "workqueue_work_duration_seconds",
      help: "How long in seconds processing an item from workqueue takes.",
      labelNames,
      buckets: [...WORKQUEUE_DURATION_BUCKETS],
      registers,
    });
    new Gauge({
      name: "workqueue_unfinished_work_seconds",
      help: "How many seconds of work has been done that is in progress and " +
        "hasn't been observed by work_duration. Large values indicate stuck " +
        "threads. One can deduce the number of stuck threads by observing " +
        "the rate at which this increases.",
      labelNames,
      registers,
      collect() {
        for (const q of queues) this.set(q.labels(), q.inProgress().total);
      },
    });
    new Gauge({
      name: "workqueue_longest_running_processor_seconds",
      help: "How many seconds has the longest running processor for " +
        "workqueue been running.",
      labelNames,
      registers,
      collect() {
        for (const q of queues) this.set(q.labels(), q.inProgress().longest);
      },
    });
    this.#retries = new Counter({
      name: "workqueue_retries_total",
      help: "Total number of retries handled by workqueue",
      labelNames,
      registers,
    });
  }

  /**
   * The metrics of one queue. `name` is read at each report: a controller
   * is named after it is built.
   */
  forQueue(name: () => string, clock: Clock): QueueMetrics {
    const q = new QueueTimes(name, clock, {
      adds: this.#adds,
      retries: this.#retries,
      latency: this.#latency,
      workDuration: this.#workDuration,
    });
    this.#queues.add(q);
    return q;
  }
}

interface QueueSeries {
  adds: Counter<QueueLabel>;
  retries: Counter<QueueLabel>;
  latency: Histogram<QueueLabel>;
  workDuration: Histogram<QueueLabel>;
}

/**
 * One queue's bookkeeping, as client-go's `defaultQueueMetrics`: when each
 * waiting key was added, when each processed key was taken.
 */
class QueueTimes implements QueueMetrics {
  readonly #name: () => string;
  readonly #clock: Clock;
  readonly #series: QueueSeries;
  readonly #addedAt = new Map<string, number>();
  readonly #takenAt = new Map<string, number>();
  /** Keys added and not yet taken. */
  depth = 0;

  constructor(name: () => string, clock: Clock, series: QueueSeries) {
    this.#name = name;
    this.#clock = clock;
    this.#series = series;
  }

  labels(): Record<QueueLabel, string> {
    const name = this.#name();
    return { name, controller: name };
  }

  add(key: string): void {
    this.#series.adds.inc(this.labels());
    this.depth++;
    // A key added again while waiting keeps its first add time.
    if (!this.#addedAt.has(key)) this.#addedAt.set(key, this.#clock.now());
  }

  get(key: string): void {
    this.depth = Math.max(0, this.depth - 1);
    const now = this.#clock.now();
    const added = this.#addedAt.get(key);
    if (added !== undefined) {
      this.#series.latency.observe(this.labels(), seconds(now - added));
      this.#addedAt.delete(key);
    }
    this.#takenAt.set(key, now);
  }

  done(key: string): void {
    const taken = this.#takenAt.get(key);
    if (taken === undefined) return;
    this.#series.workDuration.observe(
      this.labels(),
      seconds(this.#clock.now() - taken),
    );
    this.#takenAt.delete(key);
  }

  retry(): void {
    this.#series.retries.inc(this.labels());
  }

  /** Seconds of work in progress: the sum, and the longest. */
  inProgress(): { total: number; longest: number } {
    const now = this.#clock.now();
    let total = 0;
    let longest = 0;
    for (const taken of this.#takenAt.values()) {
      const s = seconds(now - taken);
      total += s;
      longest = Math.max(longest, s);
    }
    return { total, longest };
  }
}

/** Milliseconds to seconds, never negative (a clock set back). */
function seconds(ms: number): number {
  return Math.max(0, ms) / 1000;
}
