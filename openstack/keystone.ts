/**
 * Keystone v3 session: authenticates with a password, an application
 * credential or a token (project- or system-scoped), over TLS with a client
 * certificate when configured; keeps the token until shortly before it
 * expires, re-authenticates once on a 401, and looks endpoints up in the
 * catalog.
 *
 * @module
 */

import { z } from "zod";
import {
  type AuthBackoffOptions,
  authRetryDelayMs,
  checkedAuthBackoff,
} from "./backoff.ts";
import type {
  ApplicationCredentialAuth,
  CloudConfig,
  EndpointInterface,
  PasswordAuth,
  TokenAuth,
} from "./config.ts";
import {
  InvalidResponseError,
  OpenStackError,
  UnauthorizedError,
  UnavailableError,
} from "./errors.ts";
import {
  type ActionTls,
  type HttpRequest,
  type HttpResponse,
  HttpTransport,
  type HttpTransportOptions,
} from "./http.ts";
import { type Logger, urlForLog } from "./logger.ts";

/** One endpoint of a catalog entry. */
export interface CatalogEndpoint {
  /** public, internal or admin. */
  readonly interface: string;
  /** Region name (or id). */
  readonly region: string | undefined;
  /** Base URL of the service. */
  readonly url: string;
}

/** One service in the catalog. */
export interface CatalogEntry {
  /** Service type, e.g. `compute`, `placement`. */
  readonly type: string;
  /** Service name, e.g. `nova`. */
  readonly name: string | undefined;
  /** Its endpoints. */
  readonly endpoints: readonly CatalogEndpoint[];
}

/** A Keystone token with what came with it. */
export interface Token {
  /** The token (X-Subject-Token); never logged. */
  readonly value: string;
  /** Expiry, milliseconds since the epoch. */
  readonly expiresAt: number;
  /** When it was issued (our clock), milliseconds since the epoch. */
  readonly obtainedAt: number;
  /** The service catalog. */
  readonly catalog: readonly CatalogEntry[];
  /** Scoped project id, if any. */
  readonly projectId: string | undefined;
}

const tokenBodySchema = z.object({
  token: z.object({
    expires_at: z.string().refine((s) => !Number.isNaN(Date.parse(s)), {
      message: "expected an ISO 8601 time",
    }),
    catalog: z.array(z.object({
      type: z.string(),
      name: z.string().optional(),
      endpoints: z.array(z.object({
        interface: z.string(),
        region: z.string().nullable().optional(),
        region_id: z.string().nullable().optional(),
        url: z.string(),
      })),
    })).optional(),
    project: z.object({ id: z.string() }).optional(),
    system: z.object({ all: z.boolean().optional() }).optional(),
  }),
});

/**
 * No endpoint of the wanted type, interface and region in the catalog.
 *
 * @example
 * ```ts
 * import { EndpointNotFoundError } from "./keystone.ts";
 * const err = new EndpointNotFoundError("no placement endpoint (interface public) in the catalog");
 * console.log(err.message);
 * ```
 */
export class EndpointNotFoundError extends OpenStackError {}

/**
 * Keystone refused the credentials (401 on `POST /auth/tokens`). Every
 * caller gets this error until the session's backoff lets one new attempt
 * through; the message stays the same across attempts (Events built from it
 * are counted, not repeated), the wait is in `retryAfterMs`.
 *
 * @example
 * ```ts
 * import { CredentialsRefusedError } from "./keystone.ts";
 * const err = new CredentialsRefusedError("Keystone refused the credentials", { status: 401, retryAfterMs: 5000 }, 1);
 * console.assert(err.eventReason === "CredentialsRefused");
 * ```
 */
export class CredentialsRefusedError extends UnauthorizedError {
  /** The reason of the Warning Event on the objects this error stops. */
  readonly eventReason = "CredentialsRefused";
  /** Failed authentications in a row. */
  readonly failures: number;

  /** Creates the error; `details.retryAfterMs` is the wait left. */
  constructor(
    message: string,
    details: ConstructorParameters<typeof UnauthorizedError>[1],
    failures: number,
  ) {
    super(message, details);
    this.failures = failures;
  }
}

