/**
 * Cloud configuration: `clouds.yaml` (+ `secure.yaml`) found the way the
 * openstack CLI and gophercloud find it, and the `OS_*` variables. Read once
 * at start-up and frozen; every problem stops start-up with one line that
 * names the file or variable and what is expected.
 *
 * Keys as openstacksdk/keystoneauth and gophercloud read them: password,
 * application-credential and token (`token`/`v3token`, `OS_TOKEN`) auth; a
 * project or system (`system_scope: all`, `OS_SYSTEM_SCOPE`) scope; user and
 * project domains by `*_domain_id` (wins) or `*_domain_name`, else the
 * shorthand `domain_id`/`domain_name` (`OS_DOMAIN_*`), else
 * `default_domain` (`OS_DEFAULT_DOMAIN`, a domain id, as in osc-lib and
 * gophercloud); `cacert`, and a client certificate `cert` + `key`
 * (`OS_CERT`/`OS_KEY`; a `cert` file holding the key too needs no `key`).
 *
 * @module
 */

import { z } from "zod";
import { parse as parseYaml } from "yaml";
import { chooseRegion, expandRegions, wantedRegion } from "./cloud_region.ts";

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
  /** A system-scoped token (`all`) instead of a project. */
  readonly systemScope?: "all";
}

/** Keystone v3 token authentication: an existing token, re-scoped. */
export interface TokenAuth {
  /** Discriminator. */
  readonly type: "token";
  /** The token; never logged. */
  readonly token: string;
  /** Project to scope the new token to, by name (needs a project domain) ... */
  readonly projectName?: string;
  /** ... or by id. */
  readonly projectId?: string;
  /** Domain of the project, by name ... */
  readonly projectDomainName?: string;
  /** ... or by id. */
  readonly projectDomainId?: string;
  /** A system-scoped token (`all`) instead of a project. */
  readonly systemScope?: "all";
}

