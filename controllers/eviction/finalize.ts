/**
 * The finalizer of an Eviction: when it is deleted, re-enable the compute
 * service that the drain disabled, unless the Hypervisor is in maintenance,
 * someone else disabled the service, or another Eviction of the same
 * hypervisor still stands. First, the migrations it started must settle:
 * until Nova shows none in flight from the host, the Eviction keeps its
 * finalizer and its `status.inFlightCount`, so every process still counts
 * them against the cluster budget (budget.ts).
 *
 * @module
 */

import type { HandlerContext } from "../../framework/handler.ts";
import type { Eviction } from "../../models/mod.ts";
import { isDeleting } from "../../framework/kind.ts";
import { TemporaryError } from "../../framework/errors.ts";
import { migrationPhase } from "./nova_states.ts";
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
  await waitForSettled(ctx, deps);
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
  deps.budgetWaiters.wake((k) => ctx.enqueue(EvictionKind, k));
  deps.metrics.inFlight.remove({ hypervisor: host });
  for (const e of others) {
    const name = e.metadata?.name;
    if (name !== undefined) ctx.enqueue(EvictionKind, name);
  }
}

/**
 * Throws a TemporaryError (retry after the poll interval) while Nova shows
 * migrations in flight from the host since the drain started; each time
 * it writes their number to `status.inFlightCount` when it changed, and to
 * the ledger. Returns once none is left (or none was recorded).
 */
async function waitForSettled(
  ctx: HandlerContext<Eviction> & { object: Eviction },
  deps: EvictionPassDeps,
): Promise<void> {
  const { key, signal } = ctx;
  const ev = deps.memory.freshest(key, ctx.object);
  const host = ev.spec.hypervisor;
  const recorded = Math.max(
    ev.status?.inFlightCount ?? 0,
    deps.ledger.get(key),
  );
  if (recorded === 0) return;
  const startedAt = ev.status?.startedAt;
  const migrations = await deps.nova.listMigrations(
    { host, ...(startedAt === undefined ? {} : { changesSince: startedAt }) },
    signal,
  );
  const running =
    migrations.filter((m) =>
      m.sourceCompute === host && migrationPhase(m.status) === "in_progress"
    ).length;
  if (running !== (ev.status?.inFlightCount ?? 0)) {
    const written = await ctx.updateStatus((s) => ({
      ...s,
      inFlightCount: running,
    }));
    const rv = written.metadata?.resourceVersion;
    if (rv !== undefined) {
      deps.memory.remember(key, rv, written.status ?? {});
    }
  }
  deps.ledger.set(key, running);
  if (running === 0) return;
  throw new TemporaryError(
    `Eviction ${key} is deleted with ${running} migration(s) from ${host} in flight; it stays (and counts against the cluster budget) until they settle`,
    { delayMs: deps.pollIntervalMs },
  );
}
