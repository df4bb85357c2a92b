/**
 * Leader election on a coordination.k8s.io/v1 Lease, with client-go's
 * timing contract: lease duration 15 s, renew deadline 10 s, retry period
 * 2 s (all configurable). A leader that has not renewed within the renew
 * deadline stops at once — before any other candidate may take the Lease,
 * since the renew deadline is shorter than the lease duration. Expiry is
 * judged by the candidate's own clock from when it last saw the record
 * change, so clock skew between replicas does not matter.
 *
 * @module
 */

import type { KubeClient } from "./client.ts";
import { type CancelTimer, type Clock, systemClock } from "./clock.ts";
import { ApiError } from "./errors.ts";
import type { Logger } from "./logger.ts";
import { silentLogger } from "./logger.ts";

/** The Lease spec fields used. */
export interface LeaseSpec {
  /** Who holds the lease; "" or absent when released. */
  holderIdentity?: string | undefined;
  /** Lease duration in seconds. */
  leaseDurationSeconds?: number | undefined;
  /** When the holder acquired it (RFC 3339 micro). */
  acquireTime?: string | undefined;
  /** When the holder last renewed it (RFC 3339 micro). */
  renewTime?: string | undefined;
  /** Number of holder changes. */
  leaseTransitions?: number | undefined;
}

/** A Lease object. */
export interface Lease {
  /** Metadata. */
  metadata: {
    name: string;
    namespace: string;
    resourceVersion?: string | undefined;
  };
  /** Spec. */
  spec?: LeaseSpec | undefined;
}

/** Timing of leader election, in milliseconds. */
export interface LeaderTiming {
  /** How long a lease is valid after its last renewal (default 15000). */
  leaseDurationMs: number;
  /** How long a leader keeps trying to renew before it gives up (default 10000). */
  renewDeadlineMs: number;
  /** Pause between attempts (default 2000). */
  retryPeriodMs: number;
}

/** client-go's defaults: 15 s / 10 s / 2 s. */
export const DEFAULT_LEADER_TIMING: LeaderTiming = Object.freeze({
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
});

/**
 * Checks `leaseDuration > renewDeadline > retryPeriod > 0`; names the bad value.
 *
 * @example
 * ```ts
 * import { validateTiming } from "./leader.ts";
 * validateTiming({ leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 });
 * ```
 */
export function validateTiming(t: LeaderTiming): LeaderTiming {
  if (!(t.retryPeriodMs > 0)) {
    throw new RangeError(`retryPeriodMs must be > 0, got ${t.retryPeriodMs}`);
  }
  if (!(t.renewDeadlineMs > t.retryPeriodMs)) {
    throw new RangeError(
      `renewDeadlineMs (${t.renewDeadlineMs}) must exceed retryPeriodMs (${t.retryPeriodMs})`,
    );
  }
  if (!(t.leaseDurationMs > t.renewDeadlineMs)) {
    throw new RangeError(
      `leaseDurationMs (${t.leaseDurationMs}) must exceed renewDeadlineMs (${t.renewDeadlineMs})`,
    );
  }
  return t;
}

/** What a candidate should do with a Lease it just read. */
export type LeaseDecision =
  | { action: "create" }
  | { action: "take"; transitions: number }
  | { action: "renew" }
  | { action: "wait"; holder: string };

/**
 * Pure decision: given the Lease read (or undefined if absent), who we are,
 * when we observed the current record, and now, decide what to do.
 *
 * @example
 * ```ts
 * import { decideLease } from "./leader.ts";
 * const spec = { holderIdentity: "b", leaseDurationSeconds: 15, renewTime: "x" };
 * console.assert(decideLease(spec, "a", 0, 14_999).action === "wait");
 * console.assert(decideLease(spec, "a", 0, 15_001).action === "take");
 * ```
 */
export function decideLease(
  spec: LeaseSpec | undefined | null,
  identity: string,
  observedAt: number,
  now: number,
): LeaseDecision {
  if (spec === undefined || spec === null) return { action: "create" };
  const holder = spec.holderIdentity ?? "";
  const transitions = spec.leaseTransitions ?? 0;
  if (holder === identity) return { action: "renew" };
  if (holder === "") return { action: "take", transitions: transitions + 1 };
  const durationMs = (spec.leaseDurationSeconds ?? 0) * 1000;
  if (now > observedAt + durationMs) {
    return { action: "take", transitions: transitions + 1 };
  }
  return { action: "wait", holder };
}

