/**
 * The limit a prediction of a drain assumes. Nova runs at most
 * `max_concurrent_live_migrations` (nova.conf `[DEFAULT]`, 1 by default)
 * live migrations from a host at once and holds the rest `queued`; a
 * drain learns that limit from what Nova queues
 * (controllers/eviction/nova_limit.ts) and shows it as
 * `status.novaLiveMigrationLimit`. A prediction at evictor's own limit
 * above it would assume copies that Nova never runs at once (real Zed:
 * predictions 2.1-2.6x too low), so the controller's predictions and
 * `kubectl evictor plan` both use the smaller of the two, from here.
 *
 * @module
 */

/** The status fields {@linkcode learnedNovaLimit} reads. */
export interface NovaLimitedDrain {
  /** The Eviction's spec: its host. */
  spec: { hypervisor: string };
  /** Its status: whether it ended, and Nova's limit as it learned it. */
  status?: {
    finishedAt?: string | undefined;
    novaLiveMigrationLimit?: number | undefined;
  } | undefined;
}

/**
 * The limit a prediction of a host's drain assumes: evictor's `limit` in
 * force there, or Nova's per-host limit when a drain of the host learned
 * a lower one.
 *
 * @throws {RangeError} when `limit` or `novaLimit` is not an integer >= 1.
 *
 * @example
 * ```ts
 * import { predictionLimit } from "./prediction_limit.ts";
 * console.log(predictionLimit(4, undefined), predictionLimit(4, 1), predictionLimit(2, 8)); // 4 1 2
 * ```
 */
export function predictionLimit(
  limit: number,
  novaLimit: number | undefined,
): number {
  if (!Number.isInteger(limit) || limit < 1) {
    throw new RangeError(`limit must be an integer >= 1, got ${limit}`);
  }
  if (novaLimit === undefined) return limit;
  if (!Number.isInteger(novaLimit) || novaLimit < 1) {
    throw new RangeError(
      `Nova's live-migration limit must be an integer >= 1, got ${novaLimit}`,
    );
  }
  return Math.min(limit, novaLimit);
}

/**
 * Nova's limit on `host`'s live migrations as the host's running drain
 * learned it (the unfinished Eviction's `status.novaLiveMigrationLimit`),
 * else as the host's latest ended drain kept it (`lastDrain`, its
 * Hypervisor's record: capacity/last_drain_record.ts), or undefined when
 * none has seen Nova queue.
 *
 * @example
 * ```ts
 * import { learnedNovaLimit } from "./prediction_limit.ts";
 * const evictions = [
 *   { spec: { hypervisor: "a" }, status: { novaLiveMigrationLimit: 1 } },
 *   { spec: { hypervisor: "b" }, status: { finishedAt: "2026-01-01T00:00:00Z", novaLiveMigrationLimit: 2 } },
 * ];
 * console.log(learnedNovaLimit("a", evictions), learnedNovaLimit("b", evictions)); // 1 undefined
 * console.log(learnedNovaLimit("b", evictions, { novaLiveMigrationLimit: 2 })); // 2
 * ```
 */
export function learnedNovaLimit(
  host: string,
  evictions: readonly NovaLimitedDrain[],
  lastDrain?: { novaLiveMigrationLimit?: number | undefined },
): number | undefined {
  return evictions.find((e) =>
    e.spec.hypervisor === host && e.status?.finishedAt === undefined
  )?.status?.novaLiveMigrationLimit ?? lastDrain?.novaLiveMigrationLimit;
}
