/**
 * What a relist checks of a host's view: the facts the planner decides
 * by, per VM (a difference is a missed or misread event).
 * @module
 */

import { inFlightKindOfServer, migrationPhase } from "./nova_states.ts";
import type { ObservedMigration, ObservedServer } from "./snapshot.ts";
import { arrivingRecords, latestRecords } from "./nova_records.ts";

/** The parts of an observation the facts are read from. */
export interface FactsSource {
  servers: readonly ObservedServer[];
  migrations: readonly ObservedMigration[];
}

/**
 * The planner's facts per VM: `on <status>`, `on moving`,
 * `left <phase> <destination>` or `arriving`.
 *
 * @example
 * ```ts
 * import { planFacts } from "./view_diff.ts";
 * const facts = planFacts({
 *   servers: [{ id: "a", status: "MIGRATING", host: "h", taskState: "migrating", flavor: { ramMb: 1 } }],
 *   migrations: [],
 * }, "h");
 * console.assert(facts.get("a") === "on moving");
 * ```
 */
export function planFacts(
  seen: FactsSource,
  host: string,
): Map<string, string> {
  const latest = latestRecords(seen.migrations, host);
  const facts = new Map<string, string>();
  for (const s of seen.servers) {
    const moving = inFlightKindOfServer(s.status, s.taskState) !== undefined ||
      latest.get(s.id)?.inProgress !== undefined;
    facts.set(s.id, `on ${moving ? "moving" : s.status.toUpperCase()}`);
  }
  for (const [id, r] of latest) {
    if (facts.has(id)) continue;
    const last = r.inProgress ?? r.latest;
    facts.set(
      id,
      `left ${migrationPhase(last.status)} ${last.destCompute ?? "?"}`,
    );
  }
  for (const id of arrivingRecords(seen.migrations, host).keys()) {
    if (!facts.has(id)) facts.set(id, "arriving");
  }
  return facts;
}

/** A VM on whose facts two observations differ, and the two facts. */
export interface FactDiff {
  id: string;
  view: string | undefined;
  fresh: string | undefined;
}

/**
 * The VMs (sorted) on whose facts two observations of a host differ.
 *
 * @example
 * ```ts
 * import { factDiffs } from "./view_diff.ts";
 * const vm = (id: string) => ({ id, status: "ACTIVE", host: "h", taskState: null, flavor: { ramMb: 1 } });
 * const diffs = factDiffs({ servers: [vm("a")], migrations: [] }, { servers: [vm("a"), vm("b")], migrations: [] }, "h");
 * console.assert(diffs[0]?.id === "b" && diffs[0]?.fresh === "on ACTIVE");
 * ```
 */
export function factDiffs(
  view: FactsSource,
  fresh: FactsSource,
  host: string,
): FactDiff[] {
  const a = planFacts(view, host);
  const b = planFacts(fresh, host);
  const ids = new Set([...a.keys(), ...b.keys()]);
  return [...ids].filter((id) => a.get(id) !== b.get(id)).sort().map((id) => ({
    id,
    view: a.get(id),
    fresh: b.get(id),
  }));
}
