/**
 * Failure reasons in Nova's words: a migration record says only `error`;
 * the instance action of the start's request says why (microversion 2.84+).
 * @module
 */

import { failureReason, type InstanceAction } from "../../openstack/mod.ts";
import type { IssuedStart } from "./memory.ts";
import type { Plan } from "./plan_types.ts";

/** Reads one instance action (`NovaClient.getInstanceAction`). */
export type ReadAction = (
  serverId: string,
  requestId: string,
) => Promise<InstanceAction>;

/**
 * The plan with Nova's reason (by server id) appended to each failure, in its failures and status.
 *
 * @example
 * ```ts
 * import { withReasons } from "./explain.ts";
 * const plan = { failed: [{ id: "vm", reason: "live-migration 7 ended error", attempts: 1, exhausted: false, transient: true }],
 *   next: { failed: [{ id: "vm", reason: "live-migration 7 ended error", attempts: 1, lastAttemptAt: "2026-01-01T00:00:00Z" }] } };
 * // deno-lint-ignore no-explicit-any
 * const out = withReasons(plan as any, new Map([["vm", "No valid host was found."]]));
 * console.log(out.next.failed?.[0]?.reason); // live-migration 7 ended error: No valid host was found.
 * ```
 */
export function withReasons(
  plan: Plan,
  reasons: ReadonlyMap<string, string>,
): Plan {
  if (reasons.size === 0) return plan;
  const explain = <T extends { id: string; reason: string }>(f: T): T => {
    const why = reasons.get(f.id);
    return why === undefined || f.reason.endsWith(why)
      ? f
      : { ...f, reason: `${f.reason}: ${why}` };
  };
  return {
    ...plan,
    failed: plan.failed.map(explain),
    next: {
      ...plan.next,
      ...(plan.next.failed === undefined
        ? {}
        : { failed: plan.next.failed.map(explain) }),
    },
  };
}

/**
 * Nova's reason for each failure of a start this process issued; a failed read gives none.
 *
 * @example
 * ```ts ignore
 * const reasons = await novaReasons(plan, state.starts, (id, req) => nova.getInstanceAction(id, req));
 * ```
 */
export async function novaReasons(
  plan: Plan,
  starts: ReadonlyMap<string, IssuedStart>,
  read: ReadAction,
): Promise<Map<string, string>> {
  const asks = plan.failed.flatMap((f) => {
    const requestId = starts.get(f.id)?.requestId;
    return requestId === undefined ? [] : [{ id: f.id, requestId }];
  });
  const reasons = new Map<string, string>();
  await Promise.all(asks.map(async ({ id, requestId }) => {
    try {
      const why = failureReason(await read(id, requestId));
      if (why !== undefined) reasons.set(id, why);
    } catch {
      // the record's own words stay; the read is counted in the metrics
    }
  }));
  return reasons;
}
