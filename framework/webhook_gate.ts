/**
 * Admission control of the webhook server's requests, without I/O: a cap
 * on requests in flight, on one request body and on the bytes of request
 * bodies buffered at once. A request beyond a cap is refused at once (429,
 * or 413 for a body over the per-request cap) instead of being buffered,
 * so memory stays bounded whatever clients send.
 *
 * @module
 */

/** The caps of a {@linkcode RequestGate}. */
export interface GateLimits {
  /** Requests handled at once; more get 429. */
  readonly maxInFlight: number;
  /** Bytes of one request body; more get 413. */
  readonly maxBodyBytes: number;
  /** Bytes of request bodies buffered at once, all requests together; more get 429. */
  readonly maxBufferedBytes: number;
}

/** Why a request is refused, with the HTTP status to answer. */
export interface Refusal {
  /** 413 (this body is too large) or 429 (the server is full: retry). */
  readonly status: 413 | 429;
  /** Says which cap and its value. */
  readonly message: string;
}

/** One admitted request: grows as its body arrives, closed when answered. */
export interface Ticket {
  /**
   * Counts `bytes` more of the body; a refusal when a cap is passed.
   * Nothing once closed.
   */
  grow(bytes: number): Refusal | undefined;
  /** Releases the request's slot and its bytes (idempotent). */
  close(): void;
}

/**
 * Checks the caps and says what is wrong with them.
 *
 * @example
 * ```ts
 * import { checkGateLimits } from "./webhook_gate.ts";
 * checkGateLimits({ maxInFlight: 8, maxBodyBytes: 1024, maxBufferedBytes: 4096 });
 * ```
 */
export function checkGateLimits(limits: GateLimits): void {
  for (const key of ["maxInFlight", "maxBodyBytes", "maxBufferedBytes"]) {
    const v = limits[key as keyof GateLimits];
    if (!(Number.isSafeInteger(v) && v > 0)) {
      throw new RangeError(`${key} must be an integer > 0, got ${v}`);
    }
  }
  if (limits.maxBufferedBytes < limits.maxBodyBytes) {
    throw new RangeError(
      `maxBufferedBytes (${limits.maxBufferedBytes}) must be >= maxBodyBytes (${limits.maxBodyBytes}), or the largest body could never be served`,
    );
  }
}

/**
 * Counts requests in flight and body bytes buffered.
 *
 * @example
 * ```ts
 * import { RequestGate } from "./webhook_gate.ts";
 * const gate = new RequestGate({ maxInFlight: 1, maxBodyBytes: 10, maxBufferedBytes: 10 });
 * const t = gate.open(4);
 * const full = gate.open(undefined);
 * console.assert("grow" in t && "status" in full && full.status === 429);
 * ```
 */
export class RequestGate {
  readonly #limits: GateLimits;
  #inFlight = 0;
  #buffered = 0;

  /** A gate with these caps (checked). */
  constructor(limits: GateLimits) {
    checkGateLimits(limits);
    this.#limits = limits;
  }

  /** Requests admitted and not yet closed. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Body bytes reserved by open requests. */
  get buffered(): number {
    return this.#buffered;
  }

  /**
   * Admits a request whose body declares `declaredBytes` (Content-Length;
   * undefined when unknown), reserving them at once, or refuses it.
   */
  open(declaredBytes: number | undefined): Ticket | Refusal {
    const l = this.#limits;
    if (declaredBytes !== undefined && declaredBytes > l.maxBodyBytes) {
      return tooLarge(l.maxBodyBytes);
    }
    if (this.#inFlight >= l.maxInFlight) {
      return busy(`${l.maxInFlight} requests are in flight`);
    }
    const initial = declaredBytes ?? 0;
    if (this.#buffered + initial > l.maxBufferedBytes) {
      return busy(`${l.maxBufferedBytes} bytes of bodies are buffered`);
    }
    this.#inFlight++;
    this.#buffered += initial;
    let reserved = initial;
    let received = 0;
    let open = true;
    return {
      grow: (bytes) => {
        if (!open) return undefined; // a late chunk of a closed request
        received += bytes;
        if (received > l.maxBodyBytes) return tooLarge(l.maxBodyBytes);
        if (received <= reserved) return undefined;
        if (this.#buffered + received - reserved > l.maxBufferedBytes) {
          return busy(`${l.maxBufferedBytes} bytes of bodies are buffered`);
        }
        this.#buffered += received - reserved;
        reserved = received;
        return undefined;
      },
      close: () => {
        if (!open) return;
        open = false;
        this.#inFlight--;
        this.#buffered -= reserved;
      },
    };
  }
}

function tooLarge(cap: number): Refusal {
  return { status: 413, message: `request body exceeds ${cap} bytes` };
}

function busy(what: string): Refusal {
  return {
    status: 429,
    message: `the webhook is at capacity (${what}); retry`,
  };
}
