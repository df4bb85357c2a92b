/**
 * The simulator's HTTP server: Keystone, Nova and Placement on one loopback
 * port, with token checks, microversion negotiation, injected HTTP faults
 * and call counters; and the handle tests use to steer it.
 *
 * @module
 */

import { Counters, type CountersSnapshot } from "./counters.ts";
import { errorBody, json, matchTemplate, type Service } from "./http_util.ts";
import { ADMIN_PROJECT_ID, Keystone } from "./keystone_api.ts";
import type { NotificationListener } from "./notifier.ts";
import {
  type NotificationPublisher,
  startNotificationPublisher,
} from "./publisher.ts";
import { novaRoutes } from "./nova_api.ts";
import { placementRoutes } from "./placement_api.ts";
import { Prng } from "./prng.ts";
import type { RequestContext, Route } from "./route.ts";
import {
  type HttpFault,
  type HttpFaultInput,
  httpFaultSchema,
  parseScenario,
  type Scenario,
  type ScenarioInput,
} from "./scenario.ts";
import { scaledClock, type SimClock } from "./sim_clock.ts";
import {
  type MigrationFaultKind,
  type NewServer,
  NovaFault,
  serverStatus,
  type SimServer,
  World,
} from "./world.ts";

/** Which server action an {@linkcode ActionFault} hits. */
export type FaultedAction =
  | "os-migrateLive"
  | "migrate"
  | "confirmResize"
  | "any";

/**
 * What goes wrong with the answer to one server action
 * (`POST /servers/{id}/action`).
 */
export interface ActionFault {
  /** The action it hits (default `any`). */
  action?: FaultedAction;
  /**
   * `drop`: the answer never comes (the request hangs until the client gives
   * up); `delay`: the answer comes `delayMs` real ms late; `status`: the
   * answer is an error with `status`.
   */
  mode: "drop" | "delay" | "status";
  /**
   * Whether Nova carries the action out. `drop` and `delay`: processed at
   * once, only the answer is lost or late (true), or not at all / only after
   * the delay (false). `status`: processed, then answered with the error
   * (true), or refused without effect (false).
   */
  processed: boolean;
  /** Real milliseconds of a `delay`. */
  delayMs?: number;
  /** HTTP status of a `status` fault (500, 502, 503, 504 or 429). */
  status?: 500 | 502 | 503 | 504 | 429;
  /** How many matching calls it hits (default 1). */
  times?: number;
}

interface PendingActionFault extends ActionFault {
  serverId: string;
  remaining: number;
}

/** Options of {@linkcode startNovaSim}. */
export interface NovaSimOptions {
  /** Port (default 0: any free port). */
  port?: number;
  /** Listen address (default 127.0.0.1). */
  hostname?: string;
  /** Virtual clock (default: real time scaled by the scenario's timeScale). */
  clock?: SimClock;
  /**
   * A RabbitMQ to publish Nova's versioned notifications to (exchange
   * `nova`, as Nova does); without it they are only heard in process.
   */
  amqpUrl?: string;
}

/** One call the simulator served. */
export interface ServedCall {
  /** `METHOD /path/{template}`, as in the counters. */
  key: string;
  /** The query string (with its `?`), e.g. `?host=node1&all_tenants=1`. */
  search: string;
  /** Virtual time it arrived (ms since the epoch). */
  atMs: number;
  /** Its `User-Agent` header, or null. */
  userAgent: string | null;
  /** The path's parameters of its template, e.g. `{ id, mid }`. */
  params: Record<string, string>;
}

/** Credentials the simulator accepts. */
export interface NovaSimCredentials {
  /** Keystone URL (ends with /v3). */
  authUrl: string;
  /** Password identity. */
  password: {
    username: string;
    password: string;
    userDomainName: string;
    /** The id of the user's domain. */
    userDomainId: string;
    projectName: string;
    projectDomainName: string;
    /** The id of the project's domain. */
    projectDomainId: string;
  };
  /** Application credential. */
  applicationCredential: {
    id: string;
    name: string | undefined;
    secret: string;
  };
  /** Region of the catalog. */
  region: string;
}

