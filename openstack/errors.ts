/**
 * Typed errors of the OpenStack client. Every error carries the service's
 * fault message and the `X-Openstack-Request-Id` of the failed call, so a
 * log line can be matched with the cloud's own logs.
 *
 * @module
 */

import { z } from "zod";

/** Where an error came from and how to correlate it. */
export interface OpenStackErrorDetails {
  /** HTTP status, when a response was received. */
  status?: number;
  /** `X-Openstack-Request-Id` of the failed call, when one was returned. */
  requestId?: string;
  /** HTTP method of the failed call. */
  method?: string;
  /** URL of the failed call, without its query string. */
  url?: string;
  /** For 429 and 503: the server's `Retry-After`, in milliseconds. */
  retryAfterMs?: number;
  /** A machine-readable code, e.g. Placement's `placement.concurrent_update`. */
  code?: string;
  /** The underlying error, if any. */
  cause?: unknown;
}

/**
 * Base class of every error thrown by the OpenStack client.
 *
 * @example
 * ```ts
 * import { OpenStackError } from "./errors.ts";
 * const e = new OpenStackError("boom", { status: 500, requestId: "req-1" });
 * console.log(e.status, e.requestId);
 * ```
 */
export class OpenStackError extends Error {
  /** HTTP status, when a response was received. */
  readonly status: number | undefined;
  /** `X-Openstack-Request-Id` of the failed call. */
  readonly requestId: string | undefined;
  /** HTTP method of the failed call. */
  readonly method: string | undefined;
  /** URL of the failed call, without its query string. */
  readonly url: string | undefined;
  /** For 429 and 503: the server's `Retry-After`, in milliseconds. */
  readonly retryAfterMs: number | undefined;
  /** A machine-readable code, when the service sent one. */
  readonly code: string | undefined;

  /** Creates an error with the service's message and call details. */
  constructor(message: string, details: OpenStackErrorDetails = {}) {
    super(
      message,
      details.cause === undefined ? undefined : { cause: details.cause },
    );
    this.name = new.target.name;
    this.status = details.status;
    this.requestId = details.requestId;
    this.method = details.method;
    this.url = details.url;
    this.retryAfterMs = details.retryAfterMs;
    this.code = details.code;
  }
}

/**
 * 400: the request was malformed or not allowed in this state (Nova also
 * answers 400 for "no valid host" on a cold migration).
 *
 * @example
 * ```ts
 * import { BadRequestError } from "./errors.ts";
 * const err = new BadRequestError("Invalid input", { status: 400 });
 * console.log(err.message);
 * ```
 */
export class BadRequestError extends OpenStackError {}

/**
 * 401: the token was refused (after one re-authentication) or the
 * credentials are wrong.
 *
 * @example
 * ```ts
 * import { UnauthorizedError } from "./errors.ts";
 * const err = new UnauthorizedError("The request you have made requires authentication.");
 * console.log(err.message);
 * ```
 */
export class UnauthorizedError extends OpenStackError {}

/**
 * 403: the user lacks the role or policy for this call.
 *
 * @example
 * ```ts
 * import { ForbiddenError } from "./errors.ts";
 * const err = new ForbiddenError("Policy doesn't allow os_compute_api:os-migrations:index");
 * console.log(err.message);
 * ```
 */
export class ForbiddenError extends OpenStackError {}

/**
 * 404: the resource does not exist (e.g. a deleted server).
 *
 * @example
 * ```ts
 * import { NotFoundError } from "./errors.ts";
 * const err = new NotFoundError("Instance x could not be found.", { status: 404 });
 * console.log(err.message);
 * ```
 */
export class NotFoundError extends OpenStackError {}

/**
 * 409: the resource is in a state that forbids the action (e.g. a server in
 * task_state migrating), or a Placement generation conflict.
 *
 * @example
 * ```ts
 * import { ConflictError } from "./errors.ts";
 * const err = new ConflictError("Cannot 'os-migrateLive' instance x while it is in task_state migrating");
 * console.log(err.message);
 * ```
 */
export class ConflictError extends OpenStackError {}

