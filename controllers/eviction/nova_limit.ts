/**
 * Nova's own limit on a host's live migrations. nova-compute runs at most
 * `max_concurrent_live_migrations` (nova.conf `[DEFAULT]`, 1 by default)
 * live migrations from one host at a time and holds the rest `queued`. A
 * slot of evictor's that Nova queues copies nothing, yet it counts against
 * the drain's limit and the cluster budget that another host's drain could
 * have used. So the drain learns Nova's limit from what Nova queues (the
 * live migrations from the host copying while one waits `queued`), starts
 * no more live migrations there than that, and says so.
 *
 * The learned value is forgotten `ttlMs` after it was last seen: capped,
 * the drain never sees Nova queue again, and Nova's limit may have been
 * raised. It then tries its own limit once more and learns again.
 *
 * @module
 */

import {
  CONDITION_NOVA_LIMITED,
  REASON_NOT_SEEN_LATELY,
  REASON_NOVA_QUEUES,
} from "../conditions.ts";
import type { EvictionStatus } from "../../models/mod.ts";
import { setCondition } from "./conditions.ts";
import type { ObservedMigration } from "../../openstack/informer/snapshot.ts";
import {
  migrationPhase,
  waitingInNova,
} from "../../openstack/informer/nova_states.ts";

/** How long a learned limit holds without being seen again (clock ms). */
export const NOVA_LIMIT_TTL_MS = 10 * 60_000;

/** What the drain knows of Nova's limit on its host. */
export interface NovaLimitMemo {
  /** Live migrations Nova runs at once from the host. */
  limit: number;
  /** Controller clock when a queue last showed it. */
  seenAtMs: number;
}

/**
 * Nova's limit as one look shows it: when a live migration from `host`
 * waits `queued` while others from it copy, Nova runs that many at once.
 * Undefined when nothing is queued (the look says nothing of the limit),
 * or nothing copies (Nova is between two of them).
 *
 * @example
 * ```ts
 * import { observedNovaLimit } from "./nova_limit.ts";
 * const rec = (id: number, status: string) => ({ id, instanceUuid: `vm${id}`,
 *   migrationType: "live-migration", status, sourceCompute: "h", createdAt: "" });
 * console.log(observedNovaLimit([rec(1, "running"), rec(2, "queued")], "h")); // 1
 * console.log(observedNovaLimit([rec(1, "running"), rec(2, "running")], "h")); // undefined
 * ```
 */
export function observedNovaLimit(
  migrations: readonly ObservedMigration[],
  host: string,
): number | undefined {
  let copying = 0;
  let queued = 0;
  for (const m of migrations) {
    if (m.sourceCompute !== host) continue;
    if (m.migrationType.toLowerCase() !== "live-migration") continue;
    if (migrationPhase(m.status) !== "in_progress") continue;
    if (m.status.toLowerCase() === "queued") queued++;
    else if (!waitingInNova(m.status)) copying++;
  }
  return queued > 0 && copying > 0 ? copying : undefined;
}

/**
 * The memo after one look: the look's limit when it shows one (the
 * higher of it and a fresh memo's, since a look between two of Nova's
 * migrations can show fewer copying than Nova runs), else the memo while
 * it is fresh, else nothing.
 *
 * @example
 * ```ts
 * import { learnNovaLimit } from "./nova_limit.ts";
 * const m = learnNovaLimit(undefined, 1, 0, 600_000);
 * console.log(m?.limit); // 1
 * console.log(learnNovaLimit(m, undefined, 599_999, 600_000)?.limit); // 1
 * console.log(learnNovaLimit(m, undefined, 600_000, 600_000)); // undefined
 * ```
 */
export function learnNovaLimit(
  memo: NovaLimitMemo | undefined,
  seen: number | undefined,
  nowMs: number,
  ttlMs: number,
): NovaLimitMemo | undefined {
  const fresh = memo !== undefined && nowMs - memo.seenAtMs < ttlMs
    ? memo
    : undefined;
  if (seen === undefined) return fresh;
  return { limit: Math.max(seen, fresh?.limit ?? 0), seenAtMs: nowMs };
}

/** Condition type: Nova's per-host limit, not evictor's, sets the pace. */
export { CONDITION_NOVA_LIMITED } from "../conditions.ts";

/**
 * The next status with what the drain knows of Nova's limit: the field
 * `novaLiveMigrationLimit` and the NovaLimited condition (True while the
 * memo holds, False once it lapsed; absent until Nova first queued).
 * `changed` tells a transition to True, for the Event.
 *
 * @example
 * ```ts
 * import { withNovaLimit } from "./nova_limit.ts";
 * const now = new Date("2026-01-01T00:00:00Z");
 * const r = withNovaLimit({ effectiveLimit: 4 }, { limit: 1, seenAtMs: 0 }, "h", now);
 * console.log(r.status.novaLiveMigrationLimit, r.changed); // 1 true
 * ```
 */
export function withNovaLimit(
  next: EvictionStatus,
  memo: NovaLimitMemo | undefined,
  host: string,
  now: Date,
  generation?: number,
): { status: EvictionStatus; changed: boolean; message?: string } {
  const conditions = next.conditions ?? [];
  const current = conditions.find((c) => c.type === CONDITION_NOVA_LIMITED);
  const { novaLiveMigrationLimit: _, ...rest } = next;
  if (memo === undefined) {
    if (current === undefined || current.status === "False") {
      return { status: rest, changed: false };
    }
    return {
      status: {
        ...rest,
        conditions: setCondition(
          conditions,
          {
            type: CONDITION_NOVA_LIMITED,
            status: "False",
            reason: REASON_NOT_SEEN_LATELY,
            message:
              `Nova has not queued a live migration from host ${host} lately; evictor uses its own limit again`,
          },
          now,
          generation,
        ),
      },
      changed: false,
    };
  }
  const message =
    `Nova runs at most ${memo.limit} live migration(s) at a time from host ${host} (nova.conf [DEFAULT] max_concurrent_live_migrations) and queued more; evictor starts no more than that here (its own limit: ${
      next.effectiveLimit ?? "unknown"
    }), leaving the rest of the cluster budget to other hosts`;
  return {
    status: {
      ...rest,
      novaLiveMigrationLimit: memo.limit,
      conditions: setCondition(
        conditions,
        {
          type: CONDITION_NOVA_LIMITED,
          status: "True",
          reason: REASON_NOVA_QUEUES,
          message,
        },
        now,
        generation,
      ),
    },
    changed: current?.status !== "True",
    message,
  };
}
