/**
 * The HTTPS admission webhook server: `node:https` (HTTP/1.1, what the API
 * server speaks to a Service-backed webhook). Certificate and key are read
 * from files and reloaded when they change with `setSecureContext`: new
 * connections get the new pair, open ones keep theirs, nothing is cut.
 *
 * Why not `Deno.serve`: under Deno 2.9 its answers stall ~40 ms (Nagle's
 * algorithm meets the client's delayed ACK: its sockets are not no-delay),
 * and its certificate is fixed at start, which made a TCP splice in front
 * of it necessary for reload; that splice's sockets stalled the same way.
 * `node:https` sets no-delay and reloads in place. Why not `node:http2`:
 * the API server calls Service-backed webhooks over HTTP/1.1 only, and
 * Deno 2.9.6's HTTP/2 server ends the process under hostile HTTP/2 load
 * (an nghttp2 assertion or a segfault in 3 of 12 runs of 200 sessions
 * sending 1 MiB each, even bare: `deno task bench:http2-crash`,
 * bench/reports/http2_crash.json); a crash of a fail-closed webhook
 * refuses every write of our kinds until it restarts.
 *
 * Bounded memory: a {@linkcode RequestGate} caps requests in flight, one
 * body and the bytes of bodies buffered at once, refusing beyond them with
 * a quick 429 (413 for a body over the cap); a cap on connections closes
 * more before TLS. Timeouts: the TLS handshake, the first request's
 * headers, each body and idle connections.
 *
 * Request handling: POST with `application/json` only (400 otherwise),
 * malformed JSON or a review without `request.uid` get 400; nothing a
 * client sends crashes the server.
 *
 * @module
 */

import { createPrivateKey, type KeyObject, X509Certificate } from "node:crypto";
import https from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type tls from "node:tls";
import type { AdmissionOutcome } from "./admission.ts";
import type { Logger } from "./logger.ts";
import { silentLogger } from "./logger.ts";
import type { FrameworkMetrics } from "./metrics.ts";
import { checkGateLimits, type Refusal, RequestGate } from "./webhook_gate.ts";

/** Where the certificate comes from. */
export type WebhookTls =
  | { certFile: string; keyFile: string }
  | { certPem: string; keyPem: string };

/** A route: takes the parsed JSON body, returns the outcome. */
export type WebhookRoute = (json: unknown) => Promise<AdmissionOutcome>;

/** Caps and timeouts of the webhook server. */
export interface WebhookLimits {
  /** Bytes of one request body; more get 413. */
  maxBodyBytes: number;
  /** Requests handled at once; more get 429. */
  maxInFlight: number;
  /** Bytes of request bodies buffered at once; beyond, 429. */
  maxBufferedBytes: number;
  /**
   * Open connections; more are closed at once, before TLS. Each may hold
   * what its client sent before the server answered (up to a body), so
   * this bounds that memory.
   */
  maxConnections: number;
  /** A TLS handshake must end within this, ms. */
  handshakeTimeoutMs: number;
  /** A new connection's first request headers must arrive within this, ms. */
  headersTimeoutMs: number;
  /** A request body must arrive within this from its headers, ms. */
  bodyTimeoutMs: number;
  /** A connection with no request in flight is closed after this, ms. */
  idleTimeoutMs: number;
}

/**
 * The default caps and timeouts. The body cap serves the update review of
 * the largest object the API server accepts (3 MiB, its request limit),
 * which carries it twice, plus the envelope; the buffered budget holds two
 * of them at once, so bodies take at most 16 MiB whatever clients send.
 * The connection cap bounds what Deno reads from clients eagerly (several
 * MiB per busy connection, measured in bench:webhook). The idle timeout is
 * above Go's 90 s idle-connection timeout, so the API server's client
 * closes first and never sends on a connection the server is closing.
 */