/** A client certificate for TLS to Keystone and the endpoints. */
export interface ClientCertificate {
  /** The certificate file (`cert`, `OS_CERT`). */
  readonly certPath: string;
  /** The key file (`key`, `OS_KEY`; the cert file when it holds the key). */
  readonly keyPath: string;
  /** The certificate chain (PEM). */
  readonly certPem: string;
  /** The private key (PEM); never logged. */
  readonly keyPem: string;
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
  readonly auth: PasswordAuth | ApplicationCredentialAuth | TokenAuth;
  /**
   * Region for catalog lookups: the `regionName` option (a flag), else
   * `OS_REGION_NAME`, else `region_name`, else the first of the cloud's
   * `regions:`; none when none is set.
   */
  readonly regionName?: string;
  /** Catalog interface, default `public`. */
  readonly interface: EndpointInterface;
  /** PEM of a CA bundle (OS_CACERT / cacert), with the file it came from. */
  readonly caCert?: { readonly path: string; readonly pem: string };
  /** A client certificate (cert/key, OS_CERT/OS_KEY). */
  readonly clientCert?: ClientCertificate;
  /** Skip TLS verification (needs Deno's --unsafely-ignore-certificate-errors). */
  readonly insecure: boolean;
  /** Nova microversion, default `2.90`. */
  readonly computeApiVersion: string;
  /**
   * Whether `compute_api_version` was set (clouds.yaml or environment): a
   * set one is sent as is when Nova supports it; otherwise the Nova client
   * negotiates the highest version both sides support.
   */
  readonly computeApiVersionSet: boolean;
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
 * console.assert(err.where === "OS_AUTH_URL");
 * ```
 */
export class ConfigError extends TypeError {
  /**
   * The file, variable or flag the message starts with (every message is
   * `<where>: <what is wrong>; expected ...`).
   */
  readonly where: string;

  /** Creates a configuration error. */
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
    const colon = message.indexOf(": ");
    this.where = colon < 0 ? "" : message.slice(0, colon);
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
  /** Region name (a flag); wins over `OS_REGION_NAME` and `region_name`. */
  regionName?: string;
  /** How that flag is called (default `--os-region-name`). */
  regionFlagName?: string;
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
  domain_id: optStr,
  domain_name: optStr,
  default_domain: optStr,
  token: optStr,
  system_scope: optStr,
  application_credential_id: optStr,
  application_credential_name: optStr,
  application_credential_secret: optStr,
});
const versionValue = z.union([z.string(), z.number()]).optional();
const cloudSchema = z.looseObject({
  auth_type: optStr,
  auth: authSchema.optional(),
  region_name: optStr,
  // checked by expandRegions, with messages that say what an entry may be
  regions: z.unknown().optional(),
  interface: optStr,
  endpoint_type: optStr,
  cacert: optStr,
  cert: optStr,
  key: optStr,
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
  const files = fileSearch(options.sources ?? {});
  const cloudLabel = options.cloud !== undefined
    ? (options.cloudFlagName ?? "--os-cloud")
    : "OS_CLOUD";
  const cloudName = nonEmpty(options.cloud) ?? files.env("OS_CLOUD");
  const { entry, regionName } = inRegion(
    files,
    cloudName === undefined
      ? undefined
      : readCloudEntry(files, cloudName, cloudLabel),
    {
      value: options.regionName,
      name: options.regionFlagName ?? "--os-region-name",
    },
  );
  const s = settingsOf(files, entry);

  // In this order, so that the first problem is the one reported.
  const authUrl = resolveAuthUrl(s);
  const auth = resolveAuth(s);
  const endpointInterface = resolveInterface(s);
  const insecure = resolveInsecure(s);
  const caCert = resolveCaCert(s, files.read);
  const clientCert = resolveClientCert(s, files.read);
  const computeApiVersion = resolveMicroversion(s, COMPUTE_VERSION);
  const computeApiVersionSet = microversionSet(s, COMPUTE_VERSION);
  const placementApiVersion = resolveMicroversion(s, PLACEMENT_VERSION);
  const config: CloudConfig = {
    ...(cloudName === undefined ? {} : { cloud: cloudName }),
    authUrl,
    auth: Object.freeze(auth),
    ...(regionName === undefined ? {} : { regionName }),
    interface: endpointInterface,
    ...(caCert === undefined ? {} : { caCert: Object.freeze(caCert) }),
    ...(clientCert === undefined
      ? {}
      : { clientCert: Object.freeze(clientCert) }),
    insecure,
    computeApiVersion,
    computeApiVersionSet,
    placementApiVersion,
  };
  return Object.freeze(config);
}

/** The environment and the files, as the openstack CLI searches them. */
interface FileSearch {
  /** A non-empty environment variable. */
  env(name: string): string | undefined;
  /** Reads a file; undefined when it does not exist. */
  read(path: string): string | undefined;
  /** Where `name` (clouds.yaml, secure.yaml) is looked for, in order. */
  candidates(name: string): string[];
  /** The first `name` found: `envName` names it, else the candidates. */
  find(
    name: string,
    envName: string,
  ): { path: string; text: string } | undefined;
}

function fileSearch(src: ConfigSources): FileSearch {
  const env = src.env ?? Deno.env.toObject();
  const read = src.readTextFile ?? defaultReadTextFile;
  const home = src.homeDir ?? env["HOME"] ?? "/root";
  const cwd = src.cwd ?? Deno.cwd();
  const e = (name: string) => nonEmpty(env[name]);
  const candidates = (name: string) => [
    `${cwd}/${name}`,
    `${home}/.config/openstack/${name}`,
    `/etc/openstack/${name}`,
  ];
  const find = (name: string, envName: string) => {
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
  };
  return { env: e, read, candidates, find };
}

/** One cloud's entry of clouds.yaml with secure.yaml merged over it. */
interface CloudEntry {
  name: string;
  /** The clouds.yaml it came from. */
  file: string;
  raw: RawCloud;
}

function readCloudEntry(
  files: FileSearch,
  cloudName: string,
  cloudLabel: string,
): CloudEntry {
  const found = files.find("clouds.yaml", "OS_CLIENT_CONFIG_FILE");
  if (found === undefined) {
    throw new ConfigError(
      `${cloudLabel}: cloud "${cloudName}" requested but no clouds.yaml found; looked in ${
        files.candidates("clouds.yaml").join(", ")
      }`,
    );
  }
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
  const secure = files.find("secure.yaml", "OS_CLIENT_SECURE_FILE");
  if (secure !== undefined) {
    const secureClouds = parseCloudsFile(secure.path, secure.text);
    const over = secureClouds.clouds[cloudName];
    if (over !== undefined) merged = mergeDeep(merged, over);
  }
  return {
    name: cloudName,
    file: found.path,
    raw: checkedCloud(found.path, cloudName, merged),
  };
}

/** A cloud's settings after a merge, checked again. */
function checkedCloud(
  file: string,
  cloudName: string,
  merged: Record<string, unknown>,
): RawCloud {
  const again = cloudSchema.safeParse(merged);
  if (!again.success) {
    const issue = again.error.issues[0];
    throw new ConfigError(
      `${file}: clouds.${cloudName}.${
        issue?.path.map(String).join(".") ?? ""
      }: ${issue?.message ?? "invalid"}`,
    );
  }
  return again.data;
}

/**
 * The cloud's entry in the region it is used in, and that region. The
 * region asked for is the flag, else `OS_REGION_NAME`, else `region_name`
 * (openstackclient's order); with a `regions:` list it must be one of them
 * (none asked for: the first, as openstacksdk), and that region's `values`
 * override the cloud's settings.
 */
function inRegion(
  files: FileSearch,
  base: CloudEntry | undefined,
  flag: { value: string | undefined; name: string },
): { entry: CloudEntry | undefined; regionName: string | undefined } {
  const wanted = wantedRegion({
    flag,
    env: files.env("OS_REGION_NAME"),
    ...(base === undefined ? {} : {
      file: {
        value: base.raw.region_name,
        label: `${base.file}: clouds.${base.name}.region_name`,
      },
    }),
  });
  if (base === undefined || base.raw.regions === undefined) {
    return { entry: base, regionName: wanted.value };
  }
  const at = `${base.file}: clouds.${base.name}`;
  let regions;
  try {
    regions = expandRegions(base.raw.regions);
  } catch (e) {
    throw new ConfigError(`${at}.${e instanceof Error ? e.message : e}`);
  }
  if (regions.length === 0) return { entry: base, regionName: wanted.value };
  const region = chooseRegion(regions, wanted.value);
  if (region === undefined) {
    throw new ConfigError(
      `${wanted.label}: "${wanted.value}" is not a region of cloud "${base.name}"; expected one of its regions: ${
        regions.map((r) => r.name).join(", ")
      } (names are case-sensitive)`,
    );
  }
  const { regions: _list, ...cloud } = base.raw;
  const raw = checkedCloud(
    base.file,
    base.name,
    mergeDeep(cloud, { ...region.values }),
  );
  return { entry: { ...base, raw }, regionName: region.name };
}

/** Settings looked up in the cloud's entry, else in the `OS_*` variables. */
interface Settings {
  /** The cloud's entry, when a cloud was named. */
  raw: RawCloud | undefined;
  /** A non-empty environment variable. */
  env(name: string): string | undefined;
  /** A setting under `auth:` (`key`), else `envName`. */
  auth(key: string, envName: string): Located;
  /** A top-level setting (`value` from the file), else `envName`. */
  top(value: string | undefined, key: string, envName: string): Located;
}

function settingsOf(
  files: FileSearch,
  entry: CloudEntry | undefined,
): Settings {
  const label = (key: string, envName: string, inAuth: boolean) =>
    entry === undefined
      ? envName
      : `${entry.file}: clouds.${entry.name}.${
        inAuth ? "auth." : ""
      }${key} (or ${envName})`;
  return {
    raw: entry?.raw,
    env: files.env,
    auth: (key, envName) => {
      const fromFile: unknown = entry?.raw.auth?.[key];
      return {
        value: nonEmpty(typeof fromFile === "string" ? fromFile : undefined) ??
          files.env(envName),
        label: label(key, envName, true),
      };
    },
    top: (value, key, envName) => ({
      value: nonEmpty(value) ?? files.env(envName),
      label: label(key, envName, false),
    }),
  };
}

function resolveAuthUrl(s: Settings): string {
  const authUrlV = s.auth("auth_url", "OS_AUTH_URL");
  if (authUrlV.value === undefined) {
    if (s.raw === undefined) {
      throw new ConfigError(
        "OS_AUTH_URL: not set; expected OS_CLOUD naming a cloud in clouds.yaml, or OS_AUTH_URL and the other OS_* variables",
      );
    }
    throw new ConfigError(
      `${authUrlV.label}: not set; expected the Keystone URL`,
    );
  }
  return normalizeAuthUrl(authUrlV);
}

/** The application-credential settings (they also pick the default type). */
function appCredentialSettings(s: Settings) {
  return {
    id: s.auth("application_credential_id", "OS_APPLICATION_CREDENTIAL_ID"),
    name: s.auth(
      "application_credential_name",
      "OS_APPLICATION_CREDENTIAL_NAME",
    ),
    secret: s.auth(
      "application_credential_secret",
      "OS_APPLICATION_CREDENTIAL_SECRET",
    ),
  };
}

function resolveAuth(
  s: Settings,
): PasswordAuth | ApplicationCredentialAuth | TokenAuth {
  const appCred = appCredentialSettings(s);
  switch (resolveAuthType(s, appCred)) {
    case "password":
      return passwordAuth(s);
    case "token":
      return tokenAuth(s);
    case "v3applicationcredential":
      return applicationCredentialAuth(s, appCred);
  }
}

/** `token`, else `OS_TOKEN`, else gophercloud's `OS_AUTH_TOKEN`. */
function tokenSetting(s: Settings): Located {
  const t = s.auth("token", "OS_TOKEN");
  return t.value !== undefined ? t : { ...t, value: s.env("OS_AUTH_TOKEN") };
}

function resolveAuthType(
  s: Settings,
  appCred: ReturnType<typeof appCredentialSettings>,
): "password" | "v3applicationcredential" | "token" {
  const authTypeV = s.top(s.raw?.auth_type, "auth_type", "OS_AUTH_TYPE");
  switch (authTypeV.value) {
    case undefined:
      if (
        appCred.id.value !== undefined ||
        appCred.name.value !== undefined ||
        appCred.secret.value !== undefined
      ) return "v3applicationcredential";
      // as openstacksdk: a token and no password means token auth
      return tokenSetting(s).value !== undefined &&
          s.auth("password", "OS_PASSWORD").value === undefined
        ? "token"
        : "password";
    case "password":
    case "v3password":
      return "password";
    case "token":
    case "v3token":
      return "token";
    case "v3applicationcredential":
    case "applicationcredential":
      return "v3applicationcredential";
    default:
      throw new ConfigError(
        `${authTypeV.label}: "${authTypeV.value}" is not supported; expected password, v3password, token, v3token or v3applicationcredential`,
      );
  }
}

/**
 * A domain setting with its fallbacks: the specific `*_domain_id` wins over
 * `*_domain_name`, then the shorthand `domain_id`/`domain_name` that fills
 * both user and project (openstacksdk, gophercloud), then `default_domain`
 * (an id; osc-lib and gophercloud fill the user's and the project's domain
 * with it when neither is given).
 */
function domainOf(
  s: Settings,
  which: "user" | "project",
): { id: string } | { name: string } | undefined {
  const upper = which.toUpperCase();
  const candidates: [Located, "id" | "name"][] = [
    [s.auth(`${which}_domain_id`, `OS_${upper}_DOMAIN_ID`), "id"],
    [s.auth(`${which}_domain_name`, `OS_${upper}_DOMAIN_NAME`), "name"],
    [s.auth("domain_id", "OS_DOMAIN_ID"), "id"],
    [s.auth("domain_name", "OS_DOMAIN_NAME"), "name"],
    [s.auth("default_domain", "OS_DEFAULT_DOMAIN"), "id"],
  ];
  for (const [v, kind] of candidates) {
    if (v.value === undefined) continue;
    return kind === "id" ? { id: v.value } : { name: v.value };
  }
  return undefined;
}

function tokenAuth(s: Settings): TokenAuth {
  const token = tokenSetting(s);
  if (token.value === undefined) {
    throw new ConfigError(
      `${token.label}: not set; expected the Keystone token to authenticate with (auth_type token)`,
    );
  }
  return { type: "token", token: token.value, ...tokenScope(s) };
}

/** The user settings and the user they name (id, or name and domain). */
function userSettings(s: Settings) {
  const username = s.auth("username", "OS_USERNAME");
  const userId = s.auth("user_id", "OS_USER_ID");
  const userDomainName = s.auth("user_domain_name", "OS_USER_DOMAIN_NAME");
  const userDomainId = s.auth("user_domain_id", "OS_USER_DOMAIN_ID");
  const user = (): Record<string, string> => {
    const out: Record<string, string> = {};
    if (userId.value !== undefined) {
      out["userId"] = userId.value;
      return out;
    }
    if (username.value === undefined) return out;
    out["username"] = username.value;
    const domain = domainOf(s, "user");
    if (domain === undefined) {
      throw new ConfigError(
        `${userDomainName.label}: not set; expected the domain of user "${username.value}" (or ${userDomainId.label}, or default_domain)`,
      );
    }
    if ("id" in domain) out["userDomainId"] = domain.id;
    else out["userDomainName"] = domain.name;
    return out;
  };
  return { username, userId, user };
}

function passwordAuth(s: Settings): PasswordAuth {
  const { username, userId, user } = userSettings(s);
  const password = s.auth("password", "OS_PASSWORD");
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
  return {
    type: "password",
    password: password.value,
    ...u,
    ...tokenScope(s),
  };
}

/** A system scope (`all`, the only one Keystone has), else a project. */
function tokenScope(
  s: Settings,
): { systemScope: "all" } | Record<string, string> {
  const system = s.auth("system_scope", "OS_SYSTEM_SCOPE");
  if (system.value === undefined) return projectScope(s);
  if (system.value !== "all") {
    throw new ConfigError(
      `${system.label}: "${system.value}" is not a system scope; expected all`,
    );
  }
  for (
    const p of [
      s.auth("project_id", "OS_PROJECT_ID"),
      s.auth("project_name", "OS_PROJECT_NAME"),
    ]
  ) {
    if (p.value !== undefined) {
      // keystoneauth refuses a token scoped to several targets
      throw new ConfigError(
        `${system.label}: set together with ${p.label}; expected one scope, the system or a project`,
      );
    }
  }
  return { systemScope: "all" };
}

/** The project a password token is scoped to (id, or name and domain). */
function projectScope(s: Settings): Record<string, string> {
  const projectName = s.auth("project_name", "OS_PROJECT_NAME");
  const projectId = s.auth("project_id", "OS_PROJECT_ID");
  const projectDomainName = s.auth(
    "project_domain_name",
    "OS_PROJECT_DOMAIN_NAME",
  );
  const projectDomainId = s.auth("project_domain_id", "OS_PROJECT_DOMAIN_ID");
  if (projectId.value !== undefined) return { projectId: projectId.value };
  if (projectName.value === undefined) {
    throw new ConfigError(
      `${projectName.label}: not set; expected a project (or ${projectId.label}, or system_scope: all) to scope the token to`,
    );
  }
  const domain = domainOf(s, "project");
  if (domain === undefined) {
    throw new ConfigError(
      `${projectDomainName.label}: not set; expected the domain of project "${projectName.value}" (or ${projectDomainId.label}, or default_domain)`,
    );
  }
  return "id" in domain
    ? { projectName: projectName.value, projectDomainId: domain.id }
    : { projectName: projectName.value, projectDomainName: domain.name };
}

function applicationCredentialAuth(
  s: Settings,
  appCred: ReturnType<typeof appCredentialSettings>,
): ApplicationCredentialAuth {
  const system = s.auth("system_scope", "OS_SYSTEM_SCOPE");
  if (system.value !== undefined) {
    throw new ConfigError(
      `${system.label}: set with an application credential, which carries its own scope; expected no system_scope (or auth_type password or token)`,
    );
  }
  if (appCred.secret.value === undefined) {
    throw new ConfigError(
      `${appCred.secret.label}: not set; expected the application credential's secret`,
    );
  }
  if (appCred.id.value !== undefined) {
    return {
      type: "v3applicationcredential",
      applicationCredentialId: appCred.id.value,
      applicationCredentialSecret: appCred.secret.value,
    };
  }
  if (appCred.name.value === undefined) {
    throw new ConfigError(
      `${appCred.id.label}: not set; expected an application credential id (or ${appCred.name.label} with the user)`,
    );
  }
  const { username, userId, user } = userSettings(s);
  const u = user();
  if (u["userId"] === undefined && u["username"] === undefined) {
    throw new ConfigError(
      `${username.label}: not set; expected the owner (or ${userId.label}) of application credential "${appCred.name.value}"`,
    );
  }
  return {
    type: "v3applicationcredential",
    applicationCredentialName: appCred.name.value,
    applicationCredentialSecret: appCred.secret.value,
    ...u,
  };
}

