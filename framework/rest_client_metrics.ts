/**
 * The Kubernetes client's metrics under client-go's names and labels, as
 * controller-runtime and the Kubernetes components export them:
 * `rest_client_requests_total{code,method,host}` (code `<error>` when no
 * answer came) and `rest_client_request_duration_seconds{verb,host}` (the
 * Kubernetes components' labels and buckets; no `path` label, which would
 * make one series per object).
 *
 * @module
 */

import { Counter, Histogram, type Registry } from "prom-client";
import type { RequestObserver } from "./client.ts";

/** The buckets of k8s.io/component-base's `rest_client_request_duration_seconds`. */
export const REST_CLIENT_DURATION_BUCKETS: readonly number[] = [
  0.005,
  0.025,
  0.1,
  0.25,
  0.5,
  1,
  2,
  4,
  8,
  15,
  30,
  60,
];

/**
 * The client's metrics on `registry`, as the observer to give the client.
 *
 * @example
 * ```ts
 * import { Registry } from "prom-client";
 * import { restClientMetrics } from "./rest_client_metrics.ts";
 * const registry = new Registry();
 * const observer = restClientMetrics(registry);
 * observer.result("200", "GET", "10.96.0.1:443");
 * const text = await registry.metrics();
 * console.assert(text.includes('rest_client_requests_total{code="200",method="GET",host="10.96.0.1:443"} 1'));
 * ```
 */
export function restClientMetrics(registry: Registry): RequestObserver {
  const requests = new Counter({
    name: "rest_client_requests_total",
    help:
      "Number of HTTP requests, partitioned by status code, method, and host.",
    labelNames: ["code", "method", "host"],
    registers: [registry],
  });
  const duration = new Histogram({
    name: "rest_client_request_duration_seconds",
    help: "Request latency in seconds. Broken down by verb, and host.",
    labelNames: ["verb", "host"],
    buckets: [...REST_CLIENT_DURATION_BUCKETS],
    registers: [registry],
  });
  return {
    result: (code, method, host) => requests.inc({ code, method, host }),
    latency: (verb, host, seconds) => duration.observe({ verb, host }, seconds),
  };
}
