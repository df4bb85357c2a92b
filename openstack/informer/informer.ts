/**
 * What a drain knows of its host's Nova state: a pass states what it needs
 * ({@linkcode LookNeed}), the informer decides whether to list.
 * @module
 */

import type { ListRequest, NovaLister } from "./lister.ts";
import type { Migration } from "../nova_types.ts";
import type { Observation } from "./snapshot.ts";
import type { ProgressNeed, ProgressReads } from "./progress_reads.ts";
import type { CopyProgress } from "./progress_types.ts";

/** A start the drain sent, as the informer checks its cache against it. */
export interface StartProbe {
  id: string;
  state: "pending" | "accepted" | "refused" | "conflict" | "unknown";
  /** Nova's message (a refusal's). */
  message?: string;
  issuedAtMs?: number;
  answeredAtMs?: number;
}

/** What a pass needs of its host. */
export interface LookNeed extends ListRequest {
  starts: Iterable<StartProbe>;
  /** By when each end of ours should be heard of; a view still showing it moving looks. */
  endsBy?: ReadonlyMap<string, number> | undefined;
  /** Copies of ours in flight the pacing model left untimed ({@linkcode untimedCopies}). */
  untimed?: number;
  /** A look resting on a list begun after this; absent: any view vouched for. */
  freshSince?: number;
}

/** The pace an informer works to: real ms, on a clock `rate` times real time. */
export interface InformerTiming {
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
 * How old (drain clock ms) a planned-from view may be: the relist interval
 * while a copy of the drain's runs untimed, else no less than the finished
 * check. A timed copy is looked for once overdue (the trust rule), so the
 * relist need not bound how long its lost end holds a slot.
 *
 * @example
 * ```ts
 * import { relistAgeMs } from "./informer.ts";
 * const t = { pollMs: 2000, relistMs: 60_000, finishedCheckMs: 120_000, rate: 2 };
 * console.assert(relistAgeMs(t, 1) === 120_000);
 * console.assert(relistAgeMs(t, 0) === 240_000);
 * ```
 */
export function relistAgeMs(timing: InformerTiming, untimed: number): number {
  const { relistMs, finishedCheckMs, rate } = timing;
  return (untimed > 0 ? relistMs : Math.max(relistMs, finishedCheckMs)) *
    rate;
}

/**
 * The copies in flight that the pacing model left untimed: their end-by
 * time rests on a guess of their length, so a lost end of theirs is
 * bounded by the relist interval, not by that time.
 *
 * @example
 * ```ts
 * import { untimedCopies } from "./informer.ts";
 * const ends = new Map([["a", 9], ["b", undefined], ["gone", undefined]]);
 * console.assert(untimedCopies(ends, [{ id: "a" }, { id: "b" }]) === 1);
 * ```
 */
export function untimedCopies(
  expectedEnds: ReadonlyMap<string, number | undefined>,
  inFlight: readonly { id: string }[] | undefined,
): number {
  return (inFlight ?? []).filter((e) =>
    expectedEnds.has(e.id) && expectedEnds.get(e.id) === undefined
  ).length;
}

/** Whether a drain's notified view is trusted, or demoted (its NovaNotifications condition). */
export type NotificationStanding =
  | { trusted: true }
  | {
    trusted: false;
    reason: "deaf" | "wrong";
    scope: "host" | "feed";
    detail: string;
  };

/** Something the informer found wrong with itself, for the drain to report. */
export interface InformerWarning {
  reason: string;
  message: string;
}

/** What the drains of one process know of their hosts, by drain key. */
export interface HostInformer {
  /** A view the informer vouches for (`fromView`), else a list; takes in the wakes so far. */
  look(key: string, need: LookNeed): Promise<Observation>;
  /** Whether a look would be answered from the view now (of any age), changing nothing. */
  cached(key: string): boolean;
  /** The host's migrations changed since `since`: one list, no view changed. */
  glance(
    host: string,
    since: Date | undefined,
    signal?: AbortSignal,
  ): Promise<Migration[]>;
  woken(key: string): boolean;
  /** Whether arrivals wake the drain (then an idle one may look slowly). */
  watching(key: string): boolean;
  takeWarnings(key: string): InformerWarning[];
  /** The live copies' progress by server id, read for the copies due (progress.ts). */
  progress(
    key: string,
    need: ProgressNeed,
  ): Promise<ReadonlyMap<string, CopyProgress>>;
  /** When the next read of a copy with a decision pending is due, as of the last `progress`. */
  progressDueAtMs(key: string): number | undefined;
  /** The notified view's standing; undefined without notifications or not proven yet. */
  notifications(key: string): NotificationStanding | undefined;
  forget(key: string): void;
  close(): void;
}

/**
 * The informer without a feed: every look lists.
 *
 * @example
 * ```ts
 * import { PollingInformer } from "./informer.ts";
 * import { NovaLister } from "./lister.ts";
 * const nova = { listServersOnHost: () => Promise.resolve([]),
 *   listMigrations: () => Promise.resolve([]), getServer: () => Promise.reject() };
 * const informer = new PollingInformer(new NovaLister(nova, { now: () => 5 }));
 * const seen = await informer.look("ev", { host: "h", since: new Date(0),
 *   status: {}, ram: () => undefined, starts: [] });
 * console.assert(seen.listedAtMs === 5 && !informer.cached());
 * ```
 */
export class PollingInformer implements HostInformer {
  readonly #lister: NovaLister;
  readonly #progress: ProgressReads;

  constructor(lister: NovaLister) {
    this.#lister = lister;
    this.#progress = lister.progressReads();
  }

  look(_key: string, need: LookNeed): Promise<Observation> {
    return this.#lister.list(need);
  }

  cached(_key?: string): boolean {
    return false;
  }

  glance(
    host: string,
    since: Date | undefined,
    signal?: AbortSignal,
  ): Promise<Migration[]> {
    return this.#lister.migrations(host, since, signal);
  }

  woken(_key?: string): boolean {
    return false;
  }

  watching(_key?: string): boolean {
    return false;
  }

  takeWarnings(_key?: string): InformerWarning[] {
    return [];
  }

  notifications(_key?: string): NotificationStanding | undefined {
    return undefined;
  }

  progress(
    key: string,
    need: ProgressNeed,
  ): Promise<ReadonlyMap<string, CopyProgress>> {
    return this.#progress.read(key, need);
  }

  progressDueAtMs(key: string): number | undefined {
    return this.#progress.pendingReadAtMs(key);
  }

  forget(key: string): void {
    this.#progress.forget(key);
  }

  close(): void {}
}
