/**
 * The webhook's HTTP/2 server side (RFC 9113) over a {@linkcode Pipe}:
 * what a client of a request/response webhook needs (streams, flow
 * control both ways, HPACK, SETTINGS, PING, GOAWAY, RST_STREAM) and no
 * more (no push, priorities ignored). Each reply's frames go out in one
 * write.
 *
 * Why our own: Deno 2.9.6's `node:http2` server ends the process under
 * hostile HTTP/2 load (bench:http2-crash), and `Deno.serve` has no
 * header, handshake or idle timeouts. Limits here: streams at once
 * (`SETTINGS_MAX_CONCURRENT_STREAMS`; a client that keeps exceeding them
 * or resets streams in a flood is sent away), the header list's size
 * (an HPACK bomb is refused as it expands), bytes queued for a slow
 * reader, and the timeouts of {@linkcode ConnectionLimits}.
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
import {
  encodeHeaders,
  type HeaderList,
  HpackDecoder,
  HpackError,
} from "./hpack.ts";

/** The client connection preface (RFC 9113 3.4). */
export const PREFACE = new TextEncoder().encode(
  "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
);

/** Frame types (RFC 9113 6). */
export const FrameType = {
  DATA: 0x0,
  HEADERS: 0x1,
  PRIORITY: 0x2,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;

/** Frame flags. */
export const Flag = {
  END_STREAM: 0x1,
  ACK: 0x1,
  END_HEADERS: 0x4,
  PADDED: 0x8,
  PRIORITY: 0x20,
} as const;

/** Error codes (RFC 9113 7). */
export const ErrorCode = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  SETTINGS_TIMEOUT: 0x4,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  ENHANCE_YOUR_CALM: 0xb,
} as const;

/** Settings identifiers (RFC 9113 6.5.2). */
export const Setting = {
  HEADER_TABLE_SIZE: 0x1,
  ENABLE_PUSH: 0x2,
  MAX_CONCURRENT_STREAMS: 0x3,
  INITIAL_WINDOW_SIZE: 0x4,
  MAX_FRAME_SIZE: 0x5,
  MAX_HEADER_LIST_SIZE: 0x6,
} as const;

/** The frame size both sides start with and we never raise. */
export const MAX_FRAME_SIZE = 16_384;
const MAX_WINDOW = 2 ** 31 - 1;
const DEFAULT_WINDOW = 65_535;
/** What one stream may send before we say it may send more. */
const STREAM_WINDOW = 1 << 20;
/** What all streams together may send before we say it may send more. */
const CONNECTION_WINDOW = 8 << 20;
/** Client resets per second beyond which a connection is a rapid-reset attack. */
const MAX_RESETS_PER_SECOND = 200;
/** Closed streams remembered for the frames that follow them. */
const RECENT_STREAMS = 512;
/** Refused streams (over the concurrency we advertised) before we send the client away. */
const MAX_REFUSED_STREAMS = 100;

/** Serializes one frame. */
export function frame(
  type: number,
  flags: number,
  streamId: number,
  payload: Uint8Array = new Uint8Array(0),
): Uint8Array {
  const out = new Uint8Array(9 + payload.byteLength);
  const len = payload.byteLength;
  out[0] = (len >>> 16) & 0xff;
  out[1] = (len >>> 8) & 0xff;
  out[2] = len & 0xff;
  out[3] = type;
  out[4] = flags;
  new DataView(out.buffer).setUint32(5, streamId & MAX_WINDOW);
  out.set(payload, 9);
  return out;
}

function u32(...values: number[]): Uint8Array {
  const out = new Uint8Array(values.length * 4);
  const view = new DataView(out.buffer);
  values.forEach((v, i) => view.setUint32(i * 4, v));
  return out;
}

function settingsPayload(entries: Array<[number, number]>): Uint8Array {
  const out = new Uint8Array(entries.length * 6);
  const view = new DataView(out.buffer);
  entries.forEach(([id, value], i) => {
    view.setUint16(i * 6, id);
    view.setUint32(i * 6 + 2, value);
  });
  return out;
}

/** A failure that ends the connection with GOAWAY. */
class ConnectionError extends Error {
  constructor(readonly code: number, message: string) {
    super(message);
  }
}

/** A failure that ends one stream with RST_STREAM. */
class StreamError extends Error {
  constructor(readonly code: number, message: string) {
    super(message);
  }
}