/** The outcome of one authentication, for metrics. */
export type AuthOutcome =
  | { readonly ok: true }
  | {
    readonly ok: false;
    /** True when Keystone refused the credentials (401). */
    readonly refused: boolean;
    /** Failed authentications in a row. */
    readonly failures: number;
    /** How long every caller now waits before the next attempt. */
    readonly retryInMs: number;
  };

/** Options of {@linkcode KeystoneSession}. */
export interface KeystoneSessionOptions extends HttpTransportOptions {
  /** Keystone v3 URL (ending in /v3). */
  authUrl: string;
  /** Credentials. */
  auth: PasswordAuth | ApplicationCredentialAuth | TokenAuth;
  /** Default region for endpoint lookups. */
  regionName?: string;
  /** Default interface for endpoint lookups (default public). */
  interface?: EndpointInterface;
  /**
   * Re-authenticate this long before the token expires (default 120 s, at
   * most half the token's lifetime).
   */
  reauthMarginMs?: number;
  /** Use this transport instead of building one from the options. */
  transport?: HttpTransport;
  /**
   * How long a failed authentication is remembered before the next one is
   * tried, for every caller (default 5 s doubling to 5 minutes).
   */
  authBackoff?: AuthBackoffOptions;
  /** Called after every authentication attempt (metrics). */
  onAuthentication?: (outcome: AuthOutcome) => void;
}

/** Endpoint lookup options. */
export interface EndpointQuery {
  /** public, internal or admin (default: the session's). */
  interface?: EndpointInterface;
  /** Region (default: the session's; none = the service's only region). */
  region?: string;
}

/** What a password or token login asks Keystone to scope the token to. */
function scopeOf(auth: PasswordAuth | TokenAuth): Record<string, unknown> {
  if (auth.systemScope === "all") return { system: { all: true } };
  const project = auth.projectId !== undefined ? { id: auth.projectId } : {
    name: auth.projectName,
    domain: auth.projectDomainId !== undefined
      ? { id: auth.projectDomainId }
      : { name: auth.projectDomainName },
  };
  return { project };
}

function authBody(
  auth: PasswordAuth | ApplicationCredentialAuth | TokenAuth,
): unknown {
  if (auth.type === "token") {
    return {
      auth: {
        identity: { methods: ["token"], token: { id: auth.token } },
        scope: scopeOf(auth),
      },
    };
  }
  const user = (a: {
    username?: string;
    userId?: string;
    userDomainName?: string;
    userDomainId?: string;
  }): Record<string, unknown> => {
    if (a.userId !== undefined) return { id: a.userId };
    const domain = a.userDomainId !== undefined
      ? { id: a.userDomainId }
      : { name: a.userDomainName };
    return { name: a.username, domain };
  };
  if (auth.type === "password") {
    return {
      auth: {
        identity: {
          methods: ["password"],
          password: { user: { ...user(auth), password: auth.password } },
        },
        scope: scopeOf(auth),
      },
    };
  }
  const cred: Record<string, unknown> =
    auth.applicationCredentialId !== undefined
      ? { id: auth.applicationCredentialId }
      : { name: auth.applicationCredentialName, user: user(auth) };
  cred["secret"] = auth.applicationCredentialSecret;
  return {
    auth: {
      identity: {
        methods: ["application_credential"],
        application_credential: cred,
      },
    },
  };
}

/**
 * A Keystone v3 session shared by the Nova and Placement clients.
 *
 * @example
 * ```ts
 * import { KeystoneSession } from "./keystone.ts";
 * const session = new KeystoneSession({
 *   authUrl: "http://127.0.0.1:5000/v3",
 *   auth: { type: "v3applicationcredential", applicationCredentialId: "id", applicationCredentialSecret: "s" },
 * });
 * // const novaUrl = await session.endpoint("compute");
 * ```
 */
export class KeystoneSession {
  readonly #authUrl: string;
  readonly #auth: PasswordAuth | ApplicationCredentialAuth | TokenAuth;
  readonly #region: string | undefined;
  readonly #interface: EndpointInterface;
  readonly #marginMs: number;
  readonly #transport: HttpTransport;
  #ownedClient: Deno.HttpClient | undefined;
  #token: Token | undefined;
  #pending: Promise<Token> | undefined;
  #authCount = 0;
  readonly #backoff: Required<AuthBackoffOptions>;
  readonly #onAuthentication: (outcome: AuthOutcome) => void;
  /** The last failed authentication, while no token has been got since. */
  #failure:
    | { error: OpenStackError; count: number; retryAt: number }
    | undefined;

