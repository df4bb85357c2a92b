/**
 * What the status says of Nova's own limit on the host's live migrations
 * (`max_concurrent_live_migrations`), a host fact the informer learns from
 * its lists (openstack/informer/lister.ts): a slot that Nova queues copies
 * nothing yet counts against the drain's limit and the cluster budget, so
 * the drain starts no more live migrations there than Nova runs.
 *
 * @module
 */

import {
  CONDITION_NOVA_LIMITED,
  REASON_LIMIT_RAISED,
  REASON_NOVA_QUEUES,
} from "../conditions.ts";
import type { EvictionStatus } from "../../models/mod.ts";
import { setCondition } from "./conditions.ts";

/** Condition type: Nova's per-host limit, not evictor's, sets the pace. */
export { CONDITION_NOVA_LIMITED } from "../conditions.ts";

/**
 * The next status with Nova's limit as the informer knows it (`limit`):
 * the field `novaLiveMigrationLimit` and the NovaLimited condition (True
 * while known; False once Nova was seen running more, its limit raised;
 * absent until Nova first queued). `changed` tells a transition to True,
 * for the Event.
 *
 * @example
 * ```ts
 * import { withNovaLimit } from "./nova_limit.ts";
 * const now = new Date("2026-01-01T00:00:00Z");
 * const r = withNovaLimit({ effectiveLimit: 4 }, 1, "h", now);
 * console.log(r.status.novaLiveMigrationLimit, r.changed); // 1 true
 * ```
 */
export function withNovaLimit(
  next: EvictionStatus,
  limit: number | undefined,
  host: string,
  now: Date,
  generation?: number,
): { status: EvictionStatus; changed: boolean; message?: string } {
  const conditions = next.conditions ?? [];
  const current = conditions.find((c) => c.type === CONDITION_NOVA_LIMITED);
  const { novaLiveMigrationLimit: _, ...rest } = next;
  if (limit === undefined) {
    if (current === undefined || current.status === "False") {
      return { status: rest, changed: false };
    }
    const condition = {
      type: CONDITION_NOVA_LIMITED,
      status: "False" as const,
      reason: REASON_LIMIT_RAISED,
      message:
        `Nova ran more live migrations at once from host ${host} than the limit it showed before; evictor uses its own limit again`,
    };
    return {
      status: {
        ...rest,
        conditions: setCondition(conditions, condition, now, generation),
      },
      changed: false,
    };
  }
  const message =
    `Nova runs at most ${limit} live migration(s) at a time from host ${host} (nova.conf [DEFAULT] max_concurrent_live_migrations) and queued more; evictor starts no more than that here (its own limit: ${
      next.effectiveLimit ?? "unknown"
    }), leaving the rest of the cluster budget to other hosts`;
  const condition = {
    type: CONDITION_NOVA_LIMITED,
    status: "True" as const,
    reason: REASON_NOVA_QUEUES,
    message,
  };
  return {
    status: {
      ...rest,
      novaLiveMigrationLimit: limit,
      conditions: setCondition(conditions, condition, now, generation),
    },
    changed: current?.status !== "True",
    message,
  };
}