export const DEFAULT_WEBHOOK_LIMITS: Readonly<WebhookLimits> = Object.freeze({
  maxBodyBytes: 7 * 1024 * 1024,
  maxInFlight: 256,
  maxBufferedBytes: 16 * 1024 * 1024,
  maxConnections: 64,
  handshakeTimeoutMs: 5_000,
  headersTimeoutMs: 10_000,
  bodyTimeoutMs: 10_000,
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

type Request = IncomingMessage;
type Response = ServerResponse;

/** A TLS connection: its requests in flight and its one pending deadline. */
interface Conn {
  readonly socket: tls.TLSSocket;
  requests: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** Where a TLS socket keeps its {@linkcode Conn}, for its requests to find. */
const CONN = Symbol("webhook connection");
type TaggedSocket = tls.TLSSocket & { [CONN]?: Conn };

const STATUS_REASON: Record<number, string> = {
  400: "BadRequest",
  404: "NotFound",
  405: "MethodNotAllowed",
  408: "RequestTimeout",
  413: "RequestEntityTooLarge",
  429: "TooManyRequests",
  500: "InternalError",
};

function failureBody(code: number, message: string): unknown {
  return {
    kind: "Status",
    apiVersion: "v1",
    status: "Failure",
    code,
    reason: STATUS_REASON[code] ?? "Failure",
    message,
  };
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
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
  #server: https.Server | undefined;
  #fingerprint = "";
  #conns = new Set<Conn>();
  #sockets = 0;
  #reloadTimer: ReturnType<typeof setInterval> | undefined;
  #reloading = false;
  /** Times the certificate was (re)loaded, the first load included. */
  loads = 0;

  /** Creates a stopped server; throws on a bad cap or timeout. */
  constructor(options: WebhookServerOptions) {
    this.#o = options;
    this.#log = (options.logger ?? silentLogger()).child({ name: "webhook" });
    this.#limits = { ...DEFAULT_WEBHOOK_LIMITS, ...options.limits };
    for (const [key, v] of Object.entries(this.#limits)) {
      if (!(Number.isSafeInteger(v) && v > 0)) {
        throw new RangeError(`webhook ${key} must be an integer > 0, got ${v}`);
      }
    }
    checkGateLimits(this.#limits);
    this.#gate = new RequestGate(this.#limits);
  }

  /** The bound port (after start). */
  get port(): number {
    const addr = this.#server?.address();
    if (addr === undefined || addr === null || typeof addr === "string") {
      throw new Error("webhook server is not started");
    }
    return addr.port;
  }

  /** Open TLS connections (for tests and benchmarks). */
  get connections(): number {
    return this.#conns.size;
  }

  async #readTls(): Promise<{ cert: string; key: string }> {
    const t = this.#o.tls;
    if ("certPem" in t) return { cert: t.certPem, key: t.keyPem };
    const [cert, key] = await Promise.all([
      Deno.readTextFile(t.certFile),
      Deno.readTextFile(t.keyFile),
    ]);
    return { cert, key };
  }

  /** Binds the port and starts serving. */
  async start(): Promise<void> {
    const { cert, key } = await this.#readTls();
    assertUsablePair(cert, key);
    const server = https.createServer({
      cert,
      key,
      noDelay: true,
      handshakeTimeout: this.#limits.handshakeTimeoutMs,
      minVersion: "TLSv1.2",
    }, (req, res) => void this.#handle(req, res));
    this.#fingerprint = cert + "\u0000" + key;
    this.loads++;
    server.on(
      "connection",
      (socket: { destroy(): void; once(e: "close", f: () => void): void }) => {
        if (this.#sockets >= this.#limits.maxConnections) {
          socket.destroy();
          return;
        }
        this.#sockets++;
        socket.once("close", () => this.#sockets--);
      },
    );
    server.on("secureConnection", (socket: tls.TLSSocket) => {
      socket.setNoDelay(true);
      this.#o.metrics?.webhookConnections.inc({
        protocol: socket.alpnProtocol || "http/1.1",
      });
      const conn: Conn = { socket, requests: 0, timer: undefined };
      (socket as TaggedSocket)[CONN] = conn;
      this.#conns.add(conn);
      this.#arm(conn, this.#limits.headersTimeoutMs, "headers");
      socket.once("close", () => {
        clearTimeout(conn.timer);
        this.#conns.delete(conn);
      });
      // a peer that resets or vanishes: the socket closes, nothing is thrown
      socket.on("error", () => {});
    });
    // a client that fails or stalls its handshake, or sends garbage:
    // nothing to log per client, and nothing that may end the process
    server.on("tlsClientError", () => {});
    server.on(
      "clientError",
      (_err: unknown, socket: { destroy(): void }) => socket.destroy(),
    );
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.#o.port ?? 9443, this.#o.hostname ?? "0.0.0.0", () => {
        server.off("error", reject);
        resolve();
      });
    });
    this.#server = server;
    server.on("error", (err: unknown) => {
      this.#log.error({ err: errText(err) }, "webhook server error");
    });
    if ("certFile" in this.#o.tls) {
      this.#reloadTimer = setInterval(
        () => void this.reload(),
        this.#o.reloadIntervalMs ?? 2000,
      );
    }
    this.#log.info({ port: this.port }, "webhook server listening");
  }

  /** Closes `conn` after `ms` unless a request arrives first. */
  #arm(conn: Conn, ms: number, why: "headers" | "idle"): void {
    clearTimeout(conn.timer);
    conn.timer = setTimeout(() => {
      this.#log.debug({ why }, "closing a connection that sent no request");
      conn.socket.destroy();
    }, ms);
  }

  /**
   * Re-reads the certificate files; if they changed and form a valid pair,
   * new connections use them. Returns true when a new certificate was loaded.
   */
  async reload(): Promise<boolean> {
    const server = this.#server;
    if (this.#reloading || server === undefined) return false;
    this.#reloading = true;
    try {
      const { cert, key } = await this.#readTls();
      if (cert + "\u0000" + key === this.#fingerprint) return false;
      try {
        // a bad or mismatched pair throws here and leaves the old one in place
        assertUsablePair(cert, key);
        server.setSecureContext({ cert, key });
      } catch (err) {
        // e.g. the cert was written but not yet the key: keep serving the old pair
        this.#log.warn({ err: errText(err) }, "new certificate not usable yet");
        return false;
      }
      this.#fingerprint = cert + "\u0000" + key;
      this.loads++;
      this.#log.info("serving certificate reloaded");
      return true;
    } catch (err) {
      this.#log.warn({ err: errText(err) }, "reading the certificate failed");
      return false;
    } finally {
      this.#reloading = false;
    }
  }

  async #handle(req: Request, res: Response): Promise<void> {
    const started = performance.now();
    const conn = (req.socket as TaggedSocket)[CONN];
    if (conn !== undefined) {
      clearTimeout(conn.timer);
      conn.requests++;
    }
    const path = new URL(req.url ?? "/", "https://webhook").pathname;
    const known = this.#o.routes.has(path);
    let status = 500;
    try {
      const out = await this.#route(req, path);
      status = out.status;
      this.#send(req, res, out);
    } catch (err) {
      this.#log.error({ err: errText(err) }, "webhook handler failed");
      this.#send(req, res, {
        status: 500,
        body: failureBody(500, "internal error"),
      });
    } finally {
      this.#o.metrics?.webhookRequests.inc({
        path: known ? path : "other",
        code: String(status),
      });
      if (known) {
        this.#o.metrics?.webhookDuration.observe(
          { path },
          (performance.now() - started) / 1000,
        );
      }
      if (conn !== undefined && --conn.requests === 0) {
        this.#arm(conn, this.#limits.idleTimeoutMs, "idle");
      }
    }
  }

  #send(req: Request, res: Response, out: AdmissionOutcome): void {
    if (res.headersSent || res.writableEnded) return;
    const text = JSON.stringify(out.body);
    const headers: Record<string, string | number> = {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(text),
    };
    if (out.status === 429) headers["retry-after"] = 1;
    const unread = !req.complete;
    res.writeHead(out.status, headers);
    res.end(text);
    if (unread) this.#refuseRest(req);
  }

  /**
   * Drops the rest of a refused body as it comes, without buffering it, so
   * that the client reads the answer instead of a reset (clients such as
   * Deno's fetch report a reset while sending, not the answer); a body
   * still coming after the body timeout ends its connection. Deno reads
   * request data eagerly whether or not it is read here, so the connection
   * cap, not pausing, is what bounds that memory.
   */
  #refuseRest(req: Request): void {
    const socket = req.socket;
    const timer = setTimeout(
      () => socket.destroy(),
      this.#limits.bodyTimeoutMs,
    );
    const done = () => clearTimeout(timer);
    req.once("end", done);
    req.once("close", done);
    req.resume();
  }

  async #route(
    req: Request,
    path: string,
  ): Promise<AdmissionOutcome> {
    const route = this.#o.routes.get(path);
    const fail = (code: number, message: string) => ({
      status: code,
      body: failureBody(code, message),
    });
    if (route === undefined) {
      return fail(404, `no webhook at path "${path}"`);
    }
    if (req.method !== "POST") {
      return fail(405, `method must be POST, got ${req.method}`);
    }
    const type = req.headers["content-type"] ?? "";
    if (!/^application\/json\s*(;|$)/i.test(type)) {
      return fail(400, `content-type must be application/json, got "${type}"`);
    }
    const declared = req.headers["content-length"];
    const ticket = this.#gate.open(
      declared === undefined ? undefined : Number(declared),
    );
    if ("status" in ticket) return fail(ticket.status, ticket.message);
    try {
      const read = await this.#readBody(req, ticket.grow);
      if (typeof read !== "string") return fail(read.status, read.message);
      let body: unknown;
      try {
        body = JSON.parse(read);
      } catch (err) {
        return fail(400, `malformed JSON: ${errText(err)}`);
      }
      return await route(body);
    } finally {
      ticket.close();
    }
  }

  /** The body as text, or why it was not read whole. */
  #readBody(
    req: Request,
    grow: (bytes: number) => Refusal | undefined,
  ): Promise<string | { status: number; message: string }> {
    return new Promise((resolve) => {
      const chunks: Buffer[] = [];
      let settled = false;
      const finish = (r: string | { status: number; message: string }) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        req.off("data", onData);
        // flowing without a listener would read and drop the rest
        req.pause();
        resolve(r);
      };
      const timer = setTimeout(() =>
        finish({
          status: 408,
          message:
            `the request body did not arrive within ${this.#limits.bodyTimeoutMs} ms`,
        }), this.#limits.bodyTimeoutMs);
      const onData = (chunk: Buffer) => {
        const refused = grow(chunk.byteLength);
        if (refused !== undefined) {
          chunks.length = 0;
          finish(refused);
          return;
        }
        chunks.push(chunk);
      };
      req.on("data", onData);
      req.once("end", () => finish(Buffer.concat(chunks).toString("utf8")));
      req.once(
        "error",
        () => finish({ status: 400, message: "could not read the body" }),
      );
      req.once("aborted", () => finish({ status: 400, message: "aborted" }));
    });
  }

  /** Stops accepting, lets running requests finish (2 s at most), closes everything. */
  async stop(): Promise<void> {
    if (this.#reloadTimer !== undefined) clearInterval(this.#reloadTimer);
    const server = this.#server;
    this.#server = undefined;
    if (server === undefined) return;
    const closed = new Promise<void>((r) => server.close(() => r()));
    // idle keep-alive connections would hold the close open
    for (const conn of this.#conns) {
      if (conn.requests === 0) conn.socket.destroy();
      else this.#arm(conn, 2000, "idle");
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      closed,
      new Promise((r) => timer = setTimeout(r, 2500)),
    ]);
    clearTimeout(timer);
    for (const conn of this.#conns) {
      clearTimeout(conn.timer);
      conn.socket.destroy();
    }
    this.#conns.clear();
  }
}

/**
 * Throws unless `cert` is a PEM certificate and `key` its private key.
 * Deno's `tls.createSecureContext` accepts anything, so a bad file would
 * only show at the first handshake.
 */
function assertUsablePair(cert: string, key: string): void {
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch (err) {
    throw new Error(`not a PEM certificate: ${errText(err)}`, { cause: err });
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(key);
  } catch (err) {
    throw new Error(`not a PEM private key: ${errText(err)}`, { cause: err });
  }
  if (!x509.checkPrivateKey(privateKey)) {
    throw new Error("the private key does not belong to the certificate");
  }
}
