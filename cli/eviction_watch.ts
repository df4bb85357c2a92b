/**
 * The Evictions as they change: one list, then a watch from its
 * resourceVersion (client-node's Watch, with bookmarks), resumed from the
 * last version seen when the server ends it and listed afresh when that
 * version is gone (410). Every request carries the plugin's User-Agent.
 *
 * @module
 */
import * as k8s from "@kubernetes/client-node";
import { PLUGIN_USER_AGENT } from "../app/version.ts";
import { oneLine } from "../framework/errors.ts";
import { EvictionResource } from "../models/mod.ts";
import { ApiServerUnreachableError } from "./kube_config.ts";

const { group, version, plural } = EvictionResource;

/** The API server refused the watch (e.g. no watch verb); one line. */
export class WatchRefusedError extends Error {
  override name = "WatchRefusedError";
}

/** A change: the object as the API server sent it. */
export interface EvictionChange {
  /** ADDED (also every object of a list), MODIFIED or DELETED. */
  type: "ADDED" | "MODIFIED" | "DELETED";
  /** The raw object. */
  object: Record<string, unknown>;
}

/** A KubeConfig whose watch requests carry the plugin's User-Agent. */
function withUserAgent(kc: k8s.KubeConfig): k8s.KubeConfig {
  return new Proxy(kc, {
    get(target, prop, receiver) {
      if (prop === "applySecurityAuthentication") {
        return async (ctx: k8s.RequestContext) => {
          await target.applySecurityAuthentication(ctx);
          ctx.setHeaderParam("User-Agent", PLUGIN_USER_AGENT);
        };
      }
      return Reflect.get(target, prop, receiver);
    },
  });
}

function nameOf(o: Record<string, unknown>): string {
  const m = o["metadata"];
  return typeof m === "object" && m !== null &&
      typeof (m as { name?: unknown }).name === "string"
    ? (m as { name: string }).name
    : "";
}

function versionOf(o: Record<string, unknown>): string | undefined {
  const m = o["metadata"] as { resourceVersion?: unknown } | undefined;
  return typeof m?.resourceVersion === "string" ? m.resourceVersion : undefined;
}

/**
 * Calls `onChange` with every Eviction as listed (ADDED; DELETED for one
 * seen before that a new list lacks), `onListed` with the names listed,
 * then `onChange` with each change, until `signal` aborts (then it
 * resolves). API errors of the list reject.
 *
 * @example
 * ```ts ignore
 * await watchEvictions(kc, api, (c) => console.log(c.type), signal);
 * ```
 */
export async function watchEvictions(
  kc: k8s.KubeConfig,
  api: k8s.CustomObjectsApi,
  onChange: (change: EvictionChange) => void,
  signal: AbortSignal,
  onListed: (names: ReadonlySet<string>) => void = () => {},
): Promise<void> {
  const stream: WatchStream = {
    watch: new k8s.Watch(withUserAgent(kc)),
    known: new Set<string>(),
    rv: "",
    failures: 0,
    onChange,
    signal,
  };
  while (!signal.aborted) {
    await listAll(api, stream, onListed);
    // watch from rv until it is gone (410), resuming where the server ends it
    for (;;) {
      if (signal.aborted) return;
      const ended = await watchOnce(stream);
      if (signal.aborted) return;
      if (ended === "gone") break;
      if (ended === "closed" || isSilent(ended)) continue;
      if (!(await resumable(kc, stream, ended))) break;
    }
  }
}

/**
 * {@linkcode watchEvictions} until `stop` aborts or `timeoutMs` (0: never)
 * passes: the one deadline of the plugin's waits. True when it passed.
 *
 * @example
 * ```ts ignore
 * const timedOut = await watchWithin(kc, api, onChange, stop, 300_000);
 * ```
 */
export async function watchWithin(
  kc: k8s.KubeConfig,
  api: k8s.CustomObjectsApi,
  onChange: (change: EvictionChange) => void,
  stop: AbortController,
  timeoutMs: number,
  onListed?: (names: ReadonlySet<string>) => void,
): Promise<boolean> {
  let timedOut = false;
  const timer = timeoutMs > 0
    ? setTimeout(() => {
      timedOut = true;
      stop.abort();
    }, timeoutMs)
    : undefined;
  try {
    await watchEvictions(kc, api, onChange, stop.signal, onListed);
  } finally {
    clearTimeout(timer);
  }
  return timedOut;
}

