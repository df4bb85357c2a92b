/**
 * `kubectl evictor status` output: the table of `kubectl get evictions`
 * (wide with more columns), the names, or the summary shape of
 * `-o summary-json|summary-yaml`.
 *
 * @module
 */
import { REASON_PENDING } from "../controllers/conditions.ts";
import { EvictionPrinterColumns, EvictionResource } from "../models/mod.ts";
import type { Eviction } from "../models/mod.ts";
import { ageSince } from "./age.ts";
import { alignColumns } from "./columns.ts";
import { countsOf, messageOf, stateOf } from "./eviction_state.ts";
import { findValues, parseJsonPath, printValue } from "./jsonpath.ts";

/** One Eviction in `status -o summary-json|summary-yaml`: a stable, documented shape. */
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

/** What `status` shows where a column's path finds nothing. */
const WHEN_MISSING: Readonly<Record<string, string>> = {
  // before the controller's first pass; `kubectl get` leaves it empty
  State: REASON_PENDING,
};

/**
 * A cell as kubectl prints a printer column's value: strings up to the
 * first line break (then `...`), integers as digits, dates as ages.
 */
function cell(type: string, value: unknown, nowMs: number): string {
  if (value === undefined || value === null) return "";
  if (type === "date") {
    return typeof value === "string" ? ageSince(value, nowMs) : "";
  }
  const text = printValue(value);
  const cut = text.search(/[\n\r\f]/);
  return cut < 0 ? text : `${text.slice(0, cut)}...`;
}

/**
 * The header and the rows of the Evictions as `kubectl get evictions`
 * prints them: NAME, then the CRD's printer columns (models'
 * {@linkcode EvictionPrinterColumns}, generated from the CRD), the wide
 * ones (priority 1) only when `wide`; dates as ages as of `nowMs`.
 *
 * @example
 * ```ts
 * import { statusRows } from "./status_output.ts";
 * const [header] = statusRows([], false, 0);
 * console.assert(header?.[0] === "NAME" && header.includes("AGE"));
 * ```
 */
export function statusRows(
  evictions: readonly Eviction[],
  wide: boolean,
  nowMs: number,
): string[][] {
  const columns = EvictionPrinterColumns
    .filter((c) => wide || c.priority === 0)
    .map((c) => ({ ...c, path: parseJsonPath(`{${c.jsonPath}}`) }));
  return [
    ["NAME", ...columns.map((c) => c.name.toUpperCase())],
    ...byName(evictions).map((e) => [
      e.metadata?.name ?? "",
      ...columns.map((c) =>
        cell(c.type, findValues(c.path, e)[0], nowMs) ||
        (WHEN_MISSING[c.name] ?? "")
      ),
    ]),
  ];
}

/**
 * Renders Evictions as an aligned table with `kubectl get evictions`'
 * columns (see {@linkcode statusRows}); `wide` adds the limit's source,
 * the start, the failed VMs and the Evicting condition's message (which
 * says, for example, that nothing was drained). Empty for none: the
 * caller says "No evictions found." on stderr, as kubectl does.
 *
 * @example
 * ```ts
 * import { statusTable } from "./status_output.ts";
 * console.assert(statusTable([]) === "");
 * ```
 */
export function statusTable(
  evictions: readonly Eviction[],
  wide = false,
  nowMs: number = Date.now(),
): string {
  if (evictions.length === 0) return "";
  return alignColumns(statusRows(evictions, wide, nowMs)).join("\n");
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
