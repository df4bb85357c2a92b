/**
 * The `Operator`: registration (kopf-like) and the runtime that wires
 * informers, controllers, leader election, the webhook server, health and
 * metrics, and graceful shutdown.
 *
 * @module
 */

import type { KubeConfig } from "@kubernetes/client-node";
import { handleAdmission, type Validator } from "./admission.ts";
import { parseAddress } from "./address.ts";
import type { BackoffOptions } from "./backoff.ts";
import { KubeClient } from "./client.ts";
import type { Clock } from "./clock.ts";
import { Controller } from "./controller.ts";
import { oneLine, StartupError } from "./errors.ts";
import { EventRecorder } from "./events.ts";
import type {
  FinalizeHandler,
  ReconcileHandler,
  ReconcileOptions,
  TimerHandler,
} from "./handler.ts";
import { type Check, HealthServer } from "./health_server.ts";
import { apiServerMetricsAuthorizer } from "./metrics_auth.ts";
import { MetricsServer } from "./metrics_server.ts";
import type { ServerLimits } from "./http_server.ts";
import type { ServingTls } from "./serving_cert.ts";
import { type CacheReader, Informer } from "./informer.ts";
import { type Kind, kindId, type KubeObject } from "./kind.ts";
import { LeaderElector, type LeaderTiming } from "./leader.ts";
import { loadDefaultCredentials, readKubeconfigFiles } from "./kubeconfig.ts";
import { createLogger, type Logger } from "./logger.ts";
import { FrameworkMetrics } from "./metrics.ts";
import {
  type WebhookLimits,
  type WebhookRoute,
  WebhookServer,
} from "./webhook_server.ts";

/** Leader election settings. */
export interface LeaderElectionOptions extends Partial<LeaderTiming> {
  /** Lease name (default: the operator name). */
  leaseName?: string;
  /**
   * On a lost Lease, stop the handlers and campaign again rather than shut
   * down (default false): after an API-server outage the Lease still names
   * this replica, which then leads again at once.
   */
  keepCampaigning?: boolean;
  /** Lease namespace (required). */
  leaseNamespace: string;
  /** This replica's identity (default: hostname + random suffix). */
  identity?: string;
}

/** Webhook server settings. */
export type WebhookOptions =
  & {
    /** `host:port` (default `:9443`). */
    address?: string;
    /** Caps and timeouts (default `DEFAULT_WEBHOOK_LIMITS`). */
    limits?: Partial<WebhookLimits>;
    /** Cert file check interval, ms (default 2000). */
    reloadIntervalMs?: number;
  }
  & CertificateOption;

/** Where a server's certificate comes from. */
export type CertificateOption =
  | { certFile: string; keyFile: string }
  /** Generate a self-signed certificate: local runs only, NOT for production. */
  | { selfSignedHosts: string[] };

/** `/metrics` server settings. */
export type MetricsEndpointOptions =
  & {
    /** `host:port` (default `:8443`). */
    address?: string;
    /** Timeouts and caps (default `DEFAULT_SERVER_LIMITS`). */
    limits?: Partial<ServerLimits>;
    /** Cert file check interval, ms (default 2000). */
    reloadIntervalMs?: number;
  }
  & (
    /** HTTPS, only for tokens the API server authorizes (TokenReview + SubjectAccessReview). */
    | CertificateOption
    /** Plain HTTP, open to anyone: local runs only. */
    | { insecure: true }
  );

