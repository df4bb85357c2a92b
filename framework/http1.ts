/**
 * The webhook's HTTP/1.1 server side over a {@linkcode Pipe}: one request
 * at a time (no pipelining in flight: the next request's bytes wait, the
 * pipe paused, while one is handled), Content-Length or chunked bodies
 * handed to a {@linkcode BodySink} as they arrive, each reply written in
 * one piece.
 *
 * Why our own and not `node:https`: under Deno 2.9 its HTTP layer more
 * than doubles the p99 over the same `node:tls` (bench:webhook's transport
 * rows: 10.7 ms against 4.92 ms for ours), and
 * `Deno.serve` has no header, handshake or idle timeouts (a client that
 * sends nothing holds its connection forever). One write per reply also
 * keeps Nagle's algorithm out of the way.
 *
 * Timeouts: a new connection's first head, and every later head from its
 * first byte, within `headersTimeoutMs`; a body within `bodyTimeoutMs` of
 * its head; `idleTimeoutMs` between requests.
 *
 * @module
 */

import {
  type BodySink,
  concatBytes,
  type ConnectionLimits,
  type Pipe,
  type Reply,
  type RequestHandler,
  type RequestHead,
} from "./http_exchange.ts";

/** A request head as parsed, or why it is refused. */
export type ParsedHead =
  | {
    readonly ok: true;
    readonly head: RequestHead;
    readonly framing: Framing;
    /** The connection stays open after the reply. */
    readonly keepAlive: boolean;
    /** The client waits for `100 Continue` before sending the body. */
    readonly expectContinue: boolean;
  }
  | { readonly ok: false; readonly status: number; readonly message: string };

/** How the body is delimited. */
export type Framing =
  | { readonly kind: "length"; readonly bytes: number }
  | { readonly kind: "chunked" };

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// a field value: visible characters, spaces, tabs and obs-text; no CR, LF or NUL
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const TARGET = /^\/[\x21-\x7e]*$/;

/**
 * Parses a request head: the bytes before its empty line, as latin1 text.
 * Pure: the connection's decisions on framing and keep-alive come from it.
 *
 * @example
 * ```ts
 * import { parseHead } from "./http1.ts";
 * const p = parseHead("POST /v HTTP/1.1\r\nhost: a\r\ncontent-length: 2");
 * console.assert(p.ok && p.framing.kind === "length" && p.framing.bytes === 2);
 * ```
 */
