/**
 * `evictor run`: load the configuration, connect to OpenStack, run the
 * operator and its webhook until SIGTERM (exit 0) or a lost leadership
 * (exit 1).
 *
 * @module
 */
import { createLogger } from "../framework/logger.ts";
import {
  ConfigError,
  createOpenStackClients,
  loadCloudConfig,
} from "../openstack/mod.ts";
import { ConfigFlagError, loadConfig } from "./config.ts";
import { readEnvironment } from "./environment.ts";
import { buildOperator } from "./wire.ts";

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
  const bootLogger = createLogger({ name: "evictor", level: "info" });
  let config;
  try {
    config = loadConfig(args, env);
  } catch (e) {
    if (e instanceof ConfigFlagError) {
      bootLogger.fatal({
        flag: e.flag,
        ...(e.envVar === undefined ? {} : { envVar: e.envVar }),
        ...(e.value === undefined ? {} : { value: e.value }),
        expected: e.expected,
        ...e.fields,
      }, `invalid configuration: ${e.message}`);
      return 2;
    }
    throw e;
  }
  const logger = createLogger({ name: "evictor", level: config.logLevel });
  for (const w of config.limitWarnings) {
    logger.warn({ flag: w.flag }, w.message);
  }

  let cloud;
  try {
    cloud = loadCloudConfig({
      ...(config.osCloud === undefined ? {} : { cloud: config.osCloud }),
      cloudFlagName: "--os-cloud",
      sources: { env },
    });
  } catch (e) {
    if (e instanceof ConfigError) {
      logger.fatal({}, `invalid OpenStack configuration: ${e.message}`);
      return 2;
    }
    throw e;
  }
  const openstack = createOpenStackClients(cloud, {
    logger: logger.child({ name: "openstack" }),
    novaTimeoutMs: config.novaTimeoutMs,
  });
  try {
    const operator = buildOperator(config, {
      nova: openstack.nova,
      placement: openstack.placement,
      logger,
    });
    await operator.start();
    const reason = await operator.done;
    return reason === "leadership-lost" ? 1 : 0;
  } finally {
    openstack.close();
  }
}
