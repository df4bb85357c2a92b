/**
 * Cloud configuration: `clouds.yaml` (+ `secure.yaml`) found the way the
 * openstack CLI and gophercloud find it, and the `OS_*` variables. Read once
 * at start-up and frozen; every problem stops start-up with one line that
 * names the file or variable and what is expected.
 *
 * @module
 */

import { z } from "zod";
import { parse as parseYaml } from "yaml";

/** Endpoint interface in the service catalog. */
export type EndpointInterface = "public" | "internal" | "admin";

/** Keystone v3 password authentication. */
export interface PasswordAuth {
  /** Discriminator. */
  readonly type: "password";
  /** User name (needs a user domain) ... */
  readonly username?: string;
  /** ... or user id. */
  readonly userId?: string;
  /** The password; never logged. */
  readonly password: string;
  /** Domain of the user, by name ... */
  readonly userDomainName?: string;
  /** ... or by id. */
  readonly userDomainId?: string;
  /** Project to scope the token to, by name (needs a project domain) ... */
  readonly projectName?: string;
  /** ... or by id. */
  readonly projectId?: string;
  /** Domain of the project, by name ... */
  readonly projectDomainName?: string;
  /** ... or by id. */
  readonly projectDomainId?: string;
}

/** Keystone v3 application-credential authentication. */
export interface ApplicationCredentialAuth {
  /** Discriminator. */
  readonly type: "v3applicationcredential";
  /** Credential id ... */
  readonly applicationCredentialId?: string;
  /** ... or credential name (needs the user). */
  readonly applicationCredentialName?: string;
  /** The secret; never logged. */
  readonly applicationCredentialSecret: string;
  /** Owner of a named credential, by name (needs a user domain) ... */
  readonly username?: string;
  /** ... or by id. */
  readonly userId?: string;
  /** Domain of the user, by name ... */
  readonly userDomainName?: string;
  /** ... or by id. */
  readonly userDomainId?: string;
}

/** Resolved, validated configuration of one cloud. */
export interface CloudConfig {
  /** Cloud name from clouds.yaml, when one was used. */
  readonly cloud?: string;
  /** Keystone URL; ends with `/v3`. */
  readonly authUrl: string;
  /** Credentials. */
  readonly auth: PasswordAuth | ApplicationCredentialAuth;
  /** Region for catalog lookups. */
  readonly regionName?: string;
  /** Catalog interface, default `public`. */
  readonly interface: EndpointInterface;
  /** PEM of a CA bundle (OS_CACERT / cacert), with the file it came from. */
  readonly caCert?: { readonly path: string; readonly pem: string };
  /** Skip TLS verification (needs Deno's --unsafely-ignore-certificate-errors). */
  readonly insecure: boolean;
  /** Nova microversion, default `2.90`. */
  readonly computeApiVersion: string;
  /** Placement microversion, default `1.39`. */
  readonly placementApiVersion: string;
}

/**
 * A configuration problem; the message is one line naming the file or
 * variable and what is expected.
 *
 * @example
 * ```ts
 * import { ConfigError } from "./config.ts";
 * const err = new ConfigError("OS_AUTH_URL: not set; expected ...");
 * console.log(err.message);
 * ```
 */
