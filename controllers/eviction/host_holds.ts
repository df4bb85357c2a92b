/**
 * Pure gates of a drain: stale traits, duplicate Evictions, re-enabling.
 * @module
 */

import { CONDITION_TRAITS_UPDATED } from "../conditions.ts";
import { isDeleting } from "../../framework/kind.ts";
import type { Eviction, Hypervisor } from "../../models/mod.ts";
import { disabledByUs } from "../compute_service.ts";

const MAINTENANCE_KEEPS_DISABLED: ReadonlySet<string> = new Set([
  "manual",
  "auto",
  "termination",
]);

/**
 * Why starts are held for stale traits; without a Hypervisor they wait too, as upstream does,
 * rather than drain an exclusive host at the default limit.
 *
 * @example
 * ```ts
 * import { traitsHold } from "./host_holds.ts";
 * console.assert(traitsHold("node042", undefined) !== undefined);
 * const hv = { status: { conditions: [{ type: "TraitsUpdated", status: "True" as const,
 *   reason: "Updated", message: "", lastTransitionTime: "2026-01-01T00:00:00Z" }] } };
 * console.assert(traitsHold("node042", hv) === undefined);
 * ```
 */
export function traitsHold(
  host: string,
  hypervisor: Hypervisor | undefined,
): string | undefined {
  if (hypervisor === undefined) {
    return `there is no Hypervisor ${host}: its traits, and so the limit, are unknown`;
  }
  const c = hypervisor.status?.conditions?.find((x) =>
    x.type === CONDITION_TRAITS_UPDATED
  );
  if (c?.status === "True") return undefined;
  const state = c === undefined
    ? "missing"
    : `${c.status} (${c.reason}${c.message === "" ? "" : `: ${c.message}`})`;
  return `Hypervisor ${host} condition ${CONDITION_TRAITS_UPDATED} is ${state}: its traits may be stale`;
}

function olderThan(a: Eviction, b: Eviction): boolean {
  const ta = Date.parse(a.metadata?.creationTimestamp ?? "");
  const tb = Date.parse(b.metadata?.creationTimestamp ?? "");
  if (!Number.isNaN(ta) && !Number.isNaN(tb) && ta !== tb) return ta < tb;
  return (a.metadata?.name ?? "") < (b.metadata?.name ?? "");
}

/**
 * The older unfinished Eviction of the same hypervisor (two can slip past the webhook while it is down).
 *
 * @example
 * ```ts
 * import { drainingAhead } from "./host_holds.ts";
 * const e = (name: string, t: string) => ({
 *   metadata: { name, creationTimestamp: t }, spec: { hypervisor: "h", reason: "r" },
 * });
 * const a = e("a", "2026-01-01T00:00:00Z");
 * const b = e("b", "2026-01-01T00:00:01Z");
 * console.assert(drainingAhead(b, [a, b])?.metadata?.name === "a");
 * console.assert(drainingAhead(a, [a, b]) === undefined);
 * ```
 */
export function drainingAhead(
  eviction: Eviction,
  all: readonly Eviction[],
): Eviction | undefined {
  const name = eviction.metadata?.name;
  let ahead: Eviction | undefined;
  for (const other of all) {
    if (other.metadata?.name === name) continue;
    if (other.spec.hypervisor !== eviction.spec.hypervisor) continue;
    if (isDeleting(other) || other.status?.finishedAt !== undefined) continue;
    if (!olderThan(other, eviction)) continue;
    if (ahead === undefined || olderThan(other, ahead)) ahead = other;
  }
  return ahead;
}

/**
 * Why the finalizer must leave the compute service disabled.
 *
 * @example
 * ```ts
 * import { keepDisabledBecause } from "./host_holds.ts";
 * console.assert(keepDisabledBecause(undefined, "evictor: kernel", false) === undefined);
 * console.assert(keepDisabledBecause(undefined, "broken disk", false) !== undefined);
 * ```
 */
export function keepDisabledBecause(
  hypervisor: Hypervisor | undefined,
  disabledReason: string | null,
  otherEvictionStands: boolean,
): string | undefined {
  const maintenance = hypervisor?.spec?.maintenance ?? "";
  if (MAINTENANCE_KEEPS_DISABLED.has(maintenance)) {
    return `Hypervisor is in maintenance ${JSON.stringify(maintenance)}`;
  }
  if (otherEvictionStands) {
    return "another Eviction of the same hypervisor still stands";
  }
  if (!disabledByUs(disabledReason)) {
    return `the service was disabled by someone else (${
      JSON.stringify(disabledReason ?? "")
    })`;
  }
  return undefined;
}
