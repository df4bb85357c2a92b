/**
 * What every HTTP server of the operator shares (the webhook, `/metrics`,
 * the probes), on `node:http` / `node:https`: the same timeouts (handshake,
 * request head, whole request, idle keep-alive), a cap on the head's size
 * (431), a cap on open connections (more are closed before TLS), a short
 * JSON answer to malformed input, and a stop that lets running requests
 * finish.
 *
 * Deno 2.9.6's `node:http` checks the head and request timeouts only every
 * `connectionsCheckingInterval` (30 s by default, which would stretch a 10 s
 * header timeout to 40 s): it is set to a 40th of the shortest.
 *
 * @module
 */

import http from "node:http";
import https from "node:https";
import type { Socket } from "node:net";
import type { PemPair } from "./serving_cert.ts";

/** Timeouts and caps of one server. */
export interface ServerLimits {
  /** A TLS handshake must end within this, ms (TLS servers only). */
  readonly handshakeTimeoutMs: number;
  /** A request head must arrive within this, ms. */
  readonly headersTimeoutMs: number;
  /** A whole request (head and body) must arrive within this, ms. */
  readonly requestTimeoutMs: number;
  /** A keep-alive connection with no request is closed after this, ms. */
  readonly idleTimeoutMs: number;
  /** Bytes of one request head; more get 431. */
  readonly maxHeaderBytes: number;
  /** Open connections; more are closed at once, before TLS. */
  readonly maxConnections: number;
}

/**
 * Defaults for the small servers (`/metrics`, probes): a scrape or a probe
 * is one short GET, so the timeouts are short and the caps low.
 */
export const DEFAULT_SERVER_LIMITS: Readonly<ServerLimits> = Object.freeze({
  handshakeTimeoutMs: 5_000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  idleTimeoutMs: 120_000,
  maxHeaderBytes: 16 * 1024,
  maxConnections: 64,
});

/**
 * Checks `limits` (each an integer > 0, the head's timeout within the
 * request's) and says which is wrong.
 *
 * @example
 * ```ts
 * import { checkServerLimits, DEFAULT_SERVER_LIMITS } from "./http_server.ts";
 * checkServerLimits(DEFAULT_SERVER_LIMITS, "metrics");
 * ```
 */
export function checkServerLimits(limits: ServerLimits, name: string): void {
  for (const [key, v] of Object.entries(limits)) {
    if (!(Number.isSafeInteger(v) && v > 0)) {
      throw new RangeError(`${name} ${key} must be an integer > 0, got ${v}`);
    }
  }
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) {
    throw new RangeError(
      `${name} headersTimeoutMs (${limits.headersTimeoutMs}) must be <= requestTimeoutMs (${limits.requestTimeoutMs})`,
    );
  }
}

/**
 * The `node:http(s)` server options that apply `limits`.
 *
 * @example
 * ```ts
 * import { DEFAULT_SERVER_LIMITS, nodeServerOptions } from "./http_server.ts";
 * console.assert(nodeServerOptions(DEFAULT_SERVER_LIMITS).headersTimeout === 10_000);
 * ```
 */
export function nodeServerOptions(limits: ServerLimits): {
  handshakeTimeout: number;
  headersTimeout: number;
  requestTimeout: number;
  keepAliveTimeout: number;
  connectionsCheckingInterval: number;
  maxHeaderSize: number;
} {
  return {
    handshakeTimeout: limits.handshakeTimeoutMs,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.idleTimeoutMs,
    // the timeouts are checked this often: a 40th of the shortest (250 ms
    // for 10 s), so a client is closed at most 2.5% after its deadline; a
    // check walks the open connections, at most a few hundred
    connectionsCheckingInterval: Math.max(
      50,
      Math.floor(
        Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 40,
      ),
    ),
    maxHeaderSize: limits.maxHeaderBytes,
  };
}

/**
 * A `node:https` server (HTTP/1.1 only, TLS 1.2 or later) when `tls` is
 * given, else a `node:http` one, with `limits`' timeouts.
 *
 * @example
 * ```ts ignore
 * const server = createNodeServer(DEFAULT_SERVER_LIMITS, await cert.load(), (req, res) => res.end("ok"));
 * ```
 */
export function createNodeServer(
  limits: ServerLimits,
  tls: PemPair,
  handler: RequestListener,
): https.Server;
/** A `node:http` server when `tls` is undefined. */
export function createNodeServer(
  limits: ServerLimits,
  tls: PemPair | undefined,
  handler: RequestListener,
): http.Server;
export function createNodeServer(
  limits: ServerLimits,
  tls: PemPair | undefined,
  handler: RequestListener,
): http.Server {
  const options = nodeServerOptions(limits);
  if (tls === undefined) return http.createServer(options, handler);
  return https.createServer({
    ...options,
    cert: tls.cert,
    key: tls.key,
    ALPNProtocols: ["http/1.1"],
    minVersion: "TLSv1.2",
  }, handler);
}

/** What answers each request. */
export type RequestListener = (
  req: http.IncomingMessage,
  res: http.ServerResponse,
) => void;

/** Status and message for a `clientError`, by the parser's code. */
function clientErrorStatus(code: string | undefined): [number, string] {
  if (code === "HPE_HEADER_OVERFLOW") {
    return [431, "request head too large"];
  }
  if (code === "ERR_HTTP_REQUEST_TIMEOUT") {
    return [408, "request not received in time"];
  }
  return [400, `malformed request (${code ?? "unknown error"})`];
}

