/**
 * The planner's own view of what one pass observed in Nova, and its
 * options. Minimal on purpose: the planner depends on nothing but
 * `models/`; the reconciler maps the OpenStack client's types onto these
 * (the client's `Server` and `Migration` already fit structurally).
 *
 * @module
 */

import { backoffDelay } from "../../framework/backoff.ts";
import type { Migration, Server } from "../../openstack/mod.ts";

/**
 * A VM as `GET /servers/detail?all_tenants=1&host=` (2.90) or
 * `GET /servers/{id}` shows it.
 */
export interface ObservedServer {
  /** Server UUID. */
  id: string;
  /** Display name, for messages only. */
  name?: string;
  /** ACTIVE, PAUSED, SHUTOFF, MIGRATING, RESIZE, VERIFY_RESIZE, ERROR, ... */
  status: string;
  /** Compute service host (`OS-EXT-SRV-ATTR:host`); null when offloaded. */
  host: string | null;
  /** `OS-EXT-STS:task_state`: null, migrating, resize_prep, deleting, ... */
  taskState?: string | null;
  /** Embedded flavor (2.47+): only its RAM matters here. */
  flavor: { ramMb: number };
  /** Present on ERROR servers. */
  fault?: { message: string };
}

/** A record of `GET /os-migrations?host=&changes-since=` (2.59+). */
export interface ObservedMigration {
  /** Integer migration id (the one abort takes). */
  id: number | string;
  /** The server it moves. */
  instanceUuid: string;
  /** live-migration, migration, resize, evacuation. */
  migrationType: string;
  /** queued, preparing, running, post-migrating, completed, error, ... */
  status: string;
  /** The host the VM leaves; records of other sources are ignored. */
  sourceCompute: string | null;
  /** The host it goes to, once known (tells where a completed one went). */
  destCompute?: string | null;
  /** Nova time, usually without a zone (UTC). */
  createdAt: string;
  /** Nova time of the last change. */
  updatedAt?: string | null;
  /** Live migration progress, when the reconciler has it. */
  memoryProcessedBytes?: number | null;
  /** Live migration total, when the reconciler has it. */
  memoryTotalBytes?: number | null;
}

/**
 * The answer of `GET /servers/{id}` for a VM that left the host list:
 * `server` is null on 404 (deleted). A VM whose GET failed for another
 * reason is simply not listed; the planner then keeps what it knew.
 */
export interface DepartedServer {
  /** The id that was looked up. */
  id: string;
  /** The server now, or null when Nova answered 404. */
  server: ObservedServer | null;
}

/** One pass's view of Nova. */
export interface Observation {
  /** The VMs on the host. */
  servers: Server[];
  /** Migrations from or to the host since the drain started. */
  migrations: Migration[];
  /** Where the VMs that left the list are (null: deleted). */
  departed: DepartedServer[];
  /**
   * Controller clock when the direct look this rests on began (a
   * notified view's: its list's); what may release an action of ours
   * (once.ts).
   */
  lookedAtMs?: number;
}

/** Tunables of the planner; see {@linkcode DEFAULT_PLAN_OPTIONS}. */
export interface PlanOptions {
  /**
   * How long a trigger recorded in status.inFlight counts as in flight
   * while Nova shows nothing of it yet.
   */
  gracePeriodMs: number;
  /** First retry delay after a failed attempt. */
  retryBaseMs: number;
  /** Upper bound of the retry delay. */
  retryCapMs: number;
  /**
   * Attempts after which a VM is no longer retried (>= 1); a transient
   * failure is retried beyond them while within `retryWindowMs`.
   */
  maxAttempts: number;
  /**
   * How long after its first failure a VM whose failures are transient (no
   * valid host, a failed migration record) is still retried
   * (`--migration-retry-window`, default 1 h).
   */
  retryWindowMs: number;
  /** A migration in flight longer than this is reported as stuck. */
  migrationTimeoutSeconds?: number;
  /** Abort stuck live migrations (policy `abortStuckMigrations`). */
  abortStuckMigrations: boolean;
  /**
   * How far Nova's clock may lag ours when matching a migration record to
   * the trigger recorded in status (record created_at >= startedAt - skew).
   * Keep it below retryBaseMs so that the failed record of the previous
   * attempt is never taken for the new one.
   */
  clockSkewMs: number;
  /**
   * Nova's clock minus ours (ms), as learned from its answers (nova_clock.ts;
   * 0 or absent: none known). Nova's record times are read on our clock
   * with it, so a Nova whose clock is far behind ours cannot hide the
   * records of our starts.
   */
  novaClockOffsetMs?: number;
  /**
   * How long consecutive fresh looks must have found the host empty before
   * the drain is declared done (`--drain-settle`, clock ms). 0: the first
   * empty look (the planner's default; the controller's is 3 poll
   * intervals).
   */
  settleMs?: number;
}

