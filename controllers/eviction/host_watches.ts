/**
 * The views of this process's draining hosts, fed by one notification
 * feed: each drain subscribes first (its events are buffered from then
 * on), then lists its host, then applies the events buffered since the
 * list began ({@linkcode HostWatches.beginList}, {@linkcode
 * HostWatches.endList}). An event that ends a migration, fails one, or
 * brings a VM to the host wakes that host's drain at once; a change of
 * the feed's state wakes every drain (down: poll now; up again: relist).
 *
 * @module
 */

import type {
  FeedState,
  NotificationFeed,
  NovaNotification,
} from "../../openstack/notification_types.ts";
import { type ListStamp, WatchedHost } from "./host_view.ts";
import { MIGRATE_SERVER_ERROR } from "./notified_events.ts";
import type { Observation } from "./observe.ts";
import { type FactDiff, factDiffs } from "./view_diff.ts";

/**
 * Events that end a step a drain waits for: a record ends (a slot frees),
 * a migration fails, a VM is deleted, a cold one waits to be confirmed.
 * Not the move itself (`post_dest.end`, the update naming the destination):
 * the record runs on until `post.end`, and a pass woken then would find
 * nothing to start, only delay the one that can.
 */
const WAKING: ReadonlySet<string> = new Set([
  "instance.live_migration_post.end",
  "instance.live_migration_rollback.end",
  "instance.live_migration_abort.end",
  "instance.delete.end",
  "instance.resize_finish.end",
  "instance.resize_confirm.end",
  "instance.resize_revert.end",
  MIGRATE_SERVER_ERROR,
]);

/**
 * Whether an event taken into `host`'s view should wake its drain: the
 * end of a migration step, or an update that puts a VM on the host at
 * rest (an arrival, a rollback done).
 *
 * @example
 * ```ts
 * import { wakesDrain } from "./host_watches.ts";
 * const n = { messageId: "m", eventType: "instance.update", publisherId: "nova-compute:h",
 *   publisherHost: "h", timestampMs: 0, priority: "info" as const,
 *   instance: { uuid: "a", host: "h", node: "h", vmState: "active", taskState: null, powerState: 1 } };
 * console.assert(wakesDrain(n, "h"));
 * console.assert(!wakesDrain({ ...n, instance: { ...n.instance, taskState: "migrating" } }, "h"));
 * ```
 */
export function wakesDrain(n: NovaNotification, host: string): boolean {
  if (WAKING.has(n.eventType)) return true;
  if (
    n.eventType !== "instance.update" && n.eventType !== "instance.create.end"
  ) {
    return false;
  }
  const i = n.instance;
  if (i === undefined) return false;
  return i.host === host && i.taskState === null;
}

interface Watch {
  host: string;
  view: WatchedHost | undefined;
  /** Set while a list is under way: its stamp and the events since. */
  listing: { stamp: ListStamp; buffer: NovaNotification[] } | undefined;
}

/** What a finished list found against the view it replaces. */
export interface Relisted {
  /** The VMs on which the old view, trustworthy until now, differed (both facts). */
  diffs: FactDiff[];
  /** Whether the old view was trustworthy (its diffs are misses). */
  checked: boolean;
}

/**
 * The views of the draining hosts of this process.
 *
 * @example
 * ```ts ignore
 * const watches = new HostWatches(feed, (key) => enqueue(key), () => clock.now());
 * const stamp = watches.beginList("node042", "node042"); // subscribed from here on
 * const listed = await observe(nova, "node042", ...);
 * watches.endList("node042", stamp, listed); // the list and the events since
 * const view = watches.trustworthyView("node042", slowPollMs);
 * ```
 */
export class HostWatches {
  readonly #feed: NotificationFeed;
  readonly #wake: (key: string) => void;
  readonly #now: () => number;
  readonly #watches = new Map<string, Watch>();
  /** Drains woken by an event that no look has taken in yet. */
  readonly #woken = new Set<string>();
  readonly #stop: Array<() => void>;

