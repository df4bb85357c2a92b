/**
 * One controller per reconciled kind: informer events become queue keys;
 * workers (on the leader only) run the finalize/reconcile handlers for a key
 * with the current cached object, then requeue by the handler's result or
 * error. The framework adds its finalizer before a finalize handler can be
 * needed and removes it once that handler succeeded.
 *
 * Cheap on the API server: a pass reads the informer cache, never the
 * server; the controller's own writes (status, finalizer) are remembered
 * per key and preferred to the cache until the cache catches up
 * (read-your-writes), and a status write starts from that object with its
 * resourceVersion, so it costs one request (two more per conflict). A pass
 * that failed because a service was unavailable is retried after a short
 * capped delay, at the handler's own pace if that is slower.
 *
 * @module
 */

import type { KubeClient } from "./client.ts";
import { type CancelTimer, type Clock, systemClock } from "./clock.ts";
import {
  ApiError,
  errText,
  failureHints,
  PermanentError,
  TemporaryError,
} from "./errors.ts";
import type { EventRecorder } from "./events.ts";
import type {
  FinalizeHandler,
  ForgetHandler,
  HandlerContext,
  ReconcileHandler,
  ReconcileOptions,
  ReconcileResult,
  StatusOf,
  TimerHandler,
} from "./handler.ts";
import type { CacheReader, InformerEvent } from "./informer.ts";
import {
  isDeleting,
  type Kind,
  type KubeObject,
  objectKey,
  parseKey,
} from "./kind.ts";
import type { Logger } from "./logger.ts";
import type { FrameworkOutcome } from "./controller_runtime_metrics.ts";
import type { FrameworkMetrics } from "./metrics.ts";
import { WorkQueue } from "./queue.ts";
import { updateStatus } from "./status.ts";
import type { BackoffOptions } from "./backoff.ts";
import { isUnavailable } from "./unavailable.ts";
import { WrittenObjects } from "./written.ts";

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
  /** Queue backoff bounds while a service is unavailable. */
  outageBackoff?: BackoffOptions;
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