interface Stream {
  readonly id: number;
  /** The body goes here until END_STREAM; undefined once it is complete or refused. */
  sink: BodySink | undefined;
  /** The client has sent END_STREAM. */
  remoteDone: boolean;
  /** What the client may still send on it. */
  recvWindow: number;
  /** Bytes received and not yet granted back with WINDOW_UPDATE. */
  unacked: number;
  /** What we may still send on it. */
  sendWindow: number;
  /** Reply body bytes waiting for window. */
  out: Uint8Array | undefined;
  /** The declared content-length, checked at END_STREAM. */
  declared: number | undefined;
  received: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** A header name: a lower-case token, or a pseudo-header (RFC 9113 8.2.1). */
const FIELD_NAME = /^:?[!#$%&'*+\-.^_`|~0-9a-z]+$/;
/** A header value: no CR, LF or NUL, no leading or trailing space. */
const FIELD_VALUE = /^(?:[^\0\r\n \t](?:[^\0\r\n]*[^\0\r\n \t])?)?$/;

/** Header names HTTP/2 forbids (RFC 9113 8.2.2). */
const CONNECTION_SPECIFIC = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
]);

/**
 * One HTTP/2 connection (after ALPN chose "h2"). The socket's bytes go
 * to {@linkcode receive}, its close to {@linkcode closed}.
 */
export class Http2Connection {
  readonly #pipe: Pipe;
  readonly #handler: RequestHandler;
  readonly #limits: ConnectionLimits;
  readonly #maxStreams: number;
  readonly #decoder = new HpackDecoder();
  #pending: Uint8Array = new Uint8Array(0);
  #prefaceSeen = false;
  #settingsSeen = false;
  #streams = new Map<number, Stream>();
  /** How recently closed streams ended, oldest first. */
  #recent = new Map<number, "done" | "reset">();
  #lastStreamId = 0;
  /** A header block waiting for CONTINUATION frames. */
  #block:
    | {
      streamId: number;
      parts: Uint8Array[];
      bytes: number;
      endStream: boolean;
      selfDependent: boolean;
    }
    | undefined;
  #connRecvWindow = DEFAULT_WINDOW;
  #connUnacked = 0;
  #connSendWindow = DEFAULT_WINDOW;
  #peerInitialWindow = DEFAULT_WINDOW;
  #peerMaxFrame = MAX_FRAME_SIZE;
  /** Streams with reply bytes waiting for window, in order. */
  #blocked: Stream[] = [];
  #refused = 0;
  #resets = { since: 0, count: 0 };
  #goingAway = false;
  #closed = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** What {@linkcode #timer} waits for: the idle timeout, or a preface or header block. */
  #timerIsFor: "idle" | "other" = "other";

