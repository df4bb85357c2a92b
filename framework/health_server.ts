/**
 * The plain-HTTP endpoints every replica serves: `/healthz` (liveness and
 * registered probes), `/readyz` (caches synced), `/metrics` (Prometheus).
 * The probes are open (the kubelet calls them); `/metrics` answers only
 * scrapes that `authorizeMetrics` allows when one is given.
 *
 * @module
 */

import type { Registry } from "prom-client";
import { parseAddress } from "./address.ts";
import type { MetricsAuthorizer } from "./metrics_auth.ts";

/** A named check; false or a throw means unhealthy. */
export type Check = () => boolean | Promise<boolean>;

/** Options of {@linkcode HealthServer}. */
export interface HealthServerOptions {
  /** `host:port` (default `:8080`). */
  address?: string;
  /** Liveness checks (`/healthz`). */
  liveness: Map<string, Check>;
  /** Readiness checks (`/readyz`). */
  readiness: Map<string, Check>;
  /** Metrics registry (`/metrics`). */
  registry: Registry;
  /** Who may scrape `/metrics` (default: anyone). */
  authorizeMetrics?: MetricsAuthorizer;
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
 * Serves health and metrics.
 *
 * @example
 * ```ts ignore
 * const hs = new HealthServer({ address: ":8080", liveness: new Map(), readiness: new Map(), registry });
 * await hs.start();
 * ```
 */
export class HealthServer {
  readonly #o: HealthServerOptions;
  #server: Deno.HttpServer<Deno.NetAddr> | undefined;

  /** Creates a stopped server. */
  constructor(options: HealthServerOptions) {
    this.#o = options;
  }

  /** The bound port (after start). */
  get port(): number {
    if (this.#server === undefined) {
      throw new Error("health server is not started");
    }
    return this.#server.addr.port;
  }

  /** Binds and serves. */
  start(): Promise<void> {
    const { hostname, port } = parseAddress(this.#o.address ?? ":8080");
    this.#server = Deno.serve(
      { hostname, port, onListen: () => {} },
      async (req) => {
        const path = new URL(req.url).pathname;
        if (path === "/metrics") {
          const authorize = this.#o.authorizeMetrics;
          const verdict = authorize === undefined
            ? undefined
            : await authorize(req.headers.get("authorization"));
          if (verdict !== undefined && !verdict.allowed) {
            return new Response(`${verdict.reason}\n`, {
              status: verdict.status,
              headers: {
                "content-type": "text/plain",
                ...(verdict.status === 401
                  ? { "www-authenticate": 'Bearer realm="metrics"' }
                  : {}),
              },
            });
          }
          return new Response(await this.#o.registry.metrics(), {
            headers: { "content-type": this.#o.registry.contentType },
          });
        }
        if (path === "/healthz" || path === "/livez" || path === "/readyz") {
          const checks = path === "/readyz"
            ? this.#o.readiness
            : this.#o.liveness;
          const { ok, text } = await runChecks(checks);
          return new Response(text, {
            status: ok ? 200 : 503,
            headers: { "content-type": "text/plain" },
          });
        }
        return new Response("not found\n", { status: 404 });
      },
    );
    return Promise.resolve();
  }

  /** Stops serving. */
  async stop(): Promise<void> {
    await this.#server?.shutdown();
    this.#server = undefined;
  }
}
