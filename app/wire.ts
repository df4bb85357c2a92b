/**
 * Puts evictor together: one Operator with the controllers that
 * `--controllers` switches on and the validating webhook.
 *
 * @module
 */
import { registerHypervisorCrdCheck } from "./hypervisor_crd_check.ts";
import {
  type MetricsEndpointOptions,
  Operator,
} from "../framework/operator.ts";
import type { Logger } from "../framework/logger.ts";
import type { NovaClient, PlacementClient } from "../openstack/mod.ts";
import type { NotificationFeed } from "../openstack/notification_types.ts";
import { registerEvictionController } from "../controllers/eviction/mod.ts";
import {
  registerHypervisorSync,
  registerMaintenance,
} from "../controllers/hypervisor/mod.ts";
import { registerWebhooks } from "../webhooks/register.ts";
import type { Config } from "./config.ts";
import { USER_AGENT } from "./version.ts";

/** The finalizer evictor puts on Evictions (same group as the resources). */
export const FINALIZER = "kvm.cloud.sap/evictor";

/** What {@linkcode buildOperator} needs besides the configuration. */
export interface WireDeps {
  nova: NovaClient;
  placement: PlacementClient;
  logger: Logger;
  /** Nova's notifications (`--nova-notifications-url`); else the drains poll. */
  notifications?: NotificationFeed;
}

/**
 * Builds the operator for `config`: nothing is started yet.
 *
 * @example
 * ```ts ignore
 * const operator = buildOperator(config, { nova, placement, logger });
 * await operator.start();
 * ```
 */
export function buildOperator(config: Config, deps: WireDeps): Operator {
  const webhook = config.webhook;
  const operator = new Operator({
    name: "evictor",
    finalizer: FINALIZER,
    logger: deps.logger,
    metricsPrefix: "evictor_",
    userAgent: USER_AGENT,
    ...(config.kubeconfig === undefined
      ? {}
      : { kubeconfigPath: config.kubeconfig }),
    ...(config.labelSelector === undefined
      ? {}
      : { labelSelector: config.labelSelector }),
    leaderElection: config.leaderElection === false ? false : {
      leaseNamespace: config.leaderElection.namespace,
      leaseName: config.leaderElection.leaseName,
      leaseDurationMs: config.leaderElection.leaseDurationMs,
      renewDeadlineMs: config.leaderElection.renewDeadlineMs,
      retryPeriodMs: config.leaderElection.retryPeriodMs,
      // after an API-server outage the Lease still names this replica:
      // lead again at once instead of exiting and waiting for a restart
      keepCampaigning: true,
      ...(config.leaderElection.identity === undefined
        ? {}
        : { identity: config.leaderElection.identity }),
    },
    healthAddress: config.healthProbeAddress,
    metrics: metricsOptions(config.metrics),
    webhook: webhook === false ? false : "selfSigned" in webhook
      ? {
        address: webhook.address,
        selfSignedHosts: ["localhost", "127.0.0.1"],
      }
      : {
        address: webhook.address,
        certFile: `${webhook.certDir}/tls.crt`,
        keyFile: `${webhook.certDir}/tls.key`,
      },
    shutdownTimeoutMs: config.shutdownTimeoutMs,
  });
  const on = new Set(config.controllers);
  if (on.has("eviction")) {
    // drains write status.lastDrain: is it kept (the upstream CRD prunes it)?
    registerHypervisorCrdCheck(operator);
    registerEvictionController(operator, {
      nova: deps.nova,
      flagSettings: config.limits,
      pollIntervalMs: config.pollIntervalMs,
      settleMs: config.drainSettleMs,
      maxConcurrentReconciles: config.maxConcurrentReconciles,
      placement: deps.placement,
      planOptions: {
        retryWindowMs: config.migrationRetryWindowMs,
        retryBaseMs: config.migrationRetryBackoffMs,
        retryCapMs: 20 * config.migrationRetryBackoffMs,
      },
      defaultMigrationRate: config.defaultMigrationRate,
      ...(deps.notifications === undefined
        ? {}
        : { notifications: deps.notifications }),
      relistMs: config.novaNotificationsRelistMs,
      progressIntervalMs: config.migrationProgressIntervalMs,
    });
  }
  if (on.has("hypervisor-sync")) {
    registerHypervisorSync(operator, {
      nova: deps.nova,
      placement: deps.placement,
      resyncIntervalMs: config.hypervisorResyncMs,
      discover: config.discoverHypervisors,
    });
  }
  if (on.has("maintenance")) {
    registerMaintenance(operator, { nova: deps.nova });
  }
  if (webhook !== false) {
    registerWebhooks(operator, { flagSettings: config.limits });
  }
  return operator;
}

/** The operator's `/metrics` settings for `metrics` of the config. */
function metricsOptions(
  metrics: Config["metrics"],
): MetricsEndpointOptions | false {
  if (metrics === false) return false;
  if ("insecure" in metrics) {
    return { address: metrics.address, insecure: true };
  }
  if ("selfSigned" in metrics) {
    return {
      address: metrics.address,
      selfSignedHosts: ["localhost", "127.0.0.1"],
    };
  }
  return {
    address: metrics.address,
    certFile: `${metrics.certDir}/tls.crt`,
    keyFile: `${metrics.certDir}/tls.key`,
  };
}
