/**
 * The HTTPS admission webhook server (Deno.serve). Certificate and key
 * are read from files and reloaded when the files change, without failing
 * a request: a plain TCP listener owns the public port and splices each new
 * connection to a TLS backend with the current certificate. On a change a
 * new backend takes the new connections; the old one keeps serving the
 * connections it has (HTTP/1.1 answers carry `Connection: close`, so those
 * clients reconnect), and closes once they are gone or after
 * `retireAfterMs` (HTTP/2 clients then get a graceful GOAWAY).
 *
 * Request handling: POST with `application/json` only (400 otherwise),
 * bodies over the cap (1 MiB) get 413, malformed JSON or a review without
 * `request.uid` get 400; nothing a client sends crashes the server.
 *
 * @module
 */

import type { AdmissionOutcome } from "./admission.ts";
import type { Logger } from "./logger.ts";
import { silentLogger } from "./logger.ts";
import type { FrameworkMetrics } from "./metrics.ts";

/** Where the certificate comes from. */
export type WebhookTls =
  | { certFile: string; keyFile: string }
  | { certPem: string; keyPem: string };

/** A route: takes the parsed JSON body, returns the outcome. */
export type WebhookRoute = (json: unknown) => Promise<AdmissionOutcome>;

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
  /** Request body cap in bytes (default 1 MiB). */
  maxBodyBytes?: number;
  /** How often cert files are checked for changes, ms (default 2000). */
  reloadIntervalMs?: number;
  /**
   * How long connections made before a certificate change may stay open
   * (default 300000). Until then they are served and told to reconnect
   * (`Connection: close` on their next answer), so that no client ever
   * sends a request on a connection the server is closing.
   */
  retireAfterMs?: number;
  /** Logger. */
  logger?: Logger;
  /** Metrics. */
  metrics?: FrameworkMetrics | undefined;
}

/** The default request body cap: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

interface Backend {
  server: Deno.HttpServer<Deno.NetAddr>;
  port: number;
  fingerprint: string;
  /** Spliced client connections still open to this backend. */
  conns: number;
  /** Replaced by a newer certificate: answers ask clients to reconnect. */
  retired: boolean;
  /** Shut down (once). */
  closing?: Promise<void>;
  /** Cancels the retirement deadline. */
  deadline?: ReturnType<typeof setTimeout>;
}

class BodyTooLarge extends Error {}

async function readCapped(req: Request, cap: number): Promise<string> {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > cap) throw new BodyTooLarge();
  if (req.body === null) return "";
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > cap) {
      await reader.cancel().catch(() => {});
      throw new BodyTooLarge();
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let off = 0;
  for (const c of chunks) {
    all.set(c, off);
    off += c.byteLength;
  }
  return new TextDecoder().decode(all);
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });
}