export class ConfigError extends TypeError {
  /** Creates a configuration error. */
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

/** Where configuration is read from; injectable for tests. */
export interface ConfigSources {
  /** Environment; defaults to `Deno.env.toObject()`. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Reads a file; returns undefined when it does not exist. */
  readTextFile?: (path: string) => string | undefined;
  /** Home directory; defaults to `$HOME`. */
  homeDir?: string;
  /** Working directory; defaults to `Deno.cwd()`. */
  cwd?: string;
}

/** Options of {@linkcode loadCloudConfig}. */
export interface LoadCloudConfigOptions {
  /** Cloud name (a flag); wins over `OS_CLOUD`. */
  cloud?: string;
  /** How the flag is called, for error messages (default `--os-cloud`). */
  cloudFlagName?: string;
  /** Where to read from. */
  sources?: ConfigSources;
}

/** Default Nova microversion. */
export const DEFAULT_COMPUTE_API_VERSION = "2.90";
/** Lowest Nova microversion the client's parsing supports. */
export const MIN_COMPUTE_API_VERSION = "2.59";
/** Default Placement microversion. */
export const DEFAULT_PLACEMENT_API_VERSION = "1.39";

const optStr = z.string().optional();
const authSchema = z.looseObject({
  auth_url: optStr,
  username: optStr,
  user_id: optStr,
  password: optStr,
  project_name: optStr,
  project_id: optStr,
  user_domain_name: optStr,
  user_domain_id: optStr,
  project_domain_name: optStr,
  project_domain_id: optStr,
  application_credential_id: optStr,
  application_credential_name: optStr,
  application_credential_secret: optStr,
});
const versionValue = z.union([z.string(), z.number()]).optional();
const cloudSchema = z.looseObject({
  auth_type: optStr,
  auth: authSchema.optional(),
  region_name: optStr,
  interface: optStr,
  endpoint_type: optStr,
  cacert: optStr,
  verify: z.boolean().optional(),
  insecure: z.boolean().optional(),
  compute_api_version: versionValue,
  placement_api_version: versionValue,
});
const cloudsFileSchema = z.looseObject({
  clouds: z.record(z.string(), cloudSchema),
});
type RawCloud = z.infer<typeof cloudSchema>;

function defaultReadTextFile(path: string): string | undefined {
  try {
    return Deno.readTextFileSync(path);
  } catch (e) {
    // A file this process may not read (a compiled binary is only allowed
    // the documented config folders) is, for the search, not there.
    if (
      e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotCapable
    ) return undefined;
    throw e;
  }
}

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v === "" ? undefined : v;
}

function firstLine(s: string): string {
  return s.split("\n")[0]?.trim() ?? s;
}

function parseYamlFile(path: string, text: string): unknown {
  try {
    return parseYaml(text);
  } catch (e) {
    const msg = e instanceof Error ? firstLine(e.message) : String(e);
    throw new ConfigError(`${path}: not valid YAML: ${msg}`);
  }
}

function parseCloudsFile(path: string, text: string) {
  const result = cloudsFileSchema.safeParse(parseYamlFile(path, text));
  if (!result.success) {
    const issue = result.error.issues[0];
    const at = issue === undefined || issue.path.length === 0
      ? "(top level)"
      : issue.path.map(String).join(".");
    throw new ConfigError(
      `${path}: ${at}: ${
        issue?.message ?? "invalid"
      }; expected a mapping "clouds" of cloud name to settings`,
    );
  }
  return result.data;
}

function mergeDeep(
  base: Record<string, unknown>,
  over: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    if (
      typeof v === "object" && v !== null && !Array.isArray(v) &&
      typeof b === "object" && b !== null && !Array.isArray(b)
    ) {
      out[k] = mergeDeep(
        b as Record<string, unknown>,
        v as Record<string, unknown>,
      );
    } else {
      out[k] = v;
    }
  }
  return out;
}

interface Located {
  value: string | undefined;
  /** Name used in an error message about this setting. */
  label: string;
}

/**
 * Resolves the configuration of one cloud.
 *
 * Order: the cloud name comes from `options.cloud` or `OS_CLOUD`. With a
 * name, its entry in the first `clouds.yaml` found (`OS_CLIENT_CONFIG_FILE`,
 * `./clouds.yaml`, `~/.config/openstack/clouds.yaml`,
 * `/etc/openstack/clouds.yaml`) is used, with the same entry of
 * `secure.yaml` (`OS_CLIENT_SECURE_FILE` or the same directories) merged
 * over it; `OS_*` variables fill settings the files leave out (e.g. a
 * password kept out of files). Without a name, the `OS_*` variables alone.
 *
 * @throws {ConfigError} with one line naming the file or variable.
 *
 * @example
 * ```ts
 * import { loadCloudConfig } from "./config.ts";
 * const config = loadCloudConfig({
 *   sources: {
 *     env: {
 *       OS_AUTH_URL: "http://keystone:5000/v3",
 *       OS_APPLICATION_CREDENTIAL_ID: "abc",
 *       OS_APPLICATION_CREDENTIAL_SECRET: "s3cret",
 *     },
 *     readTextFile: () => undefined,
 *   },
 * });
 * console.log(config.auth.type); // v3applicationcredential
 * ```
 */
