/**
 * Refill without a server list: when a probe (one migration list) shows
 * that migrations of the host settled, the next candidates can be started
 * from the last full pass's server list instead of listing the host again.
 * The VMs on a host change only by our own migrations (their records say
 * where they went) and by rare arrivals and deletions, which the next full
 * pass picks up; a start on a VM deleted or changed meanwhile gets a 404,
 * 409 or 400 from Nova, which the planner already handles.
 *
 * This module decides, purely, whether such a refill is as safe as a full
 * pass, and builds the server view it plans from. Whenever the stale list
 * could make the planner see something other than what a fresh list would
 * show in a way that matters (a failed or cold migration, a trigger past
 * its grace period with no record), it asks for a full pass instead.
 *
 * @module
 */

import type { EvictionStatus } from "../../models/mod.ts";
import { parseNovaTime } from "./nova_states.ts";
import type { ObservedMigration, ObservedServer } from "./observation.ts";

/** Migration statuses after which a record holds nothing (or awaits a confirm). */
export const SETTLED_STATUSES: ReadonlySet<string> = new Set([
  "completed",
  "error",
  "failed",
  "cancelled",
  "aborted",
  "done",
  "finished",
  "confirmed",
  "reverted",
]);

/** Whether a record of `host` is one the prober compares (source is the host). */
export function isRecordOf(m: ObservedMigration, host: string): boolean {
  return m.sourceCompute === null || m.sourceCompute === host;
}

/** Record id to "settled" (true) or "open" (false), for the records of `host`. */
export function recordStates(
  migrations: readonly ObservedMigration[],
  host: string,
): Map<string, boolean> {
  const out = new Map<string, boolean>();
  for (const m of migrations) {
    if (!isRecordOf(m, host)) continue;
    out.set(String(m.id), SETTLED_STATUSES.has(m.status.toLowerCase()));
  }
  return out;
}

function newer(a: ObservedMigration, b: ObservedMigration): boolean {
  if (a.createdAt !== b.createdAt) return a.createdAt > b.createdAt;
  return String(a.id) > String(b.id);
}

/**
 * The destination of every VM whose latest migration record from `host`
 * is a completed live migration to another host: such a VM has left, and
 * a `GET /servers/{id}` would only say so.
 *
 * @example
 * ```ts
 * import { completedLiveMoves } from "./refill.ts";
 * const m = { id: 1, instanceUuid: "a", migrationType: "live-migration",
 *   status: "completed", sourceCompute: "h", destCompute: "d",
 *   createdAt: "2026-01-01T00:00:00" };
 * console.assert(completedLiveMoves([m], "h").get("a") === "d");
 * ```
 */
export function completedLiveMoves(
  migrations: readonly ObservedMigration[],
  host: string,
): Map<string, string> {
  const latest = new Map<string, ObservedMigration>();
  for (const m of migrations) {
    if (m.sourceCompute !== host) continue;
    const prev = latest.get(m.instanceUuid);
    if (prev === undefined || newer(m, prev)) latest.set(m.instanceUuid, m);
  }
  const moved = new Map<string, string>();
  for (const [id, m] of latest) {
    const dest = m.destCompute;
    if (
      m.migrationType === "live-migration" &&
      m.status.toLowerCase() === "completed" &&
      typeof dest === "string" && dest !== "" && dest !== host
    ) moved.set(id, dest);
  }
  return moved;
}

/** What a refill is planned from. */
export interface RefillInput {
  /** The drained host. */
  host: string;
  /** The server view of the last full pass (or of the last refill). */
  servers: readonly ObservedServer[];
  /** Record states then (see {@linkcode recordStates}). */
  records: ReadonlyMap<string, boolean>;
  /** The migration list the probe just got. */
  migrations: readonly ObservedMigration[];
  /** The Eviction's status now. */
  status: EvictionStatus;
  /** Now (clock ms). */
  nowMs: number;
  /** The planner's grace period of a recorded trigger. */
  gracePeriodMs: number;
}

/** The outcome of a probe: nothing to do, a refill from `servers`, or a full pass. */
export type ProbeVerdict =
  | { kind: "idle" }
  | { kind: "refill"; servers: ObservedServer[] }
  | { kind: "full"; why: string };

/**
 * Decides what a probe calls for. Idle when no record of the host appeared
 * or settled; a refill when every record that settled since is a completed
 * live migration away from the host (those VMs are dropped from the view)
 * and every trigger in status.inFlight is either in its grace period or
 * has a record; a full pass otherwise.
 *
 * @example
 * ```ts
 * import { probeVerdict } from "./refill.ts";
 * const v = probeVerdict({ host: "h", servers: [], records: new Map(),
 *   migrations: [], status: {}, nowMs: 0, gracePeriodMs: 60_000 });
 * console.assert(v.kind === "idle");
 * ```
 */
export function probeVerdict(input: RefillInput): ProbeVerdict {
  const { host, migrations } = input;
  const now = recordStates(migrations, host);
  const byId = new Map<string, ObservedMigration>();
  for (const m of migrations) {
    if (isRecordOf(m, host)) byId.set(String(m.id), m);
  }
  let changed = false;
  for (const [id, settled] of now) {
    const before = input.records.get(id);
    if (before === settled) continue;
    changed = true;
    if (!settled) continue; // A new open record only adds to what is in flight.
    const m = byId.get(id);
    if (
      m === undefined || m.migrationType !== "live-migration" ||
      m.status.toLowerCase() !== "completed"
    ) {
      return { kind: "full", why: `record ${id} is ${m?.status ?? "gone"}` };
    }
  }
  if (!changed) return { kind: "idle" };

  const moved = completedLiveMoves(migrations, host);
  // A completed record whose VM did not go elsewhere: only a list can tell.
  for (const m of migrations) {
    if (
      isRecordOf(m, host) && now.get(String(m.id)) === true &&
      input.records.get(String(m.id)) !== true &&
      !moved.has(m.instanceUuid)
    ) return { kind: "full", why: `record ${m.id} moved no VM away` };
  }
  const withRecord = new Set(
    migrations.filter((m) => isRecordOf(m, host)).map((m) => m.instanceUuid),
  );
  for (const entry of input.status.inFlight ?? []) {
    if (withRecord.has(entry.id)) continue;
    const startedMs = parseNovaTime(entry.startedAt);
    if (
      startedMs === undefined ||
      input.nowMs - startedMs > input.gracePeriodMs
    ) {
      // The planner would judge it by the server's state, which is stale.
      return { kind: "full", why: `trigger of ${entry.id} has no record` };
    }
  }
  return {
    kind: "refill",
    servers: input.servers.filter((s) => !moved.has(s.id)),
  };
}
