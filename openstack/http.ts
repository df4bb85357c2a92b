/**
 * One HTTP call to an OpenStack service: a timeout on every attempt,
 * retries with capped back-off for idempotent calls only, and typed errors.
 * Knows nothing about tokens (see `keystone.ts`).
 *
 * A non-idempotent call (an action) goes out at most once. That needs more
 * than not retrying it here: Deno's `fetch` itself resends a request whose
 * body it can clone (a string is) once, on a new connection, when the
 * attempt failed on a connection taken from its keep-alive pool with
 * "connection closed before message completed" or a reset (ext/fetch's
 * `FetchRetry`, `is_error_retryable`: it assumes a stale pooled connection
 * never delivered the request, whatever the method). A connection that
 * closes after the request went out and before the answer looks the same,
 * so an `os-migrateLive` reached Nova twice inside one `fetch()`. Every
 * action is therefore sent on a connection of its own: a new
 * `Deno.HttpClient` with no idle pool, closed after the call. Deno retries
 * a failure on a fresh connection only for HTTP/2's GOAWAY(NO_ERROR) and
 * REFUSED_STREAM, by which the server says it did not process the stream;
 * hyper's own retry of requests it never started needs a reused connection.
 * Reads keep the pooled client (a resent read is harmless).
 *
 * @module
 */

import { doublingDelayMs } from "./backoff.ts";
import { type Clock, systemClock } from "./clock.ts";
import {
  errorForStatus,
  InvalidResponseError,
  OpenStackError,
  parseFault,
  TimeoutError,
  UnavailableError,
} from "./errors.ts";
import { type Logger, silentLogger, urlForLog } from "./logger.ts";

/** How idempotent calls are retried. */
export interface RetryPolicy {
  /** Attempts in total, including the first (>= 1). */
  maxAttempts: number;
  /** Back-off before the first retry, doubled per retry. */
  baseDelayMs: number;
  /** Upper bound of one back-off. */
  maxDelayMs: number;
  /** Upper bound of a server-requested `Retry-After` wait. */
  maxRetryAfterMs: number;
}

/** The default retry policy: 4 attempts, 250 ms doubling to at most 5 s. */
export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 4,
  baseDelayMs: 250,
  maxDelayMs: 5_000,
  maxRetryAfterMs: 30_000,
});

/** The default timeout of one attempt. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** Options of {@linkcode HttpTransport}. */
export interface HttpTransportOptions {
  /** The fetch implementation (tests may wrap it). */
  fetch?: typeof fetch;
  /** Clock used for back-off sleeps. */
  clock?: Clock;
  /** Logger; never receives headers or bodies. */
  logger?: Logger;
  /** Timeout of one attempt, in milliseconds. */
  timeoutMs?: number;
  /** Retry policy for idempotent calls. */
  retry?: Partial<RetryPolicy>;
  /** Source of jitter in [0, 1). */
  random?: () => number;
  /** A Deno HTTP client for idempotent calls (custom CA certificates). */
  httpClient?: Deno.HttpClient;
  /**
   * The TLS settings (CA certificates, client certificate) of the
   * one-connection clients that actions are sent with: give the same ones as
   * `httpClient`'s.
   */
  tls?: ActionTls;
  /** `User-Agent` of every request, e.g. `evictor/0.1.0` (default: Deno's). */
  userAgent?: string;
}

/** The TLS part of a Deno HTTP client's options. */
export interface ActionTls {
  /** PEM CA certificates to trust. */
  caCerts?: string[];
  /** A PEM client certificate and its key. */
  clientCert?: { cert: string; key: string };
}

/** A request to send. */
export interface HttpRequest {
  /** HTTP method. */
  method: "GET" | "POST" | "PUT" | "DELETE";
  /** Absolute URL. */
  url: string;
  /** Extra headers (tokens go here and are never logged). */
  headers?: Record<string, string>;
  /** A JSON body. */
  body?: unknown;
  /**
   * True for calls that can be repeated safely (reads). Only these are
   * retried; an action whose outcome is unknown is reported, not resent.
   */
  idempotent: boolean;
  /** Overrides the transport's timeout for this call. */
  timeoutMs?: number;
  /**
   * An idempotent call not answered this long (ms) is sent a second time
   * beside the first; the first answer wins and the other is cancelled
   * (a hedged read: one stalled read does not hold its caller for the
   * whole timeout). Never for actions.
   */
  hedgeAfterMs?: number;
  /** Cancels the call. */
  signal?: AbortSignal;
  /** A short name of the call for the log, e.g. "nova.liveMigrate". */
  action?: string;
}

