/**
 * Where a drain's Nova calls come from: `fetch` wrapped so each request
 * keeps the stack (async frames included) of the code that made it, and a
 * summary by route and calling site. `bench:drain --trace DIR` uses it to
 * say which phase asked Nova, not only how often.
 *
 * @module
 */

/** One request seen by the wrapped `fetch`. */
export interface TracedCall {
  /** `performance.now()` when it was made (real ms). */
  atMs: number;
  /** `METHOD /path`, ids replaced by `{id}`. */
  route: string;
  /** The query string, with its `?`. */
  search: string;
  /** The code that made it, innermost first (see {@linkcode callSite}). */
  site: string[];
}

const ID = /^(?:[0-9a-f]{8}-[0-9a-f-]{27}|[0-9a-f]{32}|\d+|req-[\w-]+)$/i;

/**
 * A URL path with its ids replaced by `{id}`.
 *
 * @example
 * ```ts
 * import { routeOf } from "./call_sites.ts";
 * console.assert(
 *   routeOf("POST", "/compute/v2.1/servers/0b6f4f4e-1d2c-4b7e-9a3f-0123456789ab/action") ===
 *     "POST /compute/v2.1/servers/{id}/action",
 * );
 * ```
 */
export function routeOf(method: string, path: string): string {
  return `${method} ${
    path.split("/").map((p) => ID.test(p) ? "{id}" : p).join("/")
  }`;
}

/**
 * The frames of `stack` inside `root` (a file URL prefix) that are not
 * the HTTP plumbing (`skip`), as `function (file:line)` with the file
 * relative to `root`, innermost first, at most `depth` of them.
 *
 * @example
 * ```ts
 * import { callSite } from "./call_sites.ts";
 * const stack = [
 *   "Error",
 *   "    at fetch (file:///r/bench/drain.ts:10:3)",
 *   "    at Http.send (file:///r/openstack/http.ts:374:20)",
 *   "    at async listHost (file:///r/controllers/eviction/observe.ts:88:5)",
 *   "    at async look (file:///r/controllers/eviction/phase_look.ts:40:7)",
 * ].join("\n");
 * const site = callSite(stack, "file:///r/", ["bench/", "openstack/http.ts"], 4);
 * console.assert(site[0] === "listHost (controllers/eviction/observe.ts:88)");
 * console.assert(site.length === 2);
 * ```
 */
export function callSite(
  stack: string,
  root: string,
  skip: readonly string[],
  depth: number,
): string[] {
  const out: string[] = [];
  for (const line of stack.split("\n")) {
    const m = /^\s*at (?:async )?(?:(.*?) \()?(file:\/\/[^)]*?):(\d+):\d+\)?$/
      .exec(line);
    if (m === null) continue;
    const [, fn, file, lineNo] = m;
    if (file === undefined || !file.startsWith(root)) continue;
    const rel = file.slice(root.length);
    if (rel.includes("node_modules") || skip.some((s) => rel.startsWith(s))) {
      continue;
    }
    out.push(`${fn ?? "<anonymous>"} (${rel}:${lineNo})`);
    if (out.length >= depth) break;
  }
  return out;
}

/**
 * Counts of `calls` by route and by the first `depth` frames of their site,
 * most first.
 *
 * @example
 * ```ts
 * import { bySite } from "./call_sites.ts";
 * const rows = bySite([
 *   { atMs: 0, route: "GET /a", search: "", site: ["f (x.ts:1)", "g (y.ts:2)"] },
 *   { atMs: 1, route: "GET /a", search: "", site: ["f (x.ts:1)", "h (z.ts:3)"] },
 * ], 1);
 * console.assert(rows[0]?.count === 2);
 * ```
 */
export function bySite(
  calls: readonly TracedCall[],
  depth: number,
): { route: string; site: string; count: number }[] {
  const n = new Map<string, number>();
  for (const c of calls) {
    const k = `${c.route}\u0000${c.site.slice(0, depth).join(" < ")}`;
    n.set(k, (n.get(k) ?? 0) + 1);
  }
  return [...n].map(([k, count]) => {
    const [route = "", site = ""] = k.split("\u0000");
    return { route, site, count };
  }).sort((a, b) => b.count - a.count || a.route.localeCompare(b.route));
}

/**
 * Wraps `globalThis.fetch` (before the OpenStack clients are made: they
 * bind it then) so every request to a URL starting with one of `prefixes()`
 * is handed to `record` with its route and stack. Returns the undo.
 */
export function traceFetch(
  prefixes: () => readonly string[],
  record: (call: TracedCall) => void,
  root: string,
  skip: readonly string[],
): () => void {
  const original = globalThis.fetch;
  const limit = Error.stackTraceLimit;
  // the HTTP client, Keystone's session and Nova's take the default 10
  // frames before any caller's
  Error.stackTraceLimit = Math.max(limit, 60);
  globalThis.fetch = (input, init) => {
    const url = typeof input === "string"
      ? input
      : input instanceof URL
      ? input.href
      : input.url;
    if (prefixes().some((p) => url.startsWith(p))) {
      const u = new URL(url);
      const method = init?.method ??
        (input instanceof Request ? input.method : "GET");
      record({
        atMs: performance.now(),
        route: routeOf(method, u.pathname),
        search: u.search,
        site: callSite(new Error().stack ?? "", root, skip, 40),
      });
    }
    return original(input, init);
  };
  return () => {
    globalThis.fetch = original;
    Error.stackTraceLimit = limit;
  };
}