/** A snapshot of the simulated cloud. */
export interface NovaSimState {
  /** Virtual time. */
  now: number;
  /** Hosts. */
  hosts: {
    name: string;
    enabled: boolean;
    disabledReason: string | null;
    traits: string[];
    serviceId: string;
    hypervisorId: string;
    usedRamMb: number;
    ramMb: number;
    activeLiveMigrations: number;
    maxConcurrentLiveMigrations: number;
    servers: string[];
  }[];
  /** Servers (deleted ones flagged). */
  servers: {
    id: string;
    name: string;
    host: string | null;
    status: string;
    vmState: string;
    taskState: string | null;
    ramMb: number;
    deleted: boolean;
    /** Guest memory dirtied per second (MB/s; 0: none). */
    dirtyRateMBps: number;
    /** power_state (1 running, 3 paused, 4 shutdown). */
    powerState: number;
  }[];
  /** Migration records. */
  migrations: {
    id: number;
    uuid: string;
    serverId: string;
    type: string;
    status: string;
    source: string;
    dest: string | null;
    createdAt: number;
    updatedAt: number;
    copyMs: number;
    /** When it took one of the source's slots (virtual ms), if it did. */
    slotAt: number | undefined;
    /** `force_complete` (or Nova's timeout action) paused it or went post-copy. */
    switchedTo: "paused" | "post-copy" | undefined;
  }[];
}

/** A running simulator. */
export interface NovaSim {
  /** Keystone URL, e.g. `http://127.0.0.1:40123/identity/v3`. */
  readonly authUrl: string;
  /** Nova base URL. */
  readonly computeUrl: string;
  /** Placement base URL. */
  readonly placementUrl: string;
  /** Listening port. */
  readonly port: number;
  /** Accepted credentials. */
  readonly credentials: NovaSimCredentials;
  /** The scenario with defaults. */
  readonly scenario: Scenario;
  /** The model (for white-box assertions). */
  readonly world: World;
  /** A clouds.yaml for this simulator. */
  cloudsYaml(
    options?: { cloud?: string; auth?: "password" | "application_credential" },
  ): string;
  /** `OS_*` variables for this simulator. */
  env(auth?: "password" | "application_credential"): Record<string, string>;
  /** A snapshot of the cloud (after running due phase changes). */
  state(): NovaSimState;
  /** A snapshot of the counters. */
  counters(): CountersSnapshot;
  /** Clears the call counters. */
  resetCounters(): void;
  /**
   * Calls `listener` with every call served (as counted), its query and
   * the virtual time; returns a function removing it. For benchmarks that
   * time passes against migrations.
   */
  onCall(listener: (call: ServedCall) => void): () => void;
  /** Adds an HTTP fault rule at run time; returns a function removing it. */
  injectHttpFault(rule: HttpFaultInput): () => void;
  /** Removes every HTTP fault rule. */
  clearHttpFaults(): void;
  /** Makes the next `times` migrations of a server go wrong. */
  injectMigrationFault(
    server: string,
    kind: Exclude<MigrationFaultKind, "none">,
    times?: number,
  ): void;
  /**
   * Makes the answer to a server's next action(s) go wrong (see
   * {@linkcode ActionFault}); `server` `*` means whichever server's action
   * comes next. Returns a function removing the fault.
   */
  injectActionFault(server: string, fault: ActionFault): () => void;
  /** The action faults applied so far: which server, action and mode. */
  actionFaultLog(): { serverId: string; action: string; mode: string }[];
  /** Answers held back right now (dropped answers whose client still waits). */
  heldAnswers(): number;
  /** `os-resetState`: sets vm_state (active or error), clears task_state. */
  resetState(server: string, state: "active" | "error"): void;
  /**
   * An admin's forced live migration of a server to `host` (the scheduler
   * skipped, so even to a disabled host): an incoming migration for `host`.
   */
  migrateTo(server: string, host: string): void;
  /**
   * A user's own resize to a flavor with `newRamMb`: the server moves and
   * waits in VERIFY_RESIZE for its owner (migration_type `resize`).
   */
  resize(server: string, newRamMb: number): void;
  /** Powers a server on or off (`os-start` / `os-stop`). */
  setPower(server: string, on: boolean): void;
  /** Adds a server on any host, even a disabled one (admin-forced). */
  addServer(server: NewServer): SimServer;
  /** Deletes a server (by id or name). */
  deleteServer(server: string): void;
  /**
   * Calls `listener` with every versioned notification Nova would send
   * (routing key, oslo envelope), as it happens; returns its removal. While
   * anyone listens, the simulator runs each phase change at its time
   * instead of when it is next asked.
   */
  onNotification(listener: NotificationListener): () => void;
  /**
   * The notification publisher when started with `amqpUrl` (to wait until
   * everything sent reached the broker), else undefined.
   */
  readonly publisher: NotificationPublisher | undefined;
  /** Puts a server into ERROR with a fault. */
  setServerError(server: string, message: string): void;
  /**
   * Lists `other`'s Nova and Placement in this Keystone's catalog as the
   * region `region`; `other` accepts this Keystone's tokens (one cloud,
   * two regions).
   */
  addCatalogRegion(region: string, other: NovaSim): void;
  /** Accepts the tokens of a Keystone (addCatalogRegion's other half). */
  trustTokensOf(keystone: Keystone): void;
  /** This simulator's Keystone. */
  readonly keystone: Keystone;
  /** Invalidates every token. */
  revokeTokens(): void;
  /** Sets the latency of the token endpoint (real ms). */
  setTokenLatency(ms: number): void;
  /** Sets the token lifetime (real seconds) of tokens issued from now on. */
  setTokenTtl(seconds: number): void;
  /** Stops the server. */
  close(): Promise<void>;
}