/** What one watch of the Evictions carries from request to request. */
interface WatchStream {
  watch: k8s.Watch;
  /** The names the stream knows now. */
  known: Set<string>;
  /** The resourceVersion to watch from. */
  rv: string;
  /** Failed requests in a row. */
  failures: number;
  onChange: (change: EvictionChange) => void;
  signal: AbortSignal;
}

/** One list: ADDED for each, DELETED for each known before that it lacks. */
async function listAll(
  api: k8s.CustomObjectsApi,
  stream: WatchStream,
  onListed: (names: ReadonlySet<string>) => void,
): Promise<void> {
  const list = await api.listClusterCustomObject({
    group,
    version,
    plural,
  }) as {
    items?: Record<string, unknown>[];
    metadata?: { resourceVersion?: string };
  };
  if (stream.signal.aborted) return;
  const now = new Set<string>();
  for (const item of list.items ?? []) {
    now.add(nameOf(item));
    stream.onChange({ type: "ADDED", object: item });
  }
  for (const gone of stream.known) {
    if (!now.has(gone)) {
      stream.onChange({
        type: "DELETED",
        object: { metadata: { name: gone } },
      });
    }
  }
  stream.known = now;
  onListed(now);
  stream.rv = list.metadata?.resourceVersion ?? "";
}

/**
 * One watch request from `stream.rv`, until it ends: "gone" (410),
 * "closed" (aborted or ended by the server), or the error.
 */
function watchOnce(stream: WatchStream): Promise<unknown> {
  const { signal, known } = stream;
  return new Promise<unknown>((resolve) => {
    let gone = false;
    let controller: AbortController | undefined;
    const onAbort = () => {
      controller?.abort();
      resolve("closed");
    };
    signal.addEventListener("abort", onAbort, { once: true });
    const finish = (value: unknown) => {
      signal.removeEventListener("abort", onAbort);
      resolve(value);
    };
    stream.watch.watch(
      `/apis/${group}/${version}/${plural}`,
      { resourceVersion: stream.rv, allowWatchBookmarks: true },
      (type, object: Record<string, unknown>) => {
        if (type === "ERROR") {
          if ((object as { code?: unknown }).code === 410) gone = true;
          return;
        }
        const v = versionOf(object);
        if (v !== undefined) stream.rv = v;
        if (type === "DELETED") known.delete(nameOf(object));
        else if (type !== "BOOKMARK") known.add(nameOf(object));
        if (type === "ADDED" || type === "MODIFIED" || type === "DELETED") {
          stream.failures = 0;
          stream.onChange({ type, object });
        }
      },
      (err) => finish(gone ? "gone" : err ?? "closed"),
    ).then((c) => {
      controller = c;
      if (signal.aborted) c.abort();
    }, finish);
  });
}

/**
 * client-node ends a watch silent for 30 s (bookmarks come about once a
 * minute): resumed, as when the server ends one.
 */
function isSilent(ended: unknown): boolean {
  return (ended as { name?: unknown } | null)?.name === "TimeoutError";
}

/**
 * After a failed watch request: false when its version is gone (410: list
 * afresh); throws when the API server refused it or keeps failing; else
 * waits a little and says to resume.
 */
async function resumable(
  kc: k8s.KubeConfig,
  stream: WatchStream,
  ended: unknown,
): Promise<boolean> {
  const code = (ended as { statusCode?: unknown } | null)?.statusCode;
  if (code === 410) return false;
  if (typeof code === "number") {
    throw new WatchRefusedError(
      `cannot watch ${plural}.${group}: the API server answered ${code} (the user needs the watch verb on them)`,
    );
  }
  if (++stream.failures > 5) {
    const server = kc.getCurrentCluster()?.server ?? "";
    throw new ApiServerUnreachableError(
      `the watch of ${plural} on ${server} keeps failing (context "${kc.getCurrentContext()}"): ${
        oneLine(ended)
      }`,
    );
  }
  await new Promise((r) => setTimeout(r, 200 * stream.failures));
  return true;
}
