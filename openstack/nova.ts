/**
 * Nova client: the few compute calls a hypervisor drain needs, at the
 * highest microversion both it (up to 2.90) and Nova support, negotiated
 * from Nova's version document before the first call (microversion.ts).
 *
 * @module
 */

import { z } from "zod";
import {
  DEFAULT_COMPUTE_API_VERSION,
  type EndpointInterface,
} from "./config.ts";
import { ConflictError, NotFoundError, OpenStackError } from "./errors.ts";
import {
  chooseComputeVersion,
  COMPUTE_CEILING,
  versionDocumentUrl,
} from "./microversion.ts";
import type { HttpRequest, HttpResponse } from "./http.ts";
import type { KeystoneSession } from "./keystone.ts";
import { parseBody } from "./parse.ts";
import {
  type InstanceAction,
  instanceActionShowSchema,
} from "./instance_actions.ts";
import {
  type ComputeService,
  type Hypervisor,
  hypervisorListSchema,
  type Migration,
  migrationListSchema,
  type Server,
  serverListSchema,
  type ServerMigration,
  serverMigrationListSchema,
  serverMigrationShowSchema,
  serverShowSchema,
  serviceListSchema,
  serviceShowSchema,
} from "./nova_types.ts";

/** Options of {@linkcode NovaClient}. */
export interface NovaClientOptions {
  /**
   * A pinned microversion (a configured `compute_api_version`): sent as
   * `OpenStack-API-Version: compute X` when Nova supports it, refused with a
   * MicroversionError otherwise. Without it, the highest version up to
   * `maxMicroversion` that Nova supports is negotiated.
   */
  microversion?: string;
  /** The highest microversion to negotiate (default 2.90). */
  maxMicroversion?: string;
  /** Catalog interface (default: the session's). */
  interface?: EndpointInterface;
  /** Catalog region (default: the session's). */
  region?: string;
  /** Use this base URL instead of the catalog's. */
  endpointOverride?: string;
  /** Page size of list calls (default: Nova's own limit). */
  pageSize?: number;
  /** Timeout of one call, in milliseconds (default: the transport's). */
  timeoutMs?: number;
  /**
   * A read not answered this long (ms) is sent again beside the first
   * (http.ts `hedgeAfterMs`); default: never.
   */
  readHedgeMs?: number;
}

/** Result of an action Nova accepted (202/204). */
export interface ActionResult {
  /** `X-Openstack-Request-Id` of the accepted action. */
  requestId: string | undefined;
}

/** One HTTP call to Nova as it ended, for {@linkcode NovaClient.onCall}. */
export interface NovaCall {
  /** The client's name of it, e.g. `liveMigrate`. */
  call: string;
  /** HTTP method. */
  method: HttpRequest["method"];
  /** The path's template, e.g. `/servers/{id}/action`. */
  route: string;
  /** `ok`, `not_found`, `conflict`, the HTTP status, `no_response` or `error`. */
  outcome: string;
}

/**
 * A call's outcome: `ok`, or what its error says.
 *
 * @example
 * ```ts
 * import { callOutcome } from "./nova.ts";
 * import { NotFoundError, UnavailableError } from "./errors.ts";
 * console.assert(callOutcome(undefined) === "ok");
 * console.assert(callOutcome(new NotFoundError("gone", { status: 404 })) === "not_found");
 * console.assert(callOutcome(new UnavailableError("reset")) === "no_response");
 * ```
 */
export function callOutcome(err: unknown): string {
  if (err === undefined) return "ok";
  if (err instanceof NotFoundError) return "not_found";
  if (err instanceof ConflictError) return "conflict";
  if (err instanceof OpenStackError) {
    return err.status === undefined ? "no_response" : String(err.status);
  }
  return "error";
}

/** Filters of {@linkcode NovaClient.listMigrations}. */
export interface MigrationFilter {
  /** Source or destination compute host. */
  host?: string;
  /** One server. */
  instanceUuid?: string;
  /** live-migration, migration, resize, evacuation. */
  type?: string;
  /** Only records updated at or after this time. */
  changesSince?: Date | string;
  /** One status. */
  status?: string;
}

