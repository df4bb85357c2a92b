/**
 * `/metrics` (Prometheus) over HTTPS for scrapes the API server authorizes,
 * as controller-runtime's secure metrics serve it: the scraper's bearer
 * token crosses the wire only inside TLS, is reviewed by the API server
 * (TokenReview), and the user it names must be allowed `get` on the
 * non-resource URL `/metrics` (SubjectAccessReview; `metrics_auth.ts`). A
 * plain-HTTP request to the TLS port fails its handshake. The certificate
 * is reloaded in place when its files change, and the server has the same
 * timeouts and caps as every other (`http_server.ts`).
 *
 * `insecure` serves plain HTTP to anyone: local runs only.
 *
 * @module
 */

import type http from "node:http";
import type { Registry } from "prom-client";
import { parseAddress } from "./address.ts";
import { sendText } from "./health_server.ts";
import {
  checkServerLimits,
  closeServer,
  createNodeServer,
  DEFAULT_SERVER_LIMITS,
  type GuardedServer,
  guardServer,
  listen,
  type RequestListener,
  type ServerLimits,
} from "./http_server.ts";
import type { Logger } from "./logger.ts";
import { silentLogger } from "./logger.ts";
import type { MetricsAuthorizer } from "./metrics_auth.ts";
import { ServingCertificate, type ServingTls } from "./serving_cert.ts";

/** Options of {@linkcode MetricsServer}. */
export type MetricsServerOptions =
  & {
    /** `host:port` (default `:8443`). */
    address?: string;
    /** The registry served. */
    registry: Registry;
    /** Timeouts and caps (default {@linkcode DEFAULT_SERVER_LIMITS}). */
    limits?: Partial<ServerLimits>;
    /** How often cert files are checked for changes, ms (default 2000). */
    reloadIntervalMs?: number;
    /** Logger. */
    logger?: Logger;
  }
  & (
    /** HTTPS, and only scrapes `authorize` allows. */
    | { tls: ServingTls; authorize: MetricsAuthorizer }
    /** Plain HTTP, open to anyone: local runs only. */
    | { insecure: true }
  );

/**
 * Serves `/metrics`.
 *
 * @example
 * ```ts ignore
 * const server = new MetricsServer({
 *   address: ":8443",
 *   registry,
 *   tls: { certFile: "/tls/tls.crt", keyFile: "/tls/tls.key" },
 *   authorize: apiServerMetricsAuthorizer(client),
 * });
 * await server.start();
 * ```
 */
export class MetricsServer {
  readonly #o: MetricsServerOptions;
  readonly #limits: ServerLimits;
  readonly #cert: ServingCertificate | undefined;
  #server: http.Server | undefined;
  #guarded: GuardedServer | undefined;
  #port = 0;

  /** Creates a stopped server; throws on a bad timeout or cap. */
  constructor(options: MetricsServerOptions) {
    this.#o = options;
    this.#limits = { ...DEFAULT_SERVER_LIMITS, ...options.limits };
    checkServerLimits(this.#limits, "metrics");
    this.#cert = "tls" in options
      ? new ServingCertificate(options.tls, {
        logger: (options.logger ?? silentLogger()).child({ name: "metrics" }),
        ...(options.reloadIntervalMs === undefined
          ? {}
          : { intervalMs: options.reloadIntervalMs }),
      })
      : undefined;
  }

  /** The bound port (after start). */
  get port(): number {
    if (this.#server === undefined) {
      throw new Error("metrics server is not started");
    }
    return this.#port;
  }

  /** Whether it serves HTTPS. */
  get secure(): boolean {
    return this.#cert !== undefined;
  }

  /** Times the certificate was (re)loaded (0 when plain HTTP). */
  get loads(): number {
    return this.#cert?.loads ?? 0;
  }

  /** Re-reads the certificate files now; true when a new pair was loaded. */
  reload(): Promise<boolean> {
    return this.#cert?.reload() ?? Promise.resolve(false);
  }

  /** Reads the certificate, binds and serves. */
  async start(): Promise<void> {
    const { hostname, port } = parseAddress(this.#o.address ?? ":8443");
    const handle: RequestListener = (req, res) => {
      req.resume();
      void this.#handle(req, res);
    };
    let server: http.Server;
    if (this.#cert === undefined) {
      server = createNodeServer(this.#limits, undefined, handle);
    } else {
      const tlsServer = createNodeServer(
        this.#limits,
        await this.#cert.load(),
        handle,
      );
      this.#cert.attach(tlsServer);
      server = tlsServer;
    }
    this.#guarded = guardServer(
      server,
      this.#limits,
      (_status, message) => message,
    );
    this.#port = await listen(server, hostname, port);
    this.#server = server;
  }

  async #handle(
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): Promise<void> {
    const path = new URL(req.url ?? "/", "https://metrics").pathname;
    if (path !== "/metrics") return sendText(res, 404, "not found\n");
    if (req.method !== "GET" && req.method !== "HEAD") {
      return sendText(res, 405, `method must be GET, got ${req.method}\n`);
    }
    if ("authorize" in this.#o) {
      const verdict = await this.#o.authorize(
        req.headers.authorization ?? null,
      );
      if (!verdict.allowed) {
        return sendText(
          res,
          verdict.status,
          `${verdict.reason}\n`,
          verdict.status === 401
            ? { "www-authenticate": 'Bearer realm="metrics"' }
            : {},
        );
      }
    }
    const text = await this.#o.registry.metrics();
    sendText(res, 200, text, { "content-type": this.#o.registry.contentType });
  }

  /** Stops serving. */
  async stop(): Promise<void> {
    this.#cert?.stop();
    const server = this.#server;
    this.#server = undefined;
    if (server === undefined || this.#guarded === undefined) return;
    await closeServer(server, this.#guarded, 1000);
  }
}
