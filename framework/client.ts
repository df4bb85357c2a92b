/**
 * A small Kubernetes REST client on Deno's `fetch`, configured from plain
 * credentials (see `kubeconfig.ts`) or from a `@kubernetes/client-node`
 * KubeConfig (client certificates, tokens, CA, auth plugins).
 * One HTTP/1.1 connection per watch, so that a stalled stream can be
 * aborted without stalling the others.
 *
 * @module
 */

import type { KubeConfig } from "@kubernetes/client-node";
import { ApiError } from "./errors.ts";
import type { ClusterCredentials } from "./kubeconfig.ts";
import {
  apiVersionOf,
  type KindDescriptor,
  kindPath,
  type KubeObject,
  parseKey,
} from "./kind.ts";

/** Query parameters; undefined values are left out. */
export type Query = Record<string, string | number | boolean | undefined>;

/** Options of one request. */
export interface RequestOptions {
  /** Query parameters. */
  query?: Query;
  /** JSON body. */
  body?: unknown;
  /** Content type of the body (default application/json). */
  contentType?: string;
  /** Aborts the request. */
  signal?: AbortSignal;
}

/** A list answer. */
export interface ListResult<T> {
  /** The objects. */
  items: T[];
  /** The list's resourceVersion, to watch from. */
  resourceVersion: string;
}

/** One watch event as sent by the API server. */
export interface WatchEvent {
  /** ADDED, MODIFIED, DELETED, BOOKMARK or ERROR. */
  type: string;
  /** The object (a Status for ERROR). */
  object: unknown;
}

/**
 * What the client reports of each HTTP request, at client-go's points
 * (its `RequestResult` and `RequestLatency` hooks); `rest_client_metrics.ts`
 * turns them into metrics.
 */
export interface RequestObserver {
  /**
   * A request was answered with HTTP `code`, or got no answer (`<error>`:
   * refused, reset, timed out, aborted).
   */
  result(code: string, method: string, host: string): void;
  /**
   * A request took `seconds`: to its whole answer, or to the headers of a
   * watch (whose body streams on).
   */
  latency(verb: string, host: string, seconds: number): void;
}

/** Options of {@linkcode KubeClient.fromKubeConfig}. */
export interface KubeClientOptions {
  /** Overrides the cluster's server URL (e.g. to go through a proxy). */
  server?: string;
  /** Per-request timeout for non-watch calls in ms (default 30 s). */
  requestTimeoutMs?: number;
  /**
   * `User-Agent` of every request, e.g. `evictor/0.1.0`, so that the API
   * server's audit log names the client (default: Deno's).
   */
  userAgent?: string;
  /** Told of every request's answer and duration (default: nobody). */
  requests?: RequestObserver;
}

/** Patch flavours the API server accepts. */
export type PatchType = "merge" | "json" | "strategic";

const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: "application/merge-patch+json",
  json: "application/json-patch+json",
  strategic: "application/strategic-merge-patch+json",
};

function pem(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === "string") return value;
  if (value instanceof Uint8Array) return new TextDecoder().decode(value);
  if (Array.isArray(value)) return value.map(pem).join("\n");
  return undefined;
}

/**
 * The client. Build it with {@linkcode KubeClient.fromKubeConfig}.
 *
 * @example
 * ```ts ignore
 * import { KubeConfig } from "@kubernetes/client-node";
 * import { KubeClient } from "./client.ts";
 * const kc = new KubeConfig();
 * kc.loadFromDefault();
 * const client = await KubeClient.fromKubeConfig(kc);
 * const ns = await client.request("GET", "/api/v1/namespaces");
 * ```
 */
export class KubeClient {
  /** The API server base URL. */
  readonly server: string;
  readonly #loadHeaders: () => Promise<Record<string, string>>;
  readonly #http: Deno.HttpClient;
  readonly #timeoutMs: number;
  readonly #userAgent: string | undefined;
  readonly #requests: RequestObserver | undefined;
  /** `host:port` of the server, the `host` label of the request metrics. */
  readonly #host: string;
  #headers: Record<string, string> = {};
  #headersAt = 0;

