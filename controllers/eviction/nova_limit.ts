/**
 * Nova's own limit on the host's live migrations in the status: a slot Nova queues copies nothing
 * yet counts against the budget, so the drain starts no more than Nova runs.
 * @module
 */

import {
  CONDITION_NOVA_LIMITED,
  REASON_LIMIT_RAISED,
  REASON_NOVA_QUEUES,
  setCondition,
} from "../conditions.ts";
import type { EvictionStatus } from "../../models/mod.ts";

/** Condition type: Nova's per-host limit, not evictor's, sets the pace. */
export { CONDITION_NOVA_LIMITED } from "../conditions.ts";

/**
 * The next status with Nova's limit (the field, the NovaLimited condition); `changed`: it turned True.
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
  const set = (status: "True" | "False", reason: string, message: string) => {
    const update = { type: CONDITION_NOVA_LIMITED, status, reason, message };
    return setCondition(conditions, update, now, generation);
  };
  if (limit === undefined) {
    if (current === undefined || current.status === "False") {
      return { status: rest, changed: false };
    }
    const message =
      `Nova ran more live migrations at once from host ${host} than the limit it showed before; evictor uses its own limit again`;
    return {
      status: {
        ...rest,
        conditions: set("False", REASON_LIMIT_RAISED, message),
      },
      changed: false,
    };
  }
  const message =
    `Nova runs at most ${limit} live migration(s) at a time from host ${host} (nova.conf [DEFAULT] max_concurrent_live_migrations) and queued more; evictor starts no more than that here (its own limit: ${
      next.effectiveLimit ?? "unknown"
    }), leaving the rest of the cluster budget to other hosts`;
  return {
    status: {
      ...rest,
      novaLiveMigrationLimit: limit,
      conditions: set("True", REASON_NOVA_QUEUES, message),
    },
    changed: current?.status !== "True",
    message,
  };
}
