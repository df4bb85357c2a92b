/**
 * Nova's instance actions (`GET /servers/{id}/os-instance-actions/{request_id}`):
 * what Nova recorded about one request on a server, event by event. A
 * migration that failed after its 202 (no valid host, a failed copy) says
 * why only here: from microversion 2.84 each failed event carries the
 * failure's message in `details` (e.g. "No valid host was found. There are
 * not enough hosts available."); before, only its `traceback` (admins) does.
 *
 * @module
 */

import { z } from "zod";

const eventSchema = z.object({
  event: z.string(),
  start_time: z.string().nullable().optional(),
  finish_time: z.string().nullable().optional(),
  result: z.string().nullable().optional(),
  traceback: z.string().nullable().optional(),
  host: z.string().nullable().optional(),
  details: z.string().nullable().optional(),
}).transform((e): InstanceActionEvent => ({
  event: e.event,
  startTime: e.start_time ?? null,
  finishTime: e.finish_time ?? null,
  result: e.result ?? null,
  details: e.details ?? null,
  traceback: e.traceback ?? null,
  host: e.host ?? null,
}));

/** One event of an instance action. */
export interface InstanceActionEvent {
  /** Nova's name of the step, e.g. `conductor_live_migrate_instance`. */
  event: string;
  /** When it started (Nova's time). */
  startTime: string | null;
  /** When it ended; null while it runs. */
  finishTime: string | null;
  /** `Success` or `Error`; null while it runs. */
  result: string | null;
  /** The failure's message (2.84+); null otherwise. */
  details: string | null;
  /** The traceback (admins only); null otherwise. */
  traceback: string | null;
  /** Where it ran (admins, 2.62+). */
  host: string | null;
}

/** `GET /servers/{id}/os-instance-actions/{request_id}` body. */
export const instanceActionShowSchema = z.object({
  instanceAction: z.object({
    action: z.string(),
    instance_uuid: z.string(),
    request_id: z.string(),
    start_time: z.string().nullable().optional(),
    updated_at: z.string().nullable().optional(),
    message: z.string().nullable().optional(),
    events: z.array(eventSchema).optional(),
  }).transform((a): InstanceAction => ({
    action: a.action,
    instanceUuid: a.instance_uuid,
    requestId: a.request_id,
    startTime: a.start_time ?? null,
    updatedAt: a.updated_at ?? null,
    message: a.message ?? null,
    events: a.events ?? [],
  })),
});

/** What Nova recorded about one request on a server. */
export interface InstanceAction {
  /** e.g. `live-migration`, `migrate`, `confirmResize`. */
  action: string;
  /** The server. */
  instanceUuid: string;
  /** The request id of the API call. */
  requestId: string;
  /** When the request came. */
  startTime: string | null;
  /** Last change (2.58+). */
  updatedAt: string | null;
  /** `Error` once a step failed; null otherwise. */
  message: string | null;
  /** The steps (empty when the policy hides them). */
  events: InstanceActionEvent[];
}

/**
 * Why an instance action failed, in Nova's words: the `details` of its
 * last failed event, else the last line of that event's traceback, else
 * undefined (it did not fail, or Nova does not say).
 *
 * @example
 * ```ts
 * import { failureReason } from "./instance_actions.ts";
 * const reason = failureReason({
 *   action: "live-migration", instanceUuid: "vm", requestId: "req-1",
 *   startTime: null, updatedAt: null, message: "Error",
 *   events: [{ event: "conductor_live_migrate_instance", startTime: null,
 *     finishTime: null, result: "Error", traceback: null, host: null,
 *     details: "No valid host was found. There are not enough hosts available." }],
 * });
 * console.log(reason); // No valid host was found. There are not enough hosts available.
 * ```
 */
export function failureReason(action: InstanceAction): string | undefined {
  const failed = action.events.filter((e) => e.result === "Error");
  const last = failed[failed.length - 1];
  if (last === undefined) return undefined;
  if (last.details !== null && last.details.trim() !== "") {
    return last.details.trim();
  }
  const lines = (last.traceback ?? "").trim().split("\n");
  const tail = lines[lines.length - 1]?.trim();
  return tail === undefined || tail === "" ? undefined : tail;
}
