/**
 * What clients cost the API server, as the API server counts it: the
 * `apiserver_request_total` counter of its /metrics, read with the admin's
 * kubectl, for one resource. Watches are left out (they stay open and are
 * counted when they end).
 *
 * @module
 */

import type { Envtest } from "./envtest.ts";

/** Requests to one resource, by `VERB` or `VERB subresource`, plus conflicts. */
export interface RequestCounts {
  /** Requests by `GET`, `LIST`, `PUT status`, `PATCH`, ... */
  byVerb: Record<string, number>;
  /** Requests answered 409 Conflict. */
  conflicts: number;
}

/**
 * Reads the API server's request counters of `resource` (the plural, e.g.
 * `evictions`) now.
 */
export async function apiRequests(
  env: Pick<Envtest, "kubectl">,
  resource: string,
): Promise<RequestCounts> {
  const { code, stdout, stderr } = await env.kubectl([
    "get",
    "--raw",
    "/metrics",
  ]);
  if (code !== 0) {
    throw new Error(`kubectl get --raw /metrics failed: ${stderr}`);
  }
  const byVerb: Record<string, number> = {};
  let conflicts = 0;
  for (const line of stdout.split("\n")) {
    if (!line.startsWith("apiserver_request_total{")) continue;
    if (!line.includes(`resource="${resource}"`)) continue;
    const verb = /verb="([A-Z]+)"/.exec(line)?.[1] ?? "?";
    if (verb === "WATCH") continue;
    const sub = /subresource="([a-z]*)"/.exec(line)?.[1] ?? "";
    const key = sub === "" ? verb : `${verb} ${sub}`;
    const n = Number(line.slice(line.lastIndexOf(" ") + 1));
    byVerb[key] = (byVerb[key] ?? 0) + n;
    if (line.includes('code="409"')) conflicts += n;
  }
  return { byVerb, conflicts };
}

/** The requests made between two readings (zero entries left out). */
export function requestsBetween(
  before: RequestCounts,
  after: RequestCounts,
): RequestCounts {
  const byVerb: Record<string, number> = {};
  for (const [k, v] of Object.entries(after.byVerb)) {
    const d = v - (before.byVerb[k] ?? 0);
    if (d !== 0) byVerb[k] = d;
  }
  return { byVerb, conflicts: after.conflicts - before.conflicts };
}
