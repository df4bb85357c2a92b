/**
 * The types a controller author writes against: handler contexts, results
 * and registration options.
 *
 * @module
 */

import type { KubeClient } from "./client.ts";
import type { EventType } from "./events.ts";
import type { CacheReader } from "./informer.ts";
import type { Kind, KubeObject } from "./kind.ts";
import type { Logger } from "./logger.ts";

/** The status type of an object type (a plain record when it declares none). */
export type StatusOf<T> = T extends { status?: infer S }
  ? Exclude<S, undefined | null> & object
  : Record<string, unknown>;

/** What a reconcile handler returns: nothing, or when to run again. */
export interface ReconcileResult {
  /** Run this key again after this many milliseconds. */
  requeueAfterMs?: number | undefined;
}

/** Everything a handler gets for one key. */
export interface HandlerContext<T extends KubeObject> {
  /** The object key (`name` or `namespace/name`). */
  key: string;
  /** Object name. */
  name: string;
  /** Namespace, or undefined for cluster-scoped kinds. */
  namespace: string | undefined;
  /**
   * The object as the cache has it now; undefined once it is gone
   * (level-based: the handler acts on current state, never on an event).
   */
  object: T | undefined;
  /** The kind handled. */
  kind: Kind<T>;
  /** API client. */
  client: KubeClient;
  /** Logger with `key` and `kind` set. */
  logger: Logger;
  /** Aborted when the operator stops or loses leadership: stop touching the world. */
  signal: AbortSignal;
  /** Typed read access to the cache of any watched kind. */
  cache<U extends KubeObject>(kind: Kind<U>): CacheReader<U>;
  /**
   * Records an Event on this object (needs `object`); with `series`, one
   * Event per reason whose message each repeat replaces (events.ts).
   */
  event(
    type: EventType,
    reason: string,
    message: string,
    options?: { series?: boolean },
  ): Promise<void>;
  /**
   * Writes `status` with optimistic concurrency: `mutate` gets the latest
   * status and returns (or edits) the new one; 409s re-read and re-apply.
   */
  updateStatus(
    mutate: (
      status: StatusOf<T>,
      object: T,
    ) => StatusOf<T> | void | Promise<StatusOf<T> | void>,
  ): Promise<T>;
  /**
   * Read-your-writes for a copy of an object of this kind read from any
   * cache: this process's last write of it while `cached` is older than
   * that write, else `cached` (`object` is already resolved so).
   */
  latest(cached: T): T;
  /** Queues a key of any reconciled kind. */
  enqueue<U extends KubeObject>(
    kind: Kind<U>,
    key: string,
    afterMs?: number,
  ): void;
}

/** A reconcile handler. */
export type ReconcileHandler<T extends KubeObject> = (
  ctx: HandlerContext<T>,
) => Promise<ReconcileResult | void> | ReconcileResult | void;

/**
 * What a finalize handler that is not done yet asks for: keep the finalizer
 * and run again after `requeueAfterMs` (waiting is not a failure: no
 * warning, no backoff).
 */
export interface FinalizeResult {
  /** Run the finalizer again after this many milliseconds (>= 0). */
  requeueAfterMs: number;
}

/**
 * A finalize handler: the object is being deleted; clean up. Returning
 * nothing (or throwing nothing) removes the finalizer; returning a
 * {@linkcode FinalizeResult} keeps it and runs the handler again later.
 */
export type FinalizeHandler<T extends KubeObject> = (
  ctx: HandlerContext<T> & { object: T },
) => Promise<FinalizeResult | void> | FinalizeResult | void;

/** A timer handler: runs every interval per existing object, on the leader. */
export type TimerHandler<T extends KubeObject> = (
  ctx: HandlerContext<T> & { object: T },
) => Promise<void> | void;

/** Maps a change of a related object to keys of the reconciled kind. */
export interface RelatedWatch<U extends KubeObject> {
  /** The related kind (its cache is kept by the operator). */
  kind: Kind<U>;
  /**
   * Keys to enqueue for a changed related object, or "all" for every
   * cached object of the reconciled kind.
   */
  map: (object: U) => string[] | "all";
}

/**
 * Forgets what a handler kept in memory about one object (kopf's
 * inventory, forgotten in one step). The framework calls it once per
 * disappearance: when a worker finds the object of `key` gone from the
 * cache (its delete event, after any finalizer completed and the object
 * was removed; a relist that no longer shows it alike) and the reconcile
 * handler has run for the gone object; never on an update. A key that
 * comes back (an object re-created with the same name) starts fresh and
 * is forgotten again when it goes. Never called twice at once for a key,
 * nor while a handler runs for it.
 */
export type ForgetHandler = (key: string) => void;

/** Options of `operator.reconcile`. */
export interface ReconcileOptions {
  /** Name used in logs and metrics (default: the kind's plural). */
  name?: string;
  /** Reconciles running at once for this kind (default 1). */
  maxConcurrent?: number;
  /** Related kinds whose changes enqueue keys of this kind. */
  watches?: RelatedWatch<KubeObject>[];
  /**
   * Skip updates that change nothing but status (same generation, labels,
   * annotations, finalizers, deletionTimestamp). Default false.
   */
  ignoreStatusUpdates?: boolean;
  /** Forgets the handlers' memory of a key whose object is gone. */
  forget?: ForgetHandler;
}

/**
 * Declares a related-kind watch with the mapping typed by that kind.
 *
 * @example
 * ```ts ignore
 * operator.reconcile(Eviction, handler, {
 *   watches: [related(Hypervisor, (hv) => [hv.metadata?.name ?? ""])],
 * });
 * ```
 */
export function related<U extends KubeObject>(
  kind: Kind<U>,
  map: (object: U) => string[] | "all",
): RelatedWatch<KubeObject> {
  return { kind, map } as unknown as RelatedWatch<KubeObject>;
}
