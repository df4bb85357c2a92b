/**
 * Errors a handler throws to steer retries, in kopf's vocabulary, and the
 * error the Kubernetes client throws for a failed API call.
 *
 * @module
 */

/** Options of {@linkcode TemporaryError}. */
export interface TemporaryErrorOptions {
  /** Retry after this many milliseconds instead of the per-key backoff. */
  delayMs?: number;
  /** The underlying error, if any. */
  cause?: unknown;
}

/**
 * A failure that is expected to go away: the key is retried after
 * `delayMs` (or after the per-key exponential backoff when omitted).
 *
 * @example
 * ```ts
 * import { TemporaryError } from "./errors.ts";
 * const err = new TemporaryError("nova busy", { delayMs: 2000 });
 * console.assert(err.delayMs === 2000);
 * ```
 */
export class TemporaryError extends Error {
  /** Milliseconds to wait before the retry, or undefined for backoff. */
  readonly delayMs: number | undefined;

  /** Creates a temporary error; `delayMs` must be a finite number >= 0. */
  constructor(message: string, options: TemporaryErrorOptions = {}) {
    super(message, options.cause === undefined ? {} : { cause: options.cause });
    this.name = "TemporaryError";
    if (
      options.delayMs !== undefined &&
      (!Number.isFinite(options.delayMs) || options.delayMs < 0)
    ) {
      throw new RangeError(
        `TemporaryError delayMs must be a finite number >= 0, got ${options.delayMs}`,
      );
    }
    this.delayMs = options.delayMs;
  }
}

/**
 * A failure that retrying cannot fix: the key is not retried until the
 * object changes again.
 *
 * @example
 * ```ts
 * import { PermanentError } from "./errors.ts";
 * const err = new PermanentError("spec.hypervisor names no known host");
 * console.assert(err.name === "PermanentError");
 * ```
 */
export class PermanentError extends Error {
  /** Creates a permanent error. */
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? {} : { cause: options.cause });
    this.name = "PermanentError";
  }
}

/**
 * A Kubernetes API call that answered with a non-success HTTP status.
 *
 * @example
 * ```ts
 * import { ApiError } from "./errors.ts";
 * const err = new ApiError("GET", "/api/v1/namespaces/x", 404, "NotFound", "not found");
 * console.assert(err.status === 404);
 * ```
 */
export class ApiError extends Error {
  /** The HTTP method of the failed call. */
  readonly method: string;
  /** The request path of the failed call. */
  readonly path: string;
  /** The HTTP status code (404, 409, 410, ...). */
  readonly status: number;
  /** The Kubernetes `Status.reason` (NotFound, Conflict, Expired, ...). */
  readonly reason: string;

  /** Creates an API error. */
  constructor(
    method: string,
    path: string,
    status: number,
    reason: string,
    message: string,
  ) {
    super(`${method} ${path}: ${status} ${reason}: ${message}`);
    this.name = "ApiError";
    this.method = method;
    this.path = path;
    this.status = status;
    this.reason = reason;
  }
}

/**
 * Tells whether `err` is an {@linkcode ApiError} with the given HTTP status.
 *
 * @example
 * ```ts
 * import { ApiError, isApiStatus } from "./errors.ts";
 * console.assert(isApiStatus(new ApiError("GET", "/x", 409, "Conflict", ""), 409));
 * ```
 */
export function isApiStatus(err: unknown, status: number): boolean {
  return err instanceof ApiError && err.status === status;
}

/**
 * The operator could not start: `what` failed (a kubeconfig, the API
 * server, a certificate, a listening address) at `where` (a file, a URL, an
 * address), for `reason`. The message says all three in one line, so that
 * a start-up failure is one log line rather than a stack trace.
 *
 * @example
 * ```ts
 * import { StartupError } from "./errors.ts";
 * const err = new StartupError("kubeconfig", "/etc/evictor/kubeconfig", "file not found");
 * console.assert(err.message === "kubeconfig /etc/evictor/kubeconfig: file not found");
 * ```
 */
