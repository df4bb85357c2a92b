/**
 * Hypervisor status sync: for each Hypervisor (named after its compute
 * host) it reads Nova's hypervisor and nova-compute service, reads and
 * updates the resource provider's traits in Placement (spec.customTraits),
 * and writes ids, instance count, traits and conditions into the status;
 * then again every resync interval.
 *
 * @module
 */

import { errText } from "../../framework/errors.ts";
import {
  REASON_PLACEMENT_ERROR,
  REASON_RESOURCE_PROVIDER_NOT_FOUND,
  REASON_TRAITS_ERROR,
} from "../conditions.ts";
import type { HandlerContext } from "../../framework/handler.ts";
import type { Operator } from "../../framework/operator.ts";
import type { Hypervisor, HypervisorStatus } from "../../models/mod.ts";
import {
  NotFoundError,
  type NovaClient,
  OpenStackError,
  type PlacementClient,
} from "../../openstack/mod.ts";
import { HypervisorKind } from "../kinds.ts";
import { startDiscovery } from "./discovery.ts";
import { addHypervisorPart } from "./dispatch.ts";
import {
  nextSyncDelay,
  sameStatus,
  syncedStatus,
  type SyncObservation,
} from "./sync_status.ts";
import {
  formatManagedTraits,
  MANAGED_TRAITS_ANNOTATION,
  parseManagedTraits,
  planTraits,
} from "./traits.ts";

/** What {@linkcode registerHypervisorSync} needs. */
export interface HypervisorSyncDeps {
  /** Nova. */
  nova: NovaClient;
  /** Placement. */
  placement: PlacementClient;
  /** How often each Hypervisor is synced again, ms (> 0). */
  resyncIntervalMs: number;
  /** Create a Hypervisor for every nova-compute host that has none. */
  discover: boolean;
  /** Labels of the Hypervisors discovery creates (default none). */
  discoverLabels?: Record<string, string>;
}

interface KeyState {
  at: number;
  generation: number | undefined;
  delayMs: number;
  failures: number;
}

/**
 * Registers the Hypervisor status sync (and, with `discover`, discovery).
 * A pass runs when a Hypervisor appears or its spec changes, and then every
 * `resyncIntervalMs` (sooner, with a doubling delay, after a failure).
 * A host Nova does not know is reported (Onboarding=True/NotInNova,
 * TraitsUpdated=False/HypervisorNotFound) and looked at again only at the
 * resync interval; a failing Placement sets TraitsUpdated=False with the
 * error, which holds the drains of that host.
 *
 * @throws {RangeError} when `resyncIntervalMs` is not a positive number.
 *
 * @example
 * ```ts ignore
 * registerHypervisorSync(operator, { nova, placement, resyncIntervalMs: 300_000, discover: false });
 * await operator.start();
 * ```
 */
export function registerHypervisorSync(
  operator: Operator,
  deps: HypervisorSyncDeps,
): void {
  if (!(deps.resyncIntervalMs > 0) || !Number.isFinite(deps.resyncIntervalMs)) {
    throw new RangeError(
      `resyncIntervalMs must be a positive number, got ${deps.resyncIntervalMs}`,
    );
  }
  // When each key was synced last: events that change no spec (an
  // Eviction's progress, our own annotation patch) must not call Nova.
  const state = new Map<string, KeyState>();
  addHypervisorPart(operator, "sync", async (ctx) => {
    const hv = ctx.object;
    if (hv === undefined || hv.metadata?.deletionTimestamp !== undefined) {
      state.delete(ctx.key);
      return;
    }
    const generation = hv.metadata?.generation;
    const last = state.get(ctx.key);
    const now = Date.now();
    if (
      last !== undefined && last.generation === generation &&
      now - last.at < last.delayMs
    ) {
      return { requeueAfterMs: last.at + last.delayMs - now };
    }
    const ok = await syncOnce(ctx, hv, deps);
    const failures = ok ? 0 : (last?.failures ?? 0) + 1;
    // ±10 %: Hypervisors created together must not resync in lockstep
    const delayMs = Math.round(
      nextSyncDelay(failures, deps.resyncIntervalMs) *
        (0.9 + 0.2 * Math.random()),
    );
    state.set(ctx.key, { at: Date.now(), generation, delayMs, failures });
    return { requeueAfterMs: delayMs };
  });
  if (deps.discover) {
    startDiscovery(operator, {
      nova: deps.nova,
      intervalMs: deps.resyncIntervalMs,
      labels: deps.discoverLabels ?? {},
    });
  }
}