/** A successful (2xx) response. */
export interface HttpResponse {
  /** HTTP status. */
  status: number;
  /** Response headers. */
  headers: Headers;
  /** The parsed JSON body, or undefined for an empty body. */
  json: unknown;
  /** `X-Openstack-Request-Id` (or `X-Compute-Request-Id`). */
  requestId: string | undefined;
}

/**
 * Reads the request id that OpenStack services put on every response.
 *
 * @example
 * ```ts
 * import { requestIdOf } from "./http.ts";
 * console.log(requestIdOf(new Headers({ "x-openstack-request-id": "req-1" }))); // req-1
 * ```
 */
export function requestIdOf(headers: Headers): string | undefined {
  return headers.get("x-openstack-request-id") ??
    headers.get("x-compute-request-id") ??
    headers.get("openstack-request-id") ?? undefined;
}

/**
 * Parses a `Retry-After` header (seconds or an HTTP date) into milliseconds.
 *
 * @example
 * ```ts
 * import { parseRetryAfter } from "./http.ts";
 * console.log(parseRetryAfter("2", 0)); // 2000
 * ```
 */
export function parseRetryAfter(
  value: string | null,
  nowMs: number,
): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}

function isRetryableStatus(status: number): boolean {
  return status === 429 || status === 500 || status === 502 ||
    status === 503 || status === 504;
}

/**
 * Sends HTTP requests to OpenStack services with timeouts, retries for
 * idempotent calls and typed errors.
 *
 * @example
 * ```ts
 * import { HttpTransport } from "./http.ts";
 * const http = new HttpTransport({ timeoutMs: 5_000 });
 * // const res = await http.send({ method: "GET", url: "http://nova/v2.1/", idempotent: true });
 * ```
 */
export class HttpTransport {
  readonly #fetch: typeof fetch;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #timeoutMs: number;
  readonly #retry: RetryPolicy;
  readonly #random: () => number;
  readonly #httpClient: Deno.HttpClient | undefined;
  readonly #tls: ActionTls;
  readonly #userAgent: string | undefined;

  /** Creates a transport. */
  constructor(options: HttpTransportOptions = {}) {
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!(this.#timeoutMs > 0)) {
      throw new RangeError(
        `timeoutMs must be > 0, got ${options.timeoutMs}`,
      );
    }
    this.#retry = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    if (
      !Number.isInteger(this.#retry.maxAttempts) || this.#retry.maxAttempts < 1
    ) {
      throw new RangeError(
        `retry.maxAttempts must be an integer >= 1, got ${this.#retry.maxAttempts}`,
      );
    }
    this.#random = options.random ?? Math.random;
    this.#httpClient = options.httpClient;
    this.#tls = options.tls ?? {};
    this.#userAgent = options.userAgent;
  }

  /** The logger this transport writes to. */
  get logger(): Logger {
    return this.#logger;
  }

  /** The clock this transport sleeps on. */
  get clock(): Clock {
    return this.#clock;
  }

