/**
 * `evictor run`: load the configuration, connect to OpenStack, run the
 * operator and its webhook until SIGTERM (exit 0) or a lost leadership
 * (exit 1).
 *
 * Every way start-up can fail ends the same: one JSON log line at level
 * fatal that says what failed and where, and an exit code (2 for a bad
 * flag, 1 for everything else), never a stack trace.
 *
 * @module
 */
import { StartupError } from "../framework/errors.ts";
import { createLogger, type Logger } from "../framework/logger.ts";
import {
  type CloudConfig,
  ConfigError,
  createOpenStackClients,
  loadCloudConfig,
} from "../openstack/mod.ts";
import { type Config, ConfigFlagError, loadConfig } from "./config.ts";
import { readEnvironment } from "./environment.ts";
import { OpenStackAuthMetrics } from "./openstack_metrics.ts";
import { NotificationMetrics } from "./notification_metrics.ts";
import {
  ExchangeMissingError,
  startNotificationFeed,
} from "../openstack/notifications.ts";
import type { NotificationFeed } from "../openstack/notification_types.ts";
import { validateAmqpUrl } from "../openstack/amqp_url.ts";
import { READ_PATHS } from "./permissions.ts";
import { buildOperator } from "./wire.ts";
import { USER_AGENT } from "./version.ts";

/** Exit code of a bad flag or environment variable (a usage error). */
export const EXIT_USAGE = 2;
/** Exit code of any other failure, at start-up or later. */
export const EXIT_FAILURE = 1;

/**
 * Runs the operator with `args` (what follows `run`); resolves with the
 * exit code.
 *
 * @example
 * ```ts ignore
 * Deno.exit(await runCommand(["--kubeconfig", "/etc/evictor/kubeconfig"]));
 * ```
 */
export async function runCommand(args: readonly string[]): Promise<number> {
  const env = readEnvironment();
  // Start-up errors are logged like everything else: one JSON line with the
  // bad value as a field (never pasted into the message).
  let logger = createLogger({ name: "evictor", level: "info" });
  try {
    const config = loadConfig(args, env);
    logger = createLogger({ name: "evictor", level: config.logLevel });
    for (const w of config.limitWarnings) {
      logger.warn({ flag: w.flag }, w.message);
    }
    const cloud = loadCloud(config, env);
    return await runOperator(config, cloud, logger);
  } catch (e) {
    return reportFailure(logger, e);
  }
}

/** The OpenStack configuration `--os-cloud` (or the OS_* variables) names. */
function loadCloud(
  config: Config,
  env: Readonly<Record<string, string | undefined>>,
): Readonly<CloudConfig> {
  return loadCloudConfig({
    ...(config.osCloud === undefined ? {} : { cloud: config.osCloud }),
    cloudFlagName: "--os-cloud",
    sources: { env },
  });
}

/** Runs the operator until it stops; resolves with the exit code. */
async function runOperator(
  config: Config,
  cloud: Readonly<CloudConfig>,
  logger: Logger,
): Promise<number> {
  const authMetrics = new OpenStackAuthMetrics();
  const openstack = createOpenStackClients(cloud, {
    logger: logger.child({ name: "openstack" }),
    onAuthentication: authMetrics.observe,
    novaTimeoutMs: config.novaTimeoutMs,
    // A stalled read must not hold a drain (and its freed slots) for the
    // whole timeout: a second one goes out after a poll interval (2 s at
    // the least, so that a loaded Nova is not read twice as a habit).
    novaReadHedgeMs: Math.max(config.pollIntervalMs, 2000),
    userAgent: USER_AGENT,
  });
  const notificationMetrics = new NotificationMetrics();
  let notifications: NotificationFeed | undefined;
  try {
    notifications = await startNotifications(
      config,
      logger,
      notificationMetrics,
    );
    const operator = buildOperator(config, {
      nova: openstack.nova,
      placement: openstack.placement,
      logger,
      ...(notifications === undefined ? {} : { notifications }),
    });
    authMetrics.register(operator.metrics.registry);
    if (notifications !== undefined) {
      notificationMetrics.register(operator.metrics.registry);
    }
    await operator.start();
    const reason = await operator.done;
    return reason === "leadership-lost" ? EXIT_FAILURE : 0;
  } finally {
    openstack.close();
    await notifications?.close();
  }
}

/**
 * Nova's notification feed when `--nova-notifications-url` (or its file)
 * is set: the file is read here, once; the feed connects in the
 * background (a broker that is away only means polling until it is back).
 */
async function startNotifications(
  config: Config,
  logger: Logger,
  metrics: NotificationMetrics,
): Promise<NotificationFeed | undefined> {
  const source = config.novaNotifications;
  if (source === undefined) return undefined;
  let url: string;
  if ("urlFile" in source) {
    try {
      url = (await Deno.readTextFile(source.urlFile)).trim();
    } catch (e) {
      throw new StartupError(
        "--nova-notifications-url-file",
        source.urlFile,
        e instanceof Error ? e.message : String(e),
        { cause: e },
      );
    }
    try {
      validateAmqpUrl(url);
    } catch (e) {
      // The file's content is a secret: the reason names no part of it.
      throw new StartupError(
        "--nova-notifications-url-file",
        source.urlFile,
        (e as Error).message,
      );
    }
  } else {
    url = source.url;
  }
  const feed = startNotificationFeed({
    url,
    logger: logger.child({ name: "nova-notifications" }),
    observer: metrics.observer,
    ...config.novaNotificationsFeed,
  });
  // A broker that is away or a permission missing may pass (the feed keeps
  // trying, the drains poll meanwhile); an exchange that does not exist is
  // a configuration error: Nova publishes elsewhere.
  try {
    await feed.firstAttempt;
  } catch (e) {
    await feed.close();
    if (!(e instanceof ExchangeMissingError)) throw e;
    throw new StartupError(
      "--nova-notifications-exchange",
      e.exchange,
      e.message,
    );
  }
  return feed;
}

/** Logs why `evictor run` could not go on, in one line; the exit code. */
function reportFailure(logger: Logger, e: unknown): number {
  if (e instanceof ConfigFlagError) {
    logger.fatal({
      flag: e.flag,
      ...(e.envVar === undefined ? {} : { envVar: e.envVar }),
      ...(e.value === undefined ? {} : { value: e.value }),
      expected: e.expected,
      ...e.fields,
    }, `invalid configuration: ${e.message}`);
    return EXIT_USAGE;
  }
  if (e instanceof ConfigError) {
    logger.fatal(
      { what: "OpenStack configuration", where: e.where },
      `invalid OpenStack configuration: ${e.message}`,
    );
    return EXIT_FAILURE;
  }
  if (e instanceof StartupError) {
    // A compiled binary reads only its documented folders: say which.
    if (e.cause instanceof Deno.errors.NotCapable) {
      const reason = `evictor has no read access to it: it reads only under ${
        READ_PATHS.join(", ")
      }`;
      logger.fatal(
        { what: e.what, where: e.where, reason, readablePaths: READ_PATHS },
        `start-up failed: ${e.what} ${e.where}: ${reason}`,
      );
      return EXIT_FAILURE;
    }
    logger.fatal(
      { what: e.what, where: e.where, reason: e.reason },
      `start-up failed: ${e.message}`,
    );
    return EXIT_FAILURE;
  }
  const message = e instanceof Error ? e.message : String(e);
  logger.fatal({ err: message.split("\n")[0] }, `evictor failed: ${message}`);
  return EXIT_FAILURE;
}