export function loadCloudConfig(
  options: LoadCloudConfigOptions = {},
): Readonly<CloudConfig> {
  const src = options.sources ?? {};
  const env = src.env ?? Deno.env.toObject();
  const read = src.readTextFile ?? defaultReadTextFile;
  const home = src.homeDir ?? env["HOME"] ?? "/root";
  const cwd = src.cwd ?? Deno.cwd();
  const e = (name: string) => nonEmpty(env[name]);

  const cloudLabel = options.cloud !== undefined
    ? (options.cloudFlagName ?? "--os-cloud")
    : "OS_CLOUD";
  const cloudName = nonEmpty(options.cloud) ?? e("OS_CLOUD");

  let raw: RawCloud | undefined;
  let file: string | undefined;
  if (cloudName !== undefined) {
    const found = findFile("clouds.yaml", "OS_CLIENT_CONFIG_FILE");
    if (found === undefined) {
      throw new ConfigError(
        `${cloudLabel}: cloud "${cloudName}" requested but no clouds.yaml found; looked in ${
          candidates("clouds.yaml").join(", ")
        }`,
      );
    }
    file = found.path;
    const clouds = parseCloudsFile(found.path, found.text);
    const entry = clouds.clouds[cloudName];
    if (entry === undefined) {
      const known = Object.keys(clouds.clouds);
      throw new ConfigError(
        `${cloudLabel}: cloud "${cloudName}" is not in ${found.path}; expected one of: ${
          known.length === 0 ? "(none)" : known.join(", ")
        }`,
      );
    }
    let merged: Record<string, unknown> = entry;
    const secure = findFile("secure.yaml", "OS_CLIENT_SECURE_FILE");
    if (secure !== undefined) {
      const secureClouds = parseCloudsFile(secure.path, secure.text);
      const over = secureClouds.clouds[cloudName];
      if (over !== undefined) merged = mergeDeep(merged, over);
    }
    const again = cloudSchema.safeParse(merged);
    if (!again.success) {
      const issue = again.error.issues[0];
      throw new ConfigError(
        `${found.path}: clouds.${cloudName}.${
          issue?.path.map(String).join(".") ?? ""
        }: ${issue?.message ?? "invalid"}`,
      );
    }
    raw = again.data;
  }

  const fileLabel = (key: string, envName: string, inAuth = true) =>
    file === undefined
      ? envName
      : `${file}: clouds.${cloudName}.${
        inAuth ? "auth." : ""
      }${key} (or ${envName})`;
  const authValue = (key: string, envName: string): Located => {
    const fromFile: unknown = raw?.auth?.[key];
    return {
      value: nonEmpty(typeof fromFile === "string" ? fromFile : undefined) ??
        e(envName),
      label: fileLabel(key, envName),
    };
  };
  const topValue = (
    value: string | undefined,
    key: string,
    envName: string,
  ): Located => ({
    value: nonEmpty(value) ?? e(envName),
    label: fileLabel(key, envName, false),
  });

  // auth_url
  const authUrlV = authValue("auth_url", "OS_AUTH_URL");
  if (authUrlV.value === undefined) {
    if (file === undefined) {
      throw new ConfigError(
        "OS_AUTH_URL: not set; expected OS_CLOUD naming a cloud in clouds.yaml, or OS_AUTH_URL and the other OS_* variables",
      );
    }
    throw new ConfigError(
      `${authUrlV.label}: not set; expected the Keystone URL`,
    );
  }
  const authUrl = normalizeAuthUrl(authUrlV);

  // auth type
  const authTypeV = topValue(raw?.auth_type, "auth_type", "OS_AUTH_TYPE");
  const appCredId = authValue(
    "application_credential_id",
    "OS_APPLICATION_CREDENTIAL_ID",
  );
  const appCredName = authValue(
    "application_credential_name",
    "OS_APPLICATION_CREDENTIAL_NAME",
  );
  const appCredSecret = authValue(
    "application_credential_secret",
    "OS_APPLICATION_CREDENTIAL_SECRET",
  );
  let authType: "password" | "v3applicationcredential";
  switch (authTypeV.value) {
    case undefined:
      authType =
        appCredId.value !== undefined || appCredName.value !== undefined ||
          appCredSecret.value !== undefined
          ? "v3applicationcredential"
          : "password";
      break;
    case "password":
    case "v3password":
      authType = "password";
      break;
    case "v3applicationcredential":
    case "applicationcredential":
      authType = "v3applicationcredential";
      break;
    default:
      throw new ConfigError(
        `${authTypeV.label}: "${authTypeV.value}" is not supported; expected password, v3password or v3applicationcredential`,
      );
  }

  const username = authValue("username", "OS_USERNAME");
  const userId = authValue("user_id", "OS_USER_ID");
  const userDomainName = authValue("user_domain_name", "OS_USER_DOMAIN_NAME");
  const userDomainId = authValue("user_domain_id", "OS_USER_DOMAIN_ID");
  const user = (): Record<string, string> => {
    const out: Record<string, string> = {};
    if (userId.value !== undefined) {
      out["userId"] = userId.value;
      return out;
    }
    if (username.value === undefined) return out;
    out["username"] = username.value;
    if (userDomainId.value !== undefined) {
      out["userDomainId"] = userDomainId.value;
    } else if (userDomainName.value !== undefined) {
      out["userDomainName"] = userDomainName.value;
    } else {
      throw new ConfigError(
        `${userDomainName.label}: not set; expected the domain of user "${username.value}" (or ${userDomainId.label})`,
      );
    }
    return out;
  };

  let auth: PasswordAuth | ApplicationCredentialAuth;
  if (authType === "password") {
    const password = authValue("password", "OS_PASSWORD");
    const u = user();
    if (u["userId"] === undefined && u["username"] === undefined) {
      throw new ConfigError(
        `${username.label}: not set; expected a user name (or ${userId.label}) for password authentication`,
      );
    }
    if (password.value === undefined) {
      throw new ConfigError(
        `${password.label}: not set; expected the password of user "${
          u["username"] ?? u["userId"]
        }"`,
      );
    }
    const projectName = authValue("project_name", "OS_PROJECT_NAME");
    const projectId = authValue("project_id", "OS_PROJECT_ID");
    const projectDomainName = authValue(
      "project_domain_name",
      "OS_PROJECT_DOMAIN_NAME",
    );
    const projectDomainId = authValue(
      "project_domain_id",
      "OS_PROJECT_DOMAIN_ID",
    );
    const project: Record<string, string> = {};
    if (projectId.value !== undefined) project["projectId"] = projectId.value;
    else if (projectName.value !== undefined) {
      project["projectName"] = projectName.value;
      if (projectDomainId.value !== undefined) {
        project["projectDomainId"] = projectDomainId.value;
      } else if (projectDomainName.value !== undefined) {
        project["projectDomainName"] = projectDomainName.value;
      } else {
        throw new ConfigError(
          `${projectDomainName.label}: not set; expected the domain of project "${projectName.value}" (or ${projectDomainId.label})`,
        );
      }
    } else {
      throw new ConfigError(
        `${projectName.label}: not set; expected a project (or ${projectId.label}) to scope the token to`,
      );
    }
    auth = { type: "password", password: password.value, ...u, ...project };
  } else {
    if (appCredSecret.value === undefined) {
      throw new ConfigError(
        `${appCredSecret.label}: not set; expected the application credential's secret`,
      );
    }
    if (appCredId.value !== undefined) {
      auth = {
        type: "v3applicationcredential",
        applicationCredentialId: appCredId.value,
        applicationCredentialSecret: appCredSecret.value,
      };
    } else if (appCredName.value !== undefined) {
      const u = user();
      if (u["userId"] === undefined && u["username"] === undefined) {
        throw new ConfigError(
          `${username.label}: not set; expected the owner (or ${userId.label}) of application credential "${appCredName.value}"`,
        );
      }
      auth = {
        type: "v3applicationcredential",
        applicationCredentialName: appCredName.value,
        applicationCredentialSecret: appCredSecret.value,
        ...u,
      };
    } else {
      throw new ConfigError(
        `${appCredId.label}: not set; expected an application credential id (or ${appCredName.label} with the user)`,
      );
    }
  }

  const regionV = topValue(raw?.region_name, "region_name", "OS_REGION_NAME");
  const ifaceV = topValue(
    raw?.interface ?? raw?.endpoint_type,
    "interface",
    e("OS_INTERFACE") === undefined ? "OS_ENDPOINT_TYPE" : "OS_INTERFACE",
  );
  const ifaceRaw = ifaceV.value ?? e("OS_ENDPOINT_TYPE");
  const ifaceNorm = ifaceRaw?.replace(/URL$/, "");
  if (
    ifaceNorm !== undefined && ifaceNorm !== "public" &&
    ifaceNorm !== "internal" && ifaceNorm !== "admin"
  ) {
    throw new ConfigError(
      `${ifaceV.label}: "${ifaceRaw}" is not an endpoint interface; expected public, internal or admin`,
    );
  }

  let insecure = false;
  if (raw?.verify !== undefined) insecure = !raw.verify;
  else if (raw?.insecure !== undefined) insecure = raw.insecure;
  else if (e("OS_INSECURE") !== undefined) {
    const v = (e("OS_INSECURE") ?? "").toLowerCase();
    if (["1", "true", "yes"].includes(v)) insecure = true;
    else if (["0", "false", "no"].includes(v)) insecure = false;
    else {
      throw new ConfigError(
        `OS_INSECURE: "${
          e("OS_INSECURE")
        }" is not a boolean; expected true or false`,
      );
    }
  }

  const caV = topValue(raw?.cacert, "cacert", "OS_CACERT");
  let caCert: CloudConfig["caCert"];
  if (caV.value !== undefined) {
    const pem = read(caV.value);
    if (pem === undefined) {
      throw new ConfigError(
        `${caV.label}: file "${caV.value}" does not exist; expected a PEM CA bundle`,
      );
    }
    if (!pem.includes("-----BEGIN CERTIFICATE-----")) {
      throw new ConfigError(
        `${caV.label}: file "${caV.value}" holds no PEM certificate; expected a PEM CA bundle`,
      );
    }
    caCert = { path: caV.value, pem };
  }

  const computeV = topValue(
    raw?.compute_api_version === undefined
      ? undefined
      : String(raw.compute_api_version),
    "compute_api_version",
    "OS_COMPUTE_API_VERSION",
  );
  const computeApiVersion = computeV.value ?? DEFAULT_COMPUTE_API_VERSION;
  if (
    !/^2\.\d+$/.test(computeApiVersion) ||
    compareMicroversions(computeApiVersion, MIN_COMPUTE_API_VERSION) < 0
  ) {
    throw new ConfigError(
      `${computeV.label}: "${computeApiVersion}" is not usable; expected a Nova microversion 2.N >= ${MIN_COMPUTE_API_VERSION} (default ${DEFAULT_COMPUTE_API_VERSION})`,
    );
  }
  const placementV = topValue(
    raw?.placement_api_version === undefined
      ? undefined
      : String(raw.placement_api_version),
    "placement_api_version",
    "OS_PLACEMENT_API_VERSION",
  );
  const placementApiVersion = placementV.value ?? DEFAULT_PLACEMENT_API_VERSION;
  if (
    !/^1\.\d+$/.test(placementApiVersion) ||
    compareMicroversions(placementApiVersion, "1.6") < 0
  ) {
    throw new ConfigError(
      `${placementV.label}: "${placementApiVersion}" is not usable; expected a Placement microversion 1.N >= 1.6 (default ${DEFAULT_PLACEMENT_API_VERSION})`,
    );
  }

  const config: CloudConfig = {
    ...(cloudName === undefined ? {} : { cloud: cloudName }),
    authUrl,
    auth: Object.freeze(auth),
    ...(regionV.value === undefined ? {} : { regionName: regionV.value }),
    interface: ifaceNorm ?? "public",
    ...(caCert === undefined ? {} : { caCert: Object.freeze(caCert) }),
    insecure,
    computeApiVersion,
    placementApiVersion,
  };
  return Object.freeze(config);

  function candidates(name: string): string[] {
    return [
      `${cwd}/${name}`,
      `${home}/.config/openstack/${name}`,
      `/etc/openstack/${name}`,
    ];
  }

  function findFile(
    name: string,
    envName: string,
  ): { path: string; text: string } | undefined {
    const explicit = e(envName);
    if (explicit !== undefined) {
      const text = read(explicit);
      if (text === undefined) {
        throw new ConfigError(
          `${envName}: file "${explicit}" does not exist; expected a ${name}`,
        );
      }
      return { path: explicit, text };
    }
    for (const path of candidates(name)) {
      const text = read(path);
      if (text !== undefined) return { path, text };
    }
    return undefined;
  }
}

function normalizeAuthUrl(v: Located): string {
  const value = v.value ?? "";
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(
      `${v.label}: "${value}" is not a URL; expected http(s)://host[:port][/path]`,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(
      `${v.label}: "${value}" is not an http(s) URL; expected http(s)://host[:port][/path]`,
    );
  }
  const base = value.replace(/\/+$/, "");
  return /\/v3$/.test(base) ? base : `${base}/v3`;
}

/**
 * Compares two microversions `X.Y` numerically.
 *
 * @example
 * ```ts
 * import { compareMicroversions } from "./config.ts";
 * console.log(compareMicroversions("2.9", "2.10") < 0); // true
 * ```
 */
export function compareMicroversions(a: string, b: string): number {
  const [amaj = 0, amin = 0] = a.split(".").map(Number);
  const [bmaj = 0, bmin = 0] = b.split(".").map(Number);
  return amaj !== bmaj ? amaj - bmaj : amin - bmin;
}