/**
 * How long a candidate waits before its next attempt: the retry period, or
 * less when the Lease it waits for expires sooner (`expiresAt`, by its own
 * clock), so that it takes an abandoned Lease within one retry period of
 * seeing its last renewal plus the lease duration — not up to one more
 * retry period later.
 *
 * @example
 * ```ts
 * import { nextAttemptDelay } from "./leader.ts";
 * console.assert(nextAttemptDelay(2000, undefined, 0) === 2000);
 * console.assert(nextAttemptDelay(2000, 15_500, 15_000) === 501);
 * console.assert(nextAttemptDelay(2000, 14_000, 15_000) === 1);
 * ```
 */
export function nextAttemptDelay(
  retryPeriodMs: number,
  expiresAt: number | undefined,
  now: number,
): number {
  if (expiresAt === undefined) return retryPeriodMs;
  // +1: decideLease takes the Lease only once now > expiry
  return Math.min(retryPeriodMs, Math.max(1, expiresAt + 1 - now));
}

/** A MicroTime string (RFC 3339 with microseconds). */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

/** Options of {@linkcode LeaderElector}. */
export interface LeaderElectorOptions {
  /** API client. */
  client: KubeClient;
  /** Lease name. */
  name: string;
  /** Lease namespace. */
  namespace: string;
  /** This candidate's identity (unique per replica). */
  identity: string;
  /** Timing (defaults: 15 s / 10 s / 2 s). */
  timing?: Partial<LeaderTiming>;
  /** Clock. */
  clock?: Clock;
  /** Called when this instance becomes the leader. */
  onStartedLeading: () => void;
  /** Called at once when leadership is lost (not on release). */
  onStoppedLeading: () => void;
  /**
   * After losing leadership, campaign again instead of stopping (default
   * false): when the Lease still names this candidate — nobody else could
   * write it, as after an API-server outage — it leads again on its first
   * successful attempt, and `onStartedLeading` is called again.
   */
  keepCampaigning?: boolean;
  /** Logger. */
  logger?: Logger;
}

/**
 * Runs the election loop. {@linkcode run} resolves when the elector stops
 * (released or lost).
 *
 * @example
 * ```ts ignore
 * const le = new LeaderElector({ client, name: "evictor", namespace: "kube-system",
 *   identity: crypto.randomUUID(), onStartedLeading: go, onStoppedLeading: halt });
 * const done = le.run();
 * // ...
 * await le.release();
 * ```
 */
export class LeaderElector {
  readonly #o: LeaderElectorOptions;
  readonly #t: LeaderTiming;
  readonly #clock: Clock;
  readonly #log: Logger;
  #leader = false;
  #stopped = false;
  #lost = false;
  #lastRenew = 0;
  #observed: { key: string; at: number } = { key: "", at: 0 };
  #watchdog: CancelTimer | undefined;
  #wake: (() => void) | undefined;
  #lease: Lease | undefined;
  /** When the Lease held by another candidate expires (our clock), if one is. */
  #expiresAt: number | undefined;

