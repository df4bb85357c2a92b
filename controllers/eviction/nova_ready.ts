/**
 * The boundary where a drain gets its Nova client: before a pass, the
 * compute microversion is settled (openstack/microversion.ts). When Nova
 * and evictor share no microversion, or Nova does not support the
 * configured `compute_api_version`, no call of the pass could work (each
 * would be a 406): the Eviction says so in its status, as
 * `Evicting=False` with reason `NovaIncompatible` and the refusal naming
 * both ranges, and the drain looks again at the slow pace. Any other error
 * of the version look is left to the pass, which meets it on its first
 * call and handles it as it handles every Nova error.
 *
 * @module
 */

import type {
  HandlerContext,
  ReconcileResult,
} from "../../framework/handler.ts";
import { isDeleting } from "../../framework/kind.ts";
import type { Eviction } from "../../models/mod.ts";
import { MicroversionError } from "../../openstack/mod.ts";
import { CONDITION_EVICTING, setCondition } from "./conditions.ts";
import type { EvictionPassDeps } from "./reconcile.ts";

/** The reason of `Evicting=False` when no microversion can be agreed. */
export const REASON_NOVA_INCOMPATIBLE = "NovaIncompatible";

/**
 * Settles the Nova microversion for a drain's pass. Returns the pass's
 * result when it must not run (Nova incompatible), undefined otherwise.
 *
 * @example
 * ```ts ignore
 * const stop = await novaReady(ctx, deps);
 * if (stop !== undefined) return stop;
 * ```
 */
export async function novaReady(
  ctx: HandlerContext<Eviction>,
  deps: EvictionPassDeps,
): Promise<ReconcileResult | undefined> {
  const object = ctx.object;
  if (object === undefined || isDeleting(object)) return undefined;
  try {
    await deps.nova.negotiate(ctx.signal);
    return undefined;
  } catch (err) {
    if (!(err instanceof MicroversionError)) return undefined;
    const current = deps.memory.freshest(ctx.key, object);
    const before = current.status?.conditions?.find((c) =>
      c.type === CONDITION_EVICTING
    );
    const unchanged = before?.status === "False" &&
      before.reason === REASON_NOVA_INCOMPATIBLE &&
      before.message === err.message;
    if (!unchanged) {
      const now = new Date(deps.clock.now());
      const written = await ctx.updateStatus((s) => ({
        ...s,
        conditions: setCondition(
          s.conditions ?? [],
          {
            type: CONDITION_EVICTING,
            status: "False",
            reason: REASON_NOVA_INCOMPATIBLE,
            message: err.message,
          },
          now,
          object.metadata?.generation,
        ),
      }));
      const rv = written.metadata?.resourceVersion;
      if (rv !== undefined) {
        deps.memory.remember(ctx.key, rv, written.status ?? {});
      }
      await ctx.event("Warning", REASON_NOVA_INCOMPATIBLE, err.message);
    }
    ctx.logger.warn(
      { hypervisor: object.spec.hypervisor, err: err.message },
      "Nova shares no compute microversion with evictor: not draining",
    );
    return { requeueAfterMs: deps.slowPollMs };
  }
}
