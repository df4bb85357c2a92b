/**
 * When the host views of one notification feed may be planned from
 * (docs/drain.md, the view's trust). Every start of ours is a probe: a
 * host's view is trusted once a start on it was heard of, while its last
 * relist agreed and no start is overdue. A relist that finds it wrong, a
 * 409 on a start the view thought possible, or a start unheard of within
 * `probeMs` demotes the host; `feedAfter` host demotions within
 * `feedWindowMs` demote the whole feed for a doubling backoff. Each
 * demotion is told once as it happens (`onDemotion`: the metric) and kept
 * for each drain to report (its Event). Times are on the drain's clock.
 *
 * @module
 */

import { backoffDelay } from "../../framework/backoff.ts";

/** Why a view was demoted: a relist found it wrong, or a start was never heard of. */
export type DemotionReason = "wrong" | "deaf";

/** A demotion, for the drain to report (an Event and a metric). */
export interface Demotion {
  /** One host's view, or the whole feed. */
  scope: "host" | "feed";
  /** Why. */
  reason: DemotionReason;
  /** What was found, in words. */
  detail: string;
  /** Until when (drain clock) it lasts at least. */
  untilMs: number;
}

/** The bounds of {@linkcode FeedTrust} (drain clock ms). */
export interface TrustOptions {
  /** How long a start of ours may wait for its first event. */
  probeMs: number;
  /** How long a demoted host polls at least. */
  hostDemotionMs: number;
  /**
   * How long after the feed's last event (any host's) it counts as live:
   * a finished drain leaves its host to events only while it is.
   */
  liveMs: number;
  /** Host demotions within `feedWindowMs` that demote the whole feed. */
  feedAfter: number;
  /** The window in which host demotions count towards the feed's. */
  feedWindowMs: number;
  /** The feed's first demotion period; it doubles on each repeat. */
  feedBackoffMs: number;
  /** The longest feed demotion. */
  feedBackoffMaxMs: number;
  /**
   * A poll interval: how long a live migration of the host may show no
   * record while another copies before the view no longer vouches for
   * the host (Nova may hold it `queued`, which no event tells), and the
   * least spacing of looks at a migration shown moving past its end.
   */
  pollMs: number;
}

/** One host's trust. */
interface HostTrust {
  /** Polling until then at least. */
  demotedUntilMs: number;
  /** Whether the last relist that could be compared agreed. */
  agreed: boolean;
  /** Starts of ours awaiting their first event: VM id -> issued, deadline. */
  probes: Map<string, { issuedAtMs: number; deadlineMs: number }>;
  /** When an event about each VM of the host was last received. */
  heard: Map<string, number>;
  /** Whether a start of ours was heard of since the host's last demotion. */
  proven: boolean;
  /** Demotions not yet reported. */
  pending: Demotion[];
  /** Refused starts already counted against the view (`id@issuedAtMs`). */
  refused: Set<string>;
  /** The feed demotion this host has reported last. */
  feedSeen: number;
  /** The host's last demotion, until it is trusted again. */
  demotion: Demotion | undefined;
}

/**
 * The trust of one feed's host views, by drain key.
 *
 * @example
 * ```ts
 * import { FeedTrust } from "./feed_trust.ts";
 * const trust = new FeedTrust({ probeMs: 10, hostDemotionMs: 100, liveMs: 30, feedAfter: 3,
 *   feedWindowMs: 1000, feedBackoffMs: 500, feedBackoffMaxMs: 4000, pollMs: 20 });
 * trust.probe("ev", "vm", 0, 0);
 * console.assert(!trust.trusted("ev", 5)); // not proven yet
 * trust.probe("ev", "vm2", 1, 1);
 * trust.heard("ev", "vm2", 2);
 * console.assert(trust.trusted("ev", 5));
 * console.assert(!trust.trusted("ev", 11)); // "vm" never heard of: deaf
 * console.assert(trust.takeDemotions("ev")[0]?.reason === "deaf");
 * ```
 */
export class FeedTrust {
  readonly #options: TrustOptions;
  readonly #hosts = new Map<string, HostTrust>();
  /** Times of recent host demotions (within the feed window). */
  #recent: number[] = [];
  #feedUntilMs = -Infinity;
  /** Feed demotions in a row (the backoff's exponent). */
  #feedLevel = 0;
  /** Feed demotions so far (what a host has reported is compared with it). */
  #feedSeq = 0;
  #feedLast: Demotion | undefined;
  /** When the feed last delivered any event. */
  #lastEventMs = -Infinity;
  readonly #onDemotion: (d: Demotion) => void;