  /** Creates a session; no call is made until a token is needed. */
  constructor(options: KeystoneSessionOptions) {
    if (!/^https?:\/\//.test(options.authUrl)) {
      throw new TypeError(
        `authUrl must be an http(s) URL, got "${options.authUrl}"`,
      );
    }
    this.#authUrl = options.authUrl.replace(/\/+$/, "");
    this.#auth = options.auth;
    this.#region = options.regionName;
    this.#interface = options.interface ?? "public";
    this.#marginMs = options.reauthMarginMs ?? 120_000;
    if (this.#marginMs < 0) {
      throw new RangeError(
        `reauthMarginMs must be >= 0, got ${options.reauthMarginMs}`,
      );
    }
    this.#transport = options.transport ?? new HttpTransport(options);
    this.#ownedClient = undefined;
    this.#backoff = checkedAuthBackoff(options.authBackoff ?? {});
    this.#onAuthentication = options.onAuthentication ?? (() => {});
  }

  /**
   * Builds a session from a resolved {@linkcode CloudConfig}; a CA bundle
   * or a client certificate in the config becomes a Deno HTTP client
   * (closed by {@linkcode close}), used for Keystone and every endpoint.
   */
  static fromConfig(
    config: CloudConfig,
    options: Omit<KeystoneSessionOptions, "authUrl" | "auth"> = {},
  ): KeystoneSession {
    const tls: ActionTls = {
      ...(config.caCert === undefined ? {} : { caCerts: [config.caCert.pem] }),
      ...(config.clientCert === undefined ? {} : {
        clientCert: {
          cert: config.clientCert.certPem,
          key: config.clientCert.keyPem,
        },
      }),
    };
    let httpClient = options.httpClient;
    let owned: Deno.HttpClient | undefined;
    if (httpClient === undefined && Object.keys(tls).length > 0) {
      owned = Deno.createHttpClient({
        ...(tls.caCerts === undefined ? {} : { caCerts: tls.caCerts }),
        ...tls.clientCert,
      });
      httpClient = owned;
    }
    const session = new KeystoneSession({
      ...options,
      ...(httpClient === undefined ? {} : { httpClient }),
      tls: options.tls ?? tls,
      authUrl: config.authUrl,
      auth: config.auth,
      ...(config.regionName === undefined
        ? {}
        : { regionName: config.regionName }),
      interface: config.interface,
    });
    session.#ownedClient = owned;
    return session;
  }

  /** Releases the HTTP client this session created, if any. */
  close(): void {
    this.#ownedClient?.close();
    this.#ownedClient = undefined;
  }

  /** The transport (shared by the service clients). */
  get transport(): HttpTransport {
    return this.#transport;
  }

  /** The logger. */
  get logger(): Logger {
    return this.#transport.logger;
  }

  /** Whether Keystone refused the credentials at the last attempt. */
  get credentialsRefused(): boolean {
    return this.#failure?.error instanceof UnauthorizedError;
  }

  /** How many times this session authenticated (for tests and metrics). */
  get authCount(): number {
    return this.#authCount;
  }

  /** Forgets the current token; the next call authenticates again. */
  invalidate(): void {
    this.#token = undefined;
  }