const STATUS_TEXT: Record<number, string> = {
  400: "Bad Request",
  408: "Request Timeout",
  431: "Request Header Fields Too Large",
};

/** The connections of a guarded server, for {@linkcode closeServer}. */
export interface GuardedServer {
  /** The accepted sockets still open. */
  readonly sockets: ReadonlySet<Socket>;
}

/** Pairs an accepted TCP socket with the TLS socket and requests over it. */
function peerKey(socket: {
  remoteAddress?: string | undefined;
  remotePort?: number | undefined;
}): string {
  return `${socket.remoteAddress}:${socket.remotePort}`;
}

/** Sends a short JSON failure and closes `socket`. */
function answerAndClose(socket: Socket, status: number, body: string): void {
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_TEXT[status]}\r\n` +
      "connection: close\r\ncontent-type: application/json\r\n" +
      `content-length: ${new TextEncoder().encode(body).byteLength}\r\n\r\n` +
      body,
  );
  // end() waits for the peer's FIN only so long
  setTimeout(() => socket.destroy(), 1000);
}

/**
 * Caps `server`'s connections at `limits.maxConnections` (more are
 * destroyed as they are accepted), gives a connection's first request head
 * `limits.headersTimeoutMs` from the TCP accept, TLS handshake included
 * (`node:http` counts from the end of the handshake, so a slow handshake
 * would stretch it; later heads are its own to time), answers malformed,
 * oversized and timed-out requests with a short `Connection: close` reply
 * built by `failureBody`, and keeps client-side TLS failures (silent or
 * garbage peers) from reaching the process.
 *
 * @example
 * ```ts ignore
 * const server = https.createServer({ ...nodeServerOptions(limits), cert, key }, handle);
 * const guarded = guardServer(server, limits, (status, message) => ({ message }));
 * ```
 */
export function guardServer(
  server: http.Server,
  limits: Pick<ServerLimits, "maxConnections" | "headersTimeoutMs">,
  failureBody: (status: number, message: string) => unknown,
): GuardedServer {
  const sockets = new Set<Socket>();
  const isTls = typeof (server as { setSecureContext?: unknown })
    .setSecureContext === "function";
  /** Connections whose first head has not arrived, by peer. */
  const awaitingHead = new Map<
    string,
    { timer: ReturnType<typeof setTimeout>; http?: Socket }
  >();
  const timedOut = (status: number, message: string) =>
    JSON.stringify(failureBody(status, message));
  server.on("connection", (socket: Socket) => {
    if (sockets.size >= limits.maxConnections) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    const key = peerKey(socket);
    const entry: { timer: ReturnType<typeof setTimeout>; http?: Socket } = {
      timer: setTimeout(() => {
        awaitingHead.delete(key);
        // over TLS, the reply goes on the TLS socket, if the handshake ended
        const http = isTls ? entry.http : socket;
        if (http?.writable) {
          answerAndClose(
            http,
            408,
            timedOut(408, "request not received in time"),
          );
        } else {
          socket.destroy();
        }
      }, limits.headersTimeoutMs),
    };
    if (!isTls) entry.http = socket;
    awaitingHead.set(key, entry);
    socket.once("close", () => {
      sockets.delete(socket);
      clearTimeout(entry.timer);
      if (awaitingHead.get(key) === entry) awaitingHead.delete(key);
    });
    // a peer that resets or vanishes: the socket closes, nothing is thrown
    socket.on("error", () => {});
  });
  server.on("secureConnection", (socket: Socket) => {
    const entry = awaitingHead.get(peerKey(socket));
    if (entry !== undefined) entry.http = socket;
  });
  server.on("request", (req: http.IncomingMessage) => {
    const key = peerKey(req.socket);
    const entry = awaitingHead.get(key);
    if (entry === undefined) return;
    clearTimeout(entry.timer);
    awaitingHead.delete(key);
  });
  // a client that fails or stalls its handshake, or sends garbage before
  // TLS: nothing to log per client, and nothing that may end the process
  server.on("tlsClientError", () => {});
  server.on("clientError", (err: Error & { code?: string }, socket: Socket) => {
    if (err.code === "ECONNRESET" || !socket.writable) {
      socket.destroy();
      return;
    }
    const [status, message] = clientErrorStatus(err.code);
    answerAndClose(socket, status, timedOut(status, message));
  });
  return { sockets };
}

/**
 * Binds `server`; resolves with the bound port, rejects with the listen
 * error (address in use, permission).
 *
 * @example
 * ```ts ignore
 * const port = await listen(server, "127.0.0.1", 0);
 * ```
 */
export function listen(
  server: http.Server,
  hostname: string,
  port: number,
): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, hostname, () => {
      server.off("error", reject);
      const addr = server.address();
      resolve(typeof addr === "object" && addr !== null ? addr.port : port);
    });
  });
}

/**
 * Stops accepting, closes idle connections, lets running requests finish
 * for `graceMs` at most, then closes the rest.
 *
 * @example
 * ```ts ignore
 * await closeServer(server, guarded, 2500);
 * ```
 */
export async function closeServer(
  server: http.Server,
  guarded: GuardedServer,
  graceMs: number,
): Promise<void> {
  const closed = new Promise<void>((r) => server.close(() => r()));
  server.closeIdleConnections?.();
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    closed,
    new Promise((r) => timer = setTimeout(r, graceMs)),
  ]);
  clearTimeout(timer);
  for (const socket of guarded.sockets) socket.destroy();
}