export function parseHead(text: string): ParsedHead {
  const bad = (message: string, status = 400) =>
    ({ ok: false, status, message }) as const;
  const lines = text.split("\r\n");
  const requestLine = lines[0] ?? "";
  const parts = requestLine.split(" ");
  if (parts.length !== 3) {
    return bad(
      `malformed request line ${
        JSON.stringify(requestLine.slice(0, 80))
      }: expected "METHOD /path HTTP/1.1"`,
    );
  }
  const [method = "", target = "", version = ""] = parts;
  if (!TOKEN.test(method)) {
    return bad(`malformed method ${JSON.stringify(method.slice(0, 40))}`);
  }
  if (!TARGET.test(target)) {
    return bad(
      `malformed request target ${
        JSON.stringify(target.slice(0, 80))
      }: expected an absolute path`,
    );
  }
  if (version !== "HTTP/1.1" && version !== "HTTP/1.0") {
    return bad(
      `unsupported protocol ${
        JSON.stringify(version.slice(0, 20))
      }: expected HTTP/1.1`,
      505,
    );
  }
  const headers = new Map<string, string>();
  const lengths = new Set<string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    const name = colon > 0 ? line.slice(0, colon) : "";
    if (!TOKEN.test(name)) {
      // includes obsolete line folding (a line starting with a space)
      return bad(`malformed header line ${JSON.stringify(line.slice(0, 80))}`);
    }
    const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, "");
    if (!FIELD_VALUE.test(value)) {
      return bad(`malformed value of header ${name}`);
    }
    const key = name.toLowerCase();
    if (key === "content-length") {
      for (const v of value.split(",")) lengths.add(v.trim());
    }
    const before = headers.get(key);
    headers.set(key, before === undefined ? value : `${before}, ${value}`);
  }
  const te = headers.get("transfer-encoding");
  let framing: Framing;
  if (te !== undefined) {
    if (lengths.size > 0) {
      return bad("both transfer-encoding and content-length are set");
    }
    if (te.toLowerCase() !== "chunked" || version === "HTTP/1.0") {
      return bad(
        `unsupported transfer-encoding ${
          JSON.stringify(te.slice(0, 40))
        }: expected chunked`,
        501,
      );
    }
    framing = { kind: "chunked" };
  } else if (lengths.size > 1) {
    return bad(`conflicting content-length values ${[...lengths].join(", ")}`);
  } else {
    const declared = [...lengths][0] ?? "0";
    if (!/^[0-9]{1,15}$/.test(declared)) {
      return bad(
        `malformed content-length ${
          JSON.stringify(declared.slice(0, 20))
        }: expected a number of bytes`,
      );
    }
    framing = { kind: "length", bytes: Number(declared) };
  }
  const connection = (headers.get("connection") ?? "").toLowerCase();
  const keepAlive = version === "HTTP/1.1" && !/\bclose\b/.test(connection);
  const expect = headers.get("expect")?.toLowerCase();
  if (expect !== undefined && expect !== "100-continue") {
    return bad(`unsupported expectation ${JSON.stringify(expect)}`, 417);
  }
  return {
    ok: true,
    head: { method, target, headers },
    framing,
    keepAlive,
    expectContinue: expect === "100-continue" && version === "HTTP/1.1",
  };
}

/** What a chunked decoder made of some bytes. */
export interface ChunkStep {
  /** Body bytes, views of the input. */
  readonly data: Uint8Array[];
  /** Input bytes consumed. */
  readonly consumed: number;
  /** The last chunk and its trailers have been read. */
  readonly done: boolean;
  /** Why the encoding is malformed. */
  readonly error?: string;
}

const CR = 13;
const LF = 10;

/**
 * Decodes a chunked body incrementally (RFC 9112 7.1); chunk extensions
 * and trailers are read and dropped. Size lines and trailers are capped,
 * so a client cannot make it buffer more than `maxLineBytes`.
 *
 * @example
 * ```ts
 * import { ChunkedDecoder } from "./http1.ts";
 * const step = new ChunkedDecoder(1024).feed(new TextEncoder().encode("2\r\nhi\r\n0\r\n\r\n"));
 * console.assert(step.done && new TextDecoder().decode(step.data[0]) === "hi");
 * ```
 */
export class ChunkedDecoder {
  readonly #maxLineBytes: number;
  #state: "size" | "data" | "dataEnd" | "trailer" | "done" = "size";
  #line = "";
  #left = 0;

  /** A decoder whose size lines and trailer lines are capped at `maxLineBytes`. */
  constructor(maxLineBytes: number) {
    this.#maxLineBytes = maxLineBytes;
  }