/**
 * 5xx, 429 or a network failure: the service could not answer. For an
 * action (POST/PUT/DELETE) the outcome is unknown: re-observe, do not resend.
 *
 * @example
 * ```ts
 * import { UnavailableError } from "./errors.ts";
 * const err = new UnavailableError("Service Unavailable", { status: 503, retryAfterMs: 1000 });
 * console.log(err.message);
 * ```
 */
export class UnavailableError extends OpenStackError {}

/**
 * The call did not complete within its timeout. For an action the outcome
 * is unknown: re-observe, do not resend.
 *
 * @example
 * ```ts
 * import { TimeoutError } from "./errors.ts";
 * const err = new TimeoutError("POST /servers/x/action timed out after 30000 ms");
 * console.log(err.message);
 * ```
 */
export class TimeoutError extends OpenStackError {}

/**
 * A response that does not match the expected shape, or an unexpected HTTP
 * status (e.g. 406 for an unsupported microversion).
 *
 * @example
 * ```ts
 * import { InvalidResponseError } from "./errors.ts";
 * const err = new InvalidResponseError("servers[0].id: expected string");
 * console.log(err.message);
 * ```
 */
export class InvalidResponseError extends OpenStackError {}

const faultBody = z.object({
  code: z.number().optional(),
  message: z.string(),
});

/** Nova: `{"itemNotFound": {"code": 404, "message": "..."}}`. */
const novaErrorBody = z.record(z.string(), faultBody);
/** Keystone and keystonemiddleware: `{"error": {"code", "message", "title"}}`. */
const keystoneErrorBody = z.object({
  error: z.object({ message: z.string(), title: z.string().optional() }),
});
/** Placement: `{"errors": [{"status", "title", "detail", "code", "request_id"}]}`. */
const placementErrorBody = z.object({
  errors: z.array(z.object({
    detail: z.string().optional(),
    title: z.string().optional(),
    code: z.string().optional(),
  })).min(1),
});

/** A fault message and optional code taken from an error body. */
export interface FaultInfo {
  /** Human-readable message from the service. */
  message: string;
  /** Machine-readable code (Placement). */
  code?: string;
}

/**
 * Extracts the fault message from a Nova, Keystone or Placement error body.
 * Falls back to the HTTP status text when the body has none of these shapes.
 *
 * @example
 * ```ts
 * import { parseFault } from "./errors.ts";
 * const f = parseFault('{"itemNotFound":{"code":404,"message":"gone"}}', "Not Found");
 * console.log(f.message); // gone
 * ```
 */
export function parseFault(text: string, statusText: string): FaultInfo {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    const trimmed = text.trim().replace(/\s+/g, " ").slice(0, 300);
    return { message: trimmed === "" ? statusText : trimmed };
  }
  const keystone = keystoneErrorBody.safeParse(json);
  if (keystone.success) return { message: keystone.data.error.message };
  const placement = placementErrorBody.safeParse(json);
  if (placement.success) {
    const first = placement.data.errors[0];
    const message = first?.detail ?? first?.title ?? statusText;
    return first?.code === undefined
      ? { message }
      : { message, code: first.code };
  }
  const nova = novaErrorBody.safeParse(json);
  if (nova.success) {
    const first = Object.values(nova.data)[0];
    if (first !== undefined) return { message: first.message };
  }
  return { message: statusText };
}

/**
 * Builds the typed error for an HTTP status.
 *
 * @example
 * ```ts
 * import { errorForStatus, NotFoundError } from "./errors.ts";
 * const e = errorForStatus(404, "gone", { requestId: "req-1" });
 * console.log(e instanceof NotFoundError); // true
 * ```
 */
export function errorForStatus(
  status: number,
  message: string,
  details: OpenStackErrorDetails = {},
): OpenStackError {
  const d = { ...details, status };
  switch (status) {
    case 400:
      return new BadRequestError(message, d);
    case 401:
      return new UnauthorizedError(message, d);
    case 403:
      return new ForbiddenError(message, d);
    case 404:
      return new NotFoundError(message, d);
    case 409:
      return new ConflictError(message, d);
    case 429:
      return new UnavailableError(message, d);
    default:
      if (status >= 500) return new UnavailableError(message, d);
      return new InvalidResponseError(`HTTP ${status}: ${message}`, d);
  }
}