interface ActiveFault {
  rule: HttpFault;
  remaining: number | undefined;
}

const SERVICES: { prefix: string; service: Service }[] = [
  { prefix: "/identity/v3", service: "identity" },
  { prefix: "/compute/v2.1", service: "compute" },
  { prefix: "/placement", service: "placement" },
];

function minorOf(v: string): number {
  return Number(v.split(".")[1] ?? "0");
}

function negotiate(
  req: Request,
  service: "compute" | "placement",
  max: string,
): { mv: number; text: string } {
  const maxMinor = minorOf(max);
  const major = service === "compute" ? "2" : "1";
  let requested: string | undefined;
  const header = req.headers.get("openstack-api-version");
  if (header !== null) {
    for (const part of header.split(",")) {
      const [svc, ver] = part.trim().split(/\s+/);
      if (svc === service && ver !== undefined) requested = ver;
    }
  }
  if (requested === undefined && service === "compute") {
    requested = req.headers.get("x-openstack-nova-api-version") ?? undefined;
  }
  if (requested === undefined) {
    return {
      mv: service === "compute" ? 1 : 0,
      text: `${major}.${service === "compute" ? 1 : 0}`,
    };
  }
  if (requested === "latest") return { mv: maxMinor, text: max };
  const m = /^(\d+)\.(\d+)$/.exec(requested);
  if (m === null) {
    throw new NovaFault(
      400,
      service === "compute"
        ? `API Version String ${requested} is of invalid format. Must be of format MajorNum.MinorNum.`
        : `invalid version string: ${requested}`,
    );
  }
  const minMinor = service === "compute" ? 1 : 0;
  if (m[1] !== major || Number(m[2]) < minMinor || Number(m[2]) > maxMinor) {
    throw new NovaFault(
      406,
      service === "compute"
        ? `Version ${requested} is not supported by the API. Minimum is ${major}.${minMinor} and maximum is ${max}.`
        : `Unacceptable version header: ${requested}`,
    );
  }
  return { mv: Number(m[2]), text: `${major}.${Number(m[2])}` };
}