/** Options of {@linkcode Operator}. */
export interface OperatorOptions {
  /** Name used for the Lease, Events source, logs (default "operator"). */
  name?: string;
  /**
   * A `@kubernetes/client-node` KubeConfig (needed for auth plugins). By
   * default a lightweight loader reads `kubeconfigPath`, else KUBECONFIG,
   * ~/.kube/config or the in-cluster service account.
   */
  kubeConfig?: KubeConfig;
  /**
   * Kubeconfig file to read (when no `kubeConfig` is given), or several,
   * merged as kubectl merges a colon-separated `KUBECONFIG`.
   */
  kubeconfigPath?: string | readonly string[];
  /** `User-Agent` of every request to the API server (default: `name`). */
  userAgent?: string;
  /** Overrides the API server URL of the kubeconfig. */
  server?: string;
  /** Only watch this namespace for namespaced kinds (default: all). */
  watchNamespace?: string;
  /** Label selector for every cache unless `watch()` says otherwise. */
  labelSelector?: string;
  /** Leader election; false runs handlers on every replica (default false). */
  leaderElection?: LeaderElectionOptions | false;
  /** `/healthz`, `/livez`, `/readyz` address, plain HTTP (default `:8081`); false: off. */
  healthAddress?: string | false;
  /** The `/metrics` server; false or absent: off. */
  metrics?: MetricsEndpointOptions | false;
  /** Admission webhook server; false or absent: off. */
  webhook?: WebhookOptions | false;
  /** How long running handlers may finish on shutdown (default 30 s). */
  shutdownTimeoutMs?: number;
  /** Stop on SIGTERM/SIGINT and exit 0 (default true). */
  handleSignals?: boolean;
  /** Exit the process (code 1) when leadership is lost (default true). */
  exitOnLeaderLoss?: boolean;
  /** The finalizer this operator owns (default `<name>.operator/finalizer`). */
  finalizer?: string;
  /** Root logger (default: JSON lines on stdout at `logLevel`). */
  logger?: Logger;
  /** Log level when no logger is given (default info). */
  logLevel?: string;
  /** Metric name prefix (default "operator_"). */
  metricsPrefix?: string;
  /** Export process metrics (default true). */
  processMetrics?: boolean;
  /** Watch inactivity timeout, ms (default 180 s). */
  watchInactivityMs?: number;
  /** Server-side watch timeout, s (default 300). */
  watchTimeoutSeconds?: number;
  /** Per-key retry backoff (default 5 ms .. 1000 s). */
  backoff?: BackoffOptions;
  /** Retry backoff while a service is unavailable (default 200 ms .. 2 s). */
  outageBackoff?: BackoffOptions;
  /** Clock for queue delays (tests). */
  clock?: Clock;
}

/** Options of {@linkcode Operator.watch}. */
export interface CacheOptions {
  /** Label selector for this kind; null: none even if the operator has one. */
  labelSelector?: string | null;
  /** Namespace for this kind (namespaced kinds). */
  namespace?: string;
}

/** Why the operator stopped. */
export type StopReason = "stopped" | "signal" | "leadership-lost";

class LazyCache<T extends KubeObject> implements CacheReader<T> {
  target: Informer<T> | undefined;
  get(key: string): T | undefined {
    return this.target?.get(key);
  }
  raw(key: string): KubeObject | undefined {
    return this.target?.raw(key);
  }
  list(filter?: (obj: T) => boolean): T[] {
    return this.target?.list(filter) ?? [];
  }
  get hasSynced(): boolean {
    return this.target?.hasSynced ?? false;
  }
}

interface CacheEntry {
  kind: Kind<KubeObject>;
  options: CacheOptions;
  lazy: LazyCache<KubeObject>;
  informer?: Informer<KubeObject>;
}

/**
 * A kopf-like operator. Register handlers, then `start()`; `stop()` (or
 * SIGTERM) shuts it down gracefully. Webhooks serve on every replica;
 * reconcile, finalize and timer handlers run only on the leader.
 *
 * @example
 * ```ts ignore
 * const op = new Operator({ name: "demo", leaderElection: { leaseNamespace: "default" } });
 * op.reconcile(ConfigMaps, ({ object }) => { if (object) console.log(object.metadata?.name); });
 * await op.start();
 * ```
 */
export class Operator {
  /** The operator name. */
  readonly name: string;
  /** Metrics (registry served on `/metrics`). */
  readonly metrics: FrameworkMetrics;
  /** Root logger. */
  readonly logger: Logger;
  readonly #o: OperatorOptions;
  readonly #caches = new Map<string, CacheEntry>();
  readonly #controllers = new Map<string, Controller<KubeObject>>();
  readonly #routes = new Map<string, WebhookRoute>();
  readonly #startup: Array<() => void | Promise<void>> = [];
  readonly #cleanup: Array<() => void | Promise<void>> = [];
  readonly #probes = new Map<string, Check>();
  readonly #pendingRelated: Array<() => void> = [];
  #client: KubeClient | undefined;
  #events: EventRecorder | undefined;
  #elector: LeaderElector | undefined;
  #health: HealthServer | undefined;
  #metricsServer: MetricsServer | undefined;
  #webhook: WebhookServer | undefined;
  #started = false;
  #stopping: Promise<void> | undefined;
  #doneResolve: ((r: StopReason) => void) | undefined;
  #signalHandlers: Array<[Deno.Signal, () => void]> = [];
  #leaderLoop: Promise<void> | undefined;
  /** Resolves with the reason once the operator has fully stopped. */
  readonly done: Promise<StopReason>;