/**
 * Defaults: 60 s grace, retries after 30 s doubling up to 10 min, 5
 * attempts (transient failures: retried for 1 h), no timeout, no abort,
 * 10 s clock skew.
 *
 * @example
 * ```ts
 * import { DEFAULT_PLAN_OPTIONS } from "./observation.ts";
 * const options = { ...DEFAULT_PLAN_OPTIONS, maxAttempts: 3 };
 * console.assert(options.gracePeriodMs === 60_000);
 * ```
 */
export const DEFAULT_PLAN_OPTIONS: Readonly<PlanOptions> = Object.freeze({
  gracePeriodMs: 60_000,
  retryBaseMs: 30_000,
  retryCapMs: 600_000,
  maxAttempts: 5,
  retryWindowMs: 3_600_000,
  abortStuckMigrations: false,
  clockSkewMs: 10_000,
});

/**
 * Throws a RangeError naming the first bad option.
 *
 * @example
 * ```ts
 * import { DEFAULT_PLAN_OPTIONS, validatePlanOptions } from "./observation.ts";
 * validatePlanOptions(DEFAULT_PLAN_OPTIONS);
 * ```
 */
export function validatePlanOptions(options: PlanOptions): void {
  const nonNegative: Array<keyof PlanOptions> = [
    "gracePeriodMs",
    "retryBaseMs",
    "retryCapMs",
    "clockSkewMs",
    "retryWindowMs",
    "settleMs",
  ];
  for (const key of nonNegative) {
    const value = options[key];
    if (key === "settleMs" && value === undefined) continue;
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
      throw new RangeError(
        `options.${key} must be a finite number >= 0, got ${String(value)}`,
      );
    }
  }
  if (!Number.isInteger(options.maxAttempts) || options.maxAttempts < 1) {
    throw new RangeError(
      `options.maxAttempts must be an integer >= 1, got ${options.maxAttempts}`,
    );
  }
  const timeout = options.migrationTimeoutSeconds;
  if (timeout !== undefined && (!Number.isFinite(timeout) || timeout <= 0)) {
    throw new RangeError(
      `options.migrationTimeoutSeconds must be a number > 0, got ${timeout}`,
    );
  }
}

/**
 * The retry delay after `attempts` failed attempts:
 * `min(cap, base * 2^(attempts - 1))`, and 0 before any attempt.
 *
 * @example
 * ```ts
 * import { retryDelayMs } from "./observation.ts";
 * console.assert(retryDelayMs(1, 1000, 60_000) === 1000);
 * console.assert(retryDelayMs(3, 1000, 60_000) === 4000);
 * console.assert(retryDelayMs(30, 1000, 60_000) === 60_000);
 * ```
 */
export function retryDelayMs(
  attempts: number,
  baseMs: number,
  capMs: number,
): number {
  return attempts <= 0 ? 0 : backoffDelay(attempts - 1, baseMs, capMs);
}

/**
 * What this process knows of a start it issued: in-process only (lost on
 * a restart, when the grace period stands in for it).
 */
export interface StartNote {
  /** Server id. */
  id: string;
  /**
   * pending: no answer yet; accepted: 202; refused: a definitive refusal
   * (a 4xx but 409); conflict: 409 (look at the VM); unknown: no answer
   * after all (timeout, reset) or a 5xx: resolved by observation.
   */
  state: "pending" | "accepted" | "refused" | "conflict" | "unknown";
  /** Nova's message with its request id (refused, conflict, unknown). */
  message?: string;
  /** For a refusal: whether its cause may go away by itself (no valid host). */
  transient?: boolean;
  /** live or cold (what was started). */
  kind?: "live" | "cold";
  /** Controller clock when it was issued. */
  issuedAtMs?: number;
  /** Controller clock when its answer (or its failure) came. */
  answeredAtMs?: number;
}

/**
 * A confirm or an abort this process sent, and when Nova answered it
 * (once.ts: such an action is not sent again before a look that began
 * after its answer shows it still needed).
 */
export interface ActionNote {
  /** Controller clock when it was sent. */
  sentAtMs: number;
  /** Controller clock when its answer (or its failure) came; undefined: none yet. */
  answeredAtMs?: number;
}