function resolveInterface(s: Settings): EndpointInterface {
  const ifaceV = s.top(
    s.raw?.interface ?? s.raw?.endpoint_type,
    "interface",
    s.env("OS_INTERFACE") === undefined ? "OS_ENDPOINT_TYPE" : "OS_INTERFACE",
  );
  const ifaceRaw = ifaceV.value ?? s.env("OS_ENDPOINT_TYPE");
  const ifaceNorm = ifaceRaw?.replace(/URL$/, "");
  if (
    ifaceNorm !== undefined && ifaceNorm !== "public" &&
    ifaceNorm !== "internal" && ifaceNorm !== "admin"
  ) {
    throw new ConfigError(
      `${ifaceV.label}: "${ifaceRaw}" is not an endpoint interface; expected public, internal or admin`,
    );
  }
  return ifaceNorm ?? "public";
}

function resolveInsecure(s: Settings): boolean {
  const raw = s.raw;
  if (raw?.verify !== undefined) return !raw.verify;
  if (raw?.insecure !== undefined) return raw.insecure;
  const text = s.env("OS_INSECURE");
  if (text === undefined) return false;
  const v = text.toLowerCase();
  if (["1", "true", "yes"].includes(v)) return true;
  if (["0", "false", "no"].includes(v)) return false;
  throw new ConfigError(
    `OS_INSECURE: "${text}" is not a boolean; expected true or false`,
  );
}