  /** Creates an operator; nothing runs until {@linkcode start}. */
  constructor(options: OperatorOptions = {}) {
    this.#o = options;
    this.name = options.name ?? "operator";
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(this.name)) {
      throw new TypeError(
        `operator name must be a DNS subdomain, got "${this.name}"`,
      );
    }
    this.logger = options.logger ??
      createLogger({ name: this.name, level: options.logLevel ?? "info" });
    this.metrics = new FrameworkMetrics({
      ...(options.metricsPrefix === undefined
        ? {}
        : { prefix: options.metricsPrefix }),
      processMetrics: options.processMetrics ?? true,
    });
    this.done = new Promise((resolve) => this.#doneResolve = resolve);
  }

  /** The finalizer name this operator adds. */
  get finalizer(): string {
    return this.#o.finalizer ?? `${this.name}.operator/finalizer`;
  }

  /** The API client (after start). */
  get client(): KubeClient {
    if (this.#client === undefined) {
      throw new Error("operator is not started: no client yet");
    }
    return this.#client;
  }

  /** The Events recorder (after start). */
  get events(): EventRecorder {
    if (this.#events === undefined) {
      throw new Error("operator is not started: no events recorder yet");
    }
    return this.#events;
  }

  /** Whether this replica runs handlers now. */
  get isLeader(): boolean {
    return this.#o.leaderElection
      ? (this.#elector?.isLeader ?? false)
      : this.#started;
  }

  /** Port of the health server (after start). */
  get healthPort(): number {
    if (this.#health === undefined) {
      throw new Error("health server is off or not started");
    }
    return this.#health.port;
  }

  /** Port of the metrics server (after start). */
  get metricsPort(): number {
    if (this.#metricsServer === undefined) {
      throw new Error("metrics server is off or not started");
    }
    return this.#metricsServer.port;
  }

  /** The metrics server (after start), e.g. to force a certificate reload. */
  get metricsServer(): MetricsServer | undefined {
    return this.#metricsServer;
  }

  /** Port of the webhook server (after start). */
  get webhookPort(): number {
    if (this.#webhook === undefined) {
      throw new Error("webhook server is off or not started");
    }
    return this.#webhook.port;
  }

  /** The webhook server (after start), e.g. to force a certificate reload. */
  get webhookServer(): WebhookServer | undefined {
    return this.#webhook;
  }

  #assertNotStarted(what: string): void {
    if (this.#started) {
      throw new Error(`${what} must be registered before start()`);
    }
  }

  /**
   * Keeps a cache (informer) of `kind` and returns typed read access; any
   * handler may read it. Call before start.
   */
  watch<T extends KubeObject>(
    kind: Kind<T>,
    options: CacheOptions = {},
  ): CacheReader<T> {
    const id = kindId(kind);
    let entry = this.#caches.get(id);
    if (entry === undefined) {
      this.#assertNotStarted(`watch(${kind.kind})`);
      entry = {
        kind: kind as unknown as Kind<KubeObject>,
        options,
        lazy: new LazyCache<KubeObject>(),
      };
      this.#caches.set(id, entry);
    } else if (Object.keys(options).length > 0) {
      entry.options = { ...entry.options, ...options };
    }
    return entry.lazy as unknown as CacheReader<T>;
  }

  /** Typed read access to the cache of `kind` (registers one if needed). */
  cache<T extends KubeObject>(kind: Kind<T>): CacheReader<T> {
    return this.watch(kind);
  }

