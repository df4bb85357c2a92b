/**
 * An informer per kind: list, then watch from the list's resourceVersion
 * with bookmarks; relist on 410 Gone; restart a watch that stays silent
 * past an inactivity timeout; retry a failed list or watch after a short
 * capped backoff (200 ms doubling up to 5 s by default), so that the cache
 * is live again within seconds of an API-server outage; optional label
 * selector. Keeps a store that handlers read with typed `get`/`list`, and
 * the server's unparsed object for writes that must lose no field.
 *
 * @module
 */

import type { KubeClient } from "./client.ts";
import { WatchStalledError } from "./client.ts";
import { ApiError } from "./errors.ts";
import {
  type Kind,
  kindId,
  kindPath,
  type KubeObject,
  objectKey,
} from "./kind.ts";
import { backoffDelay } from "./backoff.ts";
import type { Logger } from "./logger.ts";
import { silentLogger } from "./logger.ts";
import type { FrameworkMetrics } from "./metrics.ts";

/** A change seen by an informer. */
export interface InformerEvent<T> {
  /** What happened. */
  type: "added" | "modified" | "deleted";
  /** The object key (`name` or `namespace/name`). */
  key: string;
  /** The object after the change (the last known state for deletions). */
  object: T;
  /** The object before a modification. */
  old?: T | undefined;
}

/** Read access to an informer's cache. */
export interface CacheReader<T> {
  /** The cached object with this key, or undefined. */
  get(key: string): T | undefined;
  /** All cached objects, optionally filtered. */
  list(filter?: (obj: T) => boolean): T[];
  /** Whether the initial list completed. */
  readonly hasSynced: boolean;
  /**
   * The object with this key as the API server sent it (every field, even
   * those a schema strips), or undefined.
   */
  raw?(key: string): KubeObject | undefined;
}

/** Options of {@linkcode Informer}. */
export interface InformerOptions<T extends KubeObject> {
  /** The kind to watch. */
  kind: Kind<T>;
  /** API client. */
  client: KubeClient;
  /** Restrict to one namespace (namespaced kinds). */
  namespace?: string | undefined;
  /** Label selector, e.g. `shard=a`. */
  labelSelector?: string | undefined;
  /** Restart a watch that sent nothing for this long (default 180 s). */
  inactivityMs?: number;
  /** Server-side watch timeout in seconds (default 300). */
  watchTimeoutSeconds?: number;
  /** Logger. */
  logger?: Logger;
  /** Metrics. */
  metrics?: FrameworkMetrics | undefined;
  /** First delay after a failed list or watch, ms (default 200). */
  retryBaseMs?: number;
  /** Longest delay between list/watch attempts, ms (default 5000). */
  retryMaxMs?: number;
}

/** The default first delay after a failed list or watch. */
export const DEFAULT_INFORMER_RETRY_BASE_MS = 200;
/** The default cap of the delay between list/watch attempts. */
export const DEFAULT_INFORMER_RETRY_MAX_MS = 5_000;

function rvOf(obj: unknown): string | undefined {
  if (typeof obj !== "object" || obj === null) return undefined;
  const md = (obj as { metadata?: { resourceVersion?: unknown } }).metadata;
  return typeof md?.resourceVersion === "string"
    ? md.resourceVersion
    : undefined;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });

/**
 * The informer. Subscribe with {@linkcode on}, then {@linkcode start};
 * {@linkcode synced} resolves after the first list.
 *
 * @example
 * ```ts ignore
 * const inf = new Informer({ kind: ConfigMaps, client, namespace: "demo" });
 * inf.on((ev) => console.log(ev.type, ev.key));
 * inf.start();
 * await inf.synced();
 * console.log(inf.list().length);
 * await inf.stop();
 * ```
 */