  /**
   * Sends a request. Resolves with a 2xx response; rejects with a typed
   * {@linkcode OpenStackError} otherwise.
   */
  async send(req: HttpRequest): Promise<HttpResponse> {
    const attempts = req.idempotent ? this.#retry.maxAttempts : 1;
    let lastError: OpenStackError | undefined;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      try {
        return await (req.idempotent && req.hedgeAfterMs !== undefined
          ? this.#hedged(req, attempt, req.hedgeAfterMs)
          : this.#once(req, attempt));
      } catch (e) {
        if (!(e instanceof OpenStackError)) throw e;
        lastError = e;
        const retryable = e instanceof TimeoutError ||
          (e instanceof UnavailableError &&
            (e.status === undefined || isRetryableStatus(e.status)));
        if (!retryable || attempt === attempts) throw e;
        const delay = this.#delayFor(attempt, e.retryAfterMs);
        this.#logger.warn({
          action: req.action,
          method: req.method,
          url: urlForLog(req.url),
          status: e.status,
          requestId: e.requestId,
          attempt,
          delayMs: delay,
          error: e.message,
        }, "retrying idempotent OpenStack call");
        await this.#clock.sleep(delay, req.signal);
      }
    }
    // Unreachable: the loop either returns or throws.
    throw lastError ?? new UnavailableError("no attempt made");
  }

  #delayFor(attempt: number, retryAfterMs: number | undefined): number {
    if (retryAfterMs !== undefined) {
      return Math.min(retryAfterMs, this.#retry.maxRetryAfterMs);
    }
    const exp = doublingDelayMs(
      attempt,
      this.#retry.baseDelayMs,
      this.#retry.maxDelayMs,
    );
    return Math.round(exp / 2 + (exp / 2) * this.#random());
  }

  /**
   * `req` sent once, and once more beside it when no answer came within
   * `hedgeAfterMs`: the first answer wins and the other is cancelled; an
   * error ends the call only when no other send is under way.
   */
  #hedged(
    req: HttpRequest,
    attempt: number,
    hedgeAfterMs: number,
  ): Promise<HttpResponse> {
    const race = new AbortController();
    const racing = {
      ...req,
      signal: req.signal === undefined
        ? race.signal
        : AbortSignal.any([race.signal, req.signal]),
    };
    return new Promise<HttpResponse>((resolve, reject) => {
      let running = 0;
      const end = () => {
        clearTimeout(hedge);
        race.abort();
      };
      const send = () => {
        running++;
        this.#once(racing, attempt).then((res) => {
          end();
          resolve(res);
        }, (e) => {
          if (--running > 0) return;
          end();
          reject(e);
        });
      };
      const hedge = setTimeout(() => {
        this.#logger.debug({
          action: req.action,
          method: req.method,
          url: urlForLog(req.url),
          hedgeAfterMs,
        }, "no answer yet: sending the idempotent call again beside it");
        send();
      }, hedgeAfterMs);
      send();
    });
  }

  async #once(req: HttpRequest, attempt: number): Promise<HttpResponse> {
    const timeoutMs = req.timeoutMs ?? this.#timeoutMs;
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new DOMException("timed out", "TimeoutError"));
    }, timeoutMs);
    const signal = req.signal === undefined
      ? controller.signal
      : AbortSignal.any([controller.signal, req.signal]);
    const headers: Record<string, string> = {
      "Accept": "application/json",
      ...(this.#userAgent === undefined
        ? {}
        : { "User-Agent": this.#userAgent }),
      ...req.headers,
    };
    const init: RequestInit & { client?: Deno.HttpClient } = {
      method: req.method,
      headers,
      signal,
    };
    if (req.body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(req.body);
    }
    // An action gets a client (and so a connection) of its own: see the
    // module doc for why a pooled connection could send it twice.
    const ownClient = req.idempotent ? undefined : Deno.createHttpClient({
      ...(this.#tls.caCerts === undefined
        ? {}
        : { caCerts: this.#tls.caCerts }),
      ...this.#tls.clientCert,
      poolMaxIdlePerHost: 0,
    });
    const client = ownClient ?? this.#httpClient;
    if (client !== undefined) init.client = client;
    const started = this.#clock.now();
    const where = { method: req.method, url: urlForLog(req.url) };
    try {
      let res: Response;
      let text: string;
      try {
        res = await this.#fetch(req.url, init);
        text = await res.text();
      } catch (e) {
        if (timedOut) {
          throw new TimeoutError(
            `${req.method} ${where.url} timed out after ${timeoutMs} ms`,
            { ...where, cause: e },
          );
        }
        if (req.signal?.aborted) throw req.signal.reason;
        const message = e instanceof Error ? e.message : String(e);
        throw new UnavailableError(
          `${req.method} ${where.url} failed: ${message}`,
          { ...where, cause: e },
        );
      }
      const requestId = requestIdOf(res.headers);
      this.#logger.debug({
        action: req.action,
        ...where,
        status: res.status,
        requestId,
        attempt,
        durationMs: this.#clock.now() - started,
      }, "OpenStack call");
      if (res.status >= 200 && res.status < 300) {
        let json: unknown = undefined;
        if (text.trim() !== "") {
          try {
            json = JSON.parse(text);
          } catch (e) {
            throw new InvalidResponseError(
              `${req.method} ${where.url}: response is not JSON`,
              {
                ...where,
                ...(requestId === undefined ? {} : { requestId }),
                cause: e,
              },
            );
          }
        }
        return { status: res.status, headers: res.headers, json, requestId };
      }
      const fault = parseFault(text, res.statusText || `HTTP ${res.status}`);
      const retryAfterMs = parseRetryAfter(
        res.headers.get("retry-after"),
        this.#clock.now(),
      );
      throw errorForStatus(res.status, fault.message, {
        ...where,
        ...(requestId === undefined ? {} : { requestId }),
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
        ...(fault.code === undefined ? {} : { code: fault.code }),
      });
    } finally {
      clearTimeout(timer);
      ownClient?.close();
    }
  }
}
