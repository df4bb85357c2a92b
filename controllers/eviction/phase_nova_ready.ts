/**
 * Nova ready, the first phase of a pass: the compute microversion is
 * settled (openstack/microversion.ts). When Nova and evictor share none, no
 * call could work: `Evicting=False/NovaIncompatible` names both ranges and
 * the drain looks again at the slow pace. Any other error of the version
 * look is left to the pass's first call.
 *
 * @module
 */

import { REASON_NOVA_INCOMPATIBLE } from "../conditions.ts";
import { MicroversionError } from "../../openstack/mod.ts";
import { changeCondition, CONDITION_EVICTING } from "./conditions.ts";
import { emit, type Pass, type Step } from "./pass.ts";

/** The reason of `Evicting=False` when no microversion can be agreed. */
export { REASON_NOVA_INCOMPATIBLE } from "../conditions.ts";

/**
 * Settles the Nova microversion; ends the pass when Nova is incompatible.
 *
 * @example
 * ```ts ignore
 * const step = await novaReady(pass);
 * ```
 */
export async function novaReady(pass: Pass): Promise<Step> {
  const { ctx, deps } = pass;
  try {
    await deps.nova.negotiate(ctx.signal);
    return {};
  } catch (err) {
    if (!(err instanceof MicroversionError)) return {};
    const { status, event } = changeCondition(
      pass.status,
      {
        type: CONDITION_EVICTING,
        status: "False",
        reason: REASON_NOVA_INCOMPATIBLE,
        message: err.message,
      },
      new Date(deps.clock.now()),
      pass.ev.metadata?.generation,
      { type: "Warning", reason: REASON_NOVA_INCOMPATIBLE },
    );
    if (event !== undefined) emit(pass, event);
    pass.log.warn(
      { err: err.message },
      "Nova shares no compute microversion with evictor: not draining",
    );
    return { status, end: { inMs: pass.times.slowPollMs } };
  }
}
