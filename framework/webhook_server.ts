/**
 * The HTTPS admission webhook server on `node:https`, HTTP/1.1 only (ALPN
 * `http/1.1`): kube-apiserver calls a Service-backed webhook over HTTP/1.1
 * whatever the server offers, and not offering HTTP/2 closes its attack
 * surface (CVE-2023-44487). Certificate and key are read from files and
 * reloaded in place when they change ({@linkcode ServingCertificate}): new
 * connections get the new pair, open ones keep theirs, nothing is cut.
 *
 * Bounded memory: a {@linkcode RequestGate} caps requests in flight, one
 * body and the bytes of bodies buffered at once, refusing beyond them with
 * a quick 429 and `Retry-After` (413 for a body over the cap) whose body is
 * dropped as it arrives; a cap on connections closes more before TLS.
 * Timeouts (`http_server.ts`): the TLS handshake, the request head, the
 * whole request, idle keep-alive connections.
 *
 * Request handling: POST with `application/json` only (400 otherwise),
 * malformed HTTP, malformed JSON or a review without `request.uid` get 400;
 * nothing a client sends crashes the server.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import type http from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AdmissionOutcome } from "./admission.ts";
import {
  checkServerLimits,
  closeServer,
  createNodeServer,
  type GuardedServer,
  guardServer,
  listen,
  type ServerLimits,
} from "./http_server.ts";
import { errText } from "./errors.ts";
import type { Logger } from "./logger.ts";
import { silentLogger } from "./logger.ts";
import type { FrameworkMetrics } from "./metrics.ts";
import { ServingCertificate, type ServingTls } from "./serving_cert.ts";
import { checkGateLimits, RequestGate } from "./webhook_gate.ts";

/** Where the certificate comes from. */
export type WebhookTls = ServingTls;

/** A route: takes the parsed JSON body, returns the outcome. */
export type WebhookRoute = (json: unknown) => Promise<AdmissionOutcome>;

/** Caps and timeouts of the webhook server. */
export interface WebhookLimits extends ServerLimits {
  /** Bytes of one request body; more get 413. */
  maxBodyBytes: number;
  /** Requests handled at once; more get 429. */
  maxInFlight: number;
  /** Bytes of request bodies buffered at once; beyond, 429. */
  maxBufferedBytes: number;
}

/**
 * The default caps and timeouts. The body cap serves the update review of
 * the largest object the API server accepts (3 MiB, its request limit),
 * which carries it twice, plus the envelope; the buffered budget holds two
 * of them at once, so bodies take at most 16 MiB whatever clients send. A
 * refused body is dropped as it arrives, so a connection holds little
 * more than a socket read; the connection cap bounds those. The idle
 * timeout is above Go's 90 s idle-connection timeout, so the API server's
 * client closes first and never sends on a connection the server is
 * closing.
 */
export const DEFAULT_WEBHOOK_LIMITS: Readonly<WebhookLimits> = Object.freeze({
  maxBodyBytes: 7 * 1024 * 1024,
  maxInFlight: 256,
  maxBufferedBytes: 16 * 1024 * 1024,
  maxHeaderBytes: 64 * 1024,
  maxConnections: 256,
  handshakeTimeoutMs: 5_000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 20_000,
  idleTimeoutMs: 120_000,
});

/** Options of {@linkcode WebhookServer}. */
export interface WebhookServerOptions {
  /** Listen address (default 0.0.0.0). */
  hostname?: string;
  /** Listen port; 0 picks a free one (default 9443). */
  port?: number;
  /** Certificate and key. */
  tls: WebhookTls;
  /** Routes by URL path. */
  routes: Map<string, WebhookRoute>;
  /** Caps and timeouts (defaults: {@linkcode DEFAULT_WEBHOOK_LIMITS}). */
  limits?: Partial<WebhookLimits>;
  /** How often cert files are checked for changes, ms (default 2000). */
  reloadIntervalMs?: number;
  /** Logger. */
  logger?: Logger;
  /** Metrics. */
  metrics?: FrameworkMetrics | undefined;
}

const STATUS_REASON: Record<number, string> = {
  400: "BadRequest",
  404: "NotFound",
  405: "MethodNotAllowed",
  408: "RequestTimeout",
  413: "RequestEntityTooLarge",
  429: "TooManyRequests",
  431: "RequestHeaderFieldsTooLarge",
  500: "InternalError",
};

/**
 * A `metav1.Status` failure, the body of every refusal.
 *
 * @example
 * ```ts
 * import { failureStatus } from "./webhook_server.ts";
 * console.assert((failureStatus(429, "full") as { reason: string }).reason === "TooManyRequests");
 * ```
 */
export function failureStatus(code: number, message: string): unknown {
  return {
    kind: "Status",
    apiVersion: "v1",
    status: "Failure",
    code,
    reason: STATUS_REASON[code] ?? "Failure",
    message,
  };
}

/** Writes a JSON reply (429 with `Retry-After: 1`). */
function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    ...(status === 429 ? { "retry-after": "1" } : {}),
  });
  res.end(body);
}

/**
 * The server. {@linkcode start} binds; {@linkcode stop} drains and closes.
 *
 * @example
 * ```ts ignore
 * const server = new WebhookServer({
 *   port: 9443,
 *   tls: { certFile: "/tls/tls.crt", keyFile: "/tls/tls.key" },
 *   routes: new Map([["/validate", (json) => handleAdmission(json, () => allow())]]),
 * });
 * await server.start();
 * ```
 */
