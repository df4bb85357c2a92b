/**
 * The first phase of a pass: settle the Nova compute microversion.
 * @module
 */

import { REASON_NOVA_INCOMPATIBLE } from "../conditions.ts";
import { MicroversionError } from "../../openstack/mod.ts";
import { changeCondition, CONDITION_EVICTING } from "./conditions.ts";
import { emit, type Pass, type Step } from "./pass.ts";

/**
 * Settles the microversion; ends the pass when Nova is incompatible (any other error is left to the first call).
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
