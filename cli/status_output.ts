/**
 * `kubectl evictor status` output: a table (wide with more columns), the
 * names, or a stable machine-readable shape for `-o json|yaml`.
 *
 * @module
 */
import { EvictionResource } from "../models/mod.ts";
import type { Eviction } from "../models/mod.ts";
import { alignColumns } from "./columns.ts";
import { countsOf, messageOf, stateOf } from "./eviction_state.ts";

/** One Eviction in `status -o json|yaml`: a stable, documented shape. */
export interface EvictionStatusData {
  /** The Eviction's name. */
  name: string;
  /** The host drained. */
  hypervisor: string;
  /** Why. */
  reason: string;
  /** The Evicting condition's reason, or Pending before the first pass. */
  state: string;
  /** The Evicting condition's message, or null before the first pass. */
  message: string | null;
  /** VMs migrated off the host. */
  migrated: number;
  /** Migrations running now. */
  inFlight: number;
  /** VMs still to move. */
  outstanding: number;
  /** Failed VMs with their reason and attempts. */
  failed: { id: string; reason: string; attempts: number }[];
  /** VMs left alone, with the reason (they need a person). */
  skipped: { id: string; reason: string }[];
  /** The limit in force, or null before the first pass. */
  limit: number | null;
  /** Where it comes from: policy, flags or eviction; null before the first pass. */
  limitSource: string | null;
  /** When the drain started, or null. */
  startedAt: string | null;
  /** When it finished, or null while it runs. */
  finishedAt: string | null;
}

function byName(evictions: readonly Eviction[]): Eviction[] {
  return evictions
    .slice()
    .sort((a, b) =>
      (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? "")
    );
}

/**
 * The machine-readable form of `status`: `{ evictions: [...] }`, sorted by
 * name, with every field present (null when unknown), so that scripts
 * need no schema of the custom resource.
 *
 * @example
 * ```ts
 * import { statusData } from "./status_output.ts";
 * const d = statusData([{ metadata: { name: "n1" }, spec: { hypervisor: "n1", reason: "r" } }]);
 * console.assert(d.evictions[0]?.state === "Pending");
 * ```
 */
export function statusData(
  evictions: readonly Eviction[],
): { evictions: EvictionStatusData[] } {
  return {
    evictions: byName(evictions).map((e) => {
      const c = countsOf(e);
      const s = e.status ?? {};
      const message = messageOf(e);
      return {
        name: e.metadata?.name ?? "",
        hypervisor: e.spec.hypervisor,
        reason: e.spec.reason,
        state: stateOf(e),
        message: message === "" ? null : message,
        migrated: c.migrated,
        inFlight: c.inFlight,
        outstanding: c.outstanding,
        failed: (s.failed ?? []).map((f) => ({
          id: f.id,
          reason: f.reason,
          attempts: f.attempts,
        })),
        skipped: (s.skipped ?? []).map((k) => ({
          id: k.id,
          reason: k.reason,
        })),
        limit: s.effectiveLimit ?? null,
        limitSource: s.limitSource ?? null,
        startedAt: s.startedAt ?? null,
        finishedAt: s.finishedAt ?? null,
      };
    }),
  };
}

/**
 * Renders Evictions as an aligned table (like kubectl's); `wide` adds the
 * limit's source, the skipped VMs, the start and the Evicting condition's
 * message (which says, for example, that nothing was drained).
 *
 * @example
 * ```ts
 * import { statusTable } from "./status_output.ts";
 * console.log(statusTable([])); // No evictions found.
 * ```
 */
export function statusTable(
  evictions: readonly Eviction[],
  wide = false,
): string {
  if (evictions.length === 0) return "No evictions found.";
  const header = [
    "NAME",
    "HYPERVISOR",
    "STATE",
    "MIGRATED",
    "IN FLIGHT",
    "OUTSTANDING",
    "FAILED",
    "LIMIT",
    ...(wide ? ["SOURCE", "SKIPPED", "STARTED", "MESSAGE"] : []),
  ];
  const rows = byName(evictions).map((e) => {
    const c = countsOf(e);
    const s = e.status ?? {};
    return [
      e.metadata?.name ?? "",
      e.spec.hypervisor,
      stateOf(e),
      String(c.migrated),
      String(c.inFlight),
      String(c.outstanding),
      String(c.failed),
      s.effectiveLimit === undefined ? "-" : String(s.effectiveLimit),
      ...(wide
        ? [
          s.limitSource ?? "-",
          String(s.skipped?.length ?? 0),
          s.startedAt ?? "-",
          messageOf(e).replace(/\s*\n\s*/g, " ") || "-",
        ]
        : []),
    ];
  });
  return alignColumns([header, ...rows]).join("\n");
}

/**
 * `-o name`: one `eviction.kvm.cloud.sap/NAME` a line, as kubectl prints
 * names (sorted; empty when there are none).
 *
 * @example
 * ```ts
 * import { statusNames } from "./status_output.ts";
 * console.log(statusNames([{ metadata: { name: "n1" }, spec: { hypervisor: "n1", reason: "r" } }]));
 * // eviction.kvm.cloud.sap/n1
 * ```
 */
export function statusNames(evictions: readonly Eviction[]): string {
  return byName(evictions)
    .map((e) => `eviction.${EvictionResource.group}/${e.metadata?.name ?? ""}`)
    .join("\n");
}
