/**
 * One reconcile handler for Hypervisor objects, shared by the controllers
 * of this folder: the framework allows one reconcile handler per kind and
 * operator, and the status sync and the maintenance controller can each be
 * switched on alone. Each registers a part; the handler runs every part in
 * order, runs the others even when one throws (a Placement outage must not
 * hold a drain), then rethrows the first error, and requeues at the
 * earliest time a part asked for.
 *
 * @module
 */

import { related } from "../../framework/handler.ts";
import type {
  HandlerContext,
  ReconcileResult,
} from "../../framework/handler.ts";
import type { Operator } from "../../framework/operator.ts";
import type { Hypervisor } from "../../models/mod.ts";
import { EvictionKind, HypervisorKind } from "../kinds.ts";

/** A part of the Hypervisor reconcile handler. */
export type HypervisorPart = (
  ctx: HandlerContext<Hypervisor>,
) => Promise<ReconcileResult | void>;

const registries = new WeakMap<Operator, Map<string, HypervisorPart>>();

/**
 * Adds a named part to the operator's Hypervisor reconcile handler,
 * registering that handler on first use (with a watch that maps a changed
 * Eviction to the Hypervisor it drains).
 *
 * @throws {Error} when a part of that name is already registered.
 *
 * @example
 * ```ts ignore
 * addHypervisorPart(operator, "sync", async ({ object }) => ({ requeueAfterMs: 60_000 }));
 * ```
 */
export function addHypervisorPart(
  operator: Operator,
  name: string,
  part: HypervisorPart,
): void {
  let parts = registries.get(operator);
  if (parts === undefined) {
    const registered = new Map<string, HypervisorPart>();
    parts = registered;
    registries.set(operator, registered);
    operator.reconcile(
      HypervisorKind,
      (ctx) => runParts(registered, ctx),
      {
        name: "hypervisors",
        // our own status writes must not wake us up again
        ignoreStatusUpdates: true,
        watches: [related(EvictionKind, (ev) => [ev.spec.hypervisor])],
      },
    );
  }
  if (parts.has(name)) {
    throw new Error(`the Hypervisor part "${name}" is already registered`);
  }
  parts.set(name, part);
}

/**
 * Runs every part for one key (exported for tests): all of them even when
 * one throws, then the first error is rethrown; the earliest requeue wins.
 *
 * @example
 * ```ts ignore
 * await runParts(new Map([["a", async () => ({ requeueAfterMs: 5 })]]), ctx);
 * ```
 */
export async function runParts(
  parts: ReadonlyMap<string, HypervisorPart>,
  ctx: HandlerContext<Hypervisor>,
): Promise<ReconcileResult | void> {
  let requeue: number | undefined;
  const errors: unknown[] = [];
  for (const [name, part] of parts) {
    try {
      const after = (await part(ctx))?.requeueAfterMs;
      if (after !== undefined && (requeue === undefined || after < requeue)) {
        requeue = after;
      }
    } catch (err) {
      if (parts.size > 1) {
        ctx.logger.warn(
          { part: name, err: err instanceof Error ? err.message : String(err) },
          "Hypervisor part failed",
        );
      }
      errors.push(err);
    }
  }
  if (errors.length > 0) throw errors[0];
  return requeue === undefined ? undefined : { requeueAfterMs: requeue };
}
