/**
 * The HTTPS admission webhook server: `node:tls` for TLS, with our own
 * HTTP/1.1 (`http1.ts`) and HTTP/2 (`http2.ts`) over it, chosen by ALPN.
 * Certificate and key are read from files and reloaded when they change
 * with `setSecureContext`: new connections get the new pair, open ones
 * keep theirs, nothing is cut.
 *
 * Why this shape, measured (bench:webhook's transport rows): under Deno
 * 2.9 `node:https` answers with twice our p99 over the same TLS;
 * `Deno.serve` is about as fast as our framing but has no handshake, header or
 * idle timeout (a client that sends nothing holds its connection for
 * good) and a certificate fixed at start; Deno 2.9.6's `node:http2`
 * server ends the process under hostile HTTP/2 load (bench:http2-crash),
 * and a crash of a fail-closed webhook refuses every write of our kinds.
 * The API server calls a Service-backed webhook over HTTP/1.1; HTTP/2 is
 * served for clients that offer it.
 *
 * Bounded memory: a {@linkcode RequestGate} caps requests in flight, one
 * body and the bytes of bodies buffered at once, refusing beyond them with
 * a quick 429 (413 for a body over the cap) whose refused body is dropped
 * as it arrives; a cap on connections closes more before TLS. Timeouts:
 * the TLS handshake, each request head, each body and idle connections.
 *
 * Request handling: POST with `application/json` only (400 otherwise),
 * malformed JSON or a review without `request.uid` get 400; nothing a
 * client sends crashes the server.
 *
 * @module
 */

import { createPrivateKey, type KeyObject, X509Certificate } from "node:crypto";
import tls from "node:tls";
import type { AdmissionOutcome } from "./admission.ts";
import {
  type BodySink,
  concatBytes,
  type ConnectionLimits,
  jsonReply,
  type Pipe,
  type Reply,
  type RequestHandler,
  type RequestHead,
} from "./http_exchange.ts";
import { Http1Connection } from "./http1.ts";
import { Http2Connection } from "./http2.ts";
import type { Logger } from "./logger.ts";
import { silentLogger } from "./logger.ts";
import type { FrameworkMetrics } from "./metrics.ts";
import { checkGateLimits, RequestGate } from "./webhook_gate.ts";

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
  /** Bytes of one request head; more get 431 (HTTP/1.1) or end the connection (HTTP/2). */
  maxHeaderBytes: number;
  /** Open connections; more are closed at once, before TLS. */
  maxConnections: number;
  /** HTTP/2 streams one connection may have open at once; more are refused. */
  maxStreams: number;
  /** A TLS handshake must end within this, ms. */
  handshakeTimeoutMs: number;
  /** A request head must arrive within this (from a new connection, or from its first byte), ms. */
  headersTimeoutMs: number;
  /** A request body must arrive within this from its head, ms. */
  bodyTimeoutMs: number;
  /** A connection with no request in flight is closed after this, ms. */
  idleTimeoutMs: number;
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
  maxStreams: 100,
  handshakeTimeoutMs: 5_000,
  headersTimeoutMs: 10_000,
  bodyTimeoutMs: 10_000,
  idleTimeoutMs: 120_000,
});

/** Reply bytes a connection may have queued for a client that does not read them. */
const MAX_QUEUED_BYTES = 1 << 20;

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
  /**
   * Offer HTTP/2 besides HTTP/1.1 by ALPN (default true). The API server
   * calls a Service-backed webhook over HTTP/1.1 whatever is offered, a
   * URL on loopback over HTTP/2 when offered.
   */
  http2?: boolean;
  /** Logger. */
  logger?: Logger;
  /** Metrics. */
  metrics?: FrameworkMetrics | undefined;
}

/** A connection of either protocol, as the server drives it. */
interface Connection {
  receive(chunk: Uint8Array): void;
  closed(): void;
  drain(): void;
}

