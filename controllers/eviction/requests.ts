/**
 * A person's requests for VMs in flight (`spec.actions`) against their outcomes (`status.actions`).
 * @module
 */

/** What a person may ask of a VM in flight. */
export type RequestedAction = "ForceComplete" | "Abort";

/** One request of `spec.actions` (the webhook vouches for `requestedBy`). */
export interface ConvergenceRequest {
  /** The VM, by Nova server id or name. */
  server: string;
  action: RequestedAction;
  requestedBy: string;
  /** ISO date-time. */
  requestedAt: string;
}

/** An outcome of `status.actions`, as far as matching needs it. */
export interface RequestAnswer {
  server: string;
  action: string;
  requestedBy: string;
  /** Matched too when the outcome carries it. */
  requestedAt?: string | undefined;
}

const sameTime = (a: string, b: string) =>
  a === b || (Date.parse(a) === Date.parse(b) && !Number.isNaN(Date.parse(a)));

/** Whether `answer` can be the outcome of `request`. */
export function answers(
  answer: RequestAnswer,
  request: ConvergenceRequest,
): boolean {
  return answer.server === request.server &&
    answer.action === request.action &&
    answer.requestedBy === request.requestedBy &&
    (answer.requestedAt === undefined ||
      sameTime(answer.requestedAt, request.requestedAt));
}

/**
 * The requests without an outcome, in order. An outcome answers the request
 * at its own index when that matches, else the earliest unanswered matching
 * one (a trimmed or reordered status list still matches).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pendingRequests } from "./requests.ts";
 * const a = { server: "vm-1", action: "Abort" as const, requestedBy: "alice", requestedAt: "2026-01-01T00:00:00Z" };
 * const b = { ...a, server: "vm-2" };
 * const sent = { ...a, outcome: "Sent" };
 * assert.deepEqual(pendingRequests([a, b], [sent]), [b]);
 * ```
 */
export function pendingRequests(
  requested: readonly ConvergenceRequest[] | undefined,
  outcomes: readonly RequestAnswer[] | undefined,
): ConvergenceRequest[] {
  const asked = requested ?? [];
  const done = outcomes ?? [];
  const answered = new Set<number>();
  const used = new Set<number>();
  asked.forEach((r, i) => {
    const o = done[i];
    if (o !== undefined && answers(o, r)) {
      answered.add(i);
      used.add(i);
    }
  });
  asked.forEach((r, i) => {
    if (answered.has(i)) return;
    const j = done.findIndex((o, k) => !used.has(k) && answers(o, r));
    if (j < 0) return;
    answered.add(i);
    used.add(j);
  });
  return asked.filter((_, i) => !answered.has(i));
}
