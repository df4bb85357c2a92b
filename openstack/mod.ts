/**
 * The OpenStack client of evictor: configuration (clouds.yaml, secure.yaml,
 * OS_* variables), a Keystone v3 session, Nova and Placement clients with
 * timeouts, retries for reads only and typed errors.
 *
 * @example
 * ```ts
 * import { createOpenStackClients, loadCloudConfig } from "./mod.ts";
 * const config = loadCloudConfig({ sources: { env: {
 *   OS_AUTH_URL: "http://127.0.0.1:5000/v3",
 *   OS_APPLICATION_CREDENTIAL_ID: "id", OS_APPLICATION_CREDENTIAL_SECRET: "s",
 * }, readTextFile: () => undefined } });
 * const clients = createOpenStackClients(config);
 * clients.close();
 * ```
 *
 * @module
 */

export * from "./clock.ts";
export * from "./logger.ts";
export * from "./errors.ts";
export * from "./http.ts";
export * from "./config.ts";
export * from "./backoff.ts";
export * from "./keystone.ts";
export {
  type ComputeService,
  type Hypervisor,
  type Migration,
  type Server,
  type ServerMigration,
} from "./nova_types.ts";
export * from "./nova.ts";
export * from "./nova_time.ts";
export * from "./microversion.ts";
export * from "./instance_actions.ts";
export * from "./placement.ts";
export * from "./placement_capacity.ts";
export * from "./client.ts";