/**
 * Starts the simulator on loopback.
 *
 * @example
 * ```ts ignore
 * import { startNovaSim } from "./server.ts";
 * const sim = await startNovaSim({ hosts: [{ name: "node001" }, { name: "node002" }],
 *   servers: [{ name: "vm1", host: "node001", ramMb: 4096 }], timeScale: 100 });
 * console.log(sim.authUrl);
 * await sim.close();
 * ```
 */
export async function startNovaSim(
  scenarioInput: ScenarioInput | Scenario,
  options: NovaSimOptions = {},
): Promise<NovaSim> {
  const scenario = parseScenario(scenarioInput);
  const prng = new Prng(scenario.seed);
  const faultPrng = new Prng(scenario.seed ^ 0x5f3759df);
  const clock = options.clock ?? scaledClock(scenario.timeScale);
  const world = new World(scenario, clock, prng);
  const keystone = new Keystone(scenario);
  const counters = new Counters();
  const callListeners = new Set<(call: ServedCall) => void>();
  const faults: ActiveFault[] = scenario.faults.http.map((rule) => ({
    rule,
    remaining: rule.count,
  }));
  const hangs = new Set<() => void>();
  const actionFaults: PendingActionFault[] = [];
  const actionFaultLog: { serverId: string; action: string; mode: string }[] =
    [];
  /** Waits until the client gives up or the simulator closes. */
  const hang = (req: Request): Promise<void> => {
    if (closing || req.signal.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        hangs.delete(done);
        resolve();
      };
      hangs.add(done);
      req.signal.addEventListener("abort", done, { once: true });
    });
  };
  const pickActionFault = async (
    ctx: RequestContext,
  ): Promise<PendingActionFault | undefined> => {
    if (actionFaults.length === 0) return undefined;
    const serverId = ctx.params["id"] ?? "";
    let action: string | undefined;
    try {
      const body = await ctx.body();
      if (typeof body === "object" && body !== null) {
        action = Object.keys(body)[0];
      }
    } catch {
      return undefined; // a malformed body is answered by the handler
    }
    const f = actionFaults.find((x) =>
      (x.serverId === serverId || x.serverId === "*") && x.remaining > 0 &&
      (x.action === undefined || x.action === "any" || x.action === action)
    );
    if (f === undefined) return undefined;
    f.remaining--;
    if (f.remaining === 0) actionFaults.splice(actionFaults.indexOf(f), 1);
    counters.fault();
    actionFaultLog.push({ serverId, action: action ?? "", mode: f.mode });
    return f;
  };
  let closing = false;
  const routes: Route[] = [
    ...keystone.routes(),
    ...novaRoutes,
    ...placementRoutes,
  ];

  const pickFault = (method: string, key: string): HttpFault | undefined => {
    for (const f of faults) {
      const r = f.rule;
      if (r.method !== undefined && r.method !== method) continue;
      if (r.path !== undefined && !key.endsWith(r.path)) continue;
      if (f.remaining !== undefined && f.remaining <= 0) continue;
      if (r.rate < 1 && faultPrng.next() >= r.rate) continue;
      if (f.remaining !== undefined) f.remaining--;
      counters.fault();
      return r;
    }
    return undefined;
  };

  const handle = async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    const requestId = `req-${crypto.randomUUID()}`;
    const svc = SERVICES.find((s) =>
      url.pathname === s.prefix || url.pathname.startsWith(`${s.prefix}/`)
    );
    const baseHeaders: Record<string, string> = {
      "x-openstack-request-id": requestId,
      // Nova's clock, as every OpenStack API answer carries it
      "date": new Date(world.novaMs(world.now())).toUTCString(),
    };
    if (svc === undefined) {
      counters.call(`${req.method} (unmatched)`);
      return new Response("404 Not Found\n", {
        status: 404,
        headers: baseHeaders,
      });
    }
    const service = svc.service;
    if (service === "compute") baseHeaders["x-compute-request-id"] = requestId;
    const path = url.pathname.slice(svc.prefix.length) || "/";
    const serviceBase = `${url.origin}${svc.prefix}`;
    const errorResponse = (
      status: number,
      message: string,
      extra: Record<string, string> = {},
      code?: string,
    ) =>
      json(status, errorBody(service, status, message, requestId, code), {
        ...baseHeaders,
        ...extra,
      });

    let matched: Route | undefined;
    let params: Record<string, string> = {};
    let pathMatchedOtherMethod = false;
    for (const r of routes) {
      if (r.service !== service) continue;
      const p = matchTemplate(r.template, path);
      if (p === undefined) continue;
      if (r.method !== req.method) {
        pathMatchedOtherMethod = true;
        continue;
      }
      matched = r;
      params = p;
      break;
    }
    const key = `${req.method} ${svc.prefix}${
      matched?.template.text ?? "(unmatched)"
    }`;
    counters.call(key);
    if (callListeners.size > 0) {
      const call = {
        key,
        search: url.search,
        atMs: clock.now(),
        userAgent: req.headers.get("user-agent"),
        params: { ...params },
      };
      for (const l of callListeners) l(call);
    }
    if (matched === undefined) {
      return pathMatchedOtherMethod
        ? errorResponse(
          405,
          "The method specified is not allowed for this resource.",
        )
        : errorResponse(404, "The resource could not be found.");
    }

    const fault = pickFault(req.method, key);
    if (fault !== undefined && fault.latencyMs > 0) {
      await new Promise((r) => setTimeout(r, fault.latencyMs));
    }
    const faultResponse = (f: HttpFault): Response => {
      const status = f.status ?? 500;
      const extra: Record<string, string> = {};
      if (f.retryAfterSeconds !== undefined) {
        extra["Retry-After"] = String(f.retryAfterSeconds);
      }
      const message = status === 429
        ? "This request was rate-limited."
        : status === 503
        ? "The server is currently unavailable. Please try again at a later time."
        : "Unexpected API Error. Please report this at http://bugs.launchpad.net/nova/ and attach the Nova API log if possible.";
      return errorResponse(status, message, extra);
    };
    if (
      fault?.status !== undefined && !fault.afterProcessing &&
      !fault.dropResponse
    ) {
      return faultResponse(fault);
    }

    let projectId: string | undefined;
    if (matched.auth) {
      const v = keystone.validate(req.headers.get("x-auth-token"));
      if (v === undefined) {
        return json(
          401,
          errorBody(
            "identity",
            401,
            "The request you have made requires authentication.",
            requestId,
          ),
          {
            ...baseHeaders,
            "WWW-Authenticate": `Keystone uri="${url.origin}/identity"`,
          },
        );
      }
      projectId = v.projectId;
    }

    const versionHeaders: Record<string, string> = {};
    let mv = 0;
    try {
      if (service === "compute" || service === "placement") {
        const max = service === "compute"
          ? scenario.maxMicroversion
          : scenario.maxPlacementMicroversion;
        const n = negotiate(req, service, max);
        mv = n.mv;
        versionHeaders["OpenStack-API-Version"] = `${service} ${n.text}`;
        versionHeaders["Vary"] = "OpenStack-API-Version";
        if (service === "compute") {
          versionHeaders["X-OpenStack-Nova-API-Version"] = n.text;
          versionHeaders["Vary"] =
            "OpenStack-API-Version, X-OpenStack-Nova-API-Version";
        }
      }
    } catch (e) {
      if (e instanceof NovaFault) return errorResponse(e.status, e.message);
      throw e;
    }

    let bodyRead: Promise<unknown> | undefined;
    const ctx: RequestContext = {
      req,
      url,
      path,
      params,
      world,
      counters,
      requestId,
      mv,
      serviceBase,
      projectId: projectId ?? ADMIN_PROJECT_ID,
      body: () => {
        bodyRead ??= req.text().then((t) => {
          try {
            return JSON.parse(t) as unknown;
          } catch {
            throw new NovaFault(400, "Malformed request body");
          }
        });
        return bodyRead;
      },
    };
    const actionFault = matched.template.text === "/servers/{id}/action"
      ? await pickActionFault(ctx)
      : undefined;
    // An action fault before Nova acts (not processed) or after (processed):
    // a dropped connection, an error status, or a late answer.
    const applyActionFault = async (
      processed: boolean,
    ): Promise<Response | undefined> => {
      if (actionFault === undefined || actionFault.processed !== processed) {
        return undefined;
      }
      if (actionFault.mode === "drop") {
        await hang(req);
        return errorResponse(503, "connection dropped");
      }
      if (actionFault.mode === "status") {
        return faultResponse({
          status: actionFault.status ?? 503,
          rate: 1,
          latencyMs: 0,
          dropResponse: false,
          afterProcessing: processed,
        });
      }
      await new Promise((r) => setTimeout(r, actionFault.delayMs ?? 0));
      return undefined;
    };
    const before = await applyActionFault(false);
    if (before !== undefined) return before;
    let res: Response;
    try {
      world.advance();
      res = await matched.handler(ctx);
    } catch (e) {
      if (e instanceof NovaFault) {
        res = json(
          e.status,
          errorBody(service, e.status, e.message, requestId, e.code),
        );
      } else {
        const msg = e instanceof Error ? e.message : String(e);
        res = json(
          500,
          errorBody(service, 500, `Unexpected error: ${msg}`, requestId),
        );
      }
    }
    const after = await applyActionFault(true);
    if (after !== undefined) return after;
    if (fault?.dropResponse === true) {
      // The call took effect; its answer is lost. Hold until close.
      await hang(req);
      return errorResponse(503, "connection dropped");
    }
    if (fault?.status !== undefined && fault.afterProcessing) {
      return faultResponse(fault);
    }
    for (
      const [k, v] of Object.entries({ ...baseHeaders, ...versionHeaders })
    ) {
      res.headers.set(k, v);
    }
    return res;
  };

  // Notifications leave when things happen, not when someone next asks:
  // while anyone listens, wake up at the next phase change (on the scaled
  // clock; a test's own clock is moved, and the world advanced, by the test).
  let paceTimer: ReturnType<typeof setTimeout> | undefined;
  const pace = (): void => {
    clearTimeout(paceTimer);
    paceTimer = undefined;
    if (closing || !world.notifier.active) return;
    world.advance();
    const due = world.nextDueAt();
    if (due === undefined || options.clock !== undefined) return;
    const delayMs = Math.max(0, (due - clock.now()) / scenario.timeScale);
    paceTimer = setTimeout(pace, Math.ceil(delayMs));
  };
  const paced =
    <A extends unknown[], R>(fn: (...a: A) => R) => (...a: A): R => {
      try {
        return fn(...a);
      } finally {
        pace();
      }
    };

  const publisher = options.amqpUrl === undefined
    ? undefined
    : await startNotificationPublisher(options.amqpUrl);
  if (publisher !== undefined) {
    world.onNotification((key, env) => publisher.publish(key, env));
  }

  const listening = Promise.withResolvers<Deno.NetAddr>();
  const server = Deno.serve({
    hostname: options.hostname ?? "127.0.0.1",
    port: options.port ?? 0,
    onListen: (addr) => listening.resolve(addr as Deno.NetAddr),
  }, async (req) => {
    try {
      return await handle(req);
    } finally {
      pace();
    }
  });
  const addr = await listening.promise;
  const host = addr.hostname.includes(":")
    ? `[${addr.hostname}]`
    : addr.hostname;
  const origin = `http://${host}:${addr.port}`;
  const authUrl = `${origin}/identity/v3`;
  const c = scenario.credentials;
  const appCred = c.applicationCredentials[0] ??
    { id: "", name: undefined, secret: "" };
  const credentials: NovaSimCredentials = {
    authUrl,
    password: {
      username: c.username,
      password: c.password,
      userDomainName: c.userDomainName,
      userDomainId: c.userDomainId,
      projectName: c.projectName,
      projectDomainName: c.projectDomainName,
      projectDomainId: c.projectDomainId,
    },
    applicationCredential: {
      id: appCred.id,
      name: appCred.name,
      secret: appCred.secret,
    },
    region: scenario.region,
  };

  const resolve = (ref: string): SimServer => {
    const s = world.findServerByRef(ref);
    if (s === undefined) {
      throw new RangeError(`no server with id or name "${ref}"`);
    }
    return s;
  };

  pace();
  return {
    authUrl,
    computeUrl: `${origin}/compute/v2.1`,
    placementUrl: `${origin}/placement`,
    port: addr.port,
    credentials,
    scenario,
    world,
    cloudsYaml(opts = {}) {
      const cloud = opts.cloud ?? "nova-sim";
      const lines = [
        "# Written by the evictor Nova simulator.",
        "clouds:",
        `  ${cloud}:`,
        `    region_name: ${scenario.region}`,
        "    interface: public",
        "    identity_api_version: 3",
      ];
      if (opts.auth === "application_credential") {
        lines.push(
          "    auth_type: v3applicationcredential",
          "    auth:",
          `      auth_url: ${authUrl}`,
          `      application_credential_id: ${JSON.stringify(appCred.id)}`,
          `      application_credential_secret: ${
            JSON.stringify(appCred.secret)
          }`,
        );
      } else {
        lines.push(
          "    auth_type: password",
          "    auth:",
          `      auth_url: ${authUrl}`,
          `      username: ${JSON.stringify(c.username)}`,
          `      password: ${JSON.stringify(c.password)}`,
          `      user_domain_name: ${JSON.stringify(c.userDomainName)}`,
          `      project_name: ${JSON.stringify(c.projectName)}`,
          `      project_domain_name: ${JSON.stringify(c.projectDomainName)}`,
        );
      }
      return `${lines.join("\n")}\n`;
    },
    env(auth = "password") {
      const base = {
        OS_AUTH_URL: authUrl,
        OS_REGION_NAME: scenario.region,
        OS_INTERFACE: "public",
      };
      return auth === "application_credential"
        ? {
          ...base,
          OS_AUTH_TYPE: "v3applicationcredential",
          OS_APPLICATION_CREDENTIAL_ID: appCred.id,
          OS_APPLICATION_CREDENTIAL_SECRET: appCred.secret,
        }
        : {
          ...base,
          OS_USERNAME: c.username,
          OS_PASSWORD: c.password,
          OS_USER_DOMAIN_NAME: c.userDomainName,
          OS_PROJECT_NAME: c.projectName,
          OS_PROJECT_DOMAIN_NAME: c.projectDomainName,
        };
    },
    state() {
      world.advance();
      return {
        now: world.now(),
        hosts: [...world.hosts.values()].map((h) => ({
          name: h.name,
          enabled: h.enabled,
          disabledReason: h.disabledReason,
          traits: [...h.traits],
          serviceId: h.serviceId,
          hypervisorId: h.hypervisorId,
          usedRamMb: world.usage(h.name).ramMb,
          ramMb: h.ramMb,
          activeLiveMigrations: world.activeLiveMigrations(h.name),
          maxConcurrentLiveMigrations: h.maxConcurrentLiveMigrations,
          servers: world.listServers().filter((s) => s.host === h.name).map((
            s,
          ) => s.id),
        })),
        servers: [...world.servers.values()].map((s) => ({
          id: s.id,
          name: s.name,
          host: s.host,
          status: serverStatus(s.vmState, s.taskState),
          vmState: s.vmState,
          taskState: s.taskState,
          ramMb: s.flavor.ramMb,
          deleted: s.deleted,
          dirtyRateMBps: s.dirtyRateMBps,
          powerState: s.powerState,
        })),
        migrations: world.migrations.map((m) => ({
          id: m.id,
          uuid: m.uuid,
          serverId: m.serverId,
          type: m.type,
          status: m.status,
          source: m.source,
          dest: m.dest,
          createdAt: m.createdAt,
          updatedAt: m.updatedAt,
          copyMs: m.copyMs,
          slotAt: m.slotAt,
          switchedTo: m.switchedTo,
        })),
      };
    },
    counters: () => counters.snapshot(world.acceptedMigrations),
    resetCounters: () => counters.reset(),
    onCall: (listener) => {
      callListeners.add(listener);
      return () => callListeners.delete(listener);
    },
    injectHttpFault(rule) {
      const parsed = httpFaultSchema.parse(rule);
      const f: ActiveFault = { rule: parsed, remaining: parsed.count };
      faults.push(f);
      return () => {
        const i = faults.indexOf(f);
        if (i !== -1) faults.splice(i, 1);
      };
    },
    clearHttpFaults: () => {
      faults.length = 0;
    },
    injectMigrationFault(server, kind, times = 1) {
      world.injectMigrationFault(resolve(server).id, kind, times);
    },
    injectActionFault(ref, fault) {
      const serverId = ref === "*" ? "*" : resolve(ref).id;
      if (!["drop", "delay", "status"].includes(fault.mode)) {
        throw new RangeError(
          `mode must be drop, delay or status, got ${
            JSON.stringify(fault.mode)
          }`,
        );
      }
      if (fault.mode === "delay" && !((fault.delayMs ?? -1) >= 0)) {
        throw new RangeError(
          `a delay fault needs delayMs >= 0, got ${fault.delayMs}`,
        );
      }
      if (
        fault.mode === "status" &&
        ![500, 502, 503, 504, 429].includes(fault.status ?? 0)
      ) {
        throw new RangeError(
          `a status fault needs status 500, 502, 503, 504 or 429, got ${fault.status}`,
        );
      }
      const times = fault.times ?? 1;
      if (!Number.isInteger(times) || times < 1) {
        throw new RangeError(`times must be an integer >= 1, got ${times}`);
      }
      const f: PendingActionFault = { ...fault, serverId, remaining: times };
      actionFaults.push(f);
      return () => {
        const i = actionFaults.indexOf(f);
        if (i !== -1) actionFaults.splice(i, 1);
      };
    },
    actionFaultLog: () => actionFaultLog.map((x) => ({ ...x })),
    heldAnswers: () => hangs.size,
    resetState: (ref, state) => {
      world.advance();
      world.resetState(resolve(ref).id, state);
    },
    migrateTo: paced((ref: string, host: string) => {
      world.liveMigrate(resolve(ref).id, host, true);
    }),
    resize: paced((ref: string, newRamMb: number) => {
      world.resize(resolve(ref).id, newRamMb);
    }),
    setPower: paced((ref: string, on: boolean) => {
      world.setPower(resolve(ref).id, on);
    }),
    addServer: paced((s: NewServer) => {
      world.advance();
      return world.addServer(s);
    }),
    deleteServer: paced((ref: string) => {
      world.advance();
      world.deleteServer(resolve(ref).id);
    }),
    setServerError: paced((ref: string, message: string) => {
      world.advance();
      world.setServerError(resolve(ref).id, message);
    }),
    publisher,
    onNotification: paced((listener: NotificationListener) =>
      world.onNotification(listener)
    ),
    keystone,
    addCatalogRegion(region, other) {
      if (region === scenario.region) {
        throw new RangeError(`region "${region}" is this catalog's own`);
      }
      keystone.addRegion({
        region,
        computeUrl: other.computeUrl,
        placementUrl: other.placementUrl,
      });
      other.trustTokensOf(keystone);
    },
    trustTokensOf: (k) => keystone.trust(k),
    revokeTokens: () => keystone.revokeAll(),
    setTokenLatency: (ms) => {
      keystone.tokenLatencyMs = ms;
    },
    setTokenTtl: (seconds) => {
      if (!(seconds > 0)) {
        throw new RangeError(`seconds must be > 0, got ${seconds}`);
      }
      keystone.tokenTtlMs = seconds * 1000;
    },
    async close() {
      closing = true;
      clearTimeout(paceTimer);
      await publisher?.close();
      for (const release of hangs) release();
      hangs.clear();
      await server.shutdown();
    },
  };
}