export class Informer<T extends KubeObject> implements CacheReader<T> {
  /** The kind watched. */
  readonly kind: Kind<T>;
  readonly #client: KubeClient;
  readonly #namespace: string | undefined;
  readonly #selector: string | undefined;
  readonly #inactivityMs: number;
  readonly #timeoutSeconds: number;
  readonly #log: Logger;
  readonly #metrics: FrameworkMetrics | undefined;
  readonly #store = new Map<string, T>();
  /** Unparsed objects, kept only when a schema parses them into `#store`. */
  readonly #raw = new Map<string, KubeObject>();
  readonly #retryBaseMs: number;
  readonly #retryMaxMs: number;
  readonly #listeners = new Set<(ev: InformerEvent<T>) => void>();
  #abort: AbortController | undefined;
  #loop: Promise<void> | undefined;
  #synced = false;
  #syncWaiters: Array<() => void> = [];
  #rv = "";
  /** Callers of {@linkcode Informer.caughtUp}, waiting for a version. */
  readonly #rvWaiters = new Set<{ rv: bigint; done: (ok: boolean) => void }>();
  /** Number of full lists done (1 after the initial sync). */
  listCount = 0;
  /** Number of watch (re)starts. */
  watchCount = 0;

  /** Creates a stopped informer. */
  constructor(options: InformerOptions<T>) {
    this.kind = options.kind;
    this.#client = options.client;
    this.#namespace = options.namespace;
    this.#selector = options.labelSelector;
    this.#inactivityMs = options.inactivityMs ?? 180_000;
    this.#timeoutSeconds = options.watchTimeoutSeconds ?? 300;
    this.#log = (options.logger ?? silentLogger()).child({
      name: "informer",
      kind: kindId(options.kind),
    });
    this.#metrics = options.metrics;
    this.#retryBaseMs = options.retryBaseMs ?? DEFAULT_INFORMER_RETRY_BASE_MS;
    this.#retryMaxMs = options.retryMaxMs ?? DEFAULT_INFORMER_RETRY_MAX_MS;
    if (!(this.#retryBaseMs > 0) || !(this.#retryMaxMs >= this.#retryBaseMs)) {
      throw new RangeError(
        `informer retry needs 0 < retryBaseMs <= retryMaxMs, got retryBaseMs=${this.#retryBaseMs} retryMaxMs=${this.#retryMaxMs}`,
      );
    }
    if (!(this.#inactivityMs > 0)) {
      throw new RangeError(
        `inactivityMs must be > 0, got ${this.#inactivityMs}`,
      );
    }
  }

  /** Whether the initial list completed. */
  get hasSynced(): boolean {
    return this.#synced;
  }

  /** The last resourceVersion seen. */
  get resourceVersion(): string {
    return this.#rv;
  }

  /**
   * Resolves true once the cache reflects every change of the watched
   * objects up to `resourceVersion` (typically one of our own writes): a
   * watch delivers changes in the order of their versions, so once an
   * event, bookmark or list at or past that version is in, so is every
   * change before it. Resolves false after `timeoutMs`, on stop, or when
   * the versions are not integers (they cannot be ordered then; etcd's
   * are). Read-your-writes and "no write before mine is unseen" without a
   * list request.
   *
   * @example
   * ```ts ignore
   * const written = await client.patch(kind, key, patch, "merge", "status");
   * if (await informer.caughtUp(written.metadata?.resourceVersion ?? "", 1000)) {
   *   console.log(informer.list().length);
   * }
   * ```
   */
  caughtUp(resourceVersion: string, timeoutMs: number): Promise<boolean> {
    const want = versionOf(resourceVersion);
    if (want === undefined || this.#abort?.signal.aborted !== false) {
      return Promise.resolve(false);
    }
    const have = versionOf(this.#rv);
    if (this.#synced && have !== undefined && have >= want) {
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const waiter = {
        rv: want,
        done: (ok: boolean) => {
          clearTimeout(timer);
          this.#rvWaiters.delete(waiter);
          resolve(ok);
        },
      };
      const timer = setTimeout(() => waiter.done(false), timeoutMs);
      this.#rvWaiters.add(waiter);
    });
  }

  /** Sets the version the cache is at and releases the callers it satisfies. */
  #setVersion(rv: string): void {
    this.#rv = rv;
    if (this.#rvWaiters.size === 0 || !this.#synced) return;
    const have = versionOf(rv);
    if (have === undefined) return;
    for (const w of [...this.#rvWaiters]) if (have >= w.rv) w.done(true);
  }

  /** Subscribes to changes; returns an unsubscribe function. */
  on(listener: (ev: InformerEvent<T>) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The cached object with this key. */
  get(key: string): T | undefined {
    return this.#store.get(key);
  }

  /** The cached object with this key as the API server sent it. */
  raw(key: string): KubeObject | undefined {
    return this.kind.schema === undefined
      ? this.#store.get(key)
      : this.#raw.get(key);
  }

  /** All cached objects, optionally filtered. */
  list(filter?: (obj: T) => boolean): T[] {
    const all = [...this.#store.values()];
    return filter === undefined ? all : all.filter(filter);
  }

  /** All cached keys. */
  keys(): string[] {
    return [...this.#store.keys()];
  }

  /** Resolves once the initial list is in the cache. */
  synced(): Promise<void> {
    if (this.#synced) return Promise.resolve();
    return new Promise((resolve) => this.#syncWaiters.push(resolve));
  }

  /** Starts listing and watching in the background. */
  start(): void {
    if (this.#loop !== undefined) return;
    this.#abort = new AbortController();
    this.#loop = this.#run(this.#abort.signal);
  }

  /** Stops watching; resolves when the loop has ended. */
  async stop(): Promise<void> {
    this.#abort?.abort();
    for (const w of [...this.#rvWaiters]) w.done(false);
    await this.#loop;
    this.#loop = undefined;
  }

  #parse(raw: unknown): T | undefined {
    const schema = this.kind.schema;
    if (schema === undefined) return raw as T;
    const res = schema.safeParse(raw);
    if (res.success) return res.data;
    let key = "?";
    try {
      key = objectKey(raw as KubeObject);
    } catch {
      // keep "?"
    }
    this.#metrics?.invalidObjects.inc({ kind: this.kind.kind });
    this.#log.warn(
      { key, issues: res.error.issues.slice(0, 5) },
      `skipping ${this.kind.kind} ${key}: it does not match the schema`,
    );
    return undefined;
  }

  #emit(ev: InformerEvent<T>): void {
    for (const l of this.#listeners) {
      try {
        l(ev);
      } catch (err) {
        this.#log.error({ err, key: ev.key }, "informer listener failed");
      }
    }
  }

  #gauge(): void {
    this.#metrics?.cachedObjects.set(
      { kind: this.kind.kind },
      this.#store.size,
    );
  }

  #apply(type: string, raw: unknown): void {
    let key: string;
    try {
      key = objectKey(raw as KubeObject);
    } catch {
      return;
    }
    if (type === "DELETED") {
      const old = this.#store.get(key);
      this.#store.delete(key);
      this.#raw.delete(key);
      const obj = old ?? this.#parse(raw);
      if (obj !== undefined) this.#emit({ type: "deleted", key, object: obj });
      return;
    }
    const obj = this.#parse(raw);
    if (obj === undefined) return;
    const old = this.#store.get(key);
    this.#store.set(key, obj);
    if (this.kind.schema !== undefined) this.#raw.set(key, raw as KubeObject);
    this.#emit(
      old === undefined
        ? { type: "added", key, object: obj }
        : { type: "modified", key, object: obj, old },
    );
  }

  async #list(signal: AbortSignal): Promise<void> {
    const res = await this.#client.list(this.kind, {
      namespace: this.#namespace,
      labelSelector: this.#selector,
    });
    if (signal.aborted) return;
    const seen = new Set<string>();
    for (const raw of res.items) {
      let key: string;
      try {
        key = objectKey(raw as KubeObject);
      } catch {
        continue;
      }
      seen.add(key);
      const old = this.#store.get(key);
      if (old !== undefined && rvOf(old) === rvOf(raw)) continue;
      this.#apply("MODIFIED", raw);
    }
    for (const [key, obj] of [...this.#store]) {
      if (!seen.has(key)) {
        this.#store.delete(key);
        this.#raw.delete(key);
        this.#emit({ type: "deleted", key, object: obj });
      }
    }
    this.listCount++;
    this.#gauge();
    if (!this.#synced) {
      this.#synced = true;
      for (const w of this.#syncWaiters.splice(0)) w();
    }
    this.#setVersion(res.resourceVersion);
    this.#log.debug({ items: res.items.length, rv: this.#rv }, "listed");
  }

  async #run(signal: AbortSignal): Promise<void> {
    let needList = true;
    let failures = 0;
    const path = kindPath(this.kind, { namespace: this.#namespace });
    while (!signal.aborted) {
      try {
        if (needList) {
          await this.#list(signal);
          needList = false;
          failures = 0;
        }
        this.watchCount++;
        let gone = false;
        for await (
          const ev of this.#client.watch(
            path,
            {
              resourceVersion: this.#rv,
              allowWatchBookmarks: true,
              labelSelector: this.#selector,
              timeoutSeconds: this.#timeoutSeconds,
            },
            this.#inactivityMs,
            signal,
          )
        ) {
          failures = 0;
          if (ev.type === "ERROR") {
            const status = ev.object as { code?: number; message?: string };
            if (status.code === 410) {
              gone = true;
              this.#log.info(
                { message: status.message },
                "watch expired (410 Gone): relisting",
              );
            } else {
              this.#log.warn({ status }, "watch error event");
            }
            break;
          }
          const rv = rvOf(ev.object);
          if (ev.type === "BOOKMARK") {
            if (rv !== undefined) this.#setVersion(rv);
            continue;
          }
          this.#apply(ev.type, ev.object);
          if (rv !== undefined) this.#setVersion(rv);
          this.#gauge();
        }
        if (signal.aborted) break;
        if (gone) {
          needList = true;
          this.#metrics?.watchRestarts.inc({
            kind: this.kind.kind,
            reason: "expired",
          });
        } else {
          this.#metrics?.watchRestarts.inc({
            kind: this.kind.kind,
            reason: "closed",
          });
        }
      } catch (err) {
        if (signal.aborted) break;
        if (err instanceof WatchStalledError) {
          this.#log.warn({ err: err.message }, "watch stalled: restarting it");
          this.#metrics?.watchRestarts.inc({
            kind: this.kind.kind,
            reason: "stalled",
          });
          continue;
        }
        if (err instanceof ApiError && err.status === 410) {
          needList = true;
          this.#metrics?.watchRestarts.inc({
            kind: this.kind.kind,
            reason: "expired",
          });
          continue;
        }
        const delay = informerRetryDelay(
          failures++,
          this.#retryBaseMs,
          this.#retryMaxMs,
          Math.random(),
        );
        this.#log.warn(
          {
            err: err instanceof Error ? err.message : String(err),
            delayMs: Math.round(delay),
          },
          "list/watch failed: retrying",
        );
        this.#metrics?.watchRestarts.inc({
          kind: this.kind.kind,
          reason: "error",
        });
        if (this.#rv === "") needList = true;
        await sleep(delay, signal);
      }
    }
  }
}

/** A resourceVersion as an integer, or undefined when it is not one. */
function versionOf(rv: string): bigint | undefined {
  return /^\d+$/.test(rv) ? BigInt(rv) : undefined;
}

/**
 * The delay before list/watch attempt `failures + 1`: `base * 2^failures`
 * capped at `max`, times a jitter factor in [0.5, 1) from `random` in [0, 1),
 * so that replicas and kinds do not all retry in the same instant.
 *
 * @example
 * ```ts
 * import { informerRetryDelay } from "./informer.ts";
 * console.assert(informerRetryDelay(0, 200, 5000, 0) === 100);
 * console.assert(informerRetryDelay(10, 200, 5000, 0.999) < 5000);
 * ```
 */
export function informerRetryDelay(
  failures: number,
  baseMs: number,
  maxMs: number,
  random: number,
): number {
  return backoffDelay(failures, baseMs, maxMs) * (0.5 + random / 2);
}
