/**
 * The environment, read by name: the binary may read only the variables it
 * names in app/permissions.ts (`Deno.env.toObject()` would need them all).
 *
 * @module
 */
import { RUN_FLAGS } from "./config.ts";

/** The OpenStack variables the client understands (openstack/config.ts). */
export const OPENSTACK_ENV_NAMES = [
  "OS_APPLICATION_CREDENTIAL_ID",
  "OS_APPLICATION_CREDENTIAL_NAME",
  "OS_APPLICATION_CREDENTIAL_SECRET",
  "OS_AUTH_TOKEN",
  "OS_AUTH_TYPE",
  "OS_AUTH_URL",
  "OS_CACERT",
  "OS_CERT",
  "OS_CLIENT_CONFIG_FILE",
  "OS_CLIENT_SECURE_FILE",
  "OS_CLOUD",
  "OS_COMPUTE_API_VERSION",
  "OS_DEFAULT_DOMAIN",
  "OS_DOMAIN_ID",
  "OS_DOMAIN_NAME",
  "OS_ENDPOINT_TYPE",
  "OS_INSECURE",
  "OS_INTERFACE",
  "OS_KEY",
  "OS_PASSWORD",
  "OS_PLACEMENT_API_VERSION",
  "OS_PROJECT_DOMAIN_ID",
  "OS_PROJECT_DOMAIN_NAME",
  "OS_PROJECT_ID",
  "OS_PROJECT_NAME",
  "OS_REGION_NAME",
  "OS_SYSTEM_SCOPE",
  "OS_TOKEN",
  "OS_USERNAME",
  "OS_USER_DOMAIN_ID",
  "OS_USER_DOMAIN_NAME",
  "OS_USER_ID",
] as const;

/** Every variable evictor reads: the flags' twins, OpenStack's, and a few. */
export function environmentNames(): string[] {
  return [
    ...new Set([
      ...Object.values(RUN_FLAGS).map((f) => f.env),
      ...OPENSTACK_ENV_NAMES,
      "HOME",
      "POD_NAME",
    ]),
  ].sort();
}

/**
 * The variables of {@linkcode environmentNames} that are set.
 *
 * @example
 * ```ts ignore
 * const env = readEnvironment();
 * ```
 */
export function readEnvironment(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of environmentNames()) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  return env;
}