const rvOf = (obj: KubeObject | undefined): string | undefined =>
  obj?.metadata?.resourceVersion;

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
  /** Forgets the handlers' memory of a gone object, if registered. */
  forgetHandler: ForgetHandler | undefined;
  /** Registered timers. */
  readonly timers: TimerRegistration<T>[] = [];
  readonly #d: ControllerDeps<T>;
  readonly #clock: Clock;
  readonly #log: Logger;
  #workers: Promise<void>[] = [];
  #stopTaking: AbortController | undefined;
  #handlerAbort: AbortController | undefined;
  #active = false;
  /** Objects this controller wrote, until the cache shows them. */
  readonly #written = new WrittenObjects<T, T>();
  /** The requeue delay each key's handler asked for last. */
  readonly #pacing = new Map<string, number>();
  /** Keys whose object a worker saw: forgotten once when it is gone. */
  readonly #known = new Set<string>();

  /** Creates a controller; handlers are set by the operator. */
  constructor(deps: ControllerDeps<T>) {
    this.#d = deps;
    this.kind = deps.kind;
    this.name = deps.kind.plural;
    this.#clock = deps.clock ?? systemClock;
    this.queue = new WorkQueue({
      clock: this.#clock,
      metrics: deps.metrics.workqueues.forQueue(() => this.name, this.#clock),
      ...(deps.backoff ? { backoff: deps.backoff } : {}),
      ...(deps.outageBackoff ? { outageBackoff: deps.outageBackoff } : {}),
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
    if (options.forget !== undefined) this.forgetHandler = options.forget;
  }

  /** Queues `key` (now or after `afterMs`). */
  enqueue(key: string, afterMs = 0): void {
    if (afterMs > 0) this.queue.addAfter(key, afterMs);
    else this.queue.add(key);
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
    // The key's memory goes on the worker that finds the object gone
    // (#forgetGone), never here: a pass of the key may still be running.
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
        const { object: obj, raw } = this.#current(key);
        if (obj === undefined) return;
        if (this.#active && !t.running.has(key) && !isDeleting(obj)) {
          t.running.add(key);
          try {
            await t.handler(this.#context(key, obj, raw));
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
    this.#d.metrics.controllerRuntime.started(this.name, this.maxConcurrent);
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
    // this stop's own: a start() while it waits (leadership regained) has new ones
    const handlerAbort = this.#handlerAbort;
    const workers = this.#workers;
    this.#workers = [];
    if (graceMs <= 0) handlerAbort?.abort();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const all = Promise.all(workers);
    await Promise.race([
      all,
      new Promise((r) => timer = setTimeout(r, graceMs)),
    ]);
    clearTimeout(timer);
    handlerAbort?.abort();
    await all;
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
      if (key === undefined) return;
      if (stop.aborted) {
        // taken just as we stopped: give it back
        this.queue.done(key);
        this.queue.add(key);
        return;
      }
      const metrics = this.#d.metrics.controllerRuntime;
      const name = this.name;
      metrics.working(name, 1);
      try {
        await this.#process(key);
      } finally {
        metrics.working(name, -1);
        this.queue.done(key);
      }
    }
  }

  /**
   * The server's unparsed object in the cache; undefined when the cache
   * cannot tell it (a schema parsed it and the cache keeps no raw copy).
   */
  #cachedRaw(key: string): T | undefined {
    const cache = this.#d.cache;
    if (cache.raw !== undefined) return cache.raw(key) as T | undefined;
    return this.kind.schema === undefined ? cache.get(key) : undefined;
  }

  /** The object of a pass: the last own write while the cache lags behind it. */
  #current(key: string): { object: T | undefined; raw: T | undefined } {
    const cached = this.#d.cache.get(key);
    const raw = this.#cachedRaw(key);
    const w = this.#written.resolve(key, rvOf(raw ?? cached));
    if (w !== undefined) return { object: w.parsed, raw: w.raw };
    return { object: cached, raw };
  }

  /**
   * The versions known to be older than a write about to be sent from
   * `base`: its own and what the cache shows now (taken before the write,
   * never after: by then the cache may show a later writer's version).
   */
  #olderThanWrite(key: string, base: T | undefined): (string | undefined)[] {
    return [rvOf(base), rvOf(this.#cachedRaw(key) ?? this.#d.cache.get(key))];
  }

  /** Remembers an object the server returned for a write; returns it parsed. */
  #remember(
    key: string,
    written: T,
    older: Iterable<string | undefined>,
  ): T | undefined {
    const parsed = this.#parse(written);
    const rv = rvOf(written);
    if (parsed !== undefined && rv !== undefined && rv !== "") {
      this.#written.remember(key, written, parsed, rv, older);
    }
    return parsed;
  }

  #context<O extends T | undefined>(
    key: string,
    object: O,
    raw: T | undefined,
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
      event: async (type, reason, message, options) => {
        const obj = ctx.object ?? d.cache.get(key);
        if (obj === undefined) return;
        await d.events().record(this.kind, obj, {
          type,
          reason,
          message,
          ...(options?.series === true ? { series: true } : {}),
        });
      },
      updateStatus: async (
        mutate: (
          status: StatusOf<T>,
          object: T,
        ) => StatusOf<T> | void | Promise<StatusOf<T> | void>,
      ) => {
        type S = StatusOf<T>;
        type W = T & { status?: S };
        // Start from the server's unparsed object (a schema may strip
        // fields that the write must keep) with its resourceVersion: no
        // GET, and a conflict (409) re-reads once per attempt.
        const older = this.#olderThanWrite(key, raw);
        const updated = await updateStatus<S, W>(
          d.client(),
          this.kind,
          key,
          mutate,
          {
            ...(raw === undefined ? {} : { current: raw as W }),
            onRead: (fresh) => older.push(rvOf(fresh)),
          },
        );
        raw = updated;
        const parsed = this.#remember(key, updated, older);
        // a write succeeded, so the object exists: O is T here
        if (parsed !== undefined) ctx.object = parsed as O;
        return ctx.object ?? updated;
      },
      latest: (cached: T): T => {
        const w = this.#written.peek(objectKey(cached), rvOf(cached));
        return w?.parsed ?? cached;
      },
      enqueue: d.enqueue,
    };
    return ctx;
  }

  #parse(raw: T): T | undefined {
    const schema = this.kind.schema;
    return schema === undefined ? raw : schema.safeParse(raw).data;
  }

  /**
   * Adds or removes this operator's finalizer, starting from `raw` (the
   * server's object, no GET) when the cache has it; returns the object
   * after the change (`raw` itself when nothing had to change), or
   * undefined when it is gone.
   */
  async #setFinalizer(
    key: string,
    raw: T | undefined,
    present: boolean,
  ): Promise<T | undefined> {
    const read = async (): Promise<T | undefined> => {
      try {
        const fresh = await this.#d.client().get<T>(this.kind, key);
        older.push(rvOf(fresh));
        return fresh;
      } catch (e) {
        if (e instanceof ApiError && e.status === 404) return undefined;
        throw e;
      }
    };
    const older = this.#olderThanWrite(key, raw);
    let current = raw !== undefined && rvOf(raw) !== undefined
      ? raw
      : await read();
    if (current === undefined) return undefined;
    for (let attempt = 1;; attempt++) {
      const list = current.metadata?.finalizers ?? [];
      const has = list.includes(this.#d.finalizer);
      if (has === present) return current;
      const finalizers = present
        ? [...list, this.#d.finalizer]
        : list.filter((f) => f !== this.#d.finalizer);
      try {
        const written = await this.#d.client().patch<T>(this.kind, key, {
          metadata: {
            finalizers,
            resourceVersion: current.metadata?.resourceVersion,
          },
        });
        this.#remember(key, written, older);
        return written;
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) return undefined;
        if (!(err instanceof ApiError && err.status === 409) || attempt >= 5) {
          throw err;
        }
        current = await read();
        if (current === undefined) return undefined;
      }
    }
  }

  async #process(key: string): Promise<void> {
    const started = performance.now();
    const log = this.#log.child({ key });
    let result: ReconcileResult | void = undefined;
    // the pass's outcome for the metrics; a throw that escapes below is an error
    let outcome: FrameworkOutcome = "error";
    try {
      let { object: obj, raw } = this.#current(key);
      // seen (deleting too: a restarted process first sees it so)
      if (obj !== undefined) this.#known.add(key);
      if (
        obj !== undefined && isDeleting(obj) &&
        this.finalizeHandler !== undefined
      ) {
        const meta = (raw ?? obj).metadata;
        if ((meta?.finalizers ?? []).includes(this.#d.finalizer)) {
          const waiting = await this.finalizeHandler(
            this.#context(key, obj, raw),
          );
          if (waiting !== undefined) {
            // Not done, not failed: keep the finalizer and look again.
            result = waiting;
            log.debug(
              { requeueAfterMs: waiting.requeueAfterMs },
              "finalizer waiting",
            );
          } else {
            // the handler may have written status: start from that object
            await this.#setFinalizer(key, this.#current(key).raw, false);
            log.info("finalized; finalizer removed");
          }
        }
      } else {
        if (
          obj !== undefined && this.finalizeHandler !== undefined &&
          !isDeleting(obj)
        ) {
          const after = await this.#setFinalizer(key, raw, true);
          if (after !== raw) {
            raw = after;
            obj = after === undefined ? undefined : this.#parse(after) ?? obj;
          }
        }
        try {
          if (this.reconcileHandler !== undefined) {
            result = await this.reconcileHandler(
              this.#context(key, obj, raw),
            );
          }
        } finally {
          // Gone: after the handler's last look, its memory goes (once).
          if (obj === undefined) this.#forgetGone(key);
        }
      }
      this.queue.forget(key);
      const after = result?.requeueAfterMs;
      // One line per pass: the wait it asked for, so that a pass can be
      // counted (and its wait read) in the operator's terms, not in seconds.
      log.debug({ requeueAfterMs: after ?? null }, "reconciled");
      if (after !== undefined && after >= 0) {
        this.#pacing.set(key, after);
        this.queue.addAfter(key, after);
        outcome = "requeue";
      } else {
        this.#pacing.delete(key);
        outcome = "success";
      }
    } catch (err) {
      // What the error (or a cause) asks for: a later retry, an Event.
      const hints = failureHints(err);
      const atLeastMs = hints.retryAfterMs ?? 0;
      if (err instanceof PermanentError) {
        this.queue.forget(key);
        outcome = "permanent_error";
        log.error(
          { err: err.message },
          "reconcile failed permanently: not retrying until the object changes",
        );
        await this.#warn(key, "ReconcileFailed", err.message);
      } else if (
        !(err instanceof TemporaryError && err.delayMs !== undefined) &&
        isUnavailable(err)
      ) {
        // The API server (or a service the handler calls) did not answer:
        // retry soon, at the handler's own pace if that is slower, and
        // record no Event (it could not be written either).
        outcome = "unavailable";
        const delay = this.queue.addOutageLimited(key, this.#pacing.get(key));
        log.warn(
          { err: errText(err), delayMs: delay },
          "reconcile failed: a service is unavailable: retrying soon",
        );
      } else if (err instanceof TemporaryError) {
        outcome = "temporary_error";
        const delay = err.delayMs === undefined
          ? this.queue.addRateLimited(key, atLeastMs)
          : Math.max(err.delayMs, atLeastMs);
        if (err.delayMs !== undefined) this.queue.addAfter(key, delay);
        log.warn(
          { err: err.message, delayMs: delay },
          "reconcile failed temporarily: retrying",
        );
        if (hints.event !== undefined) {
          await this.#warn(key, hints.event.reason, hints.event.message);
        }
      } else {
        outcome = "error";
        const delay = this.queue.addRateLimited(key, atLeastMs);
        log.error(
          { err: errText(err), delayMs: delay },
          "reconcile failed: retrying with backoff",
        );
        await this.#warn(
          key,
          hints.event?.reason ?? "ReconcileError",
          hints.event?.message ?? errText(err),
        );
      }
    } finally {
      const m = this.#d.metrics;
      m.reconcileTotal.inc({ controller: this.name, result: outcome });
      m.controllerRuntime.reconciled(
        this.name,
        outcome,
        (performance.now() - started) / 1000,
        result?.requeueAfterMs,
      );
    }
  }

  /**
   * The object of `key` is gone: forgets its written object and pacing
   * and, once per disappearance of an object a worker saw, the handlers'
   * memory of it (handler.ts ForgetHandler).
   */
  #forgetGone(key: string): void {
    this.#written.forget(key);
    this.#pacing.delete(key);
    if (!this.#known.delete(key)) return;
    try {
      this.forgetHandler?.(key);
    } catch (err) {
      this.#log.error({ key, err: errText(err) }, "forget handler failed");
    }
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
