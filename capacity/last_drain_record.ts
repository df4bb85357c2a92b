/**
 * Where a Hypervisor keeps what its latest ended drain learned: its
 * `status.lastDrain`, or, where the installed Hypervisor CRD is the upstream
 * operator's (no such field, no `x-kubernetes-preserve-unknown-fields`, so
 * the API server prunes it without a word), the annotation
 * {@linkcode LAST_DRAIN_ANNOTATION} holding the same record as JSON.
 * Annotations are never pruned. Readers take the status field first.
 *
 * @module
 */

import {
  type HypervisorStatusLastDrain,
  HypervisorStatusLastDrainSchema,
} from "../models/mod.ts";

/** The annotation that holds the record where the status cannot. */
export const LAST_DRAIN_ANNOTATION = "evictor.kvm.cloud.sap/last-drain";

/** What of a Hypervisor {@linkcode lastDrainOf} reads. */
export interface LastDrainHolder {
  /** Its metadata (the annotation). */
  metadata?:
    | { annotations?: Record<string, string> | undefined }
    | undefined;
  /** Its status (the field). */
  status?: { lastDrain?: HypervisorStatusLastDrain | undefined } | undefined;
}

/**
 * The record a Hypervisor holds: `status.lastDrain`, else the annotation's
 * (parsed at this boundary: a record that fails the CRD's schema counts as
 * none); undefined when it holds neither.
 *
 * @example
 * ```ts
 * import { LAST_DRAIN_ANNOTATION, lastDrainAnnotation, lastDrainOf } from "./last_drain_record.ts";
 * const record = { eviction: "n1", startedAt: "2026-01-01T00:00:00Z", endedAt: "2026-01-01T00:01:00Z", migrated: 3 };
 * const hv = { metadata: { annotations: lastDrainAnnotation(record) } };
 * console.assert(lastDrainOf(hv)?.migrated === 3);
 * console.assert(lastDrainOf({ metadata: { annotations: { [LAST_DRAIN_ANNOTATION]: "{" } } }) === undefined);
 * ```
 */
export function lastDrainOf(
  hv: LastDrainHolder,
): HypervisorStatusLastDrain | undefined {
  const inStatus = hv.status?.lastDrain;
  if (inStatus !== undefined) return inStatus;
  const text = hv.metadata?.annotations?.[LAST_DRAIN_ANNOTATION];
  if (text === undefined) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  return HypervisorStatusLastDrainSchema.safeParse(json).data;
}

/**
 * The annotations that hold `record` (for a merge patch of metadata).
 *
 * @example
 * ```ts
 * import { lastDrainAnnotation } from "./last_drain_record.ts";
 * const a = lastDrainAnnotation({ eviction: "n1", startedAt: "2026-01-01T00:00:00Z", endedAt: "2026-01-01T00:01:00Z", migrated: 0 });
 * console.assert(Object.keys(a)[0] === "evictor.kvm.cloud.sap/last-drain");
 * ```
 */
export function lastDrainAnnotation(
  record: HypervisorStatusLastDrain,
): Record<string, string> {
  return { [LAST_DRAIN_ANNOTATION]: JSON.stringify(record) };
}