  private constructor(
    server: string,
    loadHeaders: () => Promise<Record<string, string>>,
    http: Deno.HttpClient,
    timeoutMs: number,
    userAgent: string | undefined,
    requests: RequestObserver | undefined,
  ) {
    this.server = server.replace(/\/+$/, "");
    this.#loadHeaders = loadHeaders;
    this.#http = http;
    this.#timeoutMs = timeoutMs;
    this.#userAgent = userAgent;
    this.#requests = requests;
    const url = new URL(this.server);
    // client-go's label keeps a default port (in a pod, `10.96.0.1:443`).
    this.#host = `${url.hostname}:${
      url.port || (url.protocol === "http:" ? "80" : "443")
    }`;
  }

  /** Creates a client for a `@kubernetes/client-node` KubeConfig's current context. */
  static async fromKubeConfig(
    kc: KubeConfig,
    options: KubeClientOptions = {},
  ): Promise<KubeClient> {
    const cluster = kc.getCurrentCluster();
    if (cluster === null) {
      throw new TypeError(
        `kubeconfig context "${kc.getCurrentContext()}" names no cluster`,
      );
    }
    if (cluster.skipTLSVerify) {
      throw new TypeError(
        `cluster "${cluster.name}" sets insecure-skip-tls-verify, which this client does not support`,
      );
    }
    const opts: { ca?: unknown; cert?: unknown; key?: unknown } = {};
    await kc.applyToHTTPSOptions(opts);
    const headers = async () => {
      const o: { headers?: Record<string, unknown> } = { headers: {} };
      await kc.applyToHTTPSOptions(o);
      const out: Record<string, string> = {};
      for (const [k, v] of Object.entries(o.headers ?? {})) {
        if (typeof v === "string") out[k] = v;
      }
      return out;
    };
    return await KubeClient.#create(
      options.server ?? cluster.server,
      pem(opts.ca),
      pem(opts.cert),
      pem(opts.key),
      headers,
      options,
    );
  }

  /**
   * Creates a client from plain credentials, e.g. from
   * {@linkcode loadDefaultCredentials} (no client-node at run time).
   */
  static async fromCredentials(
    creds: ClusterCredentials,
    options: KubeClientOptions = {},
  ): Promise<KubeClient> {
    const headers = async (): Promise<Record<string, string>> => {
      let token = creds.token;
      if (creds.tokenFile !== undefined) {
        token = (await Deno.readTextFile(creds.tokenFile)).trim();
      }
      return token === undefined ? {} : { authorization: `Bearer ${token}` };
    };
    return await KubeClient.#create(
      options.server ?? creds.server,
      creds.caPem,
      creds.certPem,
      creds.keyPem,
      headers,
      options,
    );
  }

  static async #create(
    server: string,
    ca: string | undefined,
    cert: string | undefined,
    key: string | undefined,
    headers: () => Promise<Record<string, string>>,
    options: KubeClientOptions,
  ): Promise<KubeClient> {
    const base: Deno.CreateHttpClientOptions = {
      http2: false,
      ...(ca === undefined ? {} : { caCerts: [ca] }),
    };
    const http = cert !== undefined && key !== undefined
      ? Deno.createHttpClient({ ...base, cert, key })
      : Deno.createHttpClient(base);
    const client = new KubeClient(
      server,
      headers,
      http,
      options.requestTimeoutMs ?? 30_000,
      options.userAgent,
      options.requests,
    );
    await client.#authHeaders();
    return client;
  }

  async #authHeaders(): Promise<Record<string, string>> {
    if (Date.now() - this.#headersAt < 30_000) return this.#headers;
    this.#headers = await this.#loadHeaders();
    this.#headersAt = Date.now();
    return this.#headers;
  }

  #url(path: string, query: Query | undefined): string {
    const url = new URL(this.server + path);
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v !== undefined) url.searchParams.set(k, String(v));
    }
    return url.toString();
  }

  async #fetch(
    method: string,
    path: string,
    opts: RequestOptions,
    signal: AbortSignal,
  ): Promise<Response> {
    const headers: Record<string, string> = {
      ...(await this.#authHeaders()),
      accept: "application/json",
      ...(this.#userAgent === undefined
        ? {}
        : { "user-agent": this.#userAgent }),
    };
    let body: string | undefined;
    if (opts.body !== undefined) {
      headers["content-type"] = opts.contentType ?? "application/json";
      body = JSON.stringify(opts.body);
    }
    let res: Response;
    try {
      res = await fetch(this.#url(path, opts.query), {
        method,
        headers,
        client: this.#http,
        signal,
        ...(body === undefined ? {} : { body }),
      });
    } catch (err) {
      this.#requests?.result("<error>", method, this.#host);
      throw err;
    }
    this.#requests?.result(String(res.status), method, this.#host);
    if (!res.ok) {
      const text = await res.text().catch(() => "");
      let reason = res.statusText;
      let message = text;
      try {
        const status = JSON.parse(text) as {
          reason?: unknown;
          message?: unknown;
        };
        if (typeof status.reason === "string") reason = status.reason;
        if (typeof status.message === "string") message = status.message;
      } catch {
        // not a Status object; keep the raw text
      }
      throw new ApiError(method, path, res.status, reason, message);
    }
    return res;
  }

  /** Sends one request and parses the JSON answer. */
  async request<T = unknown>(
    method: string,
    path: string,
    opts: RequestOptions = {},
  ): Promise<T> {
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const signal = opts.signal === undefined
      ? timeout
      : AbortSignal.any([timeout, opts.signal]);
    const text = await this.#timed(method, async () => {
      const res = await this.#fetch(method, path, opts, signal);
      return await res.text();
    });
    return (text === "" ? undefined : JSON.parse(text)) as T;
  }

  /** Runs `work` and reports how long it took, whatever its outcome. */
  async #timed<T>(verb: string, work: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await work();
    } finally {
      this.#requests?.latency(
        verb,
        this.#host,
        (performance.now() - started) / 1000,
      );
    }
  }

  /**
   * Streams watch events from `path`; ends when the server closes the
   * stream, throws an `AbortError` once nothing (not even a bookmark)
   * arrived for `inactivityMs`, or when `signal` aborts.
   */
  async *watch(
    path: string,
    query: Query,
    inactivityMs: number,
    signal?: AbortSignal,
  ): AsyncGenerator<WatchEvent> {
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stalled = false;
    const arm = () => {
      if (timer !== undefined) clearTimeout(timer);
      timer = setTimeout(() => {
        stalled = true;
        controller.abort(new DOMException("watch inactive", "TimeoutError"));
      }, inactivityMs);
    };
    arm();
    try {
      const res = await this.#timed("GET", () =>
        this.#fetch("GET", path, {
          query: { ...query, watch: true },
        }, controller.signal));
      const body = res.body;
      if (body === null) return;
      const reader = body.pipeThrough(new TextDecoderStream()).getReader();
      // A read pending as the watch is aborted may never settle (the abort
      // does not always reach a body piped through a decoder): the abort
      // ends the read itself, so a stopped informer's loop always ends.
      const aborted = new Promise<never>((_, reject) => {
        if (controller.signal.aborted) reject(controller.signal.reason);
        controller.signal.addEventListener(
          "abort",
          () => reject(controller.signal.reason),
          { once: true },
        );
      });
      aborted.catch(() => {});
      let buf = "";
      try {
        for (;;) {
          const { value, done } = await Promise.race([reader.read(), aborted]);
          if (done) break;
          arm();
          buf += value;
          let nl: number;
          while ((nl = buf.indexOf("\n")) >= 0) {
            const line = buf.slice(0, nl).trim();
            buf = buf.slice(nl + 1);
            if (line === "") continue;
            const ev = JSON.parse(line) as WatchEvent;
            yield ev;
          }
        }
      } finally {
        // Cancels the decoder and the body under it, not waiting for it
        // (a stuck pipe must not hold the loop either).
        reader.cancel().catch(() => {});
      }
    } catch (err) {
      if (stalled) throw new WatchStalledError(path, inactivityMs);
      throw err;
    } finally {
      if (timer !== undefined) clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      controller.abort();
    }
  }

  /** Lists objects of `kind`. */
  async list(
    kind: KindDescriptor,
    opts: {
      namespace?: string | undefined;
      labelSelector?: string | undefined;
      limit?: number;
      continue?: string;
      resourceVersion?: string;
    } = {},
  ): Promise<ListResult<unknown>> {
    const items: unknown[] = [];
    let cont: string | undefined = opts.continue;
    let rv = "";
    do {
      const page = await this.request<{
        items?: unknown[];
        metadata?: { resourceVersion?: string; continue?: string };
      }>("GET", kindPath(kind, { namespace: opts.namespace }), {
        query: {
          labelSelector: opts.labelSelector,
          limit: opts.limit ?? 500,
          continue: cont,
          resourceVersion: cont === undefined
            ? opts.resourceVersion
            : undefined,
        },
      });
      for (const item of page.items ?? []) {
        if (typeof item === "object" && item !== null) {
          // list items carry no apiVersion/kind; fill them in
          items.push({
            apiVersion: apiVersionOf(kind),
            kind: kind.kind,
            ...item,
          });
        }
      }
      rv = page.metadata?.resourceVersion ?? rv;
      cont = page.metadata?.continue || undefined;
    } while (cont !== undefined);
    return { items, resourceVersion: rv };
  }

  /** Reads one object by key; throws {@linkcode ApiError} 404 if absent. */
  get<T extends KubeObject>(kind: KindDescriptor, key: string): Promise<T> {
    return this.request<T>("GET", objectPath(kind, key));
  }

  /** Creates an object. */
  create<T extends KubeObject>(kind: KindDescriptor, obj: T): Promise<T> {
    return this.request<T>(
      "POST",
      kindPath(kind, { namespace: obj.metadata?.namespace }),
      {
        body: { apiVersion: apiVersionOf(kind), kind: kind.kind, ...obj },
      },
    );
  }

  /** Replaces an object (PUT); its metadata.resourceVersion guards it. */
  replace<T extends KubeObject>(
    kind: KindDescriptor,
    obj: T,
    subresource?: string,
  ): Promise<T> {
    const name = obj.metadata?.name;
    if (name === undefined) throw new TypeError("replace needs metadata.name");
    return this.request<T>(
      "PUT",
      kindPath(kind, { namespace: obj.metadata?.namespace, name, subresource }),
      { body: obj },
    );
  }

  /** Patches an object (merge patch by default). */
  patch<T extends KubeObject>(
    kind: KindDescriptor,
    key: string,
    patch: unknown,
    type: PatchType = "merge",
    subresource?: string,
  ): Promise<T> {
    return this.request<T>("PATCH", objectPath(kind, key, subresource), {
      body: patch,
      contentType: PATCH_CONTENT_TYPES[type],
    });
  }

  /** Deletes an object by key. */
  delete(kind: KindDescriptor, key: string): Promise<unknown> {
    return this.request("DELETE", objectPath(kind, key));
  }

  /** Releases the HTTP client. */
  close(): void {
    this.#http.close();
  }
}

/** The REST path of one object (or its subresource) by key. */
export function objectPath(
  kind: KindDescriptor,
  key: string,
  subresource?: string,
): string {
  const { namespace, name } = parseKey(key);
  if (kind.namespaced && namespace === undefined) {
    throw new TypeError(
      `${kind.kind} is namespaced: key must be "namespace/name", got "${key}"`,
    );
  }
  return kindPath(kind, { namespace, name, subresource });
}

/** A watch that stayed silent past its inactivity timeout. */
export class WatchStalledError extends Error {
  /** Creates the error. */
  constructor(path: string, inactivityMs: number) {
    super(`watch ${path} sent nothing for ${inactivityMs} ms`);
    this.name = "WatchStalledError";
  }
}