function failure(code: number, reason: string, message: string): Response {
  return json(code, {
    kind: "Status",
    apiVersion: "v1",
    status: "Failure",
    code,
    reason,
    message,
  });
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
  readonly #cap: number;
  #listener: Deno.Listener | undefined;
  #backend: Backend | undefined;
  #retired = new Set<Backend>();
  #conns = new Set<Deno.Conn>();
  #reloadTimer: ReturnType<typeof setInterval> | undefined;
  #acceptLoop: Promise<void> | undefined;
  #reloading = false;
  /** Times the certificate was (re)loaded, the first load included. */
  loads = 0;

  /** Creates a stopped server. */
  constructor(options: WebhookServerOptions) {
    this.#o = options;
    this.#log = (options.logger ?? silentLogger()).child({ name: "webhook" });
    this.#cap = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    if (!(this.#cap > 0)) {
      throw new RangeError(`maxBodyBytes must be > 0, got ${this.#cap}`);
    }
  }

  /** Backends with an old certificate still holding client connections. */
  get retiredBackends(): number {
    return this.#retired.size;
  }

  /** The bound port (after start). */
  get port(): number {
    const addr = this.#listener?.addr;
    if (addr === undefined || addr.transport !== "tcp") {
      throw new Error("webhook server is not started");
    }
    return addr.port;
  }

  async #readTls(): Promise<{ cert: string; key: string }> {
    const tls = this.#o.tls;
    if ("certPem" in tls) return { cert: tls.certPem, key: tls.keyPem };
    const [cert, key] = await Promise.all([
      Deno.readTextFile(tls.certFile),
      Deno.readTextFile(tls.keyFile),
    ]);
    return { cert, key };
  }

  #startBackend(cert: string, key: string): Backend {
    let port = 0;
    const backend: Partial<Backend> & { conns: number; retired: boolean } = {
      conns: 0,
      retired: false,
    };
    const server = Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      cert,
      key,
      onListen: (addr) => {
        port = addr.port;
      },
      onError: (err) => {
        this.#log.error({
          err: err instanceof Error ? err.message : String(err),
        }, "webhook handler failed");
        return failure(500, "InternalError", "internal error");
      },
    }, async (req) => {
      const res = await this.#handle(req);
      // a retired backend asks the client to open a new connection, which
      // gets the new certificate; the client closes, never the server
      if (backend.retired) res.headers.set("connection", "close");
      return res;
    });
    port = server.addr.port;
    return Object.assign(backend, {
      server,
      port,
      fingerprint: cert + "\u0000" + key,
    });
  }

  #close(backend: Backend): Promise<void> {
    if (backend.deadline !== undefined) clearTimeout(backend.deadline);
    backend.closing ??= backend.server.shutdown().catch(() => {});
    return backend.closing;
  }

  #retire(backend: Backend): void {
    backend.retired = true;
    this.#retired.add(backend);
    const done = () => {
      this.#retired.delete(backend);
      void this.#close(backend);
    };
    if (backend.conns === 0) {
      done();
      return;
    }
    backend.deadline = setTimeout(done, this.#o.retireAfterMs ?? 300_000);
  }

  /** Binds the port and starts serving. */
  async start(): Promise<void> {
    const { cert, key } = await this.#readTls();
    this.#backend = this.#startBackend(cert, key);
    this.loads++;
    this.#listener = Deno.listen({
      hostname: this.#o.hostname ?? "0.0.0.0",
      port: this.#o.port ?? 9443,
    });
    this.#acceptLoop = this.#accept(this.#listener);
    if ("certFile" in this.#o.tls) {
      this.#reloadTimer = setInterval(
        () => void this.reload(),
        this.#o.reloadIntervalMs ?? 2000,
      );
    }
    this.#log.info({ port: this.port }, "webhook server listening");
  }

  /**
   * Re-reads the certificate files; if they changed and form a valid pair,
   * new connections use them. Returns true when a new certificate was loaded.
   */
  async reload(): Promise<boolean> {
    if (this.#reloading || this.#backend === undefined) return false;
    this.#reloading = true;
    try {
      const { cert, key } = await this.#readTls();
      const old = this.#backend;
      if (old === undefined || cert + "\u0000" + key === old.fingerprint) {
        return false;
      }
      let next: Backend;
      try {
        next = this.#startBackend(cert, key);
      } catch (err) {
        // e.g. the cert was written but not yet the key: keep serving the old pair
        this.#log.warn({
          err: err instanceof Error ? err.message : String(err),
        }, "new certificate not usable yet");
        return false;
      }
      this.#backend = next;
      this.loads++;
      this.#retire(old);
      this.#log.info("serving certificate reloaded");
      return true;
    } catch (err) {
      this.#log.warn(
        { err: err instanceof Error ? err.message : String(err) },
        "reading the certificate failed",
      );
      return false;
    } finally {
      this.#reloading = false;
    }
  }

  async #accept(listener: Deno.Listener): Promise<void> {
    for (;;) {
      let conn: Deno.Conn;
      try {
        conn = await listener.accept();
      } catch {
        return;
      }
      const backend = this.#backend;
      if (backend === undefined) {
        conn.close();
        continue;
      }
      void this.#splice(conn, backend);
    }
  }

  async #splice(conn: Deno.Conn, backend: Backend): Promise<void> {
    this.#conns.add(conn);
    backend.conns++;
    let up: Deno.Conn | undefined;
    try {
      up = await Deno.connect({ hostname: "127.0.0.1", port: backend.port });
      this.#conns.add(up);
      const upstream = up;
      await Promise.allSettled([
        conn.readable.pipeTo(upstream.writable),
        upstream.readable.pipeTo(conn.writable),
      ]);
    } catch {
      // a peer went away
    } finally {
      for (const c of [conn, up]) {
        if (c === undefined) continue;
        this.#conns.delete(c);
        try {
          c.close();
        } catch {
          // already closed
        }
      }
      backend.conns--;
      if (
        backend.retired && backend.conns === 0 && this.#retired.delete(backend)
      ) {
        void this.#close(backend);
      }
    }
  }

  async #handle(req: Request): Promise<Response> {
    const started = performance.now();
    const path = new URL(req.url).pathname;
    const res = await this.#route(req, path);
    const known = this.#o.routes.has(path);
    this.#o.metrics?.webhookRequests.inc({
      path: known ? path : "other",
      code: String(res.status),
    });
    if (known) {
      this.#o.metrics?.webhookDuration.observe(
        { path },
        (performance.now() - started) / 1000,
      );
    }
    return res;
  }

  async #route(req: Request, path: string): Promise<Response> {
    const route = this.#o.routes.get(path);
    if (route === undefined) {
      return failure(404, "NotFound", `no webhook at path "${path}"`);
    }
    if (req.method !== "POST") {
      return failure(
        405,
        "MethodNotAllowed",
        `method must be POST, got ${req.method}`,
      );
    }
    const type = req.headers.get("content-type") ?? "";
    if (!/^application\/json\s*(;|$)/i.test(type)) {
      return failure(
        400,
        "BadRequest",
        `content-type must be application/json, got "${type}"`,
      );
    }
    let text: string;
    try {
      text = await readCapped(req, this.#cap);
    } catch (err) {
      if (err instanceof BodyTooLarge) {
        return failure(
          413,
          "RequestEntityTooLarge",
          `request body exceeds ${this.#cap} bytes`,
        );
      }
      return failure(400, "BadRequest", "could not read the request body");
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (err) {
      return failure(
        400,
        "BadRequest",
        `malformed JSON: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    const out = await route(body);
    return json(out.status, out.body);
  }

  /** Stops accepting, lets running requests finish, closes everything. */
  async stop(): Promise<void> {
    if (this.#reloadTimer !== undefined) clearInterval(this.#reloadTimer);
    try {
      this.#listener?.close();
    } catch {
      // already closed
    }
    await this.#acceptLoop;
    const backend = this.#backend;
    this.#backend = undefined;
    const all = [...this.#retired, ...(backend === undefined ? [] : [backend])];
    this.#retired.clear();
    const shutdown = Promise.all(all.map((b) => this.#close(b)));
    // idle keep-alive connections would hold the drain open: close the splices
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      shutdown,
      new Promise((r) => timer = setTimeout(r, 2000)),
    ]);
    clearTimeout(timer);
    for (const c of this.#conns) {
      try {
        c.close();
      } catch {
        // already closed
      }
    }
    this.#conns.clear();
    await shutdown;
  }
}
