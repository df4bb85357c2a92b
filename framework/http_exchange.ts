/**
 * What the webhook server's HTTP/1.1 and HTTP/2 connections share: a
 * request head, a body that arrives in chunks, a reply, and the byte pipe
 * under them. The connections speak the protocol; a
 * {@linkcode RequestHandler} decides, chunk by chunk, so that a request
 * can be refused before its body is buffered.
 *
 * @module
 */

/** A request's head: header names lower-case, the last value of a repeated header. */
export interface RequestHead {
  /** The method, as sent (`POST`). */
  readonly method: string;
  /** The request target: path and query (`/validate?timeout=10s`). */
  readonly target: string;
  /** Header values by lower-case name. */
  readonly headers: ReadonlyMap<string, string>;
}

/** An answer: status, headers (lower-case names) and the whole body. */
export interface Reply {
  /** HTTP status code. */
  readonly status: number;
  /** Headers besides `content-length`, which the connection adds. */
  readonly headers: Readonly<Record<string, string>>;
  /** The body. */
  readonly body: Uint8Array;
}

/** Takes a request's body as it arrives. */
export interface BodySink {
  /**
   * A chunk of the body (memory the caller never writes again): undefined
   * to go on, or a reply that refuses the rest, after which the sink has
   * released what it held and is not called again.
   */
  data(chunk: Uint8Array): Reply | undefined;
  /** The whole body has arrived: the answer. */
  end(): Promise<Reply>;
  /** The request ended without its body (reset, closed, timed out): release what it holds. */
  abort(): void;
}

/** Decides on requests; the connections call it. */
export interface RequestHandler {
  /** A head arrived: a reply at once (the body is not wanted), or a sink for the body. */
  begin(head: RequestHead): Reply | BodySink;
  /** The connection answers by itself (malformed request, timeout): the reply to send. */
  failure(status: number, message: string): Reply;
}

/** The byte pipe under a connection (a TLS socket). */
export interface Pipe {
  /** Queues bytes; false when the pipe's buffer is over its mark. */
  write(bytes: Uint8Array): boolean;
  /** Bytes queued and not yet handed to the kernel. */
  readonly buffered: number;
  /** Sends what is queued, then closes. */
  end(): void;
  /** Closes now, dropping what is queued. */
  destroy(): void;
  /** Stops delivering received bytes (backpressure). */
  pause(): void;
  /** Delivers received bytes again. */
  resume(): void;
}

/** Timeouts and caps every connection applies. */
export interface ConnectionLimits {
  /** A request's head must arrive within this from its first byte (or from the connection's start), ms. */
  readonly headersTimeoutMs: number;
  /** A request body must arrive within this from its head, ms. */
  readonly bodyTimeoutMs: number;
  /** A connection with no request in flight is closed after this, ms. */
  readonly idleTimeoutMs: number;
  /** Bytes of one request head (request line or pseudo-headers, and headers). */
  readonly maxHeaderBytes: number;
  /** Bytes a connection may have queued for a slow reader before it is closed. */
  readonly maxQueuedBytes: number;
}

const encoder = new TextEncoder();

/** A JSON reply. */
export function jsonReply(
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
): Reply {
  return {
    status,
    headers: { "content-type": "application/json", ...headers },
    body: encoder.encode(JSON.stringify(value)),
  };
}

/** The bytes of `parts`, in order, in one new buffer. */
export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.byteLength;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}