  /** Decodes as much of `bytes` as belongs to the body. */
  feed(bytes: Uint8Array): ChunkStep {
    const data: Uint8Array[] = [];
    let i = 0;
    const fail = (error: string): ChunkStep => ({
      data,
      consumed: i,
      done: false,
      error,
    });
    while (i < bytes.length && this.#state !== "done") {
      if (this.#state === "data") {
        const n = Math.min(this.#left, bytes.length - i);
        data.push(bytes.subarray(i, i + n));
        i += n;
        this.#left -= n;
        if (this.#left === 0) this.#state = "dataEnd";
        continue;
      }
      // a line: size, the CRLF after data, or a trailer
      const lf = bytes.indexOf(LF, i);
      const end = lf < 0 ? bytes.length : lf;
      if (this.#line.length + end - i > this.#maxLineBytes) {
        return fail(`a chunk line exceeds ${this.#maxLineBytes} bytes`);
      }
      this.#line += latin1(bytes.subarray(i, end));
      i = lf < 0 ? bytes.length : lf + 1;
      if (lf < 0) break;
      if (!this.#line.endsWith("\r")) return fail("a chunk line without CR");
      const line = this.#line.slice(0, -1);
      this.#line = "";
      if (this.#state === "dataEnd") {
        if (line !== "") return fail("chunk data longer than its size");
        this.#state = "size";
      } else if (this.#state === "size") {
        const size = /^([0-9a-fA-F]{1,8})(?:[ \t]*;.*)?$/.exec(line)?.[1];
        if (size === undefined) {
          return fail(
            `malformed chunk size ${JSON.stringify(line.slice(0, 20))}`,
          );
        }
        this.#left = parseInt(size, 16);
        this.#state = this.#left === 0 ? "trailer" : "data";
      } else if (line === "") {
        this.#state = "done";
      }
    }
    return { data, consumed: i, done: this.#state === "done" };
  }
}

const REASONS: Record<number, string> = {
  100: "Continue",
  200: "OK",
  400: "Bad Request",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  413: "Content Too Large",
  417: "Expectation Failed",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  501: "Not Implemented",
  503: "Service Unavailable",
  505: "HTTP Version Not Supported",
};

const encoder = new TextEncoder();

/** A reply as HTTP/1.1 bytes, in one buffer (one write, one TLS record). */
export function serializeReply(reply: Reply, close: boolean): Uint8Array {
  let head = `HTTP/1.1 ${reply.status} ${
    REASONS[reply.status] ?? "Status"
  }\r\n`;
  for (const [name, value] of Object.entries(reply.headers)) {
    head += `${name}: ${value}\r\n`;
  }
  head += `content-length: ${reply.body.byteLength}\r\n`;
  if (close) head += "connection: close\r\n";
  head += "\r\n";
  const bytes = encoder.encode(head);
  const out = new Uint8Array(bytes.byteLength + reply.body.byteLength);
  out.set(bytes);
  out.set(reply.body, bytes.byteLength);
  return out;
}

const CONTINUE = encoder.encode("HTTP/1.1 100 Continue\r\n\r\n");

type State =
  | { kind: "head" }
  | { kind: "body"; sink: BodySink; left: Body }
  | { kind: "discard"; left: Body }
  | { kind: "handling" }
  | { kind: "closed" };

/** What remains of a body: a count of bytes, or a chunked decoder. */
type Body = { bytes: number } | { chunked: ChunkedDecoder };

/**
 * One HTTP/1.1 connection. The socket's bytes go to {@linkcode receive},
 * its close to {@linkcode closed}.
 */
export class Http1Connection {
  readonly #pipe: Pipe;
  readonly #handler: RequestHandler;
  readonly #limits: ConnectionLimits;
  #state: State = { kind: "head" };
  /** Bytes not yet processed: part of a head, or what follows a request being handled. */
  #pending: Uint8Array = new Uint8Array(0);
  #keepAlive = true;
  #draining = false;
  #paused = false;
  /** Between requests: the next byte starts the headers timeout. */
  #idle = false;
  #timer: ReturnType<typeof setTimeout> | undefined;

  /** Starts the connection: its first head must come within the headers timeout. */
  constructor(pipe: Pipe, handler: RequestHandler, limits: ConnectionLimits) {
    this.#pipe = pipe;
    this.#handler = handler;
    this.#limits = limits;
    this.#arm(limits.headersTimeoutMs, () => this.#pipe.destroy());
  }

  /** True while a request is in flight (its head arrived, its reply not yet written). */
  get busy(): boolean {
    const k = this.#state.kind;
    return k === "body" || k === "handling";
  }

  /** Bytes from the socket. */
  receive(chunk: Uint8Array): void {
    if (this.#state.kind === "closed") return;
    this.#pending = this.#pending.byteLength === 0
      ? chunk
      : concatBytes(this.#pending, chunk);
    this.#pump();
  }

  /** The socket closed: whatever was in flight is dropped. */
  closed(): void {
    if (this.#state.kind === "body") this.#state.sink.abort();
    this.#state = { kind: "closed" };
    clearTimeout(this.#timer);
  }

  /** Closes after the request in flight, or now when there is none. */
  drain(): void {
    this.#draining = true;
    if (!this.busy) this.#pipe.end();
  }

  #arm(ms: number, then: () => void): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(then, ms);
  }

  #pump(): void {
    while (this.#pending.byteLength > 0) {
      const state = this.#state;
      if (state.kind === "head") {
        if (!this.#readHead()) return;
      } else if (state.kind === "body" || state.kind === "discard") {
        this.#readBody(state);
      } else {
        // handling: the rest waits, unread, until the reply is written
        if (state.kind === "handling" && !this.#paused) {
          this.#paused = true;
          this.#pipe.pause();
        }
        return;
      }
    }
  }

  /** Takes a head from the pending bytes; false when it is not complete. */
  #readHead(): boolean {
    let bytes = this.#pending;
    // blank lines before a request line are ignored (RFC 9112 2.2)
    let skip = 0;
    while (bytes[skip] === CR || bytes[skip] === LF) skip++;
    if (skip > 0) {
      bytes = bytes.subarray(skip);
      this.#pending = bytes;
      if (bytes.byteLength === 0) return false;
    }
    if (this.#idle) {
      // the first byte of the next request
      this.#idle = false;
      this.#arm(this.#limits.headersTimeoutMs, () => this.#pipe.destroy());
    }
    const end = indexOfBlankLine(bytes);
    if (end < 0) {
      if (bytes.byteLength > this.#limits.maxHeaderBytes) {
        this.#refuse(
          431,
          `the request head exceeds ${this.#limits.maxHeaderBytes} bytes`,
        );
      }
      return false;
    }
    if (end > this.#limits.maxHeaderBytes) {
      this.#refuse(
        431,
        `the request head exceeds ${this.#limits.maxHeaderBytes} bytes`,
      );
      return false;
    }
    const text = latin1(bytes.subarray(0, end));
    // a copy: body chunks handed to a sink must never be overwritten
    this.#pending = bytes.slice(end + 4);
    const parsed = parseHead(text);
    if (!parsed.ok) {
      this.#refuse(parsed.status, parsed.message);
      return false;
    }
    this.#keepAlive = parsed.keepAlive;
    const left: Body = parsed.framing.kind === "chunked"
      ? { chunked: new ChunkedDecoder(this.#limits.maxHeaderBytes) }
      : { bytes: parsed.framing.bytes };
    const begun = this.#handler.begin(parsed.head);
    const empty = "bytes" in left && left.bytes === 0;
    if ("status" in begun) {
      if (empty) {
        this.#answer(begun);
      } else if (parsed.expectContinue) {
        // the client sends the body only after 100 Continue: none will come
        this.#keepAlive = false;
        this.#answer(begun);
      } else {
        this.#write(serializeReply(begun, !this.#keepAlive));
        this.#state = { kind: "discard", left };
        this.#arm(this.#limits.bodyTimeoutMs, () => this.#pipe.destroy());
      }
      return true;
    }
    if (empty) {
      this.#finish(begun);
      return true;
    }
    if (parsed.expectContinue) this.#write(CONTINUE);
    this.#state = { kind: "body", sink: begun, left };
    this.#arm(this.#limits.bodyTimeoutMs, () => {
      if (this.#state.kind !== "body") return;
      this.#state.sink.abort();
      this.#keepAlive = false;
      this.#answer(
        this.#handler.failure(
          408,
          `the request body did not arrive within ${this.#limits.bodyTimeoutMs} ms`,
        ),
      );
    });
    return true;
  }

  #readBody(state: Extract<State, { kind: "body" | "discard" }>): void {
    const bytes = this.#pending;
    let data: Uint8Array[];
    let consumed: number;
    let done: boolean;
    if ("bytes" in state.left) {
      consumed = Math.min(state.left.bytes, bytes.byteLength);
      data = [bytes.subarray(0, consumed)];
      state.left.bytes -= consumed;
      done = state.left.bytes === 0;
    } else {
      const step = state.left.chunked.feed(bytes);
      if (step.error !== undefined) {
        if (state.kind === "body") state.sink.abort();
        this.#pending = new Uint8Array(0);
        if (state.kind === "body") {
          this.#refuse(400, `malformed chunked body: ${step.error}`);
        } else {
          this.#pipe.destroy();
          this.#state = { kind: "closed" };
        }
        return;
      }
      ({ data, consumed, done } = step);
    }
    this.#pending = bytes.subarray(consumed);
    if (state.kind === "body") {
      for (const chunk of data) {
        const refused = chunk.byteLength > 0
          ? state.sink.data(chunk)
          : undefined;
        if (refused !== undefined) {
          // the rest of the body is read and dropped, so the client reads
          // the answer instead of a reset while it sends
          this.#write(serializeReply(refused, !this.#keepAlive));
          this.#state = { kind: "discard", left: state.left };
          if (done) this.#afterReply();
          return;
        }
      }
      if (done) this.#finish(state.sink);
    } else if (done) {
      this.#afterReply();
    }
  }

  /** The body is complete: handle it, then answer. */
  #finish(sink: BodySink): void {
    this.#state = { kind: "handling" };
    clearTimeout(this.#timer);
    this.#timer = undefined;
    sink.end().then(
      (reply) => this.#answer(reply),
      (err) =>
        this.#answer(
          this.#handler.failure(
            500,
            `internal error: ${err instanceof Error ? err.message : err}`,
          ),
        ),
    );
  }