  /** Creates an elector; timing is validated. */
  constructor(options: LeaderElectorOptions) {
    this.#o = options;
    this.#t = validateTiming({ ...DEFAULT_LEADER_TIMING, ...options.timing });
    this.#clock = options.clock ?? systemClock;
    this.#log = (options.logger ?? silentLogger()).child({
      name: "leader",
      lease: `${options.namespace}/${options.name}`,
      identity: options.identity,
    });
  }

  /** Whether this instance currently leads. */
  get isLeader(): boolean {
    return this.#leader;
  }

  /** Whether leadership was lost (renewal failed within the deadline) at least once. */
  get lost(): boolean {
    return this.#lost;
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const cancel = this.#clock.setTimer(() => {
        this.#wake = undefined;
        resolve();
      }, ms);
      this.#wake = () => {
        cancel();
        this.#wake = undefined;
        resolve();
      };
    });
  }

  #armWatchdog(): void {
    this.#watchdog?.();
    const due = this.#lastRenew + this.#t.renewDeadlineMs - this.#clock.now();
    this.#watchdog = this.#clock.setTimer(() => this.#loseLeadership(), due);
  }

  #loseLeadership(): void {
    if (!this.#leader) return;
    const again = this.#o.keepCampaigning ?? false;
    this.#leader = false;
    this.#lost = true;
    if (!again) this.#stopped = true;
    this.#watchdog?.();
    this.#log.error(
      { renewDeadlineMs: this.#t.renewDeadlineMs },
      again
        ? "could not renew the leader lease in time: stopping the handlers, campaigning again"
        : "could not renew the leader lease in time: stopping",
    );
    this.#o.onStoppedLeading();
    if (!again) this.#wake?.();
  }

  /** One attempt to acquire or renew; true when we hold the lease after it. */
  async tryAcquireOrRenew(): Promise<boolean> {
    const { client, name, namespace, identity } = this.#o;
    // set again below only when this attempt reads a Lease held by another;
    // a failed attempt must not leave a past expiry that would spin the loop
    this.#expiresAt = undefined;
    const timeout = AbortSignal.timeout(Math.max(1, this.#t.retryPeriodMs));
    let lease: Lease | undefined;
    try {
      lease = await client.request<Lease>(
        "GET",
        `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${name}`,
        { signal: timeout },
      );
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 404)) throw err;
    }
    const now = this.#clock.now();
    if (lease !== undefined) {
      const recordKey = JSON.stringify(lease.spec ?? {});
      if (recordKey !== this.#observed.key) {
        this.#observed = { key: recordKey, at: now };
      }
    }
    const decision = decideLease(lease?.spec, identity, this.#observed.at, now);
    this.#expiresAt = decision.action === "wait"
      ? this.#observed.at + (lease?.spec?.leaseDurationSeconds ?? 0) * 1000
      : undefined;
    if (decision.action === "wait") return false;
    const spec: LeaseSpec = {
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(this.#t.leaseDurationMs / 1000),
      renewTime: microTime(now),
      acquireTime: decision.action === "renew"
        ? lease?.spec?.acquireTime ?? microTime(now)
        : microTime(now),
      leaseTransitions: decision.action === "take"
        ? decision.transitions
        : lease?.spec?.leaseTransitions ?? 0,
    };
    try {
      if (decision.action === "create") {
        this.#lease = await client.request<Lease>(
          "POST",
          `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`,
          {
            body: {
              apiVersion: "coordination.k8s.io/v1",
              kind: "Lease",
              metadata: { name, namespace },
              spec,
            },
            signal: timeout,
          },
        );
      } else {
        this.#lease = await client.request<Lease>(
          "PUT",
          `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${name}`,
          {
            body: { ...lease, spec },
            signal: timeout,
          },
        );
      }
    } catch (err) {
      if (
        err instanceof ApiError && (err.status === 409 || err.status === 404)
      ) return false;
      throw err;
    }
    this.#observed = { key: JSON.stringify(this.#lease?.spec ?? {}), at: now };
    return true;
  }

  /** Campaigns, leads, renews; resolves once released or lost. */
  async run(): Promise<void> {
    while (!this.#stopped) {
      const started = this.#clock.now();
      let ok = false;
      try {
        ok = await this.tryAcquireOrRenew();
      } catch (err) {
        this.#log.warn({
          err: err instanceof Error ? err.message : String(err),
        }, "lease request failed");
      }
      if (this.#stopped) break;
      if (ok) {
        // a renewal counts from when the attempt started (the lease on the
        // server says renewTime = started), never from when the answer came
        this.#lastRenew = started;
        if (!this.#leader) {
          this.#leader = true;
          this.#log.info("became the leader");
          this.#armWatchdog();
          this.#o.onStartedLeading();
        } else {
          this.#armWatchdog();
        }
      }
      // attempts start one retry period apart (not a period after the
      // last one ended), or at the expiry of the Lease waited for
      const now = this.#clock.now();
      const rest = Math.max(1, this.#t.retryPeriodMs - (now - started));
      await this.#sleep(
        this.#leader ? rest : nextAttemptDelay(rest, this.#expiresAt, now),
      );
    }
  }

  /**
   * Stops campaigning; if leading, gives the Lease up so another can take it
   * at once. Its two requests end when `signal` aborts (a stop has a
   * deadline; the Lease then expires by itself).
   */
  async release(signal?: AbortSignal): Promise<void> {
    this.#stopped = true;
    this.#watchdog?.();
    this.#wake?.();
    if (!this.#leader) return;
    this.#leader = false;
    const { client, name, namespace } = this.#o;
    try {
      const lease = await client.request<Lease>(
        "GET",
        `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${name}`,
        signal === undefined ? {} : { signal },
      );
      if (lease.spec?.holderIdentity !== this.#o.identity) return;
      await client.request(
        "PUT",
        `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${name}`,
        {
          body: {
            ...lease,
            spec: {
              ...lease.spec,
              holderIdentity: "",
              leaseDurationSeconds: 1,
              renewTime: microTime(this.#clock.now()),
            },
          },
          ...(signal === undefined ? {} : { signal }),
        },
      );
      this.#log.info("released the leader lease");
    } catch (err) {
      this.#log.warn(
        { err: err instanceof Error ? err.message : String(err) },
        "releasing the lease failed",
      );
    }
  }
}
