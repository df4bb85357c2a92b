/**
 * One controller per reconciled kind: informer events become queue keys;
 * workers (on the leader only) run the finalize/reconcile handlers for a key
 * with the current cached object, then requeue by the handler's result or
 * error. The framework adds its finalizer before a finalize handler can be
 * needed and removes it once that handler succeeded.
 *
 * @module
 */

import type { KubeClient } from "./client.ts";
import { type CancelTimer, type Clock, systemClock } from "./clock.ts";
import { ApiError, PermanentError, TemporaryError } from "./errors.ts";
import type { EventRecorder } from "./events.ts";
import type {
  FinalizeHandler,
  HandlerContext,
  ReconcileHandler,
  ReconcileOptions,
  ReconcileResult,
  StatusOf,
  TimerHandler,
} from "./handler.ts";
import type { CacheReader, InformerEvent } from "./informer.ts";
import { isDeleting, type Kind, type KubeObject, parseKey } from "./kind.ts";
import type { Logger } from "./logger.ts";
import type { FrameworkMetrics } from "./metrics.ts";
import { WorkQueue } from "./queue.ts";
import { updateStatus } from "./status.ts";
import type { BackoffOptions } from "./backoff.ts";

/** What a controller needs from the operator. */
export interface ControllerDeps<T extends KubeObject> {
  /** The reconciled kind. */
  kind: Kind<T>;
  /** The cache of that kind. */
  cache: CacheReader<T>;
  /** API client (resolved when used: it exists once the operator started). */
  client: () => KubeClient;
  /** Logger. */
  logger: Logger;
  /** Metrics. */
  metrics: FrameworkMetrics;
  /** Events recorder (resolved when used). */
  events: () => EventRecorder;
  /** Cache of any kind. */
  cacheOf: <U extends KubeObject>(kind: Kind<U>) => CacheReader<U>;
  /** Enqueue into any controller. */
  enqueue: <U extends KubeObject>(
    kind: Kind<U>,
    key: string,
    afterMs?: number,
  ) => void;
  /** The finalizer this operator owns. */
  finalizer: string;
  /** Clock for the queue. */
  clock?: Clock;
  /** Queue backoff bounds. */
  backoff?: BackoffOptions;
}

/** A registered timer and its per-object state. */
export interface TimerRegistration<T extends KubeObject> {
  /** Interval between runs per object, ms. */
  intervalMs: number;
  /** The handler. */
  handler: TimerHandler<T>;
  /** Pending timer per object key. */
  scheduled: Map<string, CancelTimer>;
  /** Keys whose handler runs now (never two at once per key). */
  running: Set<string>;
}

function sameMeta(a: KubeObject, b: KubeObject): boolean {
  const ma = a.metadata ?? {};
  const mb = b.metadata ?? {};
  if (ma.generation === undefined || mb.generation === undefined) return false;
  return ma.generation === mb.generation &&
    String(ma.deletionTimestamp ?? "") === String(mb.deletionTimestamp ?? "") &&
    JSON.stringify(ma.finalizers ?? []) ===
      JSON.stringify(mb.finalizers ?? []) &&
    JSON.stringify(ma.labels ?? {}) === JSON.stringify(mb.labels ?? {}) &&
    JSON.stringify(ma.annotations ?? {}) ===
      JSON.stringify(mb.annotations ?? {});
}

const errText = (err: unknown) =>
  err instanceof Error ? err.message : String(err);

/**
 * The controller of one kind. Created by the operator; exported for tests
 * and for callers that wire their own operator.
 */
export class Controller<T extends KubeObject> {
  /** The reconciled kind. */
  readonly kind: Kind<T>;
  /** The work queue. */
  readonly queue: WorkQueue;
  /** Name in logs and metrics. */
  name: string;
  /** Concurrent reconciles. */
  maxConcurrent = 1;
  /** Skip status-only updates. */
  ignoreStatusUpdates = false;
  /** The reconcile handler, if registered. */
  reconcileHandler: ReconcileHandler<T> | undefined;
  /** The finalize handler, if registered. */
  finalizeHandler: FinalizeHandler<T> | undefined;
  /** Registered timers. */
  readonly timers: TimerRegistration<T>[] = [];
  readonly #d: ControllerDeps<T>;
  readonly #clock: Clock;
  readonly #log: Logger;
  #workers: Promise<void>[] = [];
  #stopTaking: AbortController | undefined;
  #handlerAbort: AbortController | undefined;
  #active = false;

