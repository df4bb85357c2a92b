/**
 * Metrics of the OpenStack session on the operator's registry: failed
 * Keystone authentications and whether the credentials are refused now.
 * The alerting rules under manifests/ use these exact names.
 *
 * @module
 */
import { Counter, Gauge, type Registry } from "prom-client";
import type { AuthOutcome } from "../openstack/mod.ts";

/** Name of the counter of failed Keystone authentications. */
export const AUTH_FAILURES_METRIC = "evictor_openstack_auth_failures_total";
/** Name of the gauge that is 1 while Keystone refuses the credentials. */
export const CREDENTIALS_REFUSED_METRIC =
  "evictor_openstack_credentials_refused";

/**
 * The session's metrics. Created before the operator (the session exists
 * first) and registered on its registry once that exists; both read 0 from
 * start-up.
 *
 * @example
 * ```ts
 * import { Registry } from "prom-client";
 * import { OpenStackAuthMetrics } from "./openstack_metrics.ts";
 * const m = new OpenStackAuthMetrics();
 * const registry = new Registry();
 * m.register(registry);
 * m.observe({ ok: false, refused: true, failures: 1, retryInMs: 5000 });
 * const text = await registry.metrics();
 * console.assert(text.includes("evictor_openstack_credentials_refused 1"));
 * ```
 */
export class OpenStackAuthMetrics {
  /** Failed Keystone authentications. */
  readonly failures: Counter;
  /** 1 while the last authentication was refused, 0 after a success. */
  readonly refused: Gauge;

  /** Creates the metrics, on no registry yet. */
  constructor() {
    this.failures = new Counter({
      name: AUTH_FAILURES_METRIC,
      help: "Failed Keystone authentications (refused or unreachable).",
      registers: [],
    });
    this.refused = new Gauge({
      name: CREDENTIALS_REFUSED_METRIC,
      help:
        "1 while Keystone refuses evictor's credentials (last authentication 401), 0 after a success.",
      registers: [],
    });
  }

  /** Serves the metrics on `registry`. */
  register(registry: Registry): void {
    registry.registerMetric(this.failures);
    registry.registerMetric(this.refused);
  }

  /** Records one authentication's outcome (the session's callback). */
  readonly observe = (outcome: AuthOutcome): void => {
    if (outcome.ok) {
      this.refused.set(0);
      return;
    }
    this.failures.inc();
    if (outcome.refused) this.refused.set(1);
  };
}
