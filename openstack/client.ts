/**
 * One call that builds the Keystone session and the Nova and Placement
 * clients from a resolved cloud configuration.
 *
 * @module
 */

import type { CloudConfig } from "./config.ts";
import { KeystoneSession, type KeystoneSessionOptions } from "./keystone.ts";
import { NovaClient } from "./nova.ts";
import { PlacementClient } from "./placement.ts";

/** The clients of one cloud. */
export interface OpenStackClients {
  /** The shared Keystone session. */
  session: KeystoneSession;
  /** Nova at the configured microversion. */
  nova: NovaClient;
  /** Placement at the configured microversion. */
  placement: PlacementClient;
  /** Releases resources (a custom CA HTTP client). */
  close(): void;
}

/**
 * Builds the clients of one cloud; nothing is called until first use.
 *
 * @example
 * ```ts
 * import { loadCloudConfig } from "./config.ts";
 * import { createOpenStackClients } from "./client.ts";
 * const config = loadCloudConfig({ sources: { env: {
 *   OS_AUTH_URL: "http://127.0.0.1:5000/v3",
 *   OS_APPLICATION_CREDENTIAL_ID: "id", OS_APPLICATION_CREDENTIAL_SECRET: "s",
 * }, readTextFile: () => undefined } });
 * const { nova, close } = createOpenStackClients(config);
 * console.log(nova.microversion); // 2.90
 * close();
 * ```
 */
export function createOpenStackClients(
  config: CloudConfig,
  options: Omit<KeystoneSessionOptions, "authUrl" | "auth"> & {
    /** Timeout of one Nova call (`--nova-timeout`), ms. */
    novaTimeoutMs?: number;
    /** A Nova read not answered this long is sent again beside it, ms. */
    novaReadHedgeMs?: number;
  } = {},
): OpenStackClients {
  const { novaTimeoutMs, novaReadHedgeMs, ...sessionOptions } = options;
  const session = KeystoneSession.fromConfig(config, sessionOptions);
  if (config.insecure) {
    session.logger.warn(
      { authUrl: config.authUrl },
      "TLS verification is off for this cloud only if Deno runs with --unsafely-ignore-certificate-errors",
    );
  }
  return {
    session,
    nova: new NovaClient(session, {
      // A set compute_api_version is pinned; otherwise negotiated.
      ...(config.computeApiVersionSet
        ? { microversion: config.computeApiVersion }
        : {}),
      ...(novaTimeoutMs === undefined ? {} : { timeoutMs: novaTimeoutMs }),
      ...(novaReadHedgeMs === undefined
        ? {}
        : { readHedgeMs: novaReadHedgeMs }),
    }),
    placement: new PlacementClient(session, {
      microversion: config.placementApiVersion,
    }),
    close: () => session.close(),
  };
}
