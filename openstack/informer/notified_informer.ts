/**
 * The informer fed by Nova's notifications: a view of each draining host,
 * listed once and kept by events buffered from before the list began.
 * @module
 */

import type {
  FeedState,
  NotificationFeed,
  NovaNotification,
} from "../notification_types.ts";
import { type Demotion, FeedTrust, trustOptionsFor } from "./feed_trust.ts";
import { type Listed, type ListStamp, WatchedHost } from "./host_view.ts";
import {
  MIGRATE_SERVER_ERROR,
  migrationStepOf,
  subjectOf,
} from "./notified_events.ts";
import { type FactDiff, factDiffs, planFacts } from "./view_diff.ts";
import { inFlightKindOfServer } from "./nova_states.ts";
import { latestRecords, untoldLiveMigrations } from "./nova_records.ts";
import {
  type InformerTiming,
  type InformerWarning,
  type LookNeed,
  type NotificationStanding,
  PollingInformer,
  relistAgeMs,
  type StartProbe,
} from "./informer.ts";
import type { NovaLister } from "./lister.ts";
import type { Observation } from "./snapshot.ts";

/**
 * Events that end a step a drain waits for. Not `post_dest.end`: the
 * record runs on until `post.end`, and an earlier pass only delays it.
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
 * Whether an event taken into `host`'s view wakes its drain: a step's end on
 * it (or of a VM `listedHere`), a VM at rest on it, or a migration towards it.
 *
 * @example
 * ```ts
 * import { wakesDrain } from "./notified_informer.ts";
 * const n = { messageId: "m", eventType: "instance.update", publisherId: "nova-compute:h",
 *   publisherHost: "h", timestampMs: 0, priority: "info" as const,
 *   instance: { uuid: "a", host: "h", node: "h", vmState: "active", taskState: null, powerState: 1 } };
 * console.assert(wakesDrain(n, "h"));
 * console.assert(!wakesDrain({ ...n, instance: { ...n.instance, taskState: "migrating" } }, "h"));
 * const elsewhere = { ...n, eventType: "instance.live_migration_post.end", publisherHost: "x",
 *   instance: { ...n.instance, host: "x" } };
 * console.assert(!wakesDrain(elsewhere, "h"));
 * console.assert(wakesDrain(elsewhere, "h", (id) => id === "a"));
 * ```
 */
export function wakesDrain(
  n: NovaNotification,
  host: string,
  listedHere: (id: string) => boolean = () => false,
): boolean {
  if (WAKING.has(n.eventType)) {
    const id = subjectOf(n);
    return n.publisherHost === host || n.instance?.host === host ||
      (id !== undefined && listedHere(id));
  }
  const step = migrationStepOf(n.eventType, false);
  if (
    step?.onDestination === true && step.payloadIsSource &&
    n.publisherHost === host && n.instance?.host !== host
  ) return true;
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
  /** While a list is under way: its stamp and the events since. */
  listing: { stamp: ListStamp; buffer: NovaNotification[] } | undefined;
  /** VMs a relist found ahead of the view: wrong only if no event comes by `untilMs` (lag). */
  lagging: Map<string, { diff: FactDiff; untilMs: number; heard: boolean }>;
}

/** A relist's difference may be the feed's lag when the view shows the move in progress. */
function mayLag(d: FactDiff): boolean {
  return d.view === "on moving" ||
    (d.view?.startsWith("left in_progress") ?? false);
}

/** What a finished list found against the view it replaces. */
export interface Relisted {
  /** Where the old, trusted view was wrong (not mere lag). */
  diffs: FactDiff[];
  /** Events may still be on their way (judged a poll interval on). */
  lagging: FactDiff[];
  /** The old view was trustworthy (its diffs are misses). */
  checked: boolean;
}

/** What the informer tells its owner as it happens (metrics, logs). */
export interface InformerHooks {
  differed(host: string, diffs: readonly FactDiff[]): void;
  demoted(demotion: Demotion): void;
}

const NO_HOOKS: InformerHooks = { differed() {}, demoted() {} };

/**
 * The views of the draining hosts of this process.
 *
 * @example
 * ```ts ignore
 * const informer = new NotifiedInformer(feed, lister, (key) => enqueue(key), () => clock.now());
 * const seen = await informer.look("ev", need); // listed: the view from now on
 * ```
 */