  /**
   * Trust with these bounds; `onDemotion` is told of each demotion once,
   * as it happens (a host's, or the feed's).
   */
  constructor(
    options: TrustOptions,
    onDemotion: (d: Demotion) => void = () => {},
  ) {
    for (const [name, value] of Object.entries(options)) {
      if (!(value > 0) || !Number.isFinite(value)) {
        throw new RangeError(
          `trust option ${name} must be a number > 0, got ${value}`,
        );
      }
    }
    this.#options = options;
    this.#onDemotion = onDemotion;
  }

  #host(key: string): HostTrust {
    let h = this.#hosts.get(key);
    if (h === undefined) {
      h = {
        demotedUntilMs: -Infinity,
        agreed: true,
        probes: new Map(),
        heard: new Map(),
        proven: false,
        pending: [],
        refused: new Set(),
        feedSeen: this.#feedSeq,
        demotion: undefined,
      };
      this.#hosts.set(key, h);
    }
    return h;
  }

  /** The feed delivered an event (any host's) at `nowMs`. */
  delivered(nowMs: number): void {
    this.#lastEventMs = nowMs;
  }

  /** An event about VM `id` of `key`'s host was received at `nowMs`. */
  heard(key: string, id: string, nowMs: number): void {
    const h = this.#host(key);
    h.heard.set(id, nowMs);
    const probe = h.probes.get(id);
    if (probe !== undefined && nowMs >= probe.issuedAtMs) {
      h.probes.delete(id);
      h.proven = true;
    }
  }

  /**
   * A start of ours of VM `id`, issued at `issuedAtMs` and answered at
   * `answeredAtMs`, must be heard of within `probeMs` of its answer (Nova
   * sends `instance.update` as it accepts it). Registering it again
   * changes nothing.
   */
  probe(key: string, id: string, issuedAtMs: number, answeredAtMs: number) {
    const h = this.#host(key);
    if (h.probes.get(id)?.issuedAtMs === issuedAtMs) return;
    if ((h.heard.get(id) ?? -Infinity) >= issuedAtMs) {
      h.proven = true;
      return;
    }
    h.probes.set(id, {
      issuedAtMs,
      deadlineMs: Math.max(issuedAtMs, answeredAtMs) + this.#options.probeMs,
    });
  }

  /**
   * Nova refused (409) a start of VM `id` issued at `issuedAtMs` while the
   * view was trusted: the view missed a change of that VM, so it is wrong.
   * Counted once per start.
   */
  refusedStart(
    key: string,
    id: string,
    issuedAtMs: number,
    detail: string,
    nowMs: number,
  ): void {
    const h = this.#host(key);
    const start = `${id}@${issuedAtMs}`;
    if (h.refused.has(start)) return;
    h.refused.add(start);
    if (!this.trusted(key, nowMs)) return;
    this.#demote(key, h, "wrong", detail, nowMs);
  }

  /**
   * A relist of `key`'s host that could be compared with its view (the
   * feed connected in the same epoch since the view's list): `agreed`, or
   * not (`detail` says how). A disagreement demotes the host.
   */
  relisted(key: string, agreed: boolean, detail: string, nowMs: number): void {
    const h = this.#host(key);
    h.agreed = agreed;
    if (!agreed) this.#demote(key, h, "wrong", detail, nowMs);
  }

  /**
   * Whether `key`'s view may be planned from at `nowMs`: the feed not
   * demoted, the host not demoted, its last relist agreed, and no start
   * of ours overdue (an overdue one demotes the host now).
   */
  trusted(key: string, nowMs: number): boolean {
    const h = this.#host(key);
    for (const [id, probe] of h.probes) {
      if (nowMs <= probe.deadlineMs) continue;
      h.probes.delete(id);
      this.#demote(
        key,
        h,
        "deaf",
        `no event about the start of ${id} within ${
          Math.round(this.#options.probeMs / 1000)
        } s of its answer`,
        nowMs,
      );
    }
    const trusted = nowMs >= this.#feedUntilMs &&
      nowMs >= h.demotedUntilMs && h.agreed && h.proven;
    if (trusted) h.demotion = undefined;
    return trusted;
  }

  /**
   * The demotion in force for `key`'s host at `nowMs`: the host's own
   * until it is trusted again, else the feed's while the feed is
   * demoted; undefined when neither is.
   */
  demotion(key: string, nowMs: number): Demotion | undefined {
    this.trusted(key, nowMs);
    const own = this.#hosts.get(key)?.demotion;
    if (own !== undefined) return own;
    return this.feedDemoted(nowMs) ? this.#feedLast : undefined;
  }

  /** How many hosts are shown demoted ({@linkcode demotion}), by reason. */
  demotedHosts(nowMs: number): Record<DemotionReason, number> {
    const count: Record<DemotionReason, number> = { wrong: 0, deaf: 0 };
    for (const key of this.#hosts.keys()) {
      this.trusted(key, nowMs);
      const d = this.#hosts.get(key)?.demotion;
      if (d !== undefined) count[d.reason]++;
    }
    return count;
  }

  /**
   * Whether the feed delivered some event within `liveMs` (a silent feed
   * looks just like a quiet host): a finished drain whose trusted view is
   * not live looks at its host at the polling pace.
   */
  live(nowMs: number): boolean {
    return nowMs - this.#lastEventMs <= this.#options.liveMs;
  }

  /** Whether the whole feed is demoted at `nowMs`. */
  feedDemoted(nowMs: number): boolean {
    return nowMs < this.#feedUntilMs;
  }

  /** The demotions of `key`'s host (and the feed's) not yet reported. */
  takeDemotions(key: string): Demotion[] {
    const h = this.#hosts.get(key);
    if (h === undefined) return [];
    const out = h.pending;
    h.pending = [];
    if (h.feedSeen < this.#feedSeq && this.#feedLast !== undefined) {
      out.push(this.#feedLast);
    }
    h.feedSeen = this.#feedSeq;
    return out;
  }

  /** Drops the starts of `key`'s host awaiting their first event (the feed had a gap). */
  dropProbes(key: string): void {
    this.#hosts.get(key)?.probes.clear();
  }

  /** Forgets a drain's host. */
  forget(key: string): void {
    this.#hosts.delete(key);
  }

  #demote(
    key: string,
    h: HostTrust,
    reason: DemotionReason,
    detail: string,
    nowMs: number,
  ): void {
    const o = this.#options;
    const already = nowMs < h.demotedUntilMs;
    h.demotedUntilMs = nowMs + o.hostDemotionMs;
    h.proven = false;
    // A demoted host that disagrees again stays demoted; it counts once.
    if (already) return;
    const demotion: Demotion = {
      scope: "host",
      reason,
      detail: `${key}: ${detail}`,
      untilMs: h.demotedUntilMs,
    };
    h.demotion = demotion;
    h.pending.push(demotion);
    this.#onDemotion(demotion);
    this.#recent = [...this.#recent, nowMs].filter((t) =>
      nowMs - t <= o.feedWindowMs
    );
    if (this.#recent.length < o.feedAfter || this.feedDemoted(nowMs)) return;
    // A feed found wrong or deaf again soon after its last demotion backs
    // off longer; one that behaved for a whole window starts over.
    if (nowMs - this.#feedUntilMs > o.feedWindowMs) this.#feedLevel = 0;
    const forMs = backoffDelay(
      this.#feedLevel,
      o.feedBackoffMs,
      o.feedBackoffMaxMs,
    );
    this.#feedLevel++;
    this.#feedUntilMs = nowMs + forMs;
    this.#recent = [];
    this.#feedSeq++;
    this.#feedLast = {
      scope: "feed",
      reason,
      detail: `${o.feedAfter} host views demoted within ${
        Math.round(o.feedWindowMs / 1000)
      } s (last: ${detail}): every drain polls for ${
        Math.round(forMs / 1000)
      } s`,
      untilMs: this.#feedUntilMs,
    };
    this.#onDemotion(this.#feedLast);
  }
}