export class StartupError extends Error {
  /** What failed, e.g. "kubeconfig", "API server", "webhook certificate". */
  readonly what: string;
  /** Where: a file, a URL or an address. */
  readonly where: string;
  /** Why, in one line. */
  readonly reason: string;

  /** Creates a start-up error. */
  constructor(
    what: string,
    where: string,
    reason: string,
    options: { cause?: unknown } = {},
  ) {
    super(
      `${what} ${where}: ${reason}`,
      options.cause === undefined ? {} : { cause: options.cause },
    );
    this.name = "StartupError";
    this.what = what;
    this.where = where;
    this.reason = reason;
  }
}

/** What {@linkcode failureHints} found on a failure. */
export interface FailureHints {
  /** Retry no sooner than this, in milliseconds. */
  retryAfterMs?: number;
  /** Record a Warning Event with this reason and message. */
  event?: { reason: string; message: string };
}

/**
 * Reads what a library's error asks of the framework, without the framework
 * importing that library: on the error or any of its causes, a numeric
 * `retryAfterMs` (the key is retried no sooner) and a string `eventReason`
 * (a Warning Event with that reason and the error's message goes on the
 * object, even when a {@linkcode TemporaryError} wraps it). The first of each
 * along the cause chain wins.
 *
 * @example
 * ```ts
 * import { failureHints, TemporaryError } from "./errors.ts";
 * const refused = Object.assign(new Error("credentials refused"), {
 *   eventReason: "CredentialsRefused",
 *   retryAfterMs: 5000,
 * });
 * const hints = failureHints(new TemporaryError("observing failed", { cause: refused }));
 * console.assert(hints.retryAfterMs === 5000);
 * console.assert(hints.event?.reason === "CredentialsRefused");
 * ```
 */
export function failureHints(err: unknown): FailureHints {
  const hints: FailureHints = {};
  const seen = new Set<unknown>();
  for (let e = err; e instanceof Error && !seen.has(e); e = e.cause) {
    seen.add(e);
    const { retryAfterMs, eventReason } = e as {
      retryAfterMs?: unknown;
      eventReason?: unknown;
    };
    if (
      hints.retryAfterMs === undefined && typeof retryAfterMs === "number" &&
      Number.isFinite(retryAfterMs) && retryAfterMs >= 0
    ) {
      hints.retryAfterMs = retryAfterMs;
    }
    if (
      hints.event === undefined && typeof eventReason === "string" &&
      /^[A-Z][A-Za-z0-9]*$/.test(eventReason)
    ) {
      hints.event = { reason: eventReason, message: e.message };
    }
  }
  return hints;
}

/**
 * The first line of an error's message, with its causes ("fetch failed:
 * connection refused"): for logs and command lines that want one line.
 *
 * @example
 * ```ts
 * import { oneLine } from "./errors.ts";
 * const e = new Error("fetch failed", { cause: new Error("connection refused\nat ...") });
 * console.assert(oneLine(e) === "fetch failed: connection refused");
 * ```
 */
export function oneLine(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err; e !== undefined && parts.length < 4;) {
    const text = e instanceof Error ? e.message : String(e);
    const first = text.split("\n")[0]?.trim() ?? text;
    if (first !== "" && !parts.some((p) => p.includes(first))) {
      parts.push(first);
    }
    e = e instanceof Error ? e.cause : undefined;
  }
  return parts.join(": ");
}

/**
 * The message of a thrown value, for logs and Events, with the request id
 * of the call that failed when the error carries one (an OpenStack error:
 * so an operator can find the call in the service's logs).
 *
 * @example
 * ```ts
 * import { errText } from "./errors.ts";
 * console.assert(errText(new Error("boom")) === "boom" && errText(3) === "3");
 * const e = Object.assign(new Error("no"), { requestId: "req-1" });
 * console.assert(errText(e) === "no (request req-1)");
 * ```
 */
export function errText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const requestId = (err as { requestId?: unknown }).requestId;
  return typeof requestId === "string"
    ? `${err.message} (request ${requestId})`
    : err.message;
}