export class NotifiedInformer extends PollingInformer {
  readonly #feed: NotificationFeed;
  readonly #lister: NovaLister;
  readonly #timing: InformerTiming;
  readonly #wake: (key: string) => void;
  readonly #now: () => number;
  readonly #watches = new Map<string, Watch>();
  /** Woken by an event no look has taken in yet. */
  readonly #woken = new Set<string>();
  readonly #stop: Array<() => void>;
  readonly #trust: FeedTrust;
  readonly #hooks: InformerHooks;
  readonly #pollMs: number;
  /** By drain: VMs in a live migration the view shows no record of, since when. */
  readonly #untold = new Map<string, Map<string, number>>();

  /** `wake(key)` runs a drain's pass at once; `now` is the drain's clock. */
  constructor(
    feed: NotificationFeed,
    lister: NovaLister,
    wake: (key: string) => void,
    now: () => number,
    timing: InformerTiming = {
      pollMs: 2000,
      relistMs: 60_000,
      finishedCheckMs: 120_000,
      rate: 1,
    },
    hooks: InformerHooks = NO_HOOKS,
  ) {
    super(lister);
    this.#feed = feed;
    this.#lister = lister;
    this.#timing = timing;
    this.#hooks = hooks;
    const trust = trustOptionsFor(timing);
    this.#pollMs = trust.pollMs;
    // Each demotion is counted once, as it happens (not per drain told).
    this.#trust = new FeedTrust(trust, (d) => this.#hooks.demoted(d));
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

  get feed(): { state: FeedState; epoch: number } {
    return { state: this.#feed.state, epoch: this.#feed.epoch };
  }

  /** The drain's view when trusted (feed_trust.ts) and listed less than `maxAgeMs` ago. */
  trustworthyView(key: string, maxAgeMs: number): WatchedHost | undefined {
    const watch = this.#watches.get(key);
    const view = watch?.view;
    if (watch === undefined || view === undefined) return undefined;
    if (!view.trustworthy(this.feed)) return undefined;
    const now = this.#now();
    this.#judgeLag(key, watch, now);
    const missed = view.missedMoves();
    if (missed.length > 0) {
      this.#trust.relisted(
        key,
        false,
        `the events show ${
          missed.join(", ")
        } elsewhere without the migration that moved it`,
        now,
      );
    }
    if (!this.#trust.trusted(key, now)) return undefined;
    if (now - view.stamp.atMs >= maxAgeMs) return undefined;
    return view;
  }

  /** Accepted starts probe the feed; a 409 under a trusted view demotes it. */
  probeStarts(key: string, starts: Iterable<StartProbe>): void {
    const view = this.#watches.get(key)?.view;
    // a start made while the feed had a gap proves nothing either way
    if (view === undefined || !view.trustworthy(this.feed)) return;
    for (const s of starts) {
      if (s.issuedAtMs === undefined || s.answeredAtMs === undefined) continue;
      if (s.issuedAtMs < view.stamp.atMs) continue;
      if (s.state === "accepted") {
        this.#trust.probe(key, s.id, s.issuedAtMs, s.answeredAtMs);
      } else if (s.state === "conflict") {
        this.#trust.refusedStart(
          key,
          s.id,
          s.issuedAtMs,
          `Nova refused the start of ${s.id} (${s.message ?? "409"})`,
          this.#now(),
        );
      }
    }
  }

  override notifications(key: string): NotificationStanding | undefined {
    const now = this.#now();
    const d = this.#trust.demotion(key, now);
    if (d !== undefined) {
      return {
        trusted: false,
        reason: d.reason,
        scope: d.scope,
        detail: d.detail,
      };
    }
    return this.#trust.trusted(key, now) ? { trusted: true } : undefined;
  }

  demotedHosts(): Record<"wrong" | "deaf", number> {
    return this.#trust.demotedHosts(this.#now());
  }

  feedDemoted(): boolean {
    return this.#trust.feedDemoted(this.#now());
  }

  override woken(key: string): boolean {
    return this.#woken.has(key);
  }

  override async look(key: string, need: LookNeed): Promise<Observation> {
    // the wakes so far are taken in by this look; later events wake again
    this.#woken.delete(key);
    this.probeStarts(key, need.starts);
    const view = this.trustworthyView(key, Infinity);
    const fresh = need.freshSince;
    if (view !== undefined && fresh !== undefined) {
      if (view.stamp.atMs > fresh) {
        return { ...view.list, listedAtMs: view.stamp.atMs };
      }
    } else if (
      view !== undefined &&
      this.#now() - view.stamp.atMs <
        relistAgeMs(this.#timing, need.untimed ?? 0)
    ) {
      const seen = view.observation(need.status, need.ram);
      if (seen !== undefined) {
        const vouched = this.#vouches(key, view, seen, need.endsBy);
        this.#untold.set(key, vouched.untold);
        if (vouched.ok) {
          return {
            ...seen,
            fromView: true,
            ...this.#lister.limitOf(view.host),
          };
        }
      }
    }
    const stamp = this.beginList(key, need.host);
    let listed: Observation;
    try {
      listed = await this.#lister.list(need);
    } catch (err) {
      this.abortList(key, stamp);
      throw err;
    }
    this.endList(key, stamp, listed);
    this.#untold.delete(key);
    return listed;
  }

  override cached(key: string): boolean {
    const view = this.trustworthyView(key, Infinity);
    return view !== undefined &&
      this.#vouches(key, view, view.observation(undefined), undefined).ok;
  }

  /** Whether `seen` may ground the plan (the trust rule, docs/drain.md). */
  #vouches(
    key: string,
    view: WatchedHost,
    seen: Observation,
    endsBy: ReadonlyMap<string, number> | undefined,
  ): { ok: boolean; untold: Map<string, number> } {
    const now = this.#now();
    const before = this.#untold.get(key);
    const limit = this.#lister.novaLimit(view.host);
    const untold = new Map(
      untoldLiveMigrations(seen, view.host, limit).map((
        id,
      ) => [id, before?.get(id) ?? now]),
    );
    const ok = view.unlisted().length === 0 &&
      !this.#endOverdue(view, seen, endsBy, now) &&
      [...untold.values()].every((t) => now - t < this.#pollMs);
    return { ok, untold };
  }

  /** A migration shown moving past its `endsBy` time, unchecked since. */
  #endOverdue(
    view: WatchedHost,
    seen: Observation,
    endsBy: ReadonlyMap<string, number> | undefined,
    now: number,
  ): boolean {
    if (endsBy === undefined || endsBy.size === 0) return false;
    const records = latestRecords(seen.migrations, view.host);
    const moving = (id: string) => {
      if (records.get(id)?.inProgress !== undefined) return true;
      const s = seen.servers.find((s) => s.id === id);
      return s !== undefined &&
        inFlightKindOfServer(s.status, s.taskState) !== undefined;
    };
    for (const [id, by] of endsBy) {
      if (now < by || !moving(id)) continue;
      const listed = view.stamp.atMs;
      if (now - listed >= Math.max(this.#pollMs, listed - by)) return true;
    }
    return false;
  }

  override watching(key: string): boolean {
    return this.trustworthyView(key, Infinity) !== undefined &&
      this.#trust.live(this.#now());
  }

  override takeWarnings(key: string): InformerWarning[] {
    return this.#trust.takeDemotions(key).map((d) => {
      const what = d.scope === "feed"
        ? "Nova's notification feed demoted for every host"
        : "the notified view of the host demoted to polling";
      return {
        reason: d.scope === "feed"
          ? "NotificationFeedDemoted"
          : "NotificationViewDemoted",
        message: `${what} (${d.reason}): ${d.detail}`,
      };
    });
  }

  /** Subscribes the drain of `key` to `host`'s events, then stamps its list. */
  beginList(key: string, host: string): ListStamp {
    let watch = this.#watches.get(key);
    if (watch === undefined || watch.host !== host) {
      watch = { host, view: undefined, listing: undefined, lagging: new Map() };
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

  /** The view rebuilt from the list and the buffered events, judged against the old one. */
  endList(key: string, stamp: ListStamp, list: Listed): Relisted {
    const watch = this.#watches.get(key);
    if (watch?.listing?.stamp !== stamp) {
      return { diffs: [], lagging: [], checked: false };
    }
    const view = new WatchedHost(watch.host, list, stamp);
    const now = this.#now();
    this.#judgeLag(key, watch, now);
    const woke = new Set<string | undefined>();
    for (const n of watch.listing.buffer) {
      if (!view.apply(n)) continue;
      const id = subjectOf(n);
      const late = id !== undefined && this.#heard(key, watch, id, now);
      if (!late && wakesDrain(n, watch.host, (id) => view.listedHere(id))) {
        woke.add(id);
      }
    }
    const seen = view.observation(undefined);
    // wake again only where the list may not show it yet
    if (woke.size > 0) {
      const listed = planFacts(list, watch.host);
      const told = planFacts(seen, watch.host);
      if (
        [...woke].some((id) =>
          id === undefined || listed.get(id) !== told.get(id)
        )
      ) this.#wake(key);
    }
    const old = watch.view;
    const checked = old !== undefined && old.trustworthy(this.feed);
    watch.view = view;
    watch.listing = undefined;
    if (!checked) return { diffs: [], lagging: [], checked };
    const found = factDiffs(old.observation(undefined), seen, watch.host);
    const lagging = found.filter(mayLag);
    for (const d of lagging) {
      watch.lagging.set(d.id, {
        diff: d,
        untilMs: now + this.#pollMs,
        heard: false,
      });
    }
    const diffs = found.filter((d) => !mayLag(d));
    this.#judge(key, watch.host, diffs, "the relist found", now);
    return { diffs, lagging, checked };
  }

  /** A relist's verdict: agreed, or wrong on `diffs` (counted, host demoted). */
  #judge(
    key: string,
    host: string,
    diffs: readonly FactDiff[],
    found: string,
    now: number,
  ): void {
    if (diffs.length > 0) this.#hooks.differed(host, diffs);
    this.#trust.relisted(
      key,
      diffs.length === 0,
      `${found} ${diffs.length} VM(s) differing from the view (${
        diffs.slice(0, 3).map((d) =>
          `${d.id}: view ${d.view ?? "none"}, Nova ${d.fresh ?? "none"}`
        ).join("; ")
      })`,
      now,
    );
  }

  /** Lagging VMs with no event a poll interval on: the view was wrong on them. */
  #judgeLag(key: string, watch: Watch, now: number): void {
    const due = [...watch.lagging.values()].filter((l) => now >= l.untilMs);
    for (const l of due) watch.lagging.delete(l.diff.id);
    const late = due.filter((l) => !l.heard);
    if (late.length === 0) return;
    this.#judge(
      key,
      watch.host,
      late.map((l) => l.diff),
      "no event came of what a relist found: the view missed",
      now,
    );
  }

  /** Notes an event of `id`; true when a relist already took it in (no wake). */
  #heard(key: string, watch: Watch, id: string, now: number): boolean {
    this.#trust.heard(key, id, now);
    const lag = watch.lagging.get(id);
    if (lag === undefined || now >= lag.untilMs) return false;
    lag.heard = true;
    return true;
  }

  abortList(key: string, stamp: ListStamp): void {
    const watch = this.#watches.get(key);
    if (watch?.listing?.stamp === stamp) watch.listing = undefined;
  }

  override forget(key: string): void {
    super.forget(key);
    this.#watches.delete(key);
    this.#woken.delete(key);
    this.#untold.delete(key);
    this.#trust.forget(key);
  }

  override close(): void {
    for (const stop of this.#stop) stop();
    this.#watches.clear();
  }

  #deliver(n: NovaNotification): void {
    const now = this.#now();
    this.#trust.delivered(now);
    const id = subjectOf(n);
    for (const [key, watch] of this.#watches) {
      watch.listing?.buffer.push(n);
      const view = watch.view;
      if (view === undefined || !view.apply(n)) continue;
      const late = id !== undefined && this.#heard(key, watch, id, now);
      if (!late && wakesDrain(n, watch.host, (vm) => view.listedHere(vm))) {
        this.#wake(key);
      }
    }
  }

  #changed(_state: FeedState): void {
    for (const key of this.#watches.keys()) {
      // A gap: the starts awaiting their first event may have lost it.
      this.#trust.dropProbes(key);
      this.#wake(key);
    }
  }
}