function resolveCaCert(
  s: Settings,
  read: (path: string) => string | undefined,
): CloudConfig["caCert"] {
  const caV = s.top(s.raw?.cacert, "cacert", "OS_CACERT");
  if (caV.value === undefined) return undefined;
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
  return { path: caV.value, pem };
}

function resolveClientCert(
  s: Settings,
  read: (path: string) => string | undefined,
): ClientCertificate | undefined {
  const certV = s.top(s.raw?.cert, "cert", "OS_CERT");
  const keyV = s.top(s.raw?.key, "key", "OS_KEY");
  if (certV.value === undefined) {
    if (keyV.value !== undefined) {
      throw new ConfigError(
        `${certV.label}: not set, but ${keyV.label} is; expected the client certificate (PEM) that goes with the key`,
      );
    }
    return undefined;
  }
  const certPem = read(certV.value);
  if (certPem === undefined) {
    throw new ConfigError(
      `${certV.label}: file "${certV.value}" does not exist; expected a PEM client certificate`,
    );
  }
  if (!certPem.includes("-----BEGIN CERTIFICATE-----")) {
    throw new ConfigError(
      `${certV.label}: file "${certV.value}" holds no PEM certificate; expected a PEM client certificate`,
    );
  }
  const keyBlock = (pem: string) =>
    /-----BEGIN ([A-Z ]*)PRIVATE KEY-----[^]*?-----END \1PRIVATE KEY-----/
      .exec(pem)?.[0];
  const certBlocks = (pem: string) =>
    (pem.match(
      /-----BEGIN CERTIFICATE-----[^]*?-----END CERTIFICATE-----/g,
    ) ?? []).join("\n");
  if (keyV.value === undefined) {
    // as requests/keystoneauth: one file may hold the certificate and its key
    const inCert = keyBlock(certPem);
    if (inCert !== undefined) {
      return usableClientCert({
        certPath: certV.value,
        keyPath: certV.value,
        certPem: certBlocks(certPem),
        keyPem: inCert,
      }, certV.label);
    }
    throw new ConfigError(
      `${keyV.label}: not set; expected the private key (PEM) of client certificate "${certV.value}"`,
    );
  }
  const keyPem = read(keyV.value);
  if (keyPem === undefined) {
    throw new ConfigError(
      `${keyV.label}: file "${keyV.value}" does not exist; expected the PEM private key of the client certificate`,
    );
  }
  const key = keyBlock(keyPem);
  if (key === undefined) {
    throw new ConfigError(
      `${keyV.label}: file "${keyV.value}" holds no PEM private key; expected the private key of client certificate "${certV.value}"`,
    );
  }
  return usableClientCert({
    certPath: certV.value,
    keyPath: keyV.value,
    certPem: certBlocks(certPem),
    keyPem: key,
  }, keyV.label);
}