  #controller<T extends KubeObject>(kind: Kind<T>): Controller<T> {
    const id = kindId(kind);
    const existing = this.#controllers.get(id);
    if (existing !== undefined) return existing as unknown as Controller<T>;
    this.#assertNotStarted(`a handler for ${kind.kind}`);
    const cache = this.watch(kind);
    const ctl = new Controller<T>({
      kind,
      cache,
      client: () => this.client,
      logger: this.logger,
      metrics: this.metrics,
      events: () => this.events,
      cacheOf: (k) => this.cache(k),
      enqueue: (k, key, afterMs) => this.enqueue(k, key, afterMs),
      finalizer: this.finalizer,
      ...(this.#o.clock === undefined ? {} : { clock: this.#o.clock }),
      ...(this.#o.backoff === undefined ? {} : { backoff: this.#o.backoff }),
      ...(this.#o.outageBackoff && { outageBackoff: this.#o.outageBackoff }),
    });
    this.#controllers.set(id, ctl as unknown as Controller<KubeObject>);
    return ctl;
  }

  /**
   * Registers the level-based reconcile handler of `kind`: it runs for a
   * key on create, update, delete (with `object` undefined), resume after
   * a restart, requeue and changes of related kinds.
   */
  reconcile<T extends KubeObject>(
    kind: Kind<T>,
    handler: ReconcileHandler<T>,
    options: ReconcileOptions = {},
  ): this {
    const ctl = this.#controller(kind);
    if (ctl.reconcileHandler !== undefined) {
      throw new Error(
        `a reconcile handler for ${kind.kind} is already registered`,
      );
    }
    ctl.reconcileHandler = handler;
    ctl.configure(options);
    for (const w of options.watches ?? []) {
      this.watch(w.kind);
      this.#pendingRelated.push(() => {
        const inf = this.#caches.get(kindId(w.kind))?.informer;
        inf?.on((ev) => {
          const keys = w.map(ev.object);
          if (keys === "all") {
            for (const obj of this.cache(kind).list()) {
              const name = obj.metadata?.name;
              if (name === undefined) continue;
              const ns = obj.metadata?.namespace;
              ctl.enqueue(ns ? `${ns}/${name}` : name);
            }
          } else {
            for (const key of keys) if (key !== "") ctl.enqueue(key);
          }
        });
      });
    }
    return this;
  }

  /**
   * Registers the finalize handler of `kind`. The framework adds its
   * finalizer to every object before any other handler runs for it, calls
   * this handler once the object is being deleted, and removes the
   * finalizer after the handler succeeded (errors retry as usual).
   */
  finalize<T extends KubeObject>(
    kind: Kind<T>,
    handler: FinalizeHandler<T>,
  ): this {
    const ctl = this.#controller(kind);
    if (ctl.finalizeHandler !== undefined) {
      throw new Error(
        `a finalize handler for ${kind.kind} is already registered`,
      );
    }
    ctl.finalizeHandler = handler;
    return this;
  }

