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

import { REASON_NOVA_INCOMPATIBLE } from "../conditions.ts";
import { MicroversionError } from "../../openstack/mod.ts";
import { changeCondition, CONDITION_EVICTING } from "./conditions.ts";
import { emit, type Pass, type Step } from "./pass.ts";

/** The reason of `Evicting=False` when no microversion can be agreed. */
export { REASON_NOVA_INCOMPATIBLE } from "../conditions.ts";

/**
 * Nova ready, the first phase of a pass: settles the Nova microversion.
 * Ends the pass when it must not run (Nova incompatible: the step's
 * status says so); an empty step otherwise.
 *
 * @example
 * ```ts ignore
 * const step = await novaReady(pass);
 * if (step.end !== undefined) return step.end;
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
    return { status, end: { requeueAfterMs: deps.slowPollMs } };
  }
}