  /** Writes the reply of the request in flight and goes on with the next. */
  #answer(reply: Reply): void {
    if (this.#state.kind === "closed") return;
    this.#write(serializeReply(reply, !this.#keepAlive || this.#draining));
    this.#afterReply();
  }

  #afterReply(): void {
    if (this.#state.kind === "closed") return;
    if (!this.#keepAlive || this.#draining) {
      this.#state = { kind: "closed" };
      clearTimeout(this.#timer);
      this.#pipe.end();
      return;
    }
    this.#state = { kind: "head" };
    this.#idle = true;
    this.#arm(this.#limits.idleTimeoutMs, () => this.#pipe.destroy());
    if (this.#paused) {
      this.#paused = false;
      this.#pipe.resume();
    }
    this.#pump();
  }

  /** Answers a request the connection refuses by itself, then closes. */
  #refuse(status: number, message: string): void {
    this.#keepAlive = false;
    this.#pending = new Uint8Array(0);
    this.#state = { kind: "handling" };
    this.#answer(this.#handler.failure(status, message));
  }

  #write(bytes: Uint8Array): void {
    this.#pipe.write(bytes);
    if (this.#pipe.buffered > this.#limits.maxQueuedBytes) {
      // a client that sends requests and reads no replies
      this.#pipe.destroy();
    }
  }
}

function indexOfBlankLine(bytes: Uint8Array): number {
  let i = bytes.indexOf(CR);
  while (i >= 0 && i + 3 < bytes.byteLength) {
    if (bytes[i + 1] === LF && bytes[i + 2] === CR && bytes[i + 3] === LF) {
      return i;
    }
    i = bytes.indexOf(CR, i + 1);
  }
  return -1;
}

function latin1(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.byteLength; i += 8192) {
    s += String.fromCharCode(...bytes.subarray(i, i + 8192));
  }
  return s;
}