  /**
   * Starts the connection: sends our SETTINGS, and the preface with the
   * client's SETTINGS must arrive within the headers timeout.
   */
  constructor(
    pipe: Pipe,
    handler: RequestHandler,
    limits: ConnectionLimits,
    maxStreams: number,
  ) {
    this.#pipe = pipe;
    this.#handler = handler;
    this.#limits = limits;
    this.#maxStreams = maxStreams;
    this.#write(
      frame(
        FrameType.SETTINGS,
        0,
        0,
        settingsPayload([
          [Setting.MAX_CONCURRENT_STREAMS, maxStreams],
          [Setting.INITIAL_WINDOW_SIZE, STREAM_WINDOW],
          [Setting.MAX_HEADER_LIST_SIZE, limits.maxHeaderBytes],
        ]),
      ),
      frame(
        FrameType.WINDOW_UPDATE,
        0,
        0,
        u32(CONNECTION_WINDOW - DEFAULT_WINDOW),
      ),
    );
    this.#connRecvWindow = CONNECTION_WINDOW;
    this.#arm(limits.headersTimeoutMs, () => this.#pipe.destroy());
  }

  /** True while a stream is in flight. */
  get busy(): boolean {
    return this.#streams.size > 0;
  }

  /** Bytes from the socket. */
  receive(chunk: Uint8Array): void {
    if (this.#closed) return;
    this.#pending = this.#pending.byteLength === 0
      ? chunk
      : concatBytes(this.#pending, chunk);
    try {
      this.#pump();
    } catch (err) {
      if (!(err instanceof ConnectionError)) throw err;
      this.#fail(err.code, err.message);
    }
  }

  /** The socket closed: streams in flight are dropped. */
  closed(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    for (const s of this.#streams.values()) this.#forget(s, "reset");
  }

  /** Sends GOAWAY and closes once the streams in flight are answered. */
  drain(): void {
    if (this.#closed) return;
    this.#goingAway = true;
    this.#write(
      frame(
        FrameType.GOAWAY,
        0,
        0,
        u32(this.#lastStreamId, ErrorCode.NO_ERROR),
      ),
    );
    if (this.#streams.size === 0) this.#end();
  }

  #pump(): void {
    if (!this.#prefaceSeen) {
      const n = Math.min(this.#pending.byteLength, PREFACE.byteLength);
      for (let i = 0; i < n; i++) {
        if (this.#pending[i] !== PREFACE[i]) {
          throw new ConnectionError(
            ErrorCode.PROTOCOL_ERROR,
            "not the HTTP/2 connection preface",
          );
        }
      }
      if (n < PREFACE.byteLength) return;
      this.#pending = this.#pending.subarray(PREFACE.byteLength);
      this.#prefaceSeen = true;
    }
    while (this.#pending.byteLength >= 9 && !this.#closed) {
      const p = this.#pending;
      const length = (p[0]! << 16) | (p[1]! << 8) | p[2]!;
      if (length > MAX_FRAME_SIZE) {
        throw new ConnectionError(
          ErrorCode.FRAME_SIZE_ERROR,
          `a frame of ${length} bytes exceeds ${MAX_FRAME_SIZE}`,
        );
      }
      if (p.byteLength < 9 + length) return;
      const type = p[3]!;
      const flags = p[4]!;
      const streamId =
        new DataView(p.buffer, p.byteOffset + 5, 4).getUint32(0) &
        MAX_WINDOW;
      const payload = p.subarray(9, 9 + length);
      this.#pending = p.subarray(9 + length);
      if (!this.#settingsSeen && type !== FrameType.SETTINGS) {
        throw new ConnectionError(
          ErrorCode.PROTOCOL_ERROR,
          "the first frame must be SETTINGS",
        );
      }
      try {
        this.#frame(type, flags, streamId, payload);
      } catch (err) {
        if (!(err instanceof StreamError)) throw err;
        this.#reset(streamId, err.code);
      }
    }
  }

  #frame(
    type: number,
    flags: number,
    streamId: number,
    payload: Uint8Array,
  ): void {
    if (this.#block !== undefined && type !== FrameType.CONTINUATION) {
      throw new ConnectionError(
        ErrorCode.PROTOCOL_ERROR,
        "a header block was interrupted",
      );
    }
    switch (type) {
      case FrameType.DATA:
        return this.#data(flags, streamId, payload);
      case FrameType.HEADERS:
        return this.#headers(flags, streamId, payload);
      case FrameType.CONTINUATION:
        return this.#continuation(flags, streamId, payload);
      case FrameType.PRIORITY:
        needStream(streamId, "PRIORITY");
        if (payload.byteLength !== 5) {
          throw new StreamError(
            ErrorCode.FRAME_SIZE_ERROR,
            "PRIORITY is 5 bytes",
          );
        }
        checkDependency(streamId, payload);
        return;
      case FrameType.RST_STREAM:
        return this.#rstStream(streamId, payload);
      case FrameType.SETTINGS:
        return this.#settings(flags, streamId, payload);
      case FrameType.PUSH_PROMISE:
        throw new ConnectionError(
          ErrorCode.PROTOCOL_ERROR,
          "a client must not send PUSH_PROMISE",
        );
      case FrameType.PING:
        noStream(streamId, "PING");
        if (payload.byteLength !== 8) {
          throw new ConnectionError(
            ErrorCode.FRAME_SIZE_ERROR,
            "PING is 8 bytes",
          );
        }
        if ((flags & Flag.ACK) === 0) {
          this.#write(frame(FrameType.PING, Flag.ACK, 0, payload));
        }
        return;
      case FrameType.GOAWAY:
        noStream(streamId, "GOAWAY");
        if (payload.byteLength < 8) {
          throw new ConnectionError(
            ErrorCode.FRAME_SIZE_ERROR,
            "GOAWAY is at least 8 bytes",
          );
        }
        this.#goingAway = true;
        if (this.#streams.size === 0) this.#end();
        return;
      case FrameType.WINDOW_UPDATE:
        return this.#windowUpdate(streamId, payload);
      default:
        // unknown frame types are ignored (RFC 9113 4.1)
        return;
    }
  }

  #data(flags: number, streamId: number, payload: Uint8Array): void {
    needStream(streamId, "DATA");
    if (streamId > this.#lastStreamId) {
      throw new ConnectionError(
        ErrorCode.PROTOCOL_ERROR,
        `DATA on idle stream ${streamId}`,
      );
    }
    // the whole frame counts against the windows, padding included
    const length = payload.byteLength;
    if (length > this.#connRecvWindow) {
      throw new ConnectionError(
        ErrorCode.FLOW_CONTROL_ERROR,
        "DATA beyond the connection's window",
      );
    }
    this.#connRecvWindow -= length;
    this.#connUnacked += length;
    if (this.#connUnacked >= CONNECTION_WINDOW / 2) {
      // bodies are taken at once (buffered under the gate or dropped)
      this.#write(
        frame(FrameType.WINDOW_UPDATE, 0, 0, u32(this.#connUnacked)),
      );
      this.#connRecvWindow += this.#connUnacked;
      this.#connUnacked = 0;
    }
    const data = unpad(flags, payload);
    const stream = this.#streams.get(streamId);
    if (stream === undefined) {
      // a stream we reset or answered early: its frames in flight are ignored
      if (this.#recent.get(streamId) === "reset") return;
      throw new StreamError(
        ErrorCode.STREAM_CLOSED,
        `DATA on closed stream ${streamId}`,
      );
    }
    if (stream.remoteDone) {
      throw new StreamError(
        ErrorCode.STREAM_CLOSED,
        `DATA after END_STREAM on stream ${streamId}`,
      );
    }
    if (length > stream.recvWindow) {
      throw new StreamError(
        ErrorCode.FLOW_CONTROL_ERROR,
        "DATA beyond the stream's window",
      );
    }
    stream.recvWindow -= length;
    stream.unacked += length;
    stream.received += data.byteLength;
    const end = (flags & Flag.END_STREAM) !== 0;
    if (
      stream.declared !== undefined &&
      (stream.received > stream.declared ||
        (end && stream.received !== stream.declared))
    ) {
      throw new StreamError(
        ErrorCode.PROTOCOL_ERROR,
        `the body does not match content-length ${stream.declared}`,
      );
    }
    const sink = stream.sink;
    if (sink !== undefined && data.byteLength > 0) {
      const refused = sink.data(data);
      if (refused !== undefined) {
        stream.sink = undefined;
        stream.remoteDone = end;
        this.#reply(stream, refused);
        return;
      }
    }
    if (end) {
      stream.remoteDone = true;
      this.#finish(stream);
    } else if (stream.unacked >= STREAM_WINDOW / 2) {
      this.#write(
        frame(FrameType.WINDOW_UPDATE, 0, streamId, u32(stream.unacked)),
      );
      stream.recvWindow += stream.unacked;
      stream.unacked = 0;
    }
  }

  #headers(flags: number, streamId: number, payload: Uint8Array): void {
    if (streamId === 0 || streamId % 2 === 0) {
      throw new ConnectionError(
        ErrorCode.PROTOCOL_ERROR,
        `HEADERS on stream ${streamId}: client streams are odd`,
      );
    }
    let block = unpad(flags, payload);
    let selfDependent = false;
    if ((flags & Flag.PRIORITY) !== 0) {
      if (block.byteLength < 5) {
        throw new ConnectionError(
          ErrorCode.FRAME_SIZE_ERROR,
          "HEADERS too short for its priority",
        );
      }
      selfDependent = dependency(block) === streamId;
      block = block.subarray(5);
    }
    const endStream = (flags & Flag.END_STREAM) !== 0;
    if ((flags & Flag.END_HEADERS) !== 0) {
      return this.#headerBlock(streamId, block, endStream, selfDependent);
    }
    this.#block = {
      streamId,
      parts: [block],
      bytes: block.byteLength,
      endStream,
      selfDependent,
    };
    this.#arm(this.#limits.headersTimeoutMs, () => {
      this.#fail(ErrorCode.PROTOCOL_ERROR, "a header block did not end");
    });
  }

  #continuation(flags: number, streamId: number, payload: Uint8Array): void {
    const block = this.#block;
    if (block === undefined || block.streamId !== streamId) {
      throw new ConnectionError(
        ErrorCode.PROTOCOL_ERROR,
        `unexpected CONTINUATION on stream ${streamId}`,
      );
    }
    block.parts.push(payload);
    // a frame's header counts too: empty CONTINUATIONs must not grow `parts` unbounded
    block.bytes += 9 + payload.byteLength;
    if (block.bytes > 2 * this.#limits.maxHeaderBytes) {
      throw new ConnectionError(
        ErrorCode.ENHANCE_YOUR_CALM,
        `a header block exceeds ${2 * this.#limits.maxHeaderBytes} bytes`,
      );
    }
    if ((flags & Flag.END_HEADERS) === 0) return;
    this.#block = undefined;
    this.#idleCheck();
    this.#headerBlock(
      streamId,
      concatBytes(...block.parts),
      block.endStream,
      block.selfDependent,
    );
  }

  /** A complete header block: a new stream, or the trailers of one. */
  #headerBlock(
    streamId: number,
    block: Uint8Array,
    endStream: boolean,
    selfDependent: boolean,
  ): void {
    let list: HeaderList;
    try {
      // decoded even when the stream is ignored: the table must stay in step
      list = this.#decoder.decode(block, this.#limits.maxHeaderBytes);
    } catch (err) {
      if (!(err instanceof HpackError)) throw err;
      throw new ConnectionError(ErrorCode.COMPRESSION_ERROR, err.message);
    }
    if (streamId <= this.#lastStreamId) {
      const stream = this.#streams.get(streamId);
      if (stream === undefined) {
        const closed = this.#recent.get(streamId);
        if (closed === "reset") return; // in flight when we reset it: ignored
        if (closed === "done") {
          throw new ConnectionError(
            ErrorCode.STREAM_CLOSED,
            `HEADERS on closed stream ${streamId}`,
          );
        }
        throw new ConnectionError(
          ErrorCode.PROTOCOL_ERROR,
          `stream ${streamId} is below the last stream ${this.#lastStreamId}`,
        );
      }
      if (stream.remoteDone) {
        throw new StreamError(
          ErrorCode.STREAM_CLOSED,
          `HEADERS after END_STREAM on stream ${streamId}`,
        );
      }
      if (!endStream || list.some(([name]) => name.startsWith(":"))) {
        throw new StreamError(
          ErrorCode.PROTOCOL_ERROR,
          "trailers end the stream and carry no pseudo-header",
        );
      }
      stream.remoteDone = true;
      if (
        stream.declared !== undefined && stream.received !== stream.declared
      ) {
        throw new StreamError(
          ErrorCode.PROTOCOL_ERROR,
          `the body does not match content-length ${stream.declared}`,
        );
      }
      if (stream.sink !== undefined) this.#finish(stream);
      return;
    }
    this.#lastStreamId = streamId;
    if (selfDependent) {
      throw new StreamError(
        ErrorCode.PROTOCOL_ERROR,
        `stream ${streamId} depends on itself`,
      );
    }
    if (this.#goingAway) {
      this.#reset(streamId, ErrorCode.REFUSED_STREAM);
      return;
    }
    if (this.#streams.size >= this.#maxStreams) {
      if (++this.#refused > MAX_REFUSED_STREAMS) {
        throw new ConnectionError(
          ErrorCode.ENHANCE_YOUR_CALM,
          `more than ${this.#maxStreams} streams at once, again and again`,
        );
      }
      throw new StreamError(
        ErrorCode.REFUSED_STREAM,
        `more than ${this.#maxStreams} streams at once`,
      );
    }
    const head = requestHead(list);
    const stream: Stream = {
      id: streamId,
      sink: undefined,
      remoteDone: endStream,
      recvWindow: STREAM_WINDOW,
      unacked: 0,
      sendWindow: this.#peerInitialWindow,
      out: undefined,
      declared: head.declared,
      received: 0,
      timer: undefined,
    };
    this.#streams.set(streamId, stream);
    this.#idleCheck();
    if (head.declared !== undefined && endStream && head.declared !== 0) {
      throw new StreamError(
        ErrorCode.PROTOCOL_ERROR,
        `the body does not match content-length ${head.declared}`,
      );
    }
    const begun = this.#handler.begin(head.head);
    if ("status" in begun) {
      this.#reply(stream, begun);
      return;
    }
    stream.sink = begun;
    if (endStream) {
      this.#finish(stream);
      return;
    }
    stream.timer = setTimeout(() => {
      if (stream.sink === undefined) return;
      stream.sink.abort();
      stream.sink = undefined;
      this.#reply(
        stream,
        this.#handler.failure(
          408,
          `the request body did not arrive within ${this.#limits.bodyTimeoutMs} ms`,
        ),
      );
    }, this.#limits.bodyTimeoutMs);
  }

  #finish(stream: Stream): void {
    const sink = stream.sink;
    if (sink === undefined) return;
    stream.sink = undefined;
    clearTimeout(stream.timer);
    sink.end().then(
      (reply) => this.#reply(stream, reply),
      (err) =>
        this.#reply(
          stream,
          this.#handler.failure(
            500,
            `internal error: ${err instanceof Error ? err.message : err}`,
          ),
        ),
    );
  }

  #rstStream(streamId: number, payload: Uint8Array): void {
    if (payload.byteLength !== 4) {
      throw new ConnectionError(
        ErrorCode.FRAME_SIZE_ERROR,
        "RST_STREAM is 4 bytes",
      );
    }
    needStream(streamId, "RST_STREAM");
    if (streamId > this.#lastStreamId) {
      throw new ConnectionError(
        ErrorCode.PROTOCOL_ERROR,
        `RST_STREAM on idle stream ${streamId}`,
      );
    }
    const now = performance.now();
    if (now - this.#resets.since > 1000) {
      this.#resets = { since: now, count: 0 };
    }
    if (++this.#resets.count > MAX_RESETS_PER_SECOND) {
      throw new ConnectionError(
        ErrorCode.ENHANCE_YOUR_CALM,
        `more than ${MAX_RESETS_PER_SECOND} stream resets a second`,
      );
    }
    const stream = this.#streams.get(streamId);
    if (stream !== undefined) this.#forget(stream, "done");
    this.#idleCheck();
  }

  #settings(flags: number, streamId: number, payload: Uint8Array): void {
    noStream(streamId, "SETTINGS");
    if ((flags & Flag.ACK) !== 0) {
      if (payload.byteLength !== 0) {
        throw new ConnectionError(
          ErrorCode.FRAME_SIZE_ERROR,
          "a SETTINGS ack carries nothing",
        );
      }
      return;
    }
    if (payload.byteLength % 6 !== 0) {
      throw new ConnectionError(
        ErrorCode.FRAME_SIZE_ERROR,
        "SETTINGS is a multiple of 6 bytes",
      );
    }
    const view = new DataView(
      payload.buffer,
      payload.byteOffset,
      payload.byteLength,
    );
    for (let i = 0; i < payload.byteLength; i += 6) {
      const id = view.getUint16(i);
      const value = view.getUint32(i + 2);
      if (id === Setting.ENABLE_PUSH && value > 1) {
        throw new ConnectionError(
          ErrorCode.PROTOCOL_ERROR,
          `ENABLE_PUSH must be 0 or 1, got ${value}`,
        );
      } else if (id === Setting.INITIAL_WINDOW_SIZE) {
        if (value > MAX_WINDOW) {
          throw new ConnectionError(
            ErrorCode.FLOW_CONTROL_ERROR,
            `INITIAL_WINDOW_SIZE must be <= ${MAX_WINDOW}, got ${value}`,
          );
        }
        const delta = value - this.#peerInitialWindow;
        this.#peerInitialWindow = value;
        for (const s of this.#streams.values()) {
          s.sendWindow += delta;
          if (s.sendWindow > MAX_WINDOW) {
            throw new ConnectionError(
              ErrorCode.FLOW_CONTROL_ERROR,
              `INITIAL_WINDOW_SIZE ${value} takes stream ${s.id}'s window over 2^31-1`,
            );
          }
        }
      } else if (id === Setting.MAX_FRAME_SIZE) {
        if (value < MAX_FRAME_SIZE || value > 16_777_215) {
          throw new ConnectionError(
            ErrorCode.PROTOCOL_ERROR,
            `MAX_FRAME_SIZE must be within 16384..16777215, got ${value}`,
          );
        }
        this.#peerMaxFrame = value;
      }
      // HEADER_TABLE_SIZE: our replies use no dynamic table; the others
      // bound what a server pushes or receives, and we push nothing
    }
    this.#write(frame(FrameType.SETTINGS, Flag.ACK, 0));
    if (!this.#settingsSeen) {
      this.#settingsSeen = true;
      this.#idleCheck();
    }
    this.#flush();
  }

  #windowUpdate(streamId: number, payload: Uint8Array): void {
    if (payload.byteLength !== 4) {
      throw new ConnectionError(
        ErrorCode.FRAME_SIZE_ERROR,
        "WINDOW_UPDATE is 4 bytes",
      );
    }
    const increment = new DataView(payload.buffer, payload.byteOffset, 4)
      .getUint32(0) & MAX_WINDOW;
    if (streamId === 0) {
      if (increment === 0) {
        throw new ConnectionError(
          ErrorCode.PROTOCOL_ERROR,
          "a WINDOW_UPDATE of 0",
        );
      }
      this.#connSendWindow += increment;
      if (this.#connSendWindow > MAX_WINDOW) {
        throw new ConnectionError(
          ErrorCode.FLOW_CONTROL_ERROR,
          "the connection's window exceeds 2^31-1",
        );
      }
    } else {
      if (streamId > this.#lastStreamId) {
        throw new ConnectionError(
          ErrorCode.PROTOCOL_ERROR,
          `WINDOW_UPDATE on idle stream ${streamId}`,
        );
      }
      const stream = this.#streams.get(streamId);
      // a closed stream may still get window: ignored
      if (stream === undefined) return;
      if (increment === 0) {
        throw new StreamError(ErrorCode.PROTOCOL_ERROR, "a WINDOW_UPDATE of 0");
      }
      stream.sendWindow += increment;
      if (stream.sendWindow > MAX_WINDOW) {
        throw new StreamError(
          ErrorCode.FLOW_CONTROL_ERROR,
          "the stream's window exceeds 2^31-1",
        );
      }
    }
    this.#flush();
  }

  /** Sends a reply's HEADERS and as much of its body as the windows allow. */
  #reply(stream: Stream, reply: Reply): void {
    // a stream reset or forgotten meanwhile gets nothing; a stream gets one
    // reply, as its sink is taken (set undefined) before it is answered
    if (this.#closed || this.#streams.get(stream.id) !== stream) return;
    clearTimeout(stream.timer);
    const list: HeaderList = [[":status", String(reply.status)]];
    for (const [name, value] of Object.entries(reply.headers)) {
      list.push([name, value]);
    }
    list.push(["content-length", String(reply.body.byteLength)]);
    const block = encodeHeaders(list);
    const frames: Uint8Array[] = [];
    const empty = reply.body.byteLength === 0;
    for (
      let at = 0;
      at === 0 || at < block.byteLength;
      at += this.#peerMaxFrame
    ) {
      const last = at + this.#peerMaxFrame >= block.byteLength;
      const part = block.subarray(at, at + this.#peerMaxFrame);
      const flags = (last ? Flag.END_HEADERS : 0) |
        (at === 0 && empty ? Flag.END_STREAM : 0);
      frames.push(
        frame(
          at === 0 ? FrameType.HEADERS : FrameType.CONTINUATION,
          flags,
          stream.id,
          part,
        ),
      );
    }
    stream.out = empty ? undefined : reply.body;
    frames.push(...this.#dataFrames(stream));
    this.#write(...frames);
    if (stream.out === undefined) {
      this.#done(stream);
      return;
    }
    this.#blocked.push(stream);
    // a client that grants no window holds the reply: as long as a body may take
    stream.timer = setTimeout(
      () => this.#reset(stream.id, ErrorCode.CANCEL),
      this.#limits.bodyTimeoutMs,
    );
  }

  /** DATA frames of a stream's reply body that the windows allow now. */
  #dataFrames(stream: Stream): Uint8Array[] {
    const frames: Uint8Array[] = [];
    let out = stream.out;
    while (out !== undefined) {
      const n = Math.min(
        out.byteLength,
        this.#peerMaxFrame,
        this.#connSendWindow,
        stream.sendWindow,
      );
      if (n <= 0) break;
      const last = n === out.byteLength;
      frames.push(
        frame(
          FrameType.DATA,
          last ? Flag.END_STREAM : 0,
          stream.id,
          out.subarray(0, n),
        ),
      );
      this.#connSendWindow -= n;
      stream.sendWindow -= n;
      out = last ? undefined : out.subarray(n);
    }
    stream.out = out;
    return frames;
  }

  /** Sends what blocked replies the windows now allow. */
  #flush(): void {
    if (this.#blocked.length === 0) return;
    const frames: Uint8Array[] = [];
    const still: Stream[] = [];
    const finished: Stream[] = [];
    for (const stream of this.#blocked) {
      if (this.#streams.get(stream.id) !== stream) continue;
      frames.push(...this.#dataFrames(stream));
      (stream.out === undefined ? finished : still).push(stream);
    }
    this.#blocked = still;
    this.#write(...frames);
    for (const stream of finished) this.#done(stream);
  }

  /** A reply is sent whole: the stream ends (early: the client is asked to stop sending). */
  #done(stream: Stream): void {
    if (!stream.remoteDone) {
      // RFC 9113 8.1: a complete response before the request ended
      this.#write(
        frame(FrameType.RST_STREAM, 0, stream.id, u32(ErrorCode.NO_ERROR)),
      );
    }
    this.#forget(stream, stream.remoteDone ? "done" : "reset");
    this.#idleCheck();
    if (this.#goingAway && this.#streams.size === 0) this.#end();
  }

  #reset(streamId: number, code: number): void {
    this.#write(frame(FrameType.RST_STREAM, 0, streamId, u32(code)));
    const stream = this.#streams.get(streamId);
    if (stream !== undefined) this.#forget(stream, "reset");
    else this.#remember(streamId, "reset");
    this.#idleCheck();
  }

  /** Drops a stream, remembering how it closed. */
  #forget(stream: Stream, how: "done" | "reset"): void {
    clearTimeout(stream.timer);
    stream.sink?.abort();
    stream.sink = undefined;
    this.#streams.delete(stream.id);
    this.#remember(stream.id, how);
  }

  /**
   * Remembers how a stream closed, for frames that arrive after: those
   * of a stream we reset were in flight and are ignored; those of a
   * stream both sides ended are STREAM_CLOSED errors (RFC 9113 5.1).
   */
  #remember(streamId: number, how: "done" | "reset"): void {
    this.#recent.set(streamId, how);
    if (this.#recent.size > RECENT_STREAMS) {
      const oldest = this.#recent.keys().next().value;
      if (oldest !== undefined) this.#recent.delete(oldest);
    }
  }

  /** With no stream in flight (and no header block pending), the idle timeout runs. */
  #idleCheck(): void {
    if (!this.#settingsSeen || this.#block !== undefined) return;
    if (this.#streams.size > 0) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    } else if (this.#timer === undefined || this.#timerIsFor !== "idle") {
      this.#arm(this.#limits.idleTimeoutMs, () => this.drain(), "idle");
    }
  }

  #arm(ms: number, then: () => void, what: "idle" | "other" = "other"): void {
    clearTimeout(this.#timer);
    if (this.#closed) return;
    this.#timerIsFor = what;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      then();
    }, ms);
  }

  /** Ends the connection after a GOAWAY with `code`. */
  #fail(code: number, message: string): void {
    if (this.#closed) return;
    const debug = new TextEncoder().encode(message.slice(0, 200));
    const payload = new Uint8Array(8 + debug.byteLength);
    payload.set(u32(this.#lastStreamId, code));
    payload.set(debug, 8);
    this.#write(frame(FrameType.GOAWAY, 0, 0, payload));
    this.#end();
  }

  #end(): void {
    if (this.#closed) return;
    this.closed();
    this.#pipe.end();
  }

  #write(...frames: Uint8Array[]): void {
    if (frames.length === 0 || this.#closed) return;
    this.#pipe.write(frames.length === 1 ? frames[0]! : concatBytes(...frames));
    if (this.#pipe.buffered > this.#limits.maxQueuedBytes) {
      // a client that sends (PINGs, SETTINGS, requests) and reads nothing
      this.closed();
      this.#pipe.destroy();
    }
  }
}

/** The request head of a decoded header list, or a stream error. */
function requestHead(
  list: HeaderList,
): { head: RequestHead; declared: number | undefined } {
  const pseudo = new Map<string, string>();
  const headers = new Map<string, string>();
  let regular = false;
  for (const [name, value] of list) {
    if (!FIELD_NAME.test(name)) {
      throw new StreamError(
        ErrorCode.PROTOCOL_ERROR,
        `malformed header name ${
          JSON.stringify(name.slice(0, 40))
        }: lower-case tokens only`,
      );
    }
    if (!FIELD_VALUE.test(value)) {
      throw new StreamError(
        ErrorCode.PROTOCOL_ERROR,
        `malformed value of header ${name}`,
      );
    }
    if (name.startsWith(":")) {
      if (
        regular || pseudo.has(name) ||
        ![":method", ":path", ":scheme", ":authority"].includes(name)
      ) {
        throw new StreamError(
          ErrorCode.PROTOCOL_ERROR,
          `malformed pseudo-header ${name}`,
        );
      }
      pseudo.set(name, value);
      continue;
    }
    regular = true;
    if (
      CONNECTION_SPECIFIC.has(name) || (name === "te" && value !== "trailers")
    ) {
      throw new StreamError(
        ErrorCode.PROTOCOL_ERROR,
        `connection-specific header ${name}`,
      );
    }
    const before = headers.get(name);
    if (before === undefined) headers.set(name, value);
    else if (name !== "content-length" || before !== value) {
      // repeated content-length must agree (RFC 9110 8.6); "5, 6" is malformed below
      headers.set(name, `${before}, ${value}`);
    }
  }
  const method = pseudo.get(":method");
  const path = pseudo.get(":path");
  if (
    method === undefined || path === undefined || path === "" ||
    !pseudo.has(":scheme")
  ) {
    throw new StreamError(
      ErrorCode.PROTOCOL_ERROR,
      "a request needs :method, :scheme and :path",
    );
  }
  if (!headers.has("host") && pseudo.has(":authority")) {
    headers.set("host", pseudo.get(":authority")!);
  }
  const length = headers.get("content-length");
  let declared: number | undefined;
  if (length !== undefined) {
    if (!/^[0-9]{1,15}$/.test(length)) {
      throw new StreamError(
        ErrorCode.PROTOCOL_ERROR,
        `malformed content-length ${JSON.stringify(length.slice(0, 20))}`,
      );
    }
    declared = Number(length);
  }
  return {
    head: { method, target: path, headers },
    declared,
  };
}

/** The stream a priority block (HEADERS or PRIORITY payload) depends on. */
function dependency(priority: Uint8Array): number {
  return new DataView(priority.buffer, priority.byteOffset, 4).getUint32(0) &
    MAX_WINDOW;
}

function checkDependency(streamId: number, priority: Uint8Array): void {
  if (dependency(priority) === streamId) {
    throw new StreamError(
      ErrorCode.PROTOCOL_ERROR,
      `stream ${streamId} depends on itself`,
    );
  }
}

function needStream(streamId: number, what: string): void {
  if (streamId === 0) {
    throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, `${what} on stream 0`);
  }
}

function noStream(streamId: number, what: string): void {
  if (streamId !== 0) {
    throw new ConnectionError(
      ErrorCode.PROTOCOL_ERROR,
      `${what} on stream ${streamId}: it belongs to the connection`,
    );
  }
}

/** The payload of a DATA or HEADERS frame without its padding. */
function unpad(flags: number, payload: Uint8Array): Uint8Array {
  if ((flags & Flag.PADDED) === 0) return payload;
  const pad = payload[0];
  if (pad === undefined || pad >= payload.byteLength) {
    throw new ConnectionError(
      ErrorCode.PROTOCOL_ERROR,
      "padding exceeds the frame",
    );
  }
  return payload.subarray(1, payload.byteLength - pad);
}