  /** Creates a controller; handlers are set by the operator. */
  constructor(deps: ControllerDeps<T>) {
    this.#d = deps;
    this.kind = deps.kind;
    this.name = deps.kind.plural;
    this.#clock = deps.clock ?? systemClock;
    this.queue = new WorkQueue({
      clock: this.#clock,
      ...(deps.backoff ? { backoff: deps.backoff } : {}),
    });
    this.#log = deps.logger.child({
      name: "controller",
      controller: this.name,
    });
  }

  /** Applies registration options. */
  configure(options: ReconcileOptions): void {
    if (options.name !== undefined) this.name = options.name;
    if (options.maxConcurrent !== undefined) {
      if (
        !Number.isInteger(options.maxConcurrent) || options.maxConcurrent < 1
      ) {
        throw new RangeError(
          `maxConcurrent must be an integer >= 1, got ${options.maxConcurrent}`,
        );
      }
      this.maxConcurrent = options.maxConcurrent;
    }
    if (options.ignoreStatusUpdates !== undefined) {
      this.ignoreStatusUpdates = options.ignoreStatusUpdates;
    }
  }

  #depth(): void {
    this.#d.metrics.queueDepth.set(
      { controller: this.name },
      this.queue.length,
    );
  }

  /** Queues `key` (now or after `afterMs`). */
  enqueue(key: string, afterMs = 0): void {
    if (afterMs > 0) this.queue.addAfter(key, afterMs);
    else this.queue.add(key);
    this.#depth();
  }

  /** Feeds an informer event of the reconciled kind. */
  onEvent(ev: InformerEvent<T>): void {
    if (
      ev.type === "modified" && this.ignoreStatusUpdates &&
      ev.old !== undefined &&
      sameMeta(ev.old, ev.object)
    ) {
      return;
    }
    this.enqueue(ev.key);
    for (const t of this.timers) {
      if (ev.type === "deleted") {
        t.scheduled.get(ev.key)?.();
        t.scheduled.delete(ev.key);
      } else if (!t.scheduled.has(ev.key)) {
        this.#scheduleTimer(t, ev.key);
      }
    }
  }

  #scheduleTimer(t: TimerRegistration<T>, key: string): void {
    t.scheduled.set(
      key,
      this.#clock.setTimer(async () => {
        t.scheduled.delete(key);
        const obj = this.#d.cache.get(key);
        if (obj === undefined) return;
        if (this.#active && !t.running.has(key) && !isDeleting(obj)) {
          t.running.add(key);
          try {
            await t.handler(this.#context(key, obj));
          } catch (err) {
            this.#log.warn({ key, err: errText(err) }, "timer handler failed");
          } finally {
            t.running.delete(key);
          }
        }
        if (this.#d.cache.get(key) !== undefined && !t.scheduled.has(key)) {
          this.#scheduleTimer(t, key);
        }
      }, t.intervalMs),
    );
  }

  /** Starts the workers (on becoming the leader). */
  start(): void {
    if (this.#active) return;
    this.#active = true;
    this.#stopTaking = new AbortController();
    this.#handlerAbort = new AbortController();
    const stop = this.#stopTaking.signal;
    for (let i = 0; i < this.maxConcurrent; i++) {
      this.#workers.push(this.#work(stop));
    }
    this.#log.info({ workers: this.maxConcurrent }, "controller started");
  }

  /**
   * Stops taking keys; waits up to `graceMs` for running handlers, then
   * aborts their signal. `graceMs` 0 aborts at once (lost leadership).
   */
  async stop(graceMs: number): Promise<void> {
    if (!this.#active) return;
    this.#active = false;
    this.#stopTaking?.abort();
    if (graceMs <= 0) this.#handlerAbort?.abort();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const all = Promise.all(this.#workers);
    await Promise.race([
      all,
      new Promise((r) => timer = setTimeout(r, graceMs)),
    ]);
    clearTimeout(timer);
    this.#handlerAbort?.abort();
    await all;
    this.#workers = [];
  }

  /** Stops queue timers for good. */
  shutdown(): void {
    this.queue.shutdown();
    for (const t of this.timers) {
      for (const cancel of t.scheduled.values()) cancel();
      t.scheduled.clear();
    }
  }

  async #work(stop: AbortSignal): Promise<void> {
    while (!stop.aborted) {
      const key = await this.queue.get(stop);
      this.#depth();
      if (key === undefined) return;
      if (stop.aborted) {
        // taken just as we stopped: give it back
        this.queue.done(key);
        this.queue.add(key);
        return;
      }
      try {
        await this.#process(key);
      } finally {
        this.queue.done(key);
        this.#depth();
      }
    }
  }

  #context<O extends T | undefined>(
    key: string,
    object: O,
  ): HandlerContext<T> & { object: O } {
    const { namespace, name } = parseKey(key);
    const d = this.#d;
    const signal = this.#handlerAbort?.signal ?? AbortSignal.abort();
    const ctx: HandlerContext<T> & { object: O } = {
      key,
      name,
      namespace,
      object,
      kind: this.kind,
      get client() {
        return d.client();
      },
      logger: this.#log.child({ key }),
      signal,
      cache: d.cacheOf,
      event: async (type, reason, message) => {
        const obj = ctx.object ?? d.cache.get(key);
        if (obj === undefined) return;
        await d.events().record(this.kind, obj, { type, reason, message });
      },
      updateStatus: async (
        mutate: (
          status: StatusOf<T>,
          object: T,
        ) => StatusOf<T> | void | Promise<StatusOf<T> | void>,
      ) => {
        type S = StatusOf<T>;
        // Without a schema the cached object is the server's object and
        // saves the first GET. With one, the cache holds the parsed object,
        // which may lack fields the schema does not know (or strips): the
        // write must start from the raw object so that it loses nothing.
        const current = this.kind.schema === undefined ? ctx.object : undefined;
        const updated = await updateStatus<S, T & { status?: S }>(
          d.client(),
          this.kind,
          key,
          mutate,
          current === undefined
            ? {}
            : { current: current as T & { status?: S } },
        );
        const parsed = this.kind.schema === undefined
          ? updated
          : this.kind.schema.safeParse(updated).data;
        // a write succeeded, so the object exists: O is T here
        if (parsed !== undefined) ctx.object = parsed as O;
        return ctx.object ?? updated;
      },
      enqueue: d.enqueue,
    };
    return ctx;
  }

  #parse(raw: T): T | undefined {
    const schema = this.kind.schema;
    return schema === undefined ? raw : schema.safeParse(raw).data;
  }

  async #setFinalizer(
    key: string,
    obj: T,
    present: boolean,
  ): Promise<T | undefined> {
    // a schema may have stripped the resourceVersion: start from the server's copy
    let current: T = obj;
    if (
      this.kind.schema !== undefined ||
      obj.metadata?.resourceVersion === undefined
    ) {
      try {
        current = await this.#d.client().get<T>(this.kind, key);
      } catch (e) {
        if (e instanceof ApiError && e.status === 404) return undefined;
        throw e;
      }
    }
    for (let attempt = 1;; attempt++) {
      const list = current.metadata?.finalizers ?? [];
      const has = list.includes(this.#d.finalizer);
      if (has === present) return current;
      const finalizers = present
        ? [...list, this.#d.finalizer]
        : list.filter((f) => f !== this.#d.finalizer);
      try {
        return await this.#d.client().patch<T>(this.kind, key, {
          metadata: {
            finalizers,
            resourceVersion: current.metadata?.resourceVersion,
          },
        });
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) return undefined;
        if (!(err instanceof ApiError && err.status === 409) || attempt >= 5) {
          throw err;
        }
        try {
          current = await this.#d.client().get<T>(this.kind, key);
        } catch (e) {
          if (e instanceof ApiError && e.status === 404) return undefined;
          throw e;
        }
      }
    }
  }

  async #process(key: string): Promise<void> {
    const started = performance.now();
    const log = this.#log.child({ key });
    let result: ReconcileResult | void = undefined;
    try {
      let obj = this.#d.cache.get(key);
      if (
        obj !== undefined && isDeleting(obj) &&
        this.finalizeHandler !== undefined
      ) {
        if ((obj.metadata?.finalizers ?? []).includes(this.#d.finalizer)) {
          await this.finalizeHandler(this.#context(key, obj));
          await this.#setFinalizer(key, obj, false);
          log.info("finalized; finalizer removed");
        }
      } else {
        if (
          obj !== undefined && this.finalizeHandler !== undefined &&
          !isDeleting(obj)
        ) {
          const raw = await this.#setFinalizer(key, obj, true);
          obj = raw === undefined ? undefined : this.#parse(raw) ?? obj;
        }
        if (this.reconcileHandler !== undefined) {
          result = await this.reconcileHandler(this.#context(key, obj));
        }
      }
      this.queue.forget(key);
      const after = result?.requeueAfterMs;
      if (after !== undefined && after >= 0) {
        this.queue.addAfter(key, after);
        this.#count("requeue");
      } else {
        this.#count("success");
      }
    } catch (err) {
      if (err instanceof PermanentError) {
        this.queue.forget(key);
        this.#count("permanent_error");
        log.error(
          { err: err.message },
          "reconcile failed permanently: not retrying until the object changes",
        );
        await this.#warn(key, "ReconcileFailed", err.message);
      } else if (err instanceof TemporaryError) {
        this.#count("temporary_error");
        this.#d.metrics.retries.inc({ controller: this.name });
        const delay = err.delayMs ?? this.queue.addRateLimited(key);
        if (err.delayMs !== undefined) this.queue.addAfter(key, err.delayMs);
        log.warn(
          { err: err.message, delayMs: delay },
          "reconcile failed temporarily: retrying",
        );
      } else {
        this.#count("error");
        this.#d.metrics.retries.inc({ controller: this.name });
        const delay = this.queue.addRateLimited(key);
        log.error(
          { err: errText(err), delayMs: delay },
          "reconcile failed: retrying with backoff",
        );
        await this.#warn(key, "ReconcileError", errText(err));
      }
    } finally {
      this.#d.metrics.reconcileDuration.observe(
        { controller: this.name },
        (performance.now() - started) / 1000,
      );
    }
  }

  #count(result: string): void {
    this.#d.metrics.reconcileTotal.inc({ controller: this.name, result });
  }

  async #warn(key: string, reason: string, message: string): Promise<void> {
    const obj = this.#d.cache.get(key);
    if (obj !== undefined) {
      await this.#d.events().record(this.kind, obj, {
        type: "Warning",
        reason,
        message: message.slice(0, 1024),
      });
    }
  }
}
