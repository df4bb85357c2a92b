/**
 * Tells an outage from a bug: whether an error means that a service (the
 * API server, or anything a handler calls) could not answer at all —
 * connection refused or reset, a timeout, HTTP 429 or 5xx. Such failures
 * are retried with a small capped delay instead of the growing per-key
 * backoff meant for errors that retrying does not fix soon.
 *
 * The framework knows no client but its own, so other clients' errors are
 * recognised by shape: a numeric `status`, a `name`, or a `cause` chain.
 *
 * @module
 */

/** Deno error classes (and DOMException names) of a failed connection or a timeout. */
const UNAVAILABLE_NAMES: ReadonlySet<string> = new Set([
  "ConnectionRefused",
  "ConnectionReset",
  "ConnectionAborted",
  "NotConnected",
  "BrokenPipe",
  "TimedOut",
  "TimeoutError",
]);

/**
 * What fetch says (in its TypeError's message) when no answer came; by the
 * Fetch standard a rejected fetch is a network error, and Deno says
 * "fetch failed" when its HTTP client could not connect.
 */
const UNAVAILABLE_MESSAGE =
  /fetch failed|connection refused|connection reset|connection closed|broken pipe|timed out|error sending request|tcp connect error|unexpected eof|os error 10[34]|os error 111/i;

/** How deep a `cause` chain is followed. */
const MAX_DEPTH = 8;

/**
 * Whether an HTTP status means "not answering now": 429 or any 5xx
 * (501 Not Implemented included: it will not change, but a proxy in front
 * of a restarting server sends it too, and a short retry costs little).
 *
 * @example
 * ```ts
 * import { isUnavailableStatus } from "./unavailable.ts";
 * console.assert(isUnavailableStatus(503));
 * console.assert(!isUnavailableStatus(409));
 * ```
 */
export function isUnavailableStatus(status: number): boolean {
  return status === 429 || (status >= 500 && status <= 599);
}

/**
 * Whether `err` (or an error in its `cause` chain) says that a service
 * could not be reached or did not answer in time.
 *
 * @example
 * ```ts
 * import { isUnavailable } from "./unavailable.ts";
 * import { ApiError } from "./errors.ts";
 * console.assert(isUnavailable(new ApiError("GET", "/x", 503, "ServiceUnavailable", "")));
 * console.assert(!isUnavailable(new ApiError("GET", "/x", 404, "NotFound", "")));
 * console.assert(isUnavailable(new TypeError("error sending request: Connection refused (os error 111)")));
 * ```
 */
export function isUnavailable(err: unknown): boolean {
  let e: unknown = err;
  for (let depth = 0; depth < MAX_DEPTH; depth++) {
    if (typeof e !== "object" || e === null) return false;
    const { status, name, message, cause } = e as {
      status?: unknown;
      name?: unknown;
      message?: unknown;
      cause?: unknown;
    };
    if (typeof status === "number") return isUnavailableStatus(status);
    if (typeof name === "string" && UNAVAILABLE_NAMES.has(name)) return true;
    if (
      e instanceof TypeError && typeof message === "string" &&
      UNAVAILABLE_MESSAGE.test(message)
    ) {
      return true;
    }
    e = cause;
  }
  return false;
}