const STATUS_REASON: Record<number, string> = {
  400: "BadRequest",
  404: "NotFound",
  405: "MethodNotAllowed",
  408: "RequestTimeout",
  413: "RequestEntityTooLarge",
  417: "ExpectationFailed",
  429: "TooManyRequests",
  431: "RequestHeaderFieldsTooLarge",
  500: "InternalError",
  501: "NotImplemented",
  505: "HTTPVersionNotSupported",
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

/** An accepted TCP socket, before TLS. */
interface RawSocket {
  readonly remoteAddress?: string | undefined;
  readonly remotePort?: number | undefined;
  destroy(): void;
  once(event: "close", listener: () => void): void;
}

/** Pairs an accepted TCP socket with the TLS socket over it. */
function peerKey(socket: RawSocket): string {
  return `${socket.remoteAddress}:${socket.remotePort}`;
}

/** The socket as a {@linkcode Pipe}. */
export function pipeOf(socket: tls.TLSSocket): Pipe {
  return {
    write: (bytes) => socket.write(bytes),
    get buffered() {
      return socket.writableLength;
    },
    end: () => void socket.end(),
    destroy: () => void socket.destroy(),
    pause: () => void socket.pause(),
    resume: () => void socket.resume(),
  };
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
  readonly #connectionLimits: ConnectionLimits;
  readonly #gate: RequestGate;
  readonly #handler: RequestHandler;
  #server: tls.Server | undefined;
  #fingerprint = "";
  #conns = new Map<tls.TLSSocket, Connection>();
  #sockets = 0;
  /** Handshake deadlines of accepted sockets, by peer address and port. */
  #handshakes = new Map<string, ReturnType<typeof setTimeout>>();
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
    this.#connectionLimits = {
      headersTimeoutMs: this.#limits.headersTimeoutMs,
      bodyTimeoutMs: this.#limits.bodyTimeoutMs,
      idleTimeoutMs: this.#limits.idleTimeoutMs,
      maxHeaderBytes: this.#limits.maxHeaderBytes,
      maxQueuedBytes: MAX_QUEUED_BYTES,
    };
    this.#handler = {
      begin: (head) => this.#begin(head),
      failure: (status, message) => {
        this.#count("other", status);
        return this.#fail(status, message);
      },
    };
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
    const server = tls.createServer({
      cert,
      key,
      ALPNProtocols: this.#o.http2 === false ? ["http/1.1"] : [
        "h2",
        "http/1.1",
      ],
      handshakeTimeout: this.#limits.handshakeTimeoutMs,
      minVersion: "TLSv1.2",
    }, (socket) => this.#connected(socket));
    this.#fingerprint = cert + "\u0000" + key;
    this.loads++;
    server.on("connection", (socket: RawSocket) => {
      if (this.#sockets >= this.#limits.maxConnections) {
        socket.destroy();
        return;
      }
      this.#sockets++;
      // Deno 2.9's node:tls ignores `handshakeTimeout`: timed here
      const key = peerKey(socket);
      const timer = setTimeout(
        () => socket.destroy(),
        this.#limits.handshakeTimeoutMs,
      );
      this.#handshakes.set(key, timer);
      socket.once("close", () => {
        this.#sockets--;
        clearTimeout(timer);
        if (this.#handshakes.get(key) === timer) this.#handshakes.delete(key);
      });
    });
    // a client that fails or stalls its handshake, or sends garbage:
    // nothing to log per client, and nothing that may end the process
    server.on("tlsClientError", () => {});
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

  /** A TLS connection is up: its protocol takes its bytes. */
  #connected(socket: tls.TLSSocket): void {
    const key = peerKey(socket);
    clearTimeout(this.#handshakes.get(key));
    this.#handshakes.delete(key);
    socket.setNoDelay(true);
    const protocol = socket.alpnProtocol === "h2" ? "h2" : "http/1.1";
    this.#o.metrics?.webhookConnections.inc({ protocol });
    const pipe = pipeOf(socket);
    const conn: Connection = protocol === "h2"
      ? new Http2Connection(
        pipe,
        this.#handler,
        this.#connectionLimits,
        this.#limits.maxStreams,
      )
      : new Http1Connection(pipe, this.#handler, this.#connectionLimits);
    this.#conns.set(socket, conn);
    socket.on("data", (chunk: Uint8Array) => {
      try {
        conn.receive(chunk);
      } catch (err) {
        // a bug of ours, not the client's: this connection ends, the server goes on
        this.#log.error({ err: errText(err) }, "webhook connection failed");
        socket.destroy();
      }
    });
    socket.once("close", () => {
      conn.closed();
      this.#conns.delete(socket);
    });
    // a peer that resets or vanishes: the socket closes, nothing is thrown
    socket.on("error", () => {});
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

  #fail(status: number, message: string): Reply {
    return jsonReply(
      status,
      failureBody(status, message),
      status === 429 ? { "retry-after": "1" } : {},
    );
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

  /** A request head: refused at once, or a sink that buffers its body under the gate. */
  #begin(head: RequestHead): Reply | BodySink {
    const started = performance.now();
    const path = new URL(head.target, "https://webhook").pathname;
    const route = this.#o.routes.get(path);
    const refuse = (status: number, message: string) => {
      this.#count(route === undefined ? "other" : path, status);
      if (route !== undefined) this.#observe(path, started);
      return this.#fail(status, message);
    };
    if (route === undefined) {
      return refuse(404, `no webhook at path "${path}"`);
    }
    if (head.method !== "POST") {
      return refuse(405, `method must be POST, got ${head.method}`);
    }
    const type = head.headers.get("content-type") ?? "";
    if (!/^application\/json\s*(;|$)/i.test(type)) {
      return refuse(
        400,
        `content-type must be application/json, got "${type}"`,
      );
    }
    const declared = head.headers.get("content-length");
    const ticket = this.#gate.open(
      declared === undefined ? undefined : Number(declared),
    );
    if ("status" in ticket) return refuse(ticket.status, ticket.message);
    const chunks: Uint8Array[] = [];
    const answered = (reply: Reply): Reply => {
      ticket.close();
      this.#count(path, reply.status);
      this.#observe(path, started);
      return reply;
    };
    return {
      data: (chunk) => {
        const refused = ticket.grow(chunk.byteLength);
        if (refused === undefined) {
          chunks.push(chunk);
          return undefined;
        }
        chunks.length = 0;
        return answered(this.#fail(refused.status, refused.message));
      },
      end: async () => {
        let body: unknown;
        try {
          body = JSON.parse(utf8(chunks));
        } catch (err) {
          return answered(this.#fail(400, `malformed JSON: ${errText(err)}`));
        } finally {
          chunks.length = 0;
        }
        try {
          const out = await route(body);
          return answered(jsonReply(out.status, out.body));
        } catch (err) {
          this.#log.error({ err: errText(err) }, "webhook handler failed");
          return answered(this.#fail(500, "internal error"));
        }
      },
      abort: () => {
        chunks.length = 0;
        ticket.close();
      },
    };
  }

  /** Stops accepting, lets running requests finish (2 s at most), closes everything. */
  async stop(): Promise<void> {
    if (this.#reloadTimer !== undefined) clearInterval(this.#reloadTimer);
    const server = this.#server;
    this.#server = undefined;
    if (server === undefined) return;
    const closed = new Promise<void>((r) => server.close(() => r()));
    for (const conn of this.#conns.values()) conn.drain();
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      closed,
      new Promise((r) => timer = setTimeout(r, 2500)),
    ]);
    clearTimeout(timer);
    for (const socket of this.#conns.keys()) socket.destroy();
    this.#conns.clear();
  }
}

const decoder = new TextDecoder();

/** The chunks of a body as UTF-8 text. */
function utf8(chunks: Uint8Array[]): string {
  return decoder.decode(
    chunks.length === 1 ? chunks[0] : concatBytes(...chunks),
  );
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
