/**
 * When the host views of one notification feed may be planned from (the
 * trust rule, docs/drain.md). Times are on the drain's clock.
 * @module
 */

import { backoffDelay } from "../../framework/backoff.ts";

/** Why a view was demoted: a relist found it wrong, or a start was never heard of. */
export type DemotionReason = "wrong" | "deaf";

/** A demotion, for the drain to report (an Event and a metric). */
export interface Demotion {
  scope: "host" | "feed";
  reason: DemotionReason;
  detail: string;
  /** It lasts at least until then. */
  untilMs: number;
}

/** The bounds of {@linkcode FeedTrust} (drain clock ms). */
export interface TrustOptions {
  /** How long a start of ours may wait for its first event. */
  probeMs: number;
  hostDemotionMs: number;
  /** How long after its last event (any host's) the feed counts as live. */
  liveMs: number;
  /** Host demotions within `feedWindowMs` that demote the whole feed. */
  feedAfter: number;
  feedWindowMs: number;
  /** The feed's first demotion period; it doubles on each repeat. */
  feedBackoffMs: number;
  feedBackoffMaxMs: number;
  pollMs: number;
}

interface HostTrust {
  demotedUntilMs: number;
  /** The last relist that could be compared agreed. */
  agreed: boolean;
  /** Starts of ours awaiting their first event, by VM id. */
  probes: Map<string, { issuedAtMs: number; deadlineMs: number }>;
  heard: Map<string, number>;
  /** A start of ours was heard of since the host's last demotion. */
  proven: boolean;
  pending: Demotion[];
  /** Refused starts already counted (`id@issuedAtMs`). */
  refused: Set<string>;
  /** The feed demotion this host has reported last. */
  feedSeen: number;
  /** Until the host is trusted again. */
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
  #recent: number[] = [];
  #feedUntilMs = -Infinity;
  /** The backoff's exponent. */
  #feedLevel = 0;
  /** Feed demotions so far (a host's `feedSeen` is compared with it). */
  #feedSeq = 0;
  #feedLast: Demotion | undefined;
  #lastEventMs = -Infinity;
  readonly #onDemotion: (d: Demotion) => void;

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

  delivered(nowMs: number): void {
    this.#lastEventMs = nowMs;
  }

  heard(key: string, id: string, nowMs: number): void {
    const h = this.#host(key);
    h.heard.set(id, nowMs);
    const probe = h.probes.get(id);
    if (probe !== undefined && nowMs >= probe.issuedAtMs) {
      h.probes.delete(id);
      h.proven = true;
    }
  }

  /** A start of ours must be heard of within `probeMs` of its answer (idempotent). */
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

  /** A 409 on a start under a trusted view: it missed a change (counted once). */
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

  /** A relist compared with the view; a disagreement demotes the host. */
  relisted(key: string, agreed: boolean, detail: string, nowMs: number): void {
    const h = this.#host(key);
    h.agreed = agreed;
    if (!agreed) this.#demote(key, h, "wrong", detail, nowMs);
  }

  /** Whether `key`'s view may be planned from; an overdue probe demotes it now. */
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

  /** The demotion in force: the host's own until trusted again, else the feed's. */
  demotion(key: string, nowMs: number): Demotion | undefined {
    this.trusted(key, nowMs);
    const own = this.#hosts.get(key)?.demotion;
    if (own !== undefined) return own;
    return this.feedDemoted(nowMs) ? this.#feedLast : undefined;
  }

  /** How many hosts are shown demoted, by reason. */
  demotedHosts(nowMs: number): Record<DemotionReason, number> {
    const count: Record<DemotionReason, number> = { wrong: 0, deaf: 0 };
    for (const key of this.#hosts.keys()) {
      this.trusted(key, nowMs);
      const d = this.#hosts.get(key)?.demotion;
      if (d !== undefined) count[d.reason]++;
    }
    return count;
  }

  /** An event came within `liveMs` (a silent feed looks just like a quiet host). */
  live(nowMs: number): boolean {
    return nowMs - this.#lastEventMs <= this.#options.liveMs;
  }

  feedDemoted(nowMs: number): boolean {
    return nowMs < this.#feedUntilMs;
  }

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

  /** The feed had a gap: pending probes prove nothing. */
  dropProbes(key: string): void {
    this.#hosts.get(key)?.probes.clear();
  }

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
    // a demoted host that disagrees again stays demoted; it counts once
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
    // a feed that behaved for a whole window starts its backoff over
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
 * The trust bounds on the drains' clock for a poll and relist interval (real
 * ms) and a clock `rate` times real time.
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
  const onClock = Object.fromEntries(
    Object.entries(real).map(([k, ms]) => [k, ms * rate]),
  ) as typeof real;
  return { ...onClock, feedAfter: FEED_DEMOTION_AFTER };
}

export const FEED_DEMOTION_AFTER = 3;