/** Checks that TLS can load the pair (a malformed or mismatched PEM). */
function usableClientCert(
  c: ClientCertificate,
  label: string,
): ClientCertificate {
  try {
    Deno.createHttpClient({ cert: c.certPem, key: c.keyPem }).close();
  } catch (e) {
    throw new ConfigError(
      `${label}: the certificate "${c.certPath}" and key "${c.keyPath}" cannot be used for TLS (${
        firstLine(e instanceof Error ? e.message : String(e))
      }); expected a PEM certificate and its matching private key`,
    );
  }
  return c;
}

/** A service's microversion setting and what it may be. */
interface MicroversionSetting {
  key: "compute_api_version" | "placement_api_version";
  envName: string;
  service: string;
  major: number;
  min: string;
  fallback: string;
}

const COMPUTE_VERSION: MicroversionSetting = {
  key: "compute_api_version",
  envName: "OS_COMPUTE_API_VERSION",
  service: "Nova",
  major: 2,
  min: MIN_COMPUTE_API_VERSION,
  fallback: DEFAULT_COMPUTE_API_VERSION,
};

const PLACEMENT_VERSION: MicroversionSetting = {
  key: "placement_api_version",
  envName: "OS_PLACEMENT_API_VERSION",
  service: "Placement",
  major: 1,
  min: "1.6",
  fallback: DEFAULT_PLACEMENT_API_VERSION,
};

function microversionSet(s: Settings, m: MicroversionSetting): boolean {
  const fromFile = s.raw?.[m.key];
  return s.top(
    fromFile === undefined ? undefined : String(fromFile),
    m.key,
    m.envName,
  ).value !== undefined;
}

function resolveMicroversion(s: Settings, m: MicroversionSetting): string {
  const fromFile = s.raw?.[m.key];
  const v = s.top(
    fromFile === undefined ? undefined : String(fromFile),
    m.key,
    m.envName,
  );
  const version = v.value ?? m.fallback;
  if (
    !new RegExp(`^${m.major}\\.\\d+$`).test(version) ||
    compareMicroversions(version, m.min) < 0
  ) {
    throw new ConfigError(
      `${v.label}: "${version}" is not usable; expected a ${m.service} microversion ${m.major}.N >= ${m.min} (default ${m.fallback})`,
    );
  }
  return version;
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