  /**
   * A valid token, authenticating when none is cached or it is about to
   * expire. Concurrent callers share one authentication; after a failed one,
   * every caller gets the failure again without a call to Keystone until
   * the backoff has passed.
   *
   * @throws {CredentialsRefusedError} while Keystone refuses the credentials.
   */
  async token(): Promise<Token> {
    const now = this.#transport.clock.now();
    const t = this.#token;
    if (t !== undefined) {
      const margin = Math.min(this.#marginMs, (t.expiresAt - t.obtainedAt) / 2);
      if (now < t.expiresAt - margin) return t;
      this.logger.info(
        {
          authUrl: this.#authUrl,
          expiresAt: new Date(t.expiresAt).toISOString(),
        },
        "Keystone token about to expire; re-authenticating",
      );
    }
    if (this.#pending === undefined) {
      const failure = this.#failure;
      if (failure !== undefined && now < failure.retryAt) {
        throw this.#backingOff(failure, failure.retryAt - now);
      }
      this.#pending = this.#authenticate().finally(() => {
        this.#pending = undefined;
      });
    }
    return await this.#pending;
  }

  /** One authentication; a failure is remembered, logged and reported. */
  async #authenticate(): Promise<Token> {
    let token: Token;
    try {
      token = await this.#login();
    } catch (e) {
      if (!(e instanceof OpenStackError)) throw e;
      const count = (this.#failure?.count ?? 0) + 1;
      const waitMs = authRetryDelayMs(count, this.#backoff);
      const failure = {
        error: e,
        count,
        retryAt: this.#transport.clock.now() + waitMs,
      };
      this.#failure = failure;
      const refused = e instanceof UnauthorizedError;
      this.logger.warn(
        {
          authUrl: urlForLog(this.#authUrl),
          method: this.#auth.type,
          ...this.#who(),
          status: e.status,
          requestId: e.requestId,
          failures: count,
          retryInMs: waitMs,
          error: e.message,
        },
        refused
          ? "Keystone REFUSED the credentials: no OpenStack call is made until the next attempt; fix the credentials (OpenStack Secret) and restart"
          : "authenticating with Keystone failed: every caller waits for the next attempt",
      );
      this.#onAuthentication({
        ok: false,
        refused,
        failures: count,
        retryInMs: waitMs,
      });
      throw this.#backingOff(failure, waitMs);
    }
    this.#failure = undefined;
    this.#onAuthentication({ ok: true });
    return token;
  }

  /** The error every caller gets while a failed authentication backs off. */
  #backingOff(
    failure: { error: OpenStackError; count: number },
    waitMs: number,
  ): OpenStackError {
    const e = failure.error;
    const details = {
      ...(e.status === undefined ? {} : { status: e.status }),
      ...(e.requestId === undefined ? {} : { requestId: e.requestId }),
      retryAfterMs: waitMs,
      cause: e,
    };
    if (e instanceof UnauthorizedError) {
      // The same text at every attempt: Events from it are counted.
      const who = Object.values(this.#who())[0] ?? "";
      return new CredentialsRefusedError(
        `Keystone ${
          urlForLog(this.#authUrl)
        } refused the credentials of ${who} (${this.#auth.type}): ${e.message}`,
        details,
        failure.count,
      );
    }
    return new UnavailableError(
      `authenticating with Keystone ${
        urlForLog(this.#authUrl)
      } failed: ${e.message}`,
      details,
    );
  }

  /** Who authenticates, without a secret: for logs and messages. */
  #who(): Record<string, string> {
    const a = this.#auth;
    if (a.type === "token") return { token: "(a token)" };
    if (a.type === "v3applicationcredential") {
      return a.applicationCredentialId !== undefined
        ? { applicationCredentialId: a.applicationCredentialId }
        : {
          applicationCredentialName: a.applicationCredentialName ?? "",
        };
    }
    return a.userId !== undefined
      ? { userId: a.userId }
      : { username: a.username ?? "" };
  }

  async #login(): Promise<Token> {
    const url = `${this.#authUrl}/auth/tokens`;
    const res = await this.#transport.send({
      method: "POST",
      url,
      body: authBody(this.#auth),
      // Creating a token changes nothing that matters: safe to retry.
      idempotent: true,
      action: "keystone.authenticate",
    });
    const value = res.headers.get("x-subject-token");
    if (value === null || value === "") {
      throw new InvalidResponseError(
        `POST ${urlForLog(url)}: no X-Subject-Token header in the response`,
        res.requestId === undefined ? {} : { requestId: res.requestId },
      );
    }
    const parsed = tokenBodySchema.safeParse(res.json);
    if (!parsed.success) {
      throw new InvalidResponseError(
        `POST ${urlForLog(url)}: unexpected token body: ${
          parsed.error.issues[0]?.path.join(".")
        }: ${parsed.error.issues[0]?.message}`,
        res.requestId === undefined ? {} : { requestId: res.requestId },
      );
    }
    const body = parsed.data.token;
    const token: Token = {
      value,
      expiresAt: Date.parse(body.expires_at),
      obtainedAt: this.#transport.clock.now(),
      catalog: (body.catalog ?? []).map((s) => ({
        type: s.type,
        name: s.name,
        endpoints: s.endpoints.map((ep) => ({
          interface: ep.interface,
          region: ep.region ?? ep.region_id ?? undefined,
          url: ep.url.replace(/\/+$/, ""),
        })),
      })),
      projectId: body.project?.id,
    };
    this.#token = token;
    this.#authCount++;
    this.logger.info({
      authUrl: urlForLog(this.#authUrl),
      method: this.#auth.type,
      requestId: res.requestId,
      expiresAt: body.expires_at,
    }, "authenticated with Keystone");
    return token;
  }

  /**
   * The base URL of a service from the catalog.
   *
   * @throws {EndpointNotFoundError} when the catalog has no such endpoint.
   */
  async endpoint(type: string, query: EndpointQuery = {}): Promise<string> {
    const token = await this.token();
    return findEndpoint(token.catalog, type, {
      interface: query.interface ?? this.#interface,
      ...(query.region ?? this.#region) === undefined
        ? {}
        : { region: query.region ?? this.#region ?? "" },
    });
  }

  /**
   * Sends a request with the token. A 401 invalidates the token and the
   * request is sent once more with a fresh one (a 401 means the request was
   * not processed, so this is safe for actions too).
   */
  async request(req: HttpRequest): Promise<HttpResponse> {
    const first = await this.token();
    try {
      return await this.#transport.send(withToken(req, first.value));
    } catch (e) {
      if (!(e instanceof UnauthorizedError)) throw e;
      if (this.#token === first) this.#token = undefined;
      this.logger.warn({
        action: req.action,
        method: req.method,
        url: urlForLog(req.url),
        requestId: e.requestId,
      }, "token refused (401); re-authenticating once");
      const second = await this.token();
      return await this.#transport.send(withToken(req, second.value));
    }
  }
}

function withToken(req: HttpRequest, token: string): HttpRequest {
  return { ...req, headers: { ...req.headers, "X-Auth-Token": token } };
}

/**
 * Picks an endpoint from a catalog by service type, interface and region.
 * Without a region, the service's endpoints must all be in one region: a
 * catalog offering it in several is refused rather than one picked, since
 * the first of any region may be another region's Nova.
 *
 * @throws {EndpointNotFoundError} naming the region asked for and the
 * regions that offer the service, or the regions to choose from.
 *
 * @example
 * ```ts
 * import { findEndpoint } from "./keystone.ts";
 * const url = findEndpoint([{ type: "compute", name: "nova", endpoints: [
 *   { interface: "public", region: "RegionOne", url: "http://nova/v2.1" },
 * ] }], "compute", { interface: "public", region: "RegionOne" });
 * console.log(url); // http://nova/v2.1
 * ```
 */
export function findEndpoint(
  catalog: readonly CatalogEntry[],
  type: string,
  query: { interface: EndpointInterface; region?: string },
): string {
  const offered = catalog
    .filter((entry) => entry.type === type)
    .flatMap((entry) => entry.endpoints)
    .filter((ep) => ep.interface === query.interface);
  const what = `${type} endpoint with interface ${query.interface}`;
  if (offered.length === 0) {
    throw new EndpointNotFoundError(
      `no ${what} in the service catalog${
        query.region === undefined ? "" : ` (region "${query.region}")`
      }`,
    );
  }
  const regions = [
    ...new Set(offered.map((ep) => ep.region ?? "(no region)")),
  ];
  const listed = regions.map((r) => `"${r}"`).join(", ");
  if (query.region !== undefined) {
    const ep = offered.find((ep) => ep.region === query.region);
    if (ep !== undefined) return ep.url;
    throw new EndpointNotFoundError(
      `no ${what} in region "${query.region}" in the service catalog; the catalog has it in ${
        regions.length === 1 ? "region" : "regions"
      } ${listed}: expected OS_REGION_NAME (or region_name) naming one of them`,
    );
  }
  const [first] = offered;
  if (regions.length > 1 || first === undefined) {
    throw new EndpointNotFoundError(
      `the service catalog has a ${what} in several regions (${listed}) and no region is set: expected OS_REGION_NAME (or region_name) naming one of them`,
    );
  }
  return first.url;
}