/** Options of a live migration. */
export interface LiveMigrateOptions {
  /** Target host; null lets the scheduler pick (default). */
  host?: string | null;
  /** Block migration: true, false or "auto" (default). */
  blockMigration?: boolean | "auto";
}

const versionDocumentSchema = z.object({
  version: z.object({
    version: z.string(),
    min_version: z.string(),
  }),
});

/** A route with its `{name}` parts filled from `params`, encoded. */
function fillRoute(
  route: string,
  params: Record<string, string | number> | undefined,
): string {
  return route.replace(
    /\{(\w+)\}/g,
    (_, name: string) => encodeURIComponent(String(params?.[name] ?? "")),
  );
}

function isoTime(t: Date | string): string {
  if (typeof t === "string") return t;
  // Nova parses ISO 8601; drop milliseconds for portability.
  return t.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/**
 * A Nova (compute) client on a Keystone session.
 *
 * @example
 * ```ts
 * import { KeystoneSession } from "./keystone.ts";
 * import { NovaClient } from "./nova.ts";
 * const session = new KeystoneSession({
 *   authUrl: "http://127.0.0.1:5000/v3",
 *   auth: { type: "v3applicationcredential", applicationCredentialId: "id", applicationCredentialSecret: "s" },
 * });
 * const nova = new NovaClient(session);
 * // for (const s of await nova.listServersOnHost("node042")) console.log(s.id, s.status);
 * ```
 */
export class NovaClient {
  readonly #session: KeystoneSession;
  #microversion: string;
  #negotiated: Promise<string> | undefined;
  readonly #options: NovaClientOptions;
  readonly #dateListeners = new Set<(novaDateMs: number) => void>();
  readonly #callListeners = new Set<(call: NovaCall) => void>();

  /** Creates a client; no call is made until a method is used. */
  constructor(session: KeystoneSession, options: NovaClientOptions = {}) {
    const mv = options.microversion ?? options.maxMicroversion ??
      DEFAULT_COMPUTE_API_VERSION;
    for (
      const [name, v] of [["microversion", mv], [
        "maxMicroversion",
        options.maxMicroversion ?? COMPUTE_CEILING,
      ]]
    ) {
      if (!/^2\.\d+$/.test(v ?? "")) {
        throw new RangeError(`${name} must look like "2.N", got "${v}"`);
      }
    }
    if (
      options.pageSize !== undefined &&
      (!Number.isInteger(options.pageSize) || options.pageSize < 1)
    ) {
      throw new RangeError(
        `pageSize must be an integer >= 1, got ${options.pageSize}`,
      );
    }
    this.#session = session;
    this.#microversion = mv;
    this.#options = options;
  }

  /**
   * The microversion this client sends: the negotiated one once
   * {@linkcode negotiate} has run (every call runs it first), the pinned or
   * highest wanted one before.
   */
  get microversion(): string {
    return this.#microversion;
  }

  /**
   * Settles the microversion from Nova's version document (once; a failed
   * attempt is tried again by the next call).
   *
   * @throws {MicroversionError} when Nova's range and evictor's do not meet,
   * or Nova does not support the pinned version.
   */
  negotiate(signal?: AbortSignal): Promise<string> {
    this.#negotiated ??= this.#readVersion(signal).catch((err) => {
      this.#negotiated = undefined;
      throw err;
    });
    return this.#negotiated;
  }

  async #readVersion(signal?: AbortSignal): Promise<string> {
    const url = versionDocumentUrl(await this.#base());
    let range: { min: string; max: string };
    try {
      const res = await this.#session.request({
        method: "GET",
        url,
        idempotent: true,
        action: "nova.versions",
        ...(signal === undefined ? {} : { signal }),
      });
      const doc = parseBody(versionDocumentSchema, res, `GET ${url}`);
      range = { min: doc.version.min_version, max: doc.version.version };
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
      // No version document where Nova serves one: send what we would
      // have, and let the calls answer for themselves.
      this.#session.logger.warn(
        { url, microversion: this.#microversion },
        "Nova serves no version document; microversion not negotiated",
      );
      return this.#microversion;
    }
    const chosen = chooseComputeVersion(range, {
      ...(this.#options.microversion === undefined
        ? {}
        : { pinned: this.#options.microversion }),
      ceiling: this.#options.maxMicroversion ?? COMPUTE_CEILING,
      where: url,
    });
    if (chosen !== this.#microversion) {
      this.#session.logger.info(
        { wanted: this.#microversion, nova: range, chosen },
        "compute microversion negotiated",
      );
    }
    this.#microversion = chosen;
    return chosen;
  }

  async #base(): Promise<string> {
    if (this.#options.endpointOverride !== undefined) {
      return this.#options.endpointOverride.replace(/\/+$/, "");
    }
    return await this.#session.endpoint("compute", {
      ...(this.#options.interface === undefined
        ? {}
        : { interface: this.#options.interface }),
      ...(this.#options.region === undefined
        ? {}
        : { region: this.#options.region }),
    });
  }

  /**
   * Calls `listener` with Nova's clock (the `Date` header of each of its
   * answers, epoch ms in whole seconds) as each answer arrives, so that a
   * caller can learn how far Nova's clock is from its own. Returns the
   * unsubscribe function.
   *
   * @example
   * ```ts ignore
   * const stop = nova.onServerDate((ms) => console.log(ms - Date.now()));
   * ```
   */
  onServerDate(listener: (novaDateMs: number) => void): () => void {
    this.#dateListeners.add(listener);
    return () => this.#dateListeners.delete(listener);
  }

  /**
   * Calls `listener` as each call to Nova ends (every page of a list is
   * one), with its route and outcome: where Nova calls are counted.
   * Returns the unsubscribe function.
   *
   * @example
   * ```ts ignore
   * nova.onCall((c) => counter.inc({ ...c }));
   * ```
   */
  onCall(listener: (call: NovaCall) => void): () => void {
    this.#callListeners.add(listener);
    return () => this.#callListeners.delete(listener);
  }

  #noteServerDate(headers: Headers): void {
    if (this.#dateListeners.size === 0) return;
    const raw = headers.get("date");
    const ms = raw === null ? Number.NaN : Date.parse(raw);
    if (Number.isNaN(ms)) return;
    for (const l of this.#dateListeners) l(ms);
  }

  async #call(
    req: Omit<HttpRequest, "url" | "headers" | "action"> & {
      /** The client's name of the call. */
      action: string;
      /** The path's template; `{name}` is filled from `params`. */
      route: string;
      params?: Record<string, string | number>;
      query?: URLSearchParams;
    },
  ): Promise<HttpResponse> {
    const base = await this.#base();
    await this.negotiate(req.signal);
    const { route, params, query, ...rest } = req;
    const path = fillRoute(route, params);
    const qs = query === undefined || query.size === 0 ? "" : `?${query}`;
    const told = (err?: unknown) => {
      const call = {
        call: req.action,
        method: req.method,
        route,
        outcome: callOutcome(err),
      };
      for (const l of this.#callListeners) l(call);
    };
    let res: HttpResponse;
    try {
      res = await this.#session.request({
        ...rest,
        action: `nova.${req.action}`,
        url: `${base}${path}${qs}`,
        headers: {
          "OpenStack-API-Version": `compute ${this.#microversion}`,
          "X-OpenStack-Nova-API-Version": this.#microversion,
        },
        ...(this.#options.timeoutMs === undefined
          ? {}
          : { timeoutMs: this.#options.timeoutMs }),
      });
    } catch (err) {
      told(err);
      throw err;
    }
    told();
    this.#noteServerDate(res.headers);
    return res;
  }

  async #get<S extends z.ZodType>(
    action: string,
    route: string,
    params: Record<string, string> | undefined,
    query: URLSearchParams | undefined,
    schema: S,
    signal?: AbortSignal,
  ): Promise<z.output<S>> {
    const res = await this.#call({
      method: "GET",
      route,
      ...(params === undefined ? {} : { params }),
      ...(query === undefined ? {} : { query }),
      idempotent: true,
      action,
      ...(signal === undefined ? {} : { signal }),
      ...(this.#options.readHedgeMs === undefined
        ? {}
        : { hedgeAfterMs: this.#options.readHedgeMs }),
    });
    return parseBody(schema, res, `GET ${fillRoute(route, params)}`);
  }

  async #action(
    action: string,
    serverId: string,
    body: unknown,
    signal?: AbortSignal,
  ): Promise<ActionResult> {
    const res = await this.#call({
      method: "POST",
      route: "/servers/{id}/action",
      params: { id: serverId },
      body,
      idempotent: false,
      action,
      ...(signal === undefined ? {} : { signal }),
    });
    this.#session.logger.info(
      {
        action: `nova.${action}`,
        serverId,
        requestId: res.requestId,
        status: res.status,
      },
      "Nova accepted action",
    );
    return { requestId: res.requestId };
  }

  async #pages<T>(
    query: URLSearchParams,
    fetchPage: (
      q: URLSearchParams,
    ) => Promise<{ items: T[]; next: string | undefined }>,
  ): Promise<T[]> {
    const out: T[] = [];
    if (this.#options.pageSize !== undefined) {
      query.set("limit", String(this.#options.pageSize));
    }
    const seen = new Set<string>();
    for (;;) {
      const page = await fetchPage(query);
      out.push(...page.items);
      if (page.next === undefined) return out;
      const marker = new URL(page.next, "http://x/").searchParams.get("marker");
      if (marker === null || seen.has(marker)) return out;
      seen.add(marker);
      query.set("marker", marker);
    }
  }

  /**
   * Every server on a compute host, all pages
   * (`GET /servers/detail?all_tenants=1&host=`).
   */
  async listServersOnHost(
    host: string,
    signal?: AbortSignal,
  ): Promise<Server[]> {
    if (host === "") {
      throw new TypeError('host must be a non-empty string, got ""');
    }
    const query = new URLSearchParams({ all_tenants: "1", host });
    return await this.#pages(
      query,
      async (q) => {
        const body = await this.#get(
          "listServersOnHost",
          "/servers/detail",
          undefined,
          q,
          serverListSchema,
          signal,
        );
        return {
          items: body.servers,
          next: body.servers_links?.find((l) => l.rel === "next")?.href,
        };
      },
    );
  }

  /**
   * One server (`GET /servers/{id}`).
   *
   * @throws {NotFoundError} when it does not exist (deleted).
   */
  async getServer(id: string, signal?: AbortSignal): Promise<Server> {
    const body = await this.#get(
      "getServer",
      "/servers/{id}",
      { id },
      undefined,
      serverShowSchema,
      signal,
    );
    return body.server;
  }

  /**
   * Starts a live migration (`os-migrateLive`, host null and block
   * migration auto by default). Never retried: on Timeout/Unavailable the
   * outcome is unknown and the caller must re-observe.
   *
   * @throws {ConflictError} when the server is in the wrong state.
   */
  async liveMigrate(
    id: string,
    options: LiveMigrateOptions = {},
    signal?: AbortSignal,
  ): Promise<ActionResult> {
    return await this.#action("liveMigrate", id, {
      "os-migrateLive": {
        host: options.host ?? null,
        block_migration: options.blockMigration ?? "auto",
      },
    }, signal);
  }

  /**
   * Starts a cold migration (`migrate`). Never retried.
   *
   * @throws {BadRequestError} when no host can take the server.
   */
  async coldMigrate(
    id: string,
    options: { host?: string } = {},
    signal?: AbortSignal,
  ): Promise<ActionResult> {
    return await this.#action(
      "coldMigrate",
      id,
      { migrate: options.host === undefined ? null : { host: options.host } },
      signal,
    );
  }

  /** Confirms a finished cold migration (`confirmResize`). */
  async confirmResize(id: string, signal?: AbortSignal): Promise<ActionResult> {
    return await this.#action(
      "confirmResize",
      id,
      { confirmResize: null },
      signal,
    );
  }

  /**
   * What Nova recorded about one request on a server
   * (`GET /servers/{id}/os-instance-actions/{request_id}`), e.g. the
   * request id a start was answered with: its events say why a migration
   * failed after the 202 (`details`, 2.84+; see
   * instance_actions.ts `failureReason`).
   *
   * @throws {NotFoundError} when Nova has no such action (or server).
   */
  async getInstanceAction(
    serverId: string,
    requestId: string,
    signal?: AbortSignal,
  ): Promise<InstanceAction> {
    if (serverId === "" || requestId === "") {
      throw new TypeError(
        `serverId and requestId must be non-empty, got "${serverId}" and "${requestId}"`,
      );
    }
    const body = await this.#get(
      "getInstanceAction",
      "/servers/{id}/os-instance-actions/{requestId}",
      { id: serverId, requestId },
      undefined,
      instanceActionShowSchema,
      signal,
    );
    return body.instanceAction;
  }

  /** Migration records, all pages (`GET /os-migrations`). */
  async listMigrations(
    filter: MigrationFilter = {},
    signal?: AbortSignal,
  ): Promise<Migration[]> {
    const query = new URLSearchParams();
    if (filter.host !== undefined) query.set("host", filter.host);
    if (filter.instanceUuid !== undefined) {
      query.set("instance_uuid", filter.instanceUuid);
    }
    if (filter.type !== undefined) query.set("migration_type", filter.type);
    if (filter.status !== undefined) query.set("status", filter.status);
    if (filter.changesSince !== undefined) {
      query.set("changes-since", isoTime(filter.changesSince));
    }
    return await this.#pages(query, async (q) => {
      const body = await this.#get(
        "listMigrations",
        "/os-migrations",
        undefined,
        q,
        migrationListSchema,
        signal,
      );
      return {
        items: body.migrations,
        next: body.migrations_links?.find((l) => l.rel === "next")?.href,
      };
    });
  }

  /** A server's in-progress live migrations (`GET /servers/{id}/migrations`). */
  async listServerMigrations(
    serverId: string,
    signal?: AbortSignal,
  ): Promise<ServerMigration[]> {
    const body = await this.#get(
      "listServerMigrations",
      "/servers/{id}/migrations",
      { id: serverId },
      undefined,
      serverMigrationListSchema,
      signal,
    );
    return body.migrations;
  }

  /**
   * One in-progress live migration with its progress counters
   * (`GET /servers/{id}/migrations/{migrationId}`, 2.23+: below evictor's
   * floor of 2.59). A read: retried and bounded like the others. Nova
   * answers 404 once the migration is no longer in progress (or the server
   * is gone): that is an answer, `undefined`, not an error.
   *
   * @example
   * ```ts ignore
   * const m = await nova.getServerMigration("vm-uuid", 42);
   * if (m === undefined) console.log("no longer copying");
   * else console.log(m.memoryRemainingBytes, "of", m.memoryTotalBytes);
   * ```
   */
  async getServerMigration(
    serverId: string,
    migrationId: number | string,
    signal?: AbortSignal,
  ): Promise<ServerMigration | undefined> {
    if (serverId === "" || !/^\d+$/.test(String(migrationId))) {
      throw new TypeError(
        `serverId must be non-empty and migrationId a non-negative integer, got "${serverId}" and "${migrationId}"`,
      );
    }
    try {
      const body = await this.#get(
        "getServerMigration",
        "/servers/{id}/migrations/{migrationId}",
        { id: serverId, migrationId: String(migrationId) },
        undefined,
        serverMigrationShowSchema,
        signal,
      );
      return body.migration;
    } catch (err) {
      if (err instanceof NotFoundError) return undefined;
      throw err;
    }
  }

  /**
   * Aborts an in-progress live migration
   * (`DELETE /servers/{id}/migrations/{migrationId}`). Never retried.
   */
  async abortLiveMigration(
    serverId: string,
    migrationId: number,
    signal?: AbortSignal,
  ): Promise<ActionResult> {
    return await this.#migrationAction(
      "abortLiveMigration",
      serverId,
      migrationId,
      { method: "DELETE", route: "/servers/{id}/migrations/{migrationId}" },
      signal,
    );
  }

  /**
   * Forces an in-progress live migration to complete
   * (`POST /servers/{id}/migrations/{migrationId}/action`
   * `{"force_complete": null}`, 2.22+): Nova switches the copy to post-copy
   * where `live_migration_permit_post_copy` allows it, else pauses the VM
   * until the copy converges. Never retried: the second one of a pair may
   * act on a copy already switched.
   *
   * @throws {ConflictError} when the server is not migrating.
   * @throws {BadRequestError} when the migration is not running.
   */
  async forceCompleteLiveMigration(
    serverId: string,
    migrationId: number,
    signal?: AbortSignal,
  ): Promise<ActionResult> {
    return await this.#migrationAction(
      "forceCompleteLiveMigration",
      serverId,
      migrationId,
      {
        method: "POST",
        route: "/servers/{id}/migrations/{migrationId}/action",
        body: { force_complete: null },
      },
      signal,
    );
  }

  /** One non-idempotent action on a live migration (never retried), logged once accepted. */
  async #migrationAction(
    action: string,
    serverId: string,
    migrationId: number,
    request: { method: "POST" | "DELETE"; route: string; body?: unknown },
    signal?: AbortSignal,
  ): Promise<ActionResult> {
    if (!Number.isInteger(migrationId) || migrationId < 0) {
      throw new RangeError(
        `migrationId must be a non-negative integer, got ${migrationId}`,
      );
    }
    const res = await this.#call({
      ...request,
      params: { id: serverId, migrationId },
      idempotent: false,
      action,
      ...(signal === undefined ? {} : { signal }),
    });
    this.#session.logger.info(
      {
        action: `nova.${action}`,
        serverId,
        migrationId,
        requestId: res.requestId,
      },
      "Nova accepted action",
    );
    return { requestId: res.requestId };
  }

  /**
   * The hypervisor whose hostname is exactly `hostname`, or undefined.
   * (Nova matches the pattern as a substring; this filters exactly.)
   */
  async findHypervisorByHostname(
    hostname: string,
    options: { withServers?: boolean } = {},
    signal?: AbortSignal,
  ): Promise<Hypervisor | undefined> {
    if (hostname === "") {
      throw new TypeError('hostname must be a non-empty string, got ""');
    }
    const query = new URLSearchParams({
      hypervisor_hostname_pattern: hostname,
    });
    if (options.withServers === true) query.set("with_servers", "true");
    try {
      const body = await this.#get(
        "findHypervisorByHostname",
        "/os-hypervisors/detail",
        undefined,
        query,
        hypervisorListSchema,
        signal,
      );
      return body.hypervisors.find((h) => h.hypervisorHostname === hostname);
    } catch (e) {
      if (e instanceof NotFoundError) return undefined;
      throw e;
    }
  }

  /** The nova-compute service of a host, or undefined. */
  async findComputeService(
    host: string,
    signal?: AbortSignal,
  ): Promise<ComputeService | undefined> {
    if (host === "") {
      throw new TypeError('host must be a non-empty string, got ""');
    }
    const body = await this.#get(
      "findComputeService",
      "/os-services",
      undefined,
      new URLSearchParams({ binary: "nova-compute", host }),
      serviceListSchema,
      signal,
    );
    return body.services.find((s) =>
      s.host === host && s.binary === "nova-compute"
    );
  }

  /**
   * Every nova-compute service (`GET /os-services?binary=nova-compute`;
   * Nova does not page this list). Used to discover compute hosts.
   *
   * @example
   * ```ts ignore
   * const hosts = (await nova.listComputeServices()).map((s) => s.host);
   * ```
   */
  async listComputeServices(signal?: AbortSignal): Promise<ComputeService[]> {
    const body = await this.#get(
      "listComputeServices",
      "/os-services",
      undefined,
      new URLSearchParams({ binary: "nova-compute" }),
      serviceListSchema,
      signal,
    );
    return body.services.filter((s) => s.binary === "nova-compute");
  }

  /**
   * Enables or disables a compute service (`PUT /os-services/{id}`); a
   * reason is only sent when disabling. Never retried.
   */
  async setComputeServiceStatus(
    id: string,
    enabled: boolean,
    reason?: string,
    signal?: AbortSignal,
  ): Promise<ComputeService> {
    if (enabled && reason !== undefined) {
      throw new TypeError(
        `reason is only allowed when disabling, got "${reason}" with enabled=true`,
      );
    }
    const res = await this.#call({
      method: "PUT",
      route: "/os-services/{id}",
      params: { id },
      body: enabled ? { status: "enabled" } : {
        status: "disabled",
        ...(reason === undefined ? {} : { disabled_reason: reason }),
      },
      idempotent: false,
      action: "setComputeServiceStatus",
      ...(signal === undefined ? {} : { signal }),
    });
    this.#session.logger.info(
      {
        action: "nova.setComputeServiceStatus",
        serviceId: id,
        enabled,
        requestId: res.requestId,
      },
      "Nova accepted action",
    );
    return parseBody(serviceShowSchema, res, "PUT /os-services/{id}").service;
  }
}
