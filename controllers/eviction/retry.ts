/**
 * The retry annotation (`kubectl evictor retry`): an annotation, so the request is audited and RBAC-checked.
 * @module
 */

import type { EvictionStatus } from "../../models/mod.ts";
import { UNSUPPORTED_PREFIX } from "./classify.ts";
import { abortedOf, withAborted } from "./plan_converge.ts";

/** The retry annotation's key: server ids, or `*`. */
export const RETRY_ANNOTATION = "evictor.kvm.cloud.sap/retry";

/** What a retry request did. */
export interface RetryOutcome {
  status: EvictionStatus;
  /** Failed (or skipped as not live-migratable) VMs re-armed, sorted. */
  rearmed: string[];
  /** Requested ids that were not failed, sorted. */
  ignored: string[];
}

/**
 * Applies a retry request: the named VMs leave `status.failed`, `skipped` (not live-migratable) and `aborted`.
 *
 * @example
 * ```ts
 * import { applyRetry } from "./retry.ts";
 * const r = applyRetry({ failed: [{ id: "a", reason: "x", attempts: 5, lastAttemptAt: "2026-01-01T00:00:00Z" }] }, "a, b");
 * console.assert(r.rearmed.join() === "a" && r.ignored.join() === "b");
 * console.assert(r.status.failed?.length === 0);
 * ```
 */
export function applyRetry(
  status: EvictionStatus,
  value: string,
): RetryOutcome {
  const failed = status.failed ?? [];
  const skipped = status.skipped ?? [];
  const retriable = new Set([
    ...failed.map((f) => f.id),
    ...skipped.filter((s) => s.reason.startsWith(UNSUPPORTED_PREFIX)).map((
      s,
    ) => s.id),
  ]);
  const requested = value.trim() === "*"
    ? [...retriable]
    : value.split(",").map((v) => v.trim()).filter((v) => v !== "");
  const wanted = new Set(requested.filter((id) => retriable.has(id)));
  const aborted = [...abortedOf(status).values()].filter((a) =>
    !wanted.has(a.id)
  );
  return {
    status: withAborted({
      ...status,
      failed: failed.filter((f) => !wanted.has(f.id)),
      skipped: skipped.filter((s) => !wanted.has(s.id)),
    }, aborted),
    rearmed: [...wanted].sort(),
    ignored: [...new Set(requested.filter((id) => !retriable.has(id)))].sort(),
  };
}

/** One operation of a JSON patch (RFC 6902). */
export interface JsonPatchOp {
  op: "test" | "remove";
  /** JSON pointer. */
  path: string;
  value?: string;
}

/**
 * The JSON patch that removes the retry annotation only while it still
 * holds `value`: a retry issued meanwhile stays for the next pass.
 *
 * @example
 * ```ts
 * import { retryRemovalPatch } from "./retry.ts";
 * const ops = retryRemovalPatch("*");
 * console.assert(ops[0]?.op === "test" && ops[0]?.path === "/metadata/annotations/evictor.kvm.cloud.sap~1retry");
 * ```
 */
export function retryRemovalPatch(value: string): JsonPatchOp[] {
  const path = `/metadata/annotations/${
    RETRY_ANNOTATION.replaceAll("~", "~0").replaceAll("/", "~1")
  }`;
  return [{ op: "test", path, value }, { op: "remove", path }];
}