/**
 * The trust bounds for a drain polling every `pollMs` and relisting every
 * `relistMs` (real ms) on a clock `rate` times real time: a start's first
 * event within max(10 s, 2 polls); a demoted host polls for a relist
 * interval; the feed is live for 3 polls after its last event; 3 host
 * demotions within 5 relist intervals demote the feed
 * for max(5 relists, 5 min), doubling up to max(that, 1 h); a live
 * migration without a record while another copies is listed after a poll
 * interval.
 *
 * @example
 * ```ts
 * import { trustOptionsFor } from "./feed_trust.ts";
 * const o = trustOptionsFor({ pollMs: 2000, relistMs: 60_000, rate: 1 });
 * console.assert(o.probeMs === 10_000 && o.feedBackoffMs === 300_000);
 * ```
 */
export function trustOptionsFor(
  input: { pollMs: number; relistMs: number; rate: number },
): TrustOptions {
  const { pollMs, relistMs, rate } = input;
  const feedBackoffMs = Math.max(5 * relistMs, 300_000);
  const real = {
    probeMs: Math.max(10_000, 2 * pollMs),
    hostDemotionMs: relistMs,
    liveMs: 3 * pollMs,
    feedWindowMs: 5 * relistMs,
    feedBackoffMs,
    feedBackoffMaxMs: Math.max(feedBackoffMs, 3_600_000),
    pollMs,
  };
  // the one conversion: every bound on the drains' clock
  const onClock = Object.fromEntries(
    Object.entries(real).map(([k, ms]) => [k, ms * rate]),
  ) as typeof real;
  return { ...onClock, feedAfter: FEED_DEMOTION_AFTER };
}

/** Host demotions within the feed window that demote the whole feed. */
export const FEED_DEMOTION_AFTER = 3;
