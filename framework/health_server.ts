/**
 * The probes every replica serves over plain HTTP on their own port:
 * `/healthz` and `/livez` (liveness and registered probes), `/readyz`
 * (caches synced). They carry nothing secret, and the kubelet calls them
 * without a token or a CA; `/metrics` is served apart
 * (`metrics_server.ts`). The same timeouts as every other server
 * (`http_server.ts`), so a client that sends nothing is closed.
 *
 * @module
 */

import type http from "node:http";
import { parseAddress } from "./address.ts";
import {
  checkServerLimits,
  closeServer,
  createNodeServer,
  DEFAULT_SERVER_LIMITS,
  type GuardedServer,
  guardServer,
  listen,
  type ServerLimits,
} from "./http_server.ts";

/** A named check; false or a throw means unhealthy. */
export type Check = () => boolean | Promise<boolean>;

/** Options of {@linkcode HealthServer}. */
export interface HealthServerOptions {
  /** `host:port` (default `:8081`). */
  address?: string;
  /** Liveness checks (`/healthz`, `/livez`). */
  liveness: Map<string, Check>;
  /** Readiness checks (`/readyz`). */
  readiness: Map<string, Check>;
  /** Timeouts and caps (default {@linkcode DEFAULT_SERVER_LIMITS}). */
  limits?: Partial<ServerLimits>;
}

async function runChecks(
  checks: Map<string, Check>,
): Promise<{ ok: boolean; text: string }> {
  let ok = true;
  const lines: string[] = [];
  for (const [name, check] of checks) {
    let pass = false;
    try {
      pass = await check();
    } catch {
      pass = false;
    }
    ok &&= pass;
    lines.push(`[${pass ? "+" : "-"}]${name} ${pass ? "ok" : "failed"}`);
  }
  lines.push(ok ? "ok" : "check failed");
  return { ok, text: lines.join("\n") + "\n" };
}

/**
 * Writes a plain-text reply.
 *
 * @example
 * ```ts ignore
 * sendText(res, 404, "not found\n");
 * ```
 */
export function sendText(
  res: http.ServerResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    "content-type": "text/plain; charset=utf-8",
    "content-length": new TextEncoder().encode(text).byteLength,
    ...headers,
  });
  res.end(text);
}

/**
 * Serves the probes.
 *
 * @example
 * ```ts ignore
 * const hs = new HealthServer({ address: ":8081", liveness: new Map(), readiness: new Map() });
 * await hs.start();
 * ```
 */
export class HealthServer {
  readonly #o: HealthServerOptions;
  readonly #limits: ServerLimits;
  #server: http.Server | undefined;
  #guarded: GuardedServer | undefined;
  #port = 0;

  /** Creates a stopped server; throws on a bad timeout or cap. */
  constructor(options: HealthServerOptions) {
    this.#o = options;
    this.#limits = { ...DEFAULT_SERVER_LIMITS, ...options.limits };
    checkServerLimits(this.#limits, "health probe");
  }

  /** The bound port (after start). */
  get port(): number {
    if (this.#server === undefined) {
      throw new Error("health server is not started");
    }
    return this.#port;
  }

  /** Binds and serves. */
  async start(): Promise<void> {
    const { hostname, port } = parseAddress(this.#o.address ?? ":8081");
    const server = createNodeServer(this.#limits, undefined, (req, res) => {
      req.resume();
      void this.#handle(req.url ?? "/", res);
    });
    this.#guarded = guardServer(
      server,
      this.#limits,
      (_status, message) => message,
    );
    this.#port = await listen(server, hostname, port);
    this.#server = server;
  }

  async #handle(url: string, res: http.ServerResponse): Promise<void> {
    const path = new URL(url, "http://probe").pathname;
    if (path === "/healthz" || path === "/livez" || path === "/readyz") {
      const checks = path === "/readyz" ? this.#o.readiness : this.#o.liveness;
      const { ok, text } = await runChecks(checks);
      return sendText(res, ok ? 200 : 503, text);
    }
    sendText(res, 404, "not found\n");
  }

  /** Stops serving. */
  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (server === undefined || this.#guarded === undefined) return;
    await closeServer(server, this.#guarded, 1000);
  }
}
