/**
 * A person's requests for VMs in flight (Eviction `spec.actions`, appended
 * by `kubectl evictor force-complete|abort`) against what became of them
 * (`status.actions`): the planner acts on the requests without an outcome.
 * Pure.
 *
 * @module
 */

/** What a person may ask of a VM in flight. */
export type RequestedAction = "ForceComplete" | "Abort";

/** One request of `spec.actions` (the webhook vouches for `requestedBy`). */
export interface ConvergenceRequest {
  /** The VM, by Nova server id or name. */
  server: string;
  action: RequestedAction;
  /** The user who asked. */
  requestedBy: string;
  /** When (ISO date-time). */
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
 * The requests that have no outcome yet, in the order they were made.
 * Each outcome answers one request: the one at its own index when that
 * matches (spec.actions is append-only and outcomes are recorded in
 * order), else the earliest unanswered one with the same server, action,
 * requestedBy (and requestedAt when the outcome carries it), so a status
 * list that was trimmed or written out of order still matches.
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
