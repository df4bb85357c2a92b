/**
 * What a drain knows of its host's Nova state, and how fresh. The
 * informer owns its lister (lister.ts), its relist age and its trust; a
 * pass states what it needs ({@linkcode LookNeed}) and never asks where
 * the facts come from. {@linkcode PollingInformer} lists on every look;
 * the notified one (notified_informer.ts) keeps a list and Nova's
 * notifications since, trusted only while proven right.
 *
 * @module
 */

import type { ListRequest, NovaLister } from "./lister.ts";
import type { Migration, Server } from "../nova_types.ts";
import type { Observation } from "./snapshot.ts";

/** A start the drain sent, as the informer checks its cache against it. */
export interface StartProbe {
  /** Server id. */
  id: string;
  /** Nova's answer so far. */
  state: "pending" | "accepted" | "refused" | "conflict" | "unknown";
  /** Nova's message (a refusal's). */
  message?: string;
  /** Drain clock when it was sent. */
  issuedAtMs?: number;
  /** Drain clock when its answer came. */
  answeredAtMs?: number;
}

/** What a pass needs of its host. */
export interface LookNeed extends ListRequest {
  /** The drain's starts, against which a view is checked. */
  starts: Iterable<StartProbe>;
  /** Migrations the drain holds: while it holds any, a view is relisted sooner. */
  holding: number;
  /**
   * By when (drain clock) the end of each live migration of ours should
   * have been heard of: a view still showing one moving past it looks.
   */
  endsBy?: ReadonlyMap<string, number> | undefined;
  /**
   * A look resting on a list begun after this (drain clock: e.g. the
   * `listedAtMs` of a view the pass cannot act on); absent: any view the
   * informer vouches for.
   */
  freshSince?: number;
}

/** The pace an informer works to: real ms, on a clock `rate` times real time. */
export interface InformerTiming {
  /** The drains' poll interval. */
  pollMs: number;
  /** The oldest view a drain that holds migrations plans from. */
  relistMs: number;
  /** The slow check of a finished drain: the oldest view of an idle one. */
  finishedCheckMs: number;
  /** Drain clock ms per real ms. */
  rate: number;
}

/** The default relist interval in poll intervals (60 s at the default 2 s). */
export const RELIST_POLLS = 30;

/**
 * How old (drain clock ms) a view a drain plans from may be: the relist
 * interval while it holds migrations; for a drain that holds none
 * (finished, or waiting for budget: an arrival wakes it) no less than
 * the finished check. A relist costs 2 Nova calls, so a drain at limit L
 * whose migrations take t each pays 1 + 2 x (t / L) / relist calls per
 * VM: <= 1.5 needs relist >= 4 x t / L.
 *
 * @example
 * ```ts
 * import { relistAgeMs } from "./informer.ts";
 * const t = { pollMs: 2000, relistMs: 60_000, finishedCheckMs: 120_000, rate: 2 };
 * console.assert(relistAgeMs(t, 1) === 120_000);
 * console.assert(relistAgeMs(t, 0) === 240_000);
 * ```
 */
export function relistAgeMs(timing: InformerTiming, holding: number): number {
  const { relistMs, finishedCheckMs, rate } = timing;
  return (holding > 0 ? relistMs : Math.max(relistMs, finishedCheckMs)) * rate;
}

/** Whether a drain's notified view is trusted, or demoted (its NovaNotifications condition). */
export type NotificationStanding =
  | { trusted: true }
  | {
    trusted: false;
    /** Why: a start of ours not heard of in time, or a view found wrong. */
    reason: "deaf" | "wrong";
    /** The host's view, or the whole feed. */
    scope: "host" | "feed";
    /** What was found, in words. */
    detail: string;
  };

/** Something the informer found wrong with itself, for the drain to report. */
export interface InformerWarning {
  /** The Event's reason. */
  reason: string;
  /** The Event's message. */
  message: string;
}

/** What the drains of one process know of their hosts, by drain key. */
export interface HostInformer {
  /**
   * The host as `need` asks: a view the informer vouches for (listed
   * within {@linkcode relistAgeMs}, `fromView`), else a list, which
   * becomes the host's view. A look begins: the wakes so far are taken
   * in by it. Throws when the list fails.
   */
  look(key: string, need: LookNeed): Promise<Observation>;
  /** Whether a look would be answered from the view now (of any age), changing nothing. */
  cached(key: string): boolean;
  /**
   * A glance at the host's migrations (changed since `since`, else
   * all): one list, no view changed.
   */
  glance(
    host: string,
    since: Date | undefined,
    signal?: AbortSignal,
  ): Promise<Migration[]>;
  /** One VM now, however the informer sees its host (throws NotFoundError when deleted). */
  server(id: string, signal?: AbortSignal): Promise<Server>;
  /** Whether a change on the host woke the drain since its last look. */
  woken(key: string): boolean;
  /**
   * Whether the drain will be woken when something comes to its host, so
   * a drain that holds nothing may look at the slow pace.
   */
  watching(key: string): boolean;
  /** What the informer found wrong with itself since the last call. */
  takeWarnings(key: string): InformerWarning[];
  /**
   * Whether the drain's notified view is trusted or demoted; undefined
   * without notifications, or while neither is known (not proven yet).
   */
  notifications(key: string): NotificationStanding | undefined;
  /** Forgets a drain's host. */
  forget(key: string): void;
  /** Stops the informer. */
  close(): void;
}

/**
 * The informer without a feed of changes: it caches nothing, so every
 * look lists and nothing but the drain's own pacing wakes it.
 *
 * @example
 * ```ts
 * import { PollingInformer } from "./informer.ts";
 * import { NovaLister } from "./lister.ts";
 * const nova = { listServersOnHost: () => Promise.resolve([]),
 *   listMigrations: () => Promise.resolve([]), getServer: () => Promise.reject() };
 * const informer = new PollingInformer(new NovaLister(nova, { now: () => 5 }));
 * const seen = await informer.look("ev", { host: "h", since: new Date(0),
 *   status: {}, ram: () => undefined, starts: [], holding: 0 });
 * console.assert(seen.listedAtMs === 5 && !informer.cached());
 * ```
 */
export class PollingInformer implements HostInformer {
  readonly #lister: NovaLister;

  /** An informer that lists with `lister`. */
  constructor(lister: NovaLister) {
    this.#lister = lister;
  }

  /** Lists. */
  look(_key: string, need: LookNeed): Promise<Observation> {
    return this.#lister.list(need);
  }

  /** Nothing cached. */
  cached(): boolean {
    return false;
  }

  /** Lists the migrations. */
  glance(
    host: string,
    since: Date | undefined,
    signal?: AbortSignal,
  ): Promise<Migration[]> {
    return this.#lister.migrations(host, since, signal);
  }

  /** Looks the VM up. */
  server(id: string, signal?: AbortSignal): Promise<Server> {
    return this.#lister.server(id, signal);
  }

  /** Nothing wakes a drain. */
  woken(): boolean {
    return false;
  }

  /** Nothing watches. */
  watching(): boolean {
    return false;
  }

  /** Nothing goes wrong. */
  takeWarnings(): InformerWarning[] {
    return [];
  }

  /** No notifications. */
  notifications(): undefined {
    return undefined;
  }

  /** Nothing to forget. */
  forget(): void {}

  /** Nothing to stop. */
  close(): void {}
}
