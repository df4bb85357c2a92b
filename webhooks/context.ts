/**
 * Builds the validators' contexts from the objects in the informer caches
 * (pure: the caller reads the caches and passes the objects).
 *
 * @module
 */

import { isDeleting } from "../framework/kind.ts";
import type { Eviction } from "../models/mod.ts";
import type { LimitSettings } from "../limits/resolve.ts";
import type { EvictionContext, ExistingEviction } from "./eviction.ts";
import type { PolicyContext, RunningEviction } from "./eviction_policy.ts";

/** Looks up a Hypervisor's status.traits by name; undefined when there is no such object. */
export type HypervisorTraitsLookup = (
  name: string,
) => readonly string[] | undefined;

/**
 * The policy webhook's context: the Evictions whose drain runs (no
 * status.finishedAt) and that have a status.effectiveLimit, with their
 * hypervisors' traits (empty when the Hypervisor is unknown).
 *
 * @example
 * ```ts
 * import { policyContextFrom } from "./context.ts";
 * const ctx = policyContextFrom(
 *   [{ metadata: { name: "n1" }, spec: { hypervisor: "n1", reason: "r" }, status: { effectiveLimit: 4 } }],
 *   () => ["CUSTOM_A"],
 * );
 * console.assert(ctx.runningEvictions[0]?.effectiveLimit === 4);
 * ```
 */
export function policyContextFrom(
  evictions: readonly Eviction[],
  hypervisorTraits: HypervisorTraitsLookup,
): PolicyContext {
  const running: RunningEviction[] = [];
  for (const e of evictions) {
    const limit = e.status?.effectiveLimit;
    if (e.status?.finishedAt !== undefined || limit === undefined) continue;
    running.push({
      name: e.metadata?.name ?? "",
      hypervisor: e.spec.hypervisor,
      traits: hypervisorTraits(e.spec.hypervisor) ?? [],
      effectiveLimit: limit,
      maxConcurrentMigrations: e.spec.maxConcurrentMigrations,
    });
  }
  return { runningEvictions: running };
}

/**
 * The Eviction webhook's context. An Eviction counts as finished when its
 * status.finishedAt is set and it is not being deleted (a deleted one's
 * finalizer still has to re-enable the compute service).
 *
 * @example
 * ```ts
 * import { evictionContextFrom } from "./context.ts";
 * import { policySettings } from "../limits/resolve.ts";
 * const ctx = evictionContextFrom(
 *   [{ metadata: { name: "n1" }, spec: { hypervisor: "n1", reason: "r" } }],
 *   () => undefined,
 *   policySettings({ maxConcurrentMigrations: 1, abortStuckMigrations: false }),
 * );
 * console.assert(ctx.evictions[0]?.finished === false);
 * ```
 */
export function evictionContextFrom(
  evictions: readonly Eviction[],
  hypervisorTraits: HypervisorTraitsLookup,
  settings: LimitSettings,
  capacityCheck?: "Warn" | "Hold",
): EvictionContext {
  const existing: ExistingEviction[] = evictions.map((e) => ({
    name: e.metadata?.name ?? "",
    hypervisor: e.spec.hypervisor,
    finished: e.status?.finishedAt !== undefined && !isDeleting(e),
    deleting: isDeleting(e),
  }));
  return { evictions: existing, hypervisorTraits, settings, capacityCheck };
}