/** One pass; false when Placement failed (retried sooner). */
async function syncOnce(
  ctx: HandlerContext<Hypervisor>,
  hv: Hypervisor,
  deps: HypervisorSyncDeps,
): Promise<boolean> {
  const { nova, placement } = deps;
  const host = ctx.name;
  // Nova errors propagate: the framework retries with backoff.
  const hypervisor = await nova.findHypervisorByHostname(
    host,
    { withServers: true },
    ctx.signal,
  );
  const service = await nova.findComputeService(host, ctx.signal);
  const obs: SyncObservation = {
    host,
    hypervisor: hypervisor === undefined ? undefined : {
      id: hypervisor.id,
      serviceId: hypervisor.serviceId,
      numInstances: hypervisor.servers?.length ?? 0,
    },
    service,
    traits: undefined,
  };
  if (hypervisor !== undefined) {
    try {
      obs.traits = {
        ok: true,
        traits: await applyCustomTraits(ctx, hv, hypervisor.id, placement),
      };
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      obs.traits = {
        ok: false,
        reason: err instanceof NotFoundError
          ? REASON_RESOURCE_PROVIDER_NOT_FOUND
          : err instanceof OpenStackError
          ? REASON_PLACEMENT_ERROR
          : REASON_TRAITS_ERROR,
        message: `resource provider ${hypervisor.id}: ${errText(err)}`,
      };
      ctx.logger.warn(
        { rp: hypervisor.id, err: errText(err) },
        "updating the traits failed",
      );
    }
  }
  const current: HypervisorStatus = hv.status ?? {};
  const generation = hv.metadata?.generation;
  const wanted = syncedStatus(current, obs, new Date(), generation);
  if (!sameStatus(current, wanted)) {
    await ctx.updateStatus((latest) =>
      syncedStatus(latest, obs, new Date(), generation)
    );
  }
  return obs.traits === undefined || obs.traits.ok;
}

/**
 * Applies spec.customTraits to the resource provider and returns its
 * traits. The traits it is about to add are claimed in the annotation
 * first, so that a crash between the two writes cannot leave a trait we
 * added unclaimed (we would never remove it); traits it removed are
 * unclaimed afterwards.
 */
async function applyCustomTraits(
  ctx: HandlerContext<Hypervisor>,
  hv: Hypervisor,
  rp: string,
  placement: PlacementClient,
): Promise<string[]> {
  const annotation = hv.metadata?.annotations?.[MANAGED_TRAITS_ANNOTATION];
  const { managed, invalid } = parseManagedTraits(annotation);
  if (invalid.length > 0) {
    ctx.logger.warn(
      { annotation: MANAGED_TRAITS_ANNOTATION, invalid },
      `ignoring entries of the annotation that are not custom traits: ${
        invalid.join(", ")
      }`,
    );
  }
  const desired = hv.spec?.customTraits ?? [];
  const current = await placement.getTraits(rp, ctx.signal);
  const plan = planTraits(current.traits, desired, managed);
  if (plan.add.length === 0 && plan.remove.length === 0) {
    await setAnnotation(ctx, annotation, plan.managed);
    return current.traits;
  }
  const claimed = [...new Set([...managed, ...plan.add])];
  await setAnnotation(ctx, annotation, claimed);
  for (const t of plan.add) await placement.ensureCustomTrait(t, ctx.signal);
  // setTraits re-reads and re-plans on a generation conflict (Nova itself
  // writes COMPUTE_STATUS_DISABLED when a service is disabled).
  const result = await placement.setTraits(
    rp,
    (now) => planTraits(now, desired, claimed).next,
    ctx.signal,
  );
  await setAnnotation(
    ctx,
    formatManagedTraits(claimed),
    planTraits(result.traits, desired, claimed).managed,
  );
  ctx.logger.info(
    { rp, added: plan.add, removed: plan.remove },
    "custom traits applied",
  );
  return result.traits;
}

async function setAnnotation(
  ctx: HandlerContext<Hypervisor>,
  current: string | undefined,
  managed: readonly string[],
): Promise<void> {
  const value = formatManagedTraits(managed);
  if ((current ?? "") === value) return;
  await ctx.client.patch(HypervisorKind, ctx.key, {
    metadata: {
      annotations: { [MANAGED_TRAITS_ANNOTATION]: value === "" ? null : value },
    },
  });
}