export class WebhookServer {
  readonly #o: WebhookServerOptions;
  readonly #log: Logger;
  readonly #limits: WebhookLimits;
  readonly #gate: RequestGate;
  readonly #cert: ServingCertificate;
  #server: http.Server | undefined;
  #guarded: GuardedServer | undefined;
  #port = 0;

  /** Creates a stopped server; throws on a bad cap or timeout. */
  constructor(options: WebhookServerOptions) {
    this.#o = options;
    this.#log = (options.logger ?? silentLogger()).child({ name: "webhook" });
    this.#limits = { ...DEFAULT_WEBHOOK_LIMITS, ...options.limits };
    checkServerLimits(this.#limits, "webhook");
    checkGateLimits(this.#limits);
    this.#gate = new RequestGate(this.#limits);
    this.#cert = new ServingCertificate(options.tls, {
      logger: this.#log,
      ...(options.reloadIntervalMs === undefined
        ? {}
        : { intervalMs: options.reloadIntervalMs }),
    });
  }

  /** Times the certificate was (re)loaded, the first load included. */
  get loads(): number {
    return this.#cert.loads;
  }

  /** The bound port (after start). */
  get port(): number {
    if (this.#server === undefined) {
      throw new Error("webhook server is not started");
    }
    return this.#port;
  }

  /** Open connections (for tests and benchmarks). */
  get connections(): number {
    return this.#guarded?.sockets.size ?? 0;
  }

  /** Binds the port and starts serving. */
  async start(): Promise<void> {
    const { cert, key } = await this.#cert.load();
    const server = createNodeServer(
      this.#limits,
      { cert, key },
      (req, res) => this.#handle(req, res),
    );
    this.#guarded = guardServer(server, this.#limits, (s, m) => {
      this.#count("other", s);
      return failureStatus(s, m);
    });
    server.on(
      "secureConnection",
      (socket: { setNoDelay(on: boolean): void }) => {
        socket.setNoDelay(true);
        this.#o.metrics?.webhookConnections.inc({ protocol: "http/1.1" });
      },
    );
    this.#port = await listen(
      server,
      this.#o.hostname ?? "0.0.0.0",
      this.#o.port ?? 9443,
    );
    this.#server = server;
    server.on("error", (err: unknown) => {
      this.#log.error({ err: errText(err) }, "webhook server error");
    });
    this.#cert.attach(server);
    this.#log.info({ port: this.port }, "webhook server listening");
  }

  /**
   * Re-reads the certificate files; if they changed and form a valid pair,
   * new connections use them. Returns true when a new certificate was loaded.
   */
  reload(): Promise<boolean> {
    return this.#cert.reload();
  }

  #count(path: string, status: number): void {
    this.#o.metrics?.webhookRequests.inc({ path, code: String(status) });
  }

  #observe(path: string, started: number): void {
    this.#o.metrics?.webhookDuration.observe(
      { path },
      (performance.now() - started) / 1000,
    );
  }

  /** One request: refused at once, or its body buffered under the gate, then routed. */
  #handle(req: IncomingMessage, res: ServerResponse): void {
    const started = performance.now();
    const path = new URL(req.url ?? "/", "https://webhook").pathname;
    const route = this.#o.routes.get(path);
    const label = route === undefined ? "other" : path;
    let answered = false;
    const answer = (status: number, value: unknown) => {
      if (answered) return;
      answered = true;
      this.#count(label, status);
      if (route !== undefined) this.#observe(path, started);
      sendJson(res, status, value);
    };
    const refuse = (status: number, message: string) => {
      // the rest of the body is read and dropped: the connection stays usable
      req.removeAllListeners("data");
      req.resume();
      answer(status, failureStatus(status, message));
    };
    if (route === undefined) {
      return refuse(404, `no webhook at path "${path}"`);
    }
    if (req.method !== "POST") {
      return refuse(405, `method must be POST, got ${req.method}`);
    }
    const type = req.headers["content-type"] ?? "";
    if (!/^application\/json\s*(;|$)/i.test(type)) {
      return refuse(
        400,
        `content-type must be application/json, got "${type}"`,
      );
    }
    const declared = req.headers["content-length"];
    const ticket = this.#gate.open(
      declared === undefined ? undefined : Number(declared),
    );
    if ("status" in ticket) return refuse(ticket.status, ticket.message);
    const chunks: Uint8Array[] = [];
    // released however the exchange ends: answered, refused, reset, timed out
    res.once("close", () => {
      chunks.length = 0;
      ticket.close();
    });
    req.on("error", () => {});
    req.on("data", (chunk: Uint8Array) => {
      const refused = ticket.grow(chunk.byteLength);
      if (refused === undefined) {
        chunks.push(chunk);
        return;
      }
      chunks.length = 0;
      ticket.close();
      refuse(refused.status, refused.message);
    });
    req.on("end", async () => {
      if (answered) return;
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch (err) {
        ticket.close();
        return answer(
          400,
          failureStatus(400, `malformed JSON: ${errText(err)}`),
        );
      } finally {
        chunks.length = 0;
      }
      try {
        const out = await route(body);
        ticket.close();
        answer(out.status, out.body);
      } catch (err) {
        ticket.close();
        this.#log.error({ err: errText(err) }, "webhook handler failed");
        answer(500, failureStatus(500, "internal error"));
      }
    });
  }

  /** Stops accepting, lets running requests finish (2.5 s at most), closes everything. */
  async stop(): Promise<void> {
    this.#cert.stop();
    const server = this.#server;
    this.#server = undefined;
    if (server === undefined || this.#guarded === undefined) return;
    await closeServer(server, this.#guarded, 2500);
  }
}