  /** Registers a timer: `handler` runs every `intervalMs` per existing object, on the leader. */
  timer<T extends KubeObject>(
    kind: Kind<T>,
    options: { intervalMs: number },
    handler: TimerHandler<T>,
  ): this {
    if (!(options.intervalMs > 0)) {
      throw new RangeError(
        `timer intervalMs must be > 0, got ${options.intervalMs}`,
      );
    }
    this.#controller(kind).timers.push({
      intervalMs: options.intervalMs,
      handler,
      scheduled: new Map(),
      running: new Set(),
    });
    return this;
  }

  /**
   * Registers a validating admission function for `kind`, served at
   * `options.path` (default `/validate-<group with dashes>-<version>-<kind lowercase>`).
   * Returns the path.
   */
  validate<T extends KubeObject>(
    kind: Kind<T>,
    fn: Validator<T>,
    options: { path?: string } = {},
  ): string {
    this.#assertNotStarted(`validate(${kind.kind})`);
    const path = options.path ?? validatePath(kind);
    if (this.#routes.has(path)) {
      throw new Error(`a webhook at path "${path}" is already registered`);
    }
    const log = this.logger.child({ name: "webhook", kind: kind.kind });
    this.#routes.set(
      path,
      (json) =>
        handleAdmission(json, fn, kind.schema, (err) =>
          log.error(
            { err: err instanceof Error ? err.message : String(err) },
            "validate function threw",
          )),
    );
    return path;
  }

  /** Runs `fn` during start, before caches and handlers (on every replica). */
  onStartup(fn: () => void | Promise<void>): this {
    this.#startup.push(fn);
    return this;
  }

  /** Runs `fn` during stop, after handlers finished. */
  onCleanup(fn: () => void | Promise<void>): this {
    this.#cleanup.push(fn);
    return this;
  }

  /** Adds a liveness check reported on `/healthz`. */
  probe(name: string, check: Check): this {
    this.#probes.set(name, check);
    return this;
  }

  /** Queues `key` of a reconciled `kind` (now or after `afterMs`). */
  enqueue<T extends KubeObject>(kind: Kind<T>, key: string, afterMs = 0): void {
    const ctl = this.#controllers.get(kindId(kind));
    if (ctl === undefined) {
      throw new Error(
        `no handler is registered for ${kind.kind}: cannot enqueue "${key}"`,
      );
    }
    ctl.enqueue(key, afterMs);
  }

  /**
   * Starts everything; resolves once the caches are synced (and the
   * webhook and health servers listen). Handlers start on becoming leader.
   *
   * @throws {StartupError} naming what failed and where (the kubeconfig,
   * the API server, the webhook certificate, a listening address); what
   * had started is stopped again.
   */
  async start(): Promise<void> {
    if (this.#started) throw new Error("operator already started");
    this.#started = true;
    try {
      const client = await this.#connect();
      this.#client = client;
      this.#events = new EventRecorder(client, this.name, this.logger);
      for (const fn of this.#startup) await fn();
      this.#createInformers(client);
      await this.#startHealthServer();
      await this.#startWebhookServer();
      await this.#startMetricsServer();
      await this.#syncCaches();
    } catch (err) {
      await this.#abortStart();
      throw err;
    }
    this.#handleSignals();
    this.#startHandlers();
  }

  /** Builds the API client and checks that the API server answers. */
  async #connect(): Promise<KubeClient> {
    const o = this.#o;
    const clientOptions = {
      userAgent: o.userAgent ?? this.name,
      requests: this.metrics.restClient,
      ...(o.server === undefined ? {} : { server: o.server }),
    };
    const paths = typeof o.kubeconfigPath === "string"
      ? [o.kubeconfigPath]
      : o.kubeconfigPath;
    const source = o.kubeConfig !== undefined
      ? "(KubeConfig object)"
      : paths?.join(":") ??
        "(KUBECONFIG, ~/.kube/config or the pod's service account)";
    let client: KubeClient;
    try {
      if (o.kubeConfig !== undefined) {
        client = await KubeClient.fromKubeConfig(o.kubeConfig, clientOptions);
      } else {
        const creds = paths === undefined
          ? await loadDefaultCredentials()
          : await readKubeconfigFiles(paths);
        client = await KubeClient.fromCredentials(creds, clientOptions);
      }
    } catch (err) {
      throw new StartupError("kubeconfig", source, oneLine(err), {
        cause: err,
      });
    }
    try {
      // Every authenticated user may read /version (system:public-info-viewer).
      await client.request("GET", "/version");
    } catch (err) {
      client.close();
      throw new StartupError("API server", client.server, oneLine(err), {
        cause: err,
      });
    }
    return client;
  }

  /** One informer per watched kind, feeding its controller and related kinds. */
  #createInformers(client: KubeClient): void {
    const o = this.#o;
    for (const entry of this.#caches.values()) {
      const selector = entry.options.labelSelector === null
        ? undefined
        : entry.options.labelSelector ?? o.labelSelector;
      const inf = new Informer<KubeObject>({
        kind: entry.kind,
        client,
        namespace: entry.kind.namespaced
          ? entry.options.namespace ?? o.watchNamespace
          : undefined,
        labelSelector: selector,
        logger: this.logger,
        metrics: this.metrics,
        ...(o.watchInactivityMs === undefined
          ? {}
          : { inactivityMs: o.watchInactivityMs }),
        ...(o.watchTimeoutSeconds === undefined
          ? {}
          : { watchTimeoutSeconds: o.watchTimeoutSeconds }),
      });
      entry.informer = inf;
      entry.lazy.target = inf;
      const ctl = this.#controllers.get(kindId(entry.kind));
      if (ctl !== undefined) inf.on((ev) => ctl.onEvent(ev));
    }
    for (const wire of this.#pendingRelated) wire();
  }

  /** `/healthz`, `/readyz` (one check per cache). */
  async #startHealthServer(): Promise<void> {
    const o = this.#o;
    if (o.healthAddress === false) return;
    const address = o.healthAddress ?? ":8081";
    const readiness = new Map<string, Check>();
    for (const [id, entry] of this.#caches) {
      readiness.set(`cache:${id}`, () => entry.lazy.hasSynced);
    }
    this.#health = new HealthServer({
      address,
      liveness: new Map([["ping", () => true], ...this.#probes]),
      readiness,
    });
    try {
      await this.#health.start();
    } catch (err) {
      this.#health = undefined;
      throw new StartupError("health probe server", address, oneLine(err), {
        cause: err,
      });
    }
  }

  /** `/metrics`: HTTPS for authorized tokens, or plain HTTP when insecure. */
  async #startMetricsServer(): Promise<void> {
    const m = this.#o.metrics;
    if (!m) return;
    const address = m.address ?? ":8443";
    const common = {
      address,
      registry: this.metrics.registry,
      logger: this.logger,
      ...(m.limits === undefined ? {} : { limits: m.limits }),
      ...(m.reloadIntervalMs === undefined
        ? {}
        : { reloadIntervalMs: m.reloadIntervalMs }),
    };
    const server = "insecure" in m
      ? new MetricsServer({ ...common, insecure: true })
      : new MetricsServer({
        ...common,
        tls: await this.#servingTls(m, "metrics"),
        authorize: apiServerMetricsAuthorizer(this.client),
      });
    try {
      await server.start();
    } catch (err) {
      await server.stop().catch(() => {});
      throw serverStartupError(
        "metrics",
        "insecure" in m ? undefined : m,
        address,
        err,
      );
    }
    this.#metricsServer = server;
  }

  /** The certificate of a server: its files, or a self-signed one made now. */
  async #servingTls(c: CertificateOption, what: string): Promise<ServingTls> {
    if (!("selfSignedHosts" in c)) {
      return { certFile: c.certFile, keyFile: c.keyFile };
    }
    this.logger.warn(
      `serving ${what} with a SELF-SIGNED certificate: for local runs only, not for production`,
    );
    // loaded on demand: x509 costs memory that production runs need not pay
    const { generateSelfSignedCertificate } = await import("./self_signed.ts");
    return await generateSelfSignedCertificate({ hosts: c.selfSignedHosts });
  }

  /** The admission webhook server, when one is configured. */
  async #startWebhookServer(): Promise<void> {
    const w = this.#o.webhook;
    if (!w) return;
    const log = this.logger;
    const tls = await this.#servingTls(w, "the webhook");
    const address = w.address ?? ":9443";
    const { hostname, port } = parseAddress(address);
    const server = new WebhookServer({
      hostname,
      port,
      tls,
      routes: this.#routes,
      logger: log,
      metrics: this.metrics,
      ...(w.limits === undefined ? {} : { limits: w.limits }),
      ...(w.reloadIntervalMs === undefined
        ? {}
        : { reloadIntervalMs: w.reloadIntervalMs }),
    });
    try {
      await server.start();
    } catch (err) {
      await server.stop().catch(() => {});
      throw serverStartupError("webhook", w, address, err);
    }
    this.#webhook = server;
  }

  /** Starts every informer and waits until all have listed. */
  async #syncCaches(): Promise<void> {
    for (const entry of this.#caches.values()) entry.informer?.start();
    await Promise.all(
      [...this.#caches.values()].map((e) => e.informer?.synced()),
    );
    this.logger.info({ caches: this.#caches.size }, "caches synced");
  }

  /** Stops what a failed start had started, quietly (the caller reports). */
  async #abortStart(): Promise<void> {
    await Promise.all(
      [...this.#caches.values()].map((e) => e.informer?.stop()),
    );
    await this.#webhook?.stop();
    await this.#metricsServer?.stop();
    await this.#health?.stop();
    this.#client?.close();
  }

  /** SIGTERM and SIGINT stop gracefully and exit 0. */
  #handleSignals(): void {
    if (!(this.#o.handleSignals ?? true)) return;
    for (const sig of ["SIGTERM", "SIGINT"] as const) {
      const handler = () => {
        this.logger.info({ signal: sig }, "signal received: shutting down");
        void this.#shutdown("signal").then(() => Deno.exit(0));
      };
      Deno.addSignalListener(sig, handler);
      this.#signalHandlers.push([sig, handler]);
    }
  }

  /** Handlers run now, or once this replica leads. */
  #startHandlers(): void {
    const o = this.#o;
    const client = this.client;
    if (!o.leaderElection) {
      this.metrics.leader.set(1);
      for (const c of this.#controllers.values()) c.start();
      return;
    }
    const le = o.leaderElection;
    this.#elector = new LeaderElector({
      client,
      name: le.leaseName ?? this.name,
      namespace: le.leaseNamespace,
      identity: le.identity ??
        `${Deno.hostname()}_${crypto.randomUUID().slice(0, 8)}`,
      timing: {
        ...(le.leaseDurationMs === undefined
          ? {}
          : { leaseDurationMs: le.leaseDurationMs }),
        ...(le.renewDeadlineMs === undefined
          ? {}
          : { renewDeadlineMs: le.renewDeadlineMs }),
        ...(le.retryPeriodMs === undefined
          ? {}
          : { retryPeriodMs: le.retryPeriodMs }),
      },
      logger: this.logger,
      keepCampaigning: le.keepCampaigning === true,
      onStartedLeading: () => {
        this.metrics.leader.set(1);
        for (const c of this.#controllers.values()) c.start();
      },
      onStoppedLeading: () => {
        this.metrics.leader.set(0);
        // at once: no grace, abort the handlers' signal
        for (const c of this.#controllers.values()) void c.stop(0);
        if (le.keepCampaigning) return;
        void this.#shutdown("leadership-lost").then(() => {
          if (o.exitOnLeaderLoss ?? true) Deno.exit(1);
        });
      },
    });
    this.#leaderLoop = this.#elector.run();
  }

  /** Graceful stop: no new work, running handlers finish (up to the timeout), Lease released. */
  stop(): Promise<void> {
    return this.#shutdown("stopped");
  }

  #shutdown(reason: StopReason): Promise<void> {
    this.#stopping ??= (async () => {
      const log = this.logger;
      const grace = reason === "leadership-lost"
        ? 0
        : this.#o.shutdownTimeoutMs ?? 30_000;
      // Each step is logged: a stop that hangs says where.
      log.info({ reason, step: "controllers" }, "operator stopping");
      await Promise.all(
        [...this.#controllers.values()].map((c) => c.stop(grace)),
      );
      for (const c of this.#controllers.values()) c.shutdown();
      log.info({ reason, step: "leadership" }, "operator stopping");
      if (reason !== "leadership-lost") await this.#elector?.release();
      await this.#leaderLoop;
      this.metrics.leader.set(0);
      log.info({ reason, step: "caches" }, "operator stopping");
      await Promise.all(
        [...this.#caches.values()].map((e) => e.informer?.stop()),
      );
      log.info({ reason, step: "servers" }, "operator stopping");
      await this.#webhook?.stop();
      await this.#metricsServer?.stop();
      await this.#health?.stop();
      log.info({ reason, step: "cleanup" }, "operator stopping");
      for (const fn of this.#cleanup) {
        try {
          await fn();
        } catch (err) {
          log.error(
            { err: err instanceof Error ? err.message : String(err) },
            "cleanup handler failed",
          );
        }
      }
      for (const [sig, h] of this.#signalHandlers) {
        Deno.removeSignalListener(sig, h);
      }
      this.#signalHandlers = [];
      this.#client?.close();
      log.info({ reason }, "operator stopped");
      this.#doneResolve?.(reason);
    })();
    return this.#stopping;
  }
}

/**
 * The default webhook path of a kind (kubebuilder's convention).
 *
 * @example
 * ```ts
 * import { validatePath } from "./operator.ts";
 * const path = validatePath({ group: "kvm.cloud.sap", version: "v1", kind: "Eviction" });
 * console.assert(path === "/validate-kvm-cloud-sap-v1-eviction");
 * ```
 */
export function validatePath(
  kind: { group: string; version: string; kind: string },
): string {
  return `/validate-${
    kind.group.replaceAll(".", "-")
  }-${kind.version}-${kind.kind.toLowerCase()}`;
}

/** A failed server start: a listening problem, else the certificate. */
function serverStartupError(
  what: "webhook" | "metrics",
  c: CertificateOption | undefined,
  address: string,
  err: unknown,
): StartupError {
  const code = (err as { code?: unknown } | null)?.code;
  const listening = err instanceof Deno.errors.AddrInUse ||
    err instanceof Deno.errors.AddrNotAvailable ||
    err instanceof Deno.errors.PermissionDenied ||
    code === "EADDRINUSE" || code === "EADDRNOTAVAIL" || code === "EACCES";
  if (listening || c === undefined || "selfSignedHosts" in c) {
    return new StartupError(`${what} server`, address, oneLine(err), {
      cause: err,
    });
  }
  return new StartupError(
    `${what} certificate`,
    `${c.certFile} / ${c.keyFile}`,
    oneLine(err),
    { cause: err },
  );
}
