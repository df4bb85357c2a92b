/**
 * The Eviction's `spec.actions` (a person's ForceComplete and Abort
 * requests) checked against the admission request (pure): items are only
 * appended, never changed or removed; each new item names the requesting
 * user as `requestedBy`, so who asked cannot be forged; its `requestedAt`
 * is near now; and a finished drain takes none. Kept apart from
 * `validateEviction`, which sees the objects but not the user.
 *
 * @module
 */

import {
  type AdmissionRequest,
  type AdmissionResult,
  allow,
  deny,
  type Validator,
} from "../framework/admission.ts";
import { isRecord } from "../limits/validation.ts";
import { quoteValue } from "../limits/quote.ts";

/** How far `requestedAt` may be from the webhook's clock (skew, a slow hand). */
export const REQUESTED_AT_WINDOW_MS = 5 * 60_000;

const FIELDS = ["server", "action", "requestedBy", "requestedAt"] as const;

function actionsOf(obj: unknown): unknown[] {
  const spec = isRecord(obj) ? obj["spec"] : undefined;
  const actions = isRecord(spec) ? spec["actions"] : undefined;
  return Array.isArray(actions) ? actions : [];
}

function finishedAtOf(obj: unknown): unknown {
  const status = isRecord(obj) ? obj["status"] : undefined;
  return isRecord(status) ? status["finishedAt"] : undefined;
}

/** What differs between an earlier item and its new version, or undefined. */
function changeOf(before: unknown, after: unknown): string | undefined {
  if (!isRecord(before) || !isRecord(after)) {
    return JSON.stringify(before) === JSON.stringify(after)
      ? undefined
      : ` was changed from ${quoteValue(before)} to ${quoteValue(after)}`;
  }
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  for (const k of [...FIELDS, ...keys]) {
    if (JSON.stringify(before[k]) !== JSON.stringify(after[k])) {
      return `.${k} was changed from ${quoteValue(before[k])} to ${
        quoteValue(after[k])
      }`;
    }
  }
  return undefined;
}

/**
 * Checks the `spec.actions` of an Eviction on CREATE (`oldObj` undefined)
 * or UPDATE by `username` at `nowMs`. Refuses, with one line naming the
 * index: an earlier item changed or removed; a new item whose requestedBy
 * is not `username`, whose requestedAt is not a time within
 * {@linkcode REQUESTED_AT_WINDOW_MS} of now, or that is added to an
 * Eviction whose drain finished (naming its finishedAt). The shape of an
 * item (required fields, the action's enum) is the CRD schema's.
 *
 * @example
 * ```ts
 * import { validateActionRequests } from "./eviction_requests.ts";
 * const item = { server: "vm-1", action: "Abort", requestedBy: "mallory", requestedAt: "2026-01-01T00:00:00Z" };
 * const r = validateActionRequests(
 *   { spec: { hypervisor: "n1", reason: "r", actions: [item] } },
 *   { spec: { hypervisor: "n1", reason: "r" } },
 *   "alice",
 *   Date.parse("2026-01-01T00:00:10Z"),
 * );
 * console.assert(!r.allowed && r.message.includes("is not the requesting user"));
 * ```
 */
export function validateActionRequests(
  newObj: unknown,
  oldObj: unknown,
  username: string | undefined,
  nowMs: number,
): AdmissionResult {
  const before = oldObj === undefined ? [] : actionsOf(oldObj);
  const after = actionsOf(newObj);
  for (const [i, item] of before.entries()) {
    if (i >= after.length) {
      return deny(
        `spec.actions[${i}] was removed: requests may only be appended (${after.length} of ${before.length} are left)`,
      );
    }
    const change = changeOf(item, after[i]);
    if (change !== undefined) {
      return deny(
        `spec.actions[${i}]${change}: requests may only be appended, an earlier one is never changed`,
      );
    }
  }
  const finishedAt = oldObj === undefined ? undefined : finishedAtOf(oldObj);
  for (let i = before.length; i < after.length; i++) {
    const item = after[i];
    if (!isRecord(item)) continue; // the CRD schema refuses it
    if (typeof finishedAt === "string") {
      return deny(
        `spec.actions[${i}]: the drain finished at ${finishedAt}: nothing is in flight to force-complete or abort`,
      );
    }
    const by = item["requestedBy"];
    if (username === undefined || by !== username) {
      return deny(
        `spec.actions[${i}]: requestedBy ${
          quoteValue(by)
        } is not the requesting user ${
          quoteValue(username ?? "(none)")
        }: a request names who made it`,
      );
    }
    const at = item["requestedAt"];
    const atMs = typeof at === "string" ? Date.parse(at) : NaN;
    if (
      Number.isNaN(atMs) || Math.abs(atMs - nowMs) > REQUESTED_AT_WINDOW_MS
    ) {
      return deny(
        `spec.actions[${i}]: requestedAt ${quoteValue(at)} is not within ${
          REQUESTED_AT_WINDOW_MS / 60_000
        } minutes of now (${
          new Date(nowMs).toISOString()
        }): expected the time of the request`,
      );
    }
  }
  return allow();
}

/**
 * `validate` followed by {@linkcode validateActionRequests} on CREATE and
 * UPDATE, with the request's user and `now()`: refusals joined with
 * ` | `, warnings of both kept.
 *
 * @example
 * ```ts
 * import { withActionRequests } from "./eviction_requests.ts";
 * import { allow } from "../framework/admission.ts";
 * const v = withActionRequests(() => allow(), () => 0);
 * ```
 */
export function withActionRequests(
  validate: Validator<unknown>,
  now: () => number,
): (request: AdmissionRequest<unknown>) => Promise<AdmissionResult> {
  return async (request) => {
    const base = await validate(request);
    if (request.operation !== "CREATE" && request.operation !== "UPDATE") {
      return base;
    }
    const own = validateActionRequests(
      request.object,
      request.operation === "UPDATE" ? request.oldObject : undefined,
      request.userInfo.username,
      now(),
    );
    if (own.allowed) return base;
    const warnings = base.warnings ?? [];
    return base.allowed
      ? deny(own.message, { warnings })
      : deny(`${base.message} | ${own.message}`, { warnings });
  };
}
