/**
 * A deleted drain's wait for its migrations in flight: one whose record shows no progress
 * for `stalledAfterMs` (our clock) stops counting, so no stuck status holds a finalizer forever.
 * @module
 */

import type { ObservedMigration } from "../../openstack/informer/snapshot.ts";
import { latestRecords } from "../../openstack/informer/nova_records.ts";

/** When each VM's record in progress was first seen in its current state (status or `updated_at`). */
export type ProgressMarks = ReadonlyMap<
  string,
  { sig: string; sinceMs: number }
>;

/** A VM in flight, with its record from the host (in progress, else latest). */
export type Settling = { id: string; record?: ObservedMigration | undefined };

/** The in-flight VMs counted (against the cluster budget too), those stalled, and the marks to keep. */
export interface SettleLook {
  counted: Settling[];
  stalled: Settling[];
  marks: Map<string, { sig: string; sinceMs: number }>;
}

/**
 * Splits the in-flight VMs into counted and stalled; one without a record in progress never stalls.
 *
 * @example
 * ```ts
 * import { settleLook } from "./settle.ts";
 * const m = { id: 1, instanceUuid: "vm", migrationType: "live-migration",
 *   status: "running", sourceCompute: "h", createdAt: "2026-01-01T00:00:00" };
 * const first = settleLook({ host: "h", inFlight: [{ id: "vm" }], migrations: [m],
 *   marks: new Map(), nowMs: 0, stalledAfterMs: 60_000 });
 * console.assert(first.counted.length === 1);
 * const later = settleLook({ host: "h", inFlight: [{ id: "vm" }], migrations: [m],
 *   marks: first.marks, nowMs: 60_000, stalledAfterMs: 60_000 });
 * console.assert(later.stalled.length === 1);
 * ```
 */
export function settleLook(input: {
  host: string;
  inFlight: readonly { id: string }[];
  migrations: readonly ObservedMigration[];
  marks: ProgressMarks;
  nowMs: number;
  stalledAfterMs: number;
}): SettleLook {
  const { nowMs, stalledAfterMs } = input;
  if (!(stalledAfterMs > 0)) {
    throw new RangeError(
      `stalledAfterMs must be a number > 0, got ${stalledAfterMs}`,
    );
  }
  const records = latestRecords(input.migrations, input.host);
  const look: SettleLook = { counted: [], stalled: [], marks: new Map() };
  for (const { id } of input.inFlight) {
    const own = records.get(id);
    const running = own?.inProgress;
    if (running === undefined) {
      look.counted.push({ id, record: own?.latest });
      continue;
    }
    const sig = `${running.id}|${running.status.toLowerCase()}|${
      running.updatedAt ?? ""
    }`;
    const before = input.marks.get(id);
    const sinceMs = before?.sig === sig ? before.sinceMs : nowMs;
    look.marks.set(id, { sig, sinceMs });
    const into = nowMs - sinceMs >= stalledAfterMs
      ? look.stalled
      : look.counted;
    into.push({ id, record: running });
  }
  return look;
}

/**
 * Names up to five, for an Event.
 *
 * @example
 * ```ts
 * import { describeSettling } from "./settle.ts";
 * console.assert(describeSettling([{ id: "a" }]) === "a (not listed yet)");
 * ```
 */
export function describeSettling(items: readonly Settling[]): string {
  const shown = items.slice(0, 5).map(({ id, record: m }) =>
    m === undefined
      ? `${id} (not listed yet)`
      : `migration ${m.id ?? "?"} of ${id} (${m.status})`
  );
  const more = items.length > 5 ? ` and ${items.length - 5} more` : "";
  return `${shown.join(", ")}${more}`;
}