  /**
   * Watches `feed`; `wake(key)` runs a drain's pass at once, `now` is the
   * drain's clock (the one Nova's timestamps are compared with).
   */
  constructor(
    feed: NotificationFeed,
    wake: (key: string) => void,
    now: () => number,
  ) {
    this.#feed = feed;
    this.#wake = (key) => {
      this.#woken.add(key);
      wake(key);
    };
    this.#now = now;
    this.#stop = [
      feed.listen((n) => this.#deliver(n)),
      feed.onState((state) => this.#changed(state)),
    ];
  }

  /** The feed's state and epoch now. */
  get feed(): { state: FeedState; epoch: number } {
    return { state: this.#feed.state, epoch: this.#feed.epoch };
  }

  /**
   * The drain's view when it can be planned from: trustworthy, and listed
   * less than `maxAgeMs` (drain clock) ago; else undefined.
   */
  trustworthyView(key: string, maxAgeMs: number): WatchedHost | undefined {
    const view = this.#watches.get(key)?.view;
    if (view === undefined || !view.trustworthy(this.feed)) return undefined;
    if (this.#now() - view.stamp.atMs >= maxAgeMs) return undefined;
    return view;
  }

  /**
   * Whether an event woke the drain since its last look: its pass must
   * look (it may not return early as not yet due).
   */
  woken(key: string): boolean {
    return this.#woken.has(key);
  }

  /**
   * A look begins: the wakes so far are taken in by it (the view is read
   * now, or the list begins after them); later events wake the drain
   * again.
   */
  takeWake(key: string): void {
    this.#woken.delete(key);
  }

  /** Subscribes the drain of `key` to `host`'s events, then stamps its list. */
  beginList(key: string, host: string): ListStamp {
    let watch = this.#watches.get(key);
    if (watch === undefined || watch.host !== host) {
      watch = { host, view: undefined, listing: undefined };
      this.#watches.set(key, watch);
    }
    const stamp = {
      atMs: this.#now(),
      epoch: this.#feed.epoch,
      up: this.#feed.state === "up",
    };
    watch.listing = { stamp, buffer: [] };
    return stamp;
  }

  /**
   * The list of `key`'s host is in: its view is rebuilt from it and the
   * events buffered since the list began, and compared with the view it
   * replaces (which took the same events).
   */
  endList(key: string, stamp: ListStamp, list: Observation): Relisted {
    const watch = this.#watches.get(key);
    if (watch?.listing?.stamp !== stamp) return { diffs: [], checked: false };
    const view = new WatchedHost(watch.host, list, stamp);
    // An event the list may not show yet wakes the drain again.
    let wake = false;
    for (const n of watch.listing.buffer) {
      if (view.apply(n) && wakesDrain(n, watch.host)) wake = true;
    }
    if (wake) this.#wake(key);
    const old = watch.view;
    const checked = old !== undefined && old.trustworthy(this.feed);
    watch.view = view;
    watch.listing = undefined;
    if (!checked) return { diffs: [], checked };
    return {
      diffs: factDiffs(
        old.observation(undefined),
        view.observation(undefined),
        watch.host,
      ),
      checked,
    };
  }

  /** A list that failed: its buffer is dropped. */
  abortList(key: string, stamp: ListStamp): void {
    const watch = this.#watches.get(key);
    if (watch?.listing?.stamp === stamp) watch.listing = undefined;
  }

  /** Stops watching for a drain that is gone. */
  forget(key: string): void {
    this.#watches.delete(key);
    this.#woken.delete(key);
  }

  /** Stops listening to the feed. */
  close(): void {
    for (const stop of this.#stop) stop();
    this.#watches.clear();
  }

  #deliver(n: NovaNotification): void {
    for (const [key, watch] of this.#watches) {
      watch.listing?.buffer.push(n);
      const kept = watch.view?.apply(n) ?? false;
      if (kept && wakesDrain(n, watch.host)) this.#wake(key);
    }
  }

  #changed(_state: FeedState): void {
    for (const key of this.#watches.keys()) this.#wake(key);
  }
}
