/**
 * The finalizer of an Eviction: when it is deleted, re-enable the compute
 * service that the drain disabled, unless the Hypervisor is in maintenance,
 * someone else disabled the service, or another Eviction of the same
 * hypervisor still stands.
 *
 * @module
 */

import type { HandlerContext } from "../../framework/handler.ts";
import type { Eviction } from "../../models/mod.ts";
import { isDeleting } from "../../framework/kind.ts";
import { errText } from "../../openstack/mod.ts";
import { EvictionKind, HypervisorKind } from "../kinds.ts";
import { keepDisabledBecause } from "./gates.ts";
import type { EvictionPassDeps } from "./reconcile.ts";

/**
 * Runs the finalizer of one Eviction. Errors of Nova throw (the framework
 * retries with backoff and keeps the finalizer until it succeeds).
 *
 * @example
 * ```ts ignore
 * operator.finalize(EvictionKind, (ctx) => finalizeEviction(ctx, deps));
 * ```
 */
export async function finalizeEviction(
  ctx: HandlerContext<Eviction> & { object: Eviction },
  deps: EvictionPassDeps,
): Promise<void> {
  const { key, object, signal } = ctx;
  const host = object.spec.hypervisor;
  const log = ctx.logger.child({ hypervisor: host });
  const others = ctx.cache(EvictionKind).list((e) =>
    e.metadata?.name !== key && e.spec.hypervisor === host &&
    !isDeleting(e)
  );
  const service = await deps.nova.findComputeService(host, signal);
  if (service !== undefined && service.status === "disabled") {
    const why = keepDisabledBecause(
      ctx.cache(HypervisorKind).get(host),
      service.disabledReason,
      others.length > 0,
    );
    if (why === undefined) {
      try {
        await deps.nova.setComputeServiceStatus(
          service.id,
          true,
          undefined,
          signal,
        );
      } catch (err) {
        throw new Error(
          `re-enabling compute service ${service.id} of host ${host} failed: ${
            errText(err)
          }`,
        );
      }
      log.info({ serviceId: service.id }, "compute service re-enabled");
      await ctx.event(
        "Normal",
        "HypervisorReEnabled",
        `compute service ${service.id} of host ${host} re-enabled`,
      );
    } else {
      log.info(
        { serviceId: service.id, why },
        "compute service left disabled",
      );
      await ctx.event(
        "Normal",
        "HypervisorLeftDisabled",
        `compute service ${service.id} of host ${host} left disabled: ${why}`,
      );
    }
  }
  deps.ledger.delete(key);
  deps.memory.forget(key);
  deps.metrics.inFlight.remove({ hypervisor: host });
  for (const e of others) {
    const name = e.metadata?.name;
    if (name !== undefined) ctx.enqueue(EvictionKind, name);
  }
}
