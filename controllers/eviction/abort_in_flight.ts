/**
 * `kubectl evictor cancel --abort-in-flight`: the finalizer aborts our live copies in progress
 * (only ours: another's move is theirs to stop; Nova cannot abort a cold one).
 * @module
 */

import type { ObservedMigration } from "../../openstack/informer/snapshot.ts";
import {
  isAbortable,
  isOurKind,
} from "../../openstack/informer/nova_states.ts";
import { type ActionNote, maySendAgain } from "./once.ts";

/** The annotation key. */
export const ABORT_IN_FLIGHT_ANNOTATION =
  "evictor.kvm.cloud.sap/abort-in-flight";

/**
 * Whether the Eviction asks its finalizer to abort ours (exactly "true").
 *
 * @example
 * ```ts
 * import { abortRequested } from "./abort_in_flight.ts";
 * console.assert(abortRequested({ metadata: { annotations: { "evictor.kvm.cloud.sap/abort-in-flight": "true" } } }));
 * console.assert(!abortRequested({ metadata: {} }));
 * ```
 */
export function abortRequested(
  ev: {
    metadata?: { annotations?: Record<string, string> | undefined } | undefined;
  },
): boolean {
  return ev.metadata?.annotations?.[ABORT_IN_FLIGHT_ANNOTATION] === "true";
}

/** One abort to send. */
export interface CancelAbort {
  id: string;
  migrationId: number;
}

/**
 * A cancel's aborts: abortable live records of our starts from `host`, not force-completed nor sent yet.
 *
 * @example
 * ```ts
 * import { cancelAborts } from "./abort_in_flight.ts";
 * const m = {
 *   id: 7, uuid: "u", instanceUuid: "vm", migrationType: "live-migration",
 *   status: "running", sourceCompute: "h", destCompute: "d", sourceNode: "h",
 *   destNode: "d", destHost: null, createdAt: "2026-01-01T00:00:00",
 *   updatedAt: null,
 * };
 * const out = cancelAborts({ host: "h", migrations: [m],
 *   inFlight: [{ id: "vm", kind: "live" }], aborts: new Map(), lookedAtMs: 0 });
 * console.assert(out[0]?.migrationId === 7);
 * ```
 */
export function cancelAborts(input: {
  host: string;
  migrations: readonly ObservedMigration[];
  inFlight: readonly {
    id: string;
    kind: "live" | "cold";
    migrationId?: string | undefined;
    adopted?: boolean | undefined;
    forceCompleteSentAt?: string | undefined;
  }[];
  /** The aborts sent, by migration id (memory.ts). */
  aborts: ReadonlyMap<string, ActionNote>;
  lookedAtMs: number;
}): CancelAbort[] {
  const ours = new Map(
    input.inFlight
      // a force-completed copy may be in post-copy, past the point of abort
      .filter((e) =>
        e.kind === "live" && e.adopted !== true &&
        e.forceCompleteSentAt === undefined
      )
      .map((e) => [e.id, e]),
  );
  const out: CancelAbort[] = [];
  for (const m of input.migrations) {
    const entry = ours.get(m.instanceUuid);
    if (entry === undefined || m.sourceCompute !== input.host) continue;
    if (typeof m.id !== "number") continue;
    if (!isOurKind(m.migrationType, "live") || !isAbortable(m.status)) {
      continue;
    }
    if (
      entry.migrationId !== undefined && entry.migrationId !== String(m.id)
    ) continue;
    if (!maySendAgain(input.aborts.get(String(m.id)), input.lookedAtMs)) {
      continue;
    }
    out.push({ id: m.instanceUuid, migrationId: m.id });
  }
  return out.sort((a, b) =>
    a.id < b.id ? -1 : a.id > b.id ? 1 : a.migrationId - b.migrationId
  );
}
