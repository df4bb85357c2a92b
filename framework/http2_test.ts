import assert from "node:assert/strict";
import { FakePipe } from "../tests/harness/fake_pipe.ts";
import fc from "fast-check";
import { encodeHeaders, type HeaderList, HpackDecoder } from "./hpack.ts";
import {
  type BodySink,
  type ConnectionLimits,
  jsonReply,
  type Reply,
  type RequestHandler,
  type RequestHead,
} from "./http_exchange.ts";
import {
  ErrorCode,
  Flag,
  frame,
  FrameType,
  Http2Connection,
  MAX_FRAME_SIZE,
  PREFACE,
  Setting,
} from "./http2.ts";

// ---------------------------------------------------------------------------
// Fakes: a handler that echoes (the pipe is tests/harness/fake_pipe.ts).
// ---------------------------------------------------------------------------

/** What "/cap" takes before it refuses the rest of a body. */
const CAP = 10;

/** A simple checksum of a body, so that echoes prove the bytes arrived in order. */
function checksum(sum: number, chunk: Uint8Array): number {
  for (const b of chunk) sum = (Math.imul(sum, 31) + b) >>> 0;
  return sum;
}

/** The body of a "/big/N" reply: N patterned bytes. */
function pattern(n: number): Uint8Array {
  return Uint8Array.from({ length: n }, (_, i) => i % 251);
}

/**
 * Answers every request with a 200 JSON echo of the target and the body's
 * length and checksum; "/refuse" gets a 429 at once (before its body);
 * "/cap" refuses with 413 after {@linkcode CAP} bytes; "/big/N" answers
 * N patterned bytes; "/wide" gets a 40 kB header at once. `hold` (when set)
 * delays every end().
 */
class FakeHandler implements RequestHandler {
  readonly heads: RequestHead[] = [];
  /** Targets whose sink was aborted. */
  readonly aborted: string[] = [];
  readonly failures: Array<{ status: number; message: string }> = [];
  hold: Promise<void> | undefined;

  begin(head: RequestHead): Reply | BodySink {
    this.heads.push(head);
    const target = head.target;
    if (target === "/refuse") return jsonReply(429, { refused: true });
    if (target === "/wide") {
      // a reply head larger than a frame
      return jsonReply(200, {}, { "x-wide": "w".repeat(40_000) });
    }
    let length = 0;
    let sum = 0;
    let done = false;
    return {
      data: (chunk) => {
        assert.ok(!done, `data() after the sink of ${target} was done`);
        length += chunk.byteLength;
        sum = checksum(sum, chunk);
        if (target === "/cap" && length > CAP) {
          done = true;
          return jsonReply(413, { cap: CAP });
        }
        return undefined;
      },
      end: async () => {
        assert.ok(!done, `end() after the sink of ${target} was done`);
        done = true;
        await this.hold;
        const big = /^\/big\/([0-9]{1,6})$/.exec(target);
        if (big !== null) {
          return {
            status: 200,
            headers: { "content-type": "application/octet-stream" },
            body: pattern(Number(big[1])),
          };
        }
        return jsonReply(200, { target, length, sum });
      },
      abort: () => {
        assert.ok(!done, `abort() after the sink of ${target} was done`);
        done = true;
        this.aborted.push(target);
      },
    };
  }

  failure(status: number, message: string): Reply {
    this.failures.push({ status, message });
    return jsonReply(status, { message });
  }
}

// ---------------------------------------------------------------------------
// The client side: frames to send, frames the server wrote.
// ---------------------------------------------------------------------------

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

function u32(...values: number[]): Uint8Array {
  const out = new Uint8Array(values.length * 4);
  values.forEach((v, i) => new DataView(out.buffer).setUint32(i * 4, v));
  return out;
}

function bytes(body: Uint8Array | string): Uint8Array {
  return typeof body === "string" ? encoder.encode(body) : body;
}

function settings(entries: Array<[number, number]> = []): Uint8Array {
  const payload = new Uint8Array(entries.length * 6);
  const view = new DataView(payload.buffer);
  entries.forEach(([id, value], i) => {
    view.setUint16(i * 6, id);
    view.setUint32(i * 6 + 2, value);
  });
  return frame(FrameType.SETTINGS, 0, 0, payload);
}

/** A request's header list. */
function req(method: string, path: string, extra: HeaderList = []): HeaderList {
  return [
    [":method", method],
    [":scheme", "https"],
    [":path", path],
    [":authority", "webhook.test"],
    ...extra,
  ];
}

/** A HEADERS frame with END_HEADERS (and `flags`). */
function headers(streamId: number, list: HeaderList, flags = 0): Uint8Array {
  return frame(
    FrameType.HEADERS,
    Flag.END_HEADERS | flags,
    streamId,
    encodeHeaders(list),
  );
}

function data(
  streamId: number,
  body: Uint8Array | string,
  flags = 0,
): Uint8Array {
  return frame(FrameType.DATA, flags, streamId, bytes(body));
}

function rst(streamId: number, code: number): Uint8Array {
  return frame(FrameType.RST_STREAM, 0, streamId, u32(code));
}

function windowUpdate(streamId: number, increment: number): Uint8Array {
  return frame(FrameType.WINDOW_UPDATE, 0, streamId, u32(increment));
}

/** A POST with its whole body in one DATA frame. */
function post(streamId: number, path: string, body: string): Uint8Array {
  return concat(
    headers(streamId, req("POST", path)),
    data(streamId, body, Flag.END_STREAM),
  );
}

function get(streamId: number, path: string): Uint8Array {
  return headers(streamId, req("GET", path), Flag.END_STREAM);
}

interface Frame {
  type: number;
  flags: number;
  streamId: number;
  payload: Uint8Array;
}

/** Whole frames of `wire`; fails on a partial frame at its end. */
function parseFrames(wire: Uint8Array): Frame[] {
  const frames: Frame[] = [];
  let at = 0;
  while (at < wire.byteLength) {
    assert.ok(at + 9 <= wire.byteLength, `a partial frame header at ${at}`);
    const view = new DataView(wire.buffer, wire.byteOffset + at);
    const length = (view.getUint8(0) << 16) | view.getUint16(1);
    assert.ok(at + 9 + length <= wire.byteLength, `a partial frame at ${at}`);
    frames.push({
      type: view.getUint8(3),
      flags: view.getUint8(4),
      streamId: view.getUint32(5) & 0x7fff_ffff,
      payload: wire.slice(at + 9, at + 9 + length),
    });
    at += 9 + length;
  }
  return frames;
}

function word(payload: Uint8Array, at = 0): number {
  return new DataView(payload.buffer, payload.byteOffset).getUint32(at);
}

/** The entries of a SETTINGS payload. */
function settingsOf(payload: Uint8Array): Map<number, number> {
  const view = new DataView(payload.buffer, payload.byteOffset);
  const out = new Map<number, number>();
  for (let i = 0; i + 6 <= payload.byteLength; i += 6) {
    out.set(view.getUint16(i), view.getUint32(i + 2));
  }
  return out;
}

/** One stream's answer as the server wrote it. */
interface Response {
  status: number | undefined;
  headers: HeaderList;
  body: Uint8Array;
  /** END_STREAM was sent. */
  ended: boolean;
  /** The RST_STREAM code the server sent, if any. */
  reset: number | undefined;
  /** The sizes of its DATA frames. */
  dataFrames: number[];
}

/** Each stream's answer, from all the frames the server wrote (its header blocks decoded in order). */
function responsesOf(frames: Frame[]): Map<number, Response> {
  const hpack = new HpackDecoder();
  const out = new Map<number, Response>();
  const of = (id: number): Response => {
    let r = out.get(id);
    if (r === undefined) {
      r = {
        status: undefined,
        headers: [],
        body: new Uint8Array(0),
        ended: false,
        reset: undefined,
        dataFrames: [],
      };
      out.set(id, r);
    }
    return r;
  };
  let block: { id: number; parts: Uint8Array[] } | undefined;
  for (const f of frames) {
    if (block !== undefined) {
      assert.equal(f.type, FrameType.CONTINUATION, "an interrupted block");
      assert.equal(f.streamId, block.id);
      block.parts.push(f.payload);
    } else if (f.type === FrameType.HEADERS) {
      assert.equal(f.flags & (Flag.PADDED | Flag.PRIORITY), 0);
      block = { id: f.streamId, parts: [f.payload] };
      if ((f.flags & Flag.END_STREAM) !== 0) of(f.streamId).ended = true;
    } else if (f.type === FrameType.DATA) {
      const r = of(f.streamId);
      assert.ok(r.status !== undefined, "DATA before HEADERS");
      assert.ok(!r.ended, "DATA after END_STREAM");
      r.body = concat(r.body, f.payload);
      r.dataFrames.push(f.payload.byteLength);
      if ((f.flags & Flag.END_STREAM) !== 0) r.ended = true;
    } else if (f.type === FrameType.RST_STREAM) {
      of(f.streamId).reset = word(f.payload);
    }
    if (block !== undefined && (f.flags & Flag.END_HEADERS) !== 0) {
      const r = of(block.id);
      r.headers = hpack.decode(concat(...block.parts), 1 << 20);
      const status = r.headers.find(([n]) => n === ":status")?.[1];
      r.status = status === undefined ? undefined : Number(status);
      block = undefined;
    }
  }
  return out;
}

function header(r: Response | undefined, name: string): string | undefined {
  return r?.headers.find(([n]) => n === name)?.[1];
}

/** The JSON a 200 echo carries. */
function json(r: Response | undefined): unknown {
  assert.ok(r !== undefined, "no response");
  return JSON.parse(decoder.decode(r.body));
}

const LIMITS: ConnectionLimits = {
  headersTimeoutMs: 5_000,
  bodyTimeoutMs: 5_000,
  idleTimeoutMs: 5_000,
  maxHeaderBytes: 4_096,
  maxQueuedBytes: 1 << 30,
};

interface SessionOptions {
  limits?: Partial<ConnectionLimits>;
  maxStreams?: number;
}

/** A connection under test with its fake pipe and handler, seen from the client. */
class Session {
  readonly pipe = new FakePipe();
  readonly handler = new FakeHandler();
  readonly limits: ConnectionLimits;
  readonly conn: Http2Connection;
  #seen = 0;

  constructor(options: SessionOptions = {}) {
    this.limits = { ...LIMITS, ...options.limits };
    this.conn = new Http2Connection(
      this.pipe,
      this.handler,
      this.limits,
      options.maxStreams ?? 100,
    );
  }

  send(...parts: Uint8Array[]): void {
    this.conn.receive(concat(...parts));
  }

  /** The preface and a SETTINGS; the frames written so far are marked seen. */
  handshake(entries: Array<[number, number]> = []): void {
    this.send(PREFACE, settings(entries));
    this.next();
  }

  /** Every frame the server wrote. */
  frames(): Frame[] {
    return parseFrames(concat(...this.pipe.writes));
  }

  /** The frames written since the last call. */
  next(): Frame[] {
    const all = this.frames();
    const fresh = all.slice(this.#seen);
    this.#seen = all.length;
    return fresh;
  }

  responses(): Map<number, Response> {
    return responsesOf(this.frames());
  }

  response(streamId: number): Response | undefined {
    return this.responses().get(streamId);
  }

  /** The last GOAWAY written: its last stream id and code. */
  goaway(): { lastStreamId: number; code: number } | undefined {
    const f = this.frames().findLast((f) => f.type === FrameType.GOAWAY);
    return f === undefined ? undefined : {
      lastStreamId: word(f.payload) & 0x7fff_ffff,
      code: word(f.payload, 4),
    };
  }
}

/** Runs `body` on a new session and always closes the connection (no timer outlives a test). */
async function withSession(
  options: SessionOptions,
  body: (s: Session) => void | Promise<void>,
): Promise<void> {
  const s = new Session(options);
  try {
    await body(s);
    assert.equal(s.pipe.lateWrites, 0, "writes after end() or destroy()");
  } finally {
    s.conn.closed();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Lets the handler's promises settle. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await sleep(0);
}

/** Waits until `ok()` holds, or fails after `ms`. */
async function until(ok: () => boolean, ms = 1_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!ok()) {
    assert.ok(performance.now() < deadline, "timed out waiting");
    await sleep(1);
  }
}

function assertGoaway(s: Session, code: number, what = ""): void {
  const g = s.goaway();
  assert.ok(g !== undefined, `no GOAWAY ${what}`);
  assert.equal(g.code, code, `GOAWAY code ${what}`);
  assert.ok(s.pipe.ended, `the pipe is not ended ${what}`);
}

/** Stream ids the server reset with `code`. */
function resets(frames: Frame[], code: number): number[] {
  return frames
    .filter((f) => f.type === FrameType.RST_STREAM && word(f.payload) === code)
    .map((f) => f.streamId);
}

// ---------------------------------------------------------------------------
// Connection start, requests, frames' variants
// ---------------------------------------------------------------------------

Deno.test("http2: server SETTINGS and a connection WINDOW_UPDATE come first; client SETTINGS get an ACK", async () => {
  await withSession({ maxStreams: 7 }, (s) => {
    const [first, second, ...rest] = s.next();
    assert.equal(rest.length, 0);
    assert.ok(first !== undefined && second !== undefined);
    assert.equal(first.type, FrameType.SETTINGS);
    assert.equal(first.flags, 0);
    assert.equal(first.streamId, 0);
    assert.deepEqual(
      settingsOf(first.payload),
      new Map([
        [Setting.MAX_CONCURRENT_STREAMS, 7],
        [Setting.INITIAL_WINDOW_SIZE, 1 << 20],
        [Setting.MAX_HEADER_LIST_SIZE, LIMITS.maxHeaderBytes],
      ]),
    );
    assert.equal(second.type, FrameType.WINDOW_UPDATE);
    assert.equal(second.streamId, 0);
    assert.equal(word(second.payload), (8 << 20) - 65_535);

    s.send(PREFACE, settings([[Setting.HEADER_TABLE_SIZE, 0]]));
    const acks = s.next();
    assert.equal(acks.length, 1);
    assert.deepEqual(
      {
        type: acks[0]?.type,
        flags: acks[0]?.flags,
        len: acks[0]?.payload.length,
      },
      { type: FrameType.SETTINGS, flags: Flag.ACK, len: 0 },
    );
    // our SETTINGS acknowledged by the client: no answer
    s.send(frame(FrameType.SETTINGS, Flag.ACK, 0));
    assert.deepEqual(s.next(), []);
    assert.ok(s.pipe.open);
  });
});

Deno.test("http2: a POST gets HEADERS (200, content-length) then DATA with END_STREAM", async () => {
  await withSession({}, async (s) => {
    s.handshake();
    s.send(
      headers(
        1,
        req("POST", "/validate", [["content-type", "application/json"]]),
      ),
      data(1, '{"a":'),
      data(1, "1}", Flag.END_STREAM),
    );
    await until(() => s.response(1)?.ended === true);
    const [h, d, ...rest] = s.next();
    assert.equal(rest.length, 0);
    assert.equal(h?.type, FrameType.HEADERS);
    assert.equal(h?.flags, Flag.END_HEADERS);
    assert.equal(d?.type, FrameType.DATA);
    assert.equal(d?.flags, Flag.END_STREAM);
    const r = s.response(1);
    assert.equal(r?.status, 200);
    assert.equal(header(r, "content-type"), "application/json");
    assert.equal(header(r, "content-length"), String(r?.body.byteLength));
    assert.deepEqual(json(r), {
      target: "/validate",
      length: 7,
      sum: checksum(0, encoder.encode('{"a":1}')),
    });
    const head = s.handler.heads[0];
    assert.equal(head?.method, "POST");
    assert.equal(head?.headers.get("host"), "webhook.test");
    assert.equal(head?.headers.get("content-type"), "application/json");
    assert.equal(s.conn.busy, false);
  });
});

Deno.test("http2: a GET with END_STREAM on its HEADERS is answered", async () => {
  await withSession({}, async (s) => {
    s.handshake();
    s.send(get(1, "/healthz"), get(3, "/big/0"));
    await until(() => s.response(3)?.ended === true);
    assert.deepEqual(json(s.response(1)), {
      target: "/healthz",
      length: 0,
      sum: 0,
    });
    // an empty body: END_STREAM on the HEADERS, no DATA
    const r3 = s.response(3);
    assert.equal(header(r3, "content-length"), "0");
    assert.deepEqual(r3?.dataFrames, []);
    const h3 = s.frames().find((f) =>
      f.streamId === 3 && f.type === FrameType.HEADERS
    );
    assert.equal(h3?.flags, Flag.END_HEADERS | Flag.END_STREAM);
  });
});

Deno.test("http2: a header block split over CONTINUATION frames", async () => {
  await withSession({}, async (s) => {
    s.handshake();
    const block = encodeHeaders(
      req("POST", "/split", [["x-a", "b".repeat(50)]]),
    );
    s.send(
      frame(FrameType.HEADERS, 0, 1, block.subarray(0, 5)),
      frame(FrameType.CONTINUATION, 0, 1, block.subarray(5, 20)),
      frame(FrameType.CONTINUATION, 0, 1, new Uint8Array(0)),
      frame(FrameType.CONTINUATION, Flag.END_HEADERS, 1, block.subarray(20)),
      data(1, "xyz", Flag.END_STREAM),
    );
    await until(() => s.response(1)?.ended === true);
    assert.deepEqual(json(s.response(1)), {
      target: "/split",
      length: 3,
      sum: checksum(0, encoder.encode("xyz")),
    });
    assert.equal(s.handler.heads[0]?.headers.get("x-a"), "b".repeat(50));
  });
});

Deno.test("http2: PADDED DATA and HEADERS, and HEADERS with PRIORITY", async () => {
  await withSession({}, async (s) => {
    s.handshake();
    const block = encodeHeaders(req("POST", "/padded"));
    const padded = (body: Uint8Array, pad: number) =>
      concat(Uint8Array.of(pad), body, new Uint8Array(pad).fill(0xee));
    const priority = Uint8Array.of(0x80, 0, 0, 0, 16); // exclusive on 0, weight 17
    s.send(
      frame(
        FrameType.HEADERS,
        Flag.END_HEADERS | Flag.PADDED | Flag.PRIORITY,
        1,
        padded(concat(priority, block), 7),
      ),
      frame(FrameType.DATA, Flag.PADDED, 1, padded(encoder.encode("abc"), 4)),
      frame(FrameType.DATA, Flag.PADDED, 1, padded(new Uint8Array(0), 0)),
      frame(
        FrameType.DATA,
        Flag.PADDED | Flag.END_STREAM,
        1,
        padded(encoder.encode("de"), 200),
      ),
    );
    await until(() => s.response(1)?.ended === true);
    assert.deepEqual(json(s.response(1)), {
      target: "/padded",
      length: 5,
      sum: checksum(0, encoder.encode("abcde")),
    });
  });
  // the PRIORITY flag alone (END_STREAM too), and a PRIORITY frame
  await withSession({}, async (s) => {
    s.handshake();
    s.send(
      frame(FrameType.PRIORITY, 0, 5, Uint8Array.of(0, 0, 0, 0, 0)),
      frame(
        FrameType.HEADERS,
        Flag.END_HEADERS | Flag.PRIORITY | Flag.END_STREAM,
        1,
        concat(Uint8Array.of(0, 0, 0, 3, 255), encodeHeaders(req("GET", "/p"))),
      ),
    );
    await until(() => s.response(1)?.ended === true);
    assert.deepEqual(json(s.response(1)), { target: "/p", length: 0, sum: 0 });
  });
});

Deno.test("http2: a reply head larger than a frame goes out as HEADERS + CONTINUATION", async () => {
  await withSession({}, (s) => {
    s.handshake();
    s.send(get(1, "/wide"));
    const fresh = s.next();
    assert.deepEqual(
      fresh.map((f) => [f.type, f.flags, f.streamId, f.payload.byteLength]),
      [
        [FrameType.HEADERS, 0, 1, MAX_FRAME_SIZE],
        [FrameType.CONTINUATION, 0, 1, MAX_FRAME_SIZE],
        [
          FrameType.CONTINUATION,
          Flag.END_HEADERS,
          1,
          fresh[2]?.payload.byteLength,
        ],
        [FrameType.DATA, Flag.END_STREAM, 1, 2],
      ],
    );
    const r = s.response(1);
    assert.equal(header(r, "x-wide"), "w".repeat(40_000));
    assert.deepEqual(json(r), {});
  });
});

// ---------------------------------------------------------------------------
// Flow control of replies
// ---------------------------------------------------------------------------

Deno.test("http2: a reply waits for stream window, and for connection window", async () => {
  await withSession({}, async (s) => {
    s.handshake([[Setting.INITIAL_WINDOW_SIZE, 10]]);
    s.send(get(1, "/big/70000"));
    await until(() => s.response(1)?.status !== undefined);
    assert.deepEqual(s.response(1)?.dataFrames, [10]);
    assert.equal(header(s.response(1), "content-length"), "70000");
    assert.equal(s.conn.busy, true);

    // the stream may take 100000 more: the connection's 65535 bound it
    s.send(windowUpdate(1, 100_000));
    let r = s.response(1);
    assert.equal(r?.body.byteLength, 65_535);
    assert.ok(r?.dataFrames.every((n) => n <= MAX_FRAME_SIZE));
    assert.equal(r?.ended, false);

    // PING is answered while the reply waits; no DATA goes out for it
    s.next();
    s.send(frame(FrameType.PING, 0, 0, new Uint8Array(8)));
    assert.deepEqual(s.next().map((f) => f.type), [FrameType.PING]);

    s.send(windowUpdate(0, 10_000));
    r = s.response(1);
    assert.equal(r?.ended, true);
    assert.deepEqual(r?.body, pattern(70_000));
    assert.equal(s.conn.busy, false);
    // a stream with a large window gets what the connection has left
    s.send(settings([[Setting.INITIAL_WINDOW_SIZE, 1 << 20]]));
    s.send(get(3, "/big/6000"));
    await until(() => s.response(3)?.status !== undefined);
    assert.equal(s.response(3)?.body.byteLength, 10_000 - 4_465);
  });
});

Deno.test("http2: DATA frames never exceed the client's MAX_FRAME_SIZE", async () => {
  for (const max of [16_384, 20_000]) {
    await withSession({}, async (s) => {
      s.handshake([
        [Setting.MAX_FRAME_SIZE, max],
        [Setting.INITIAL_WINDOW_SIZE, 1 << 20],
      ]);
      s.send(get(1, "/big/40000"));
      await until(() => s.response(1)?.ended === true);
      const r = s.response(1);
      assert.deepEqual(
        r?.dataFrames,
        max === 16_384 ? [16_384, 16_384, 7_232] : [20_000, 20_000],
      );
      assert.deepEqual(r?.body, pattern(40_000));
    });
  }
});

Deno.test("http2: SETTINGS changing INITIAL_WINDOW_SIZE adjusts the open streams' windows", async () => {
  await withSession({}, async (s) => {
    s.handshake([[Setting.INITIAL_WINDOW_SIZE, 10]]);
    s.send(get(1, "/big/100"), get(3, "/big/5"));
    await until(() => s.response(3)?.ended === true);
    assert.deepEqual(s.response(1)?.dataFrames, [10]);
    s.next();
    // +20 for the open stream: 20 more bytes, after the ACK
    s.send(settings([[Setting.INITIAL_WINDOW_SIZE, 30]]));
    const fresh = s.next();
    assert.deepEqual(
      fresh.map((f) => [f.type, f.flags, f.payload.byteLength]),
      [
        [FrameType.SETTINGS, Flag.ACK, 0],
        [FrameType.DATA, 0, 20],
      ],
    );
    // -30: the window is -30 now; 40 more make it 10
    s.send(settings([[Setting.INITIAL_WINDOW_SIZE, 0]]));
    s.send(windowUpdate(1, 40));
    assert.deepEqual(s.response(1)?.dataFrames, [10, 20, 10]);
    s.send(windowUpdate(1, 1_000));
    const r = s.response(1);
    assert.deepEqual(r?.dataFrames, [10, 20, 10, 60]);
    assert.equal(r?.ended, true);
    assert.deepEqual(r?.body, pattern(100));
    // a new stream starts with the latest value (0): HEADERS only
    s.send(get(5, "/big/5"));
    await until(() => s.response(5)?.status !== undefined);
    assert.deepEqual(s.response(5)?.dataFrames, []);
  });
});

// ---------------------------------------------------------------------------
// Flow control of requests
// ---------------------------------------------------------------------------

Deno.test("http2: large request bodies get stream and connection WINDOW_UPDATEs, a client within its windows is never blocked", async () => {
  await withSession({}, async (s) => {
    s.handshake();
    // the client's view of its send windows, from the server's frames
    let connWindow = 65_535 + (8 << 20) - 65_535;
    const streamWindow = new Map<number, number>();
    const updates: Array<[number, number]> = [];
    const chunk = new Uint8Array(MAX_FRAME_SIZE).fill(7);
    const send = (id: number, flags = 0) => {
      const w = streamWindow.get(id) ?? 1 << 20;
      assert.ok(
        w >= chunk.byteLength && connWindow >= chunk.byteLength,
        `blocked: stream ${id} ${w}, connection ${connWindow}`,
      );
      s.send(data(id, chunk, flags));
      streamWindow.set(id, w - chunk.byteLength);
      connWindow -= chunk.byteLength;
      for (const f of s.next()) {
        assert.notEqual(f.type, FrameType.RST_STREAM);
        assert.notEqual(f.type, FrameType.GOAWAY);
        if (f.type !== FrameType.WINDOW_UPDATE) continue;
        updates.push([f.streamId, word(f.payload)]);
        if (f.streamId === 0) connWindow += word(f.payload);
        else {
          streamWindow.set(
            f.streamId,
            (streamWindow.get(f.streamId) ?? 0) + word(f.payload),
          );
        }
      }
    };
    s.send(headers(1, req("POST", "/one")), headers(3, req("POST", "/two")));
    s.next();
    // 512 KiB on stream 1: one stream WINDOW_UPDATE at exactly that point
    for (let i = 0; i < 31; i++) send(1);
    assert.equal(updates.length, 0);
    send(1);
    assert.deepEqual(updates, [[1, 512 << 10]]);
    // 4 MiB in all (over both streams): one connection WINDOW_UPDATE
    for (let i = 0; i < 256 - 32 - 1; i++) send(i % 2 === 0 ? 3 : 1);
    assert.ok(updates.every(([id]) => id !== 0));
    send(3);
    assert.deepEqual(updates.filter(([id]) => id === 0), [[0, 4 << 20]]);
    // 9 MiB in all: more than both initial windows
    for (let i = 0; i < 320; i++) send(1);
    send(1, Flag.END_STREAM);
    send(3, Flag.END_STREAM);
    assert.equal(updates.filter(([id]) => id === 0).length, 2);
    await until(() => s.response(3)?.ended === true);
    const sent1 = (32 + 111 + 320 + 1) * MAX_FRAME_SIZE;
    assert.equal((json(s.response(1)) as { length: number }).length, sent1);
    assert.equal(
      (json(s.response(3)) as { length: number }).length,
      (112 + 1 + 1) * MAX_FRAME_SIZE,
    );
    // every WINDOW_UPDATE gives back what was received, and no more
    const granted = updates.reduce((n, [id, inc]) => id === 0 ? n + inc : n, 0);
    assert.ok(granted <= sent1 + 114 * MAX_FRAME_SIZE);
  });
});

// Note: the server gives window back as soon as it receives DATA (bodies are
// taken at once), so its receive windows never fall below half their size
// and a frame (at most 16384 bytes) can never exceed them: "DATA beyond the
// stream's/connection's window" (RST_STREAM / GOAWAY FLOW_CONTROL_ERROR) is
// unreachable by any client and is not tested here.

// ---------------------------------------------------------------------------
// PING
// ---------------------------------------------------------------------------

Deno.test("http2: PING gets a PING ACK with the same 8 bytes; a PING ACK gets nothing", async () => {
  await withSession({}, (s) => {
    s.handshake();
    const opaque = Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8);
    s.send(frame(FrameType.PING, 0, 0, opaque));
    const fresh = s.next();
    assert.equal(fresh.length, 1);
    assert.deepEqual(fresh[0], {
      type: FrameType.PING,
      flags: Flag.ACK,
      streamId: 0,
      payload: opaque,
    });
    s.send(frame(FrameType.PING, Flag.ACK, 0, opaque));
    assert.deepEqual(s.next(), []);
    assert.ok(s.pipe.open);
  });
});

// ---------------------------------------------------------------------------
// Early replies, concurrency, resets
// ---------------------------------------------------------------------------

Deno.test("http2: an early refusal is sent, then RST_STREAM NO_ERROR; later DATA is ignored", async () => {
  await withSession({}, async (s) => {
    s.handshake();
    s.send(headers(1, req("POST", "/refuse")), data(1, "first part"));
    const fresh = s.next();
    assert.deepEqual(fresh.map((f) => [f.type, f.flags, f.streamId]), [
      [FrameType.HEADERS, Flag.END_HEADERS, 1],
      [FrameType.DATA, Flag.END_STREAM, 1],
      [FrameType.RST_STREAM, 0, 1],
    ]);
    const r = s.response(1);
    assert.equal(r?.status, 429);
    assert.equal(r?.reset, ErrorCode.NO_ERROR);
    assert.deepEqual(json(r), { refused: true });
    // the rest of the body in flight: ignored
    s.send(data(1, "more"), data(1, "end", Flag.END_STREAM));
    assert.deepEqual(s.next(), []);
    // and the connection goes on
    s.send(post(3, "/next", "ok"));
    await until(() => s.response(3)?.ended === true);
    assert.equal(s.response(3)?.status, 200);
    assert.ok(s.pipe.open);
  });
});

Deno.test("http2: a sink that refuses mid-body: its reply, RST_STREAM NO_ERROR, no abort", async () => {
  await withSession({}, (s) => {
    s.handshake();
    s.send(headers(1, req("POST", "/cap")), data(1, "12345678"));
    assert.deepEqual(s.next(), []);
    s.send(data(1, "90abc"));
    const r = s.response(1);
    assert.equal(r?.status, 413);
    assert.equal(r?.ended, true);
    assert.equal(r?.reset, ErrorCode.NO_ERROR);
    s.next();
    s.send(data(1, "def", Flag.END_STREAM));
    assert.deepEqual(s.next(), []);
    assert.deepEqual(s.handler.aborted, []);
    // the refusal at the last frame: no RST_STREAM needed
    s.send(
      headers(3, req("POST", "/cap")),
      data(3, "x".repeat(20), Flag.END_STREAM),
    );
    const r3 = s.response(3);
    assert.equal(r3?.status, 413);
    assert.equal(r3?.reset, undefined);
  });
});

Deno.test("http2: streams over MAX_CONCURRENT_STREAMS are refused; more than 100 refusals end the connection", async () => {
  await withSession({ maxStreams: 2 }, async (s) => {
    s.handshake();
    s.send(headers(1, req("POST", "/a")), headers(3, req("POST", "/b")));
    s.send(headers(5, req("POST", "/c")));
    assert.deepEqual(resets(s.next(), ErrorCode.REFUSED_STREAM), [5]);
    assert.equal(s.handler.heads.length, 2);
    // a stream ends: room again
    s.send(data(1, "", Flag.END_STREAM));
    await until(() => s.response(1)?.ended === true);
    s.send(get(7, "/d"));
    await until(() => s.response(7)?.ended === true);
    assert.equal(s.response(7)?.status, 200);
    s.send(headers(9, req("POST", "/e")));
    // 99 more refusals are borne...
    for (let id = 11; id < 11 + 2 * 99; id += 2) {
      s.send(headers(id, req("POST", "/f")));
    }
    assert.equal(resets(s.frames(), ErrorCode.REFUSED_STREAM).length, 100);
    assert.ok(s.pipe.open);
    // ...the 101st is not
    s.send(headers(11 + 2 * 99, req("POST", "/g")));
    assertGoaway(s, ErrorCode.ENHANCE_YOUR_CALM);
    assert.equal(s.goaway()?.lastStreamId, 11 + 2 * 99);
    assert.equal(resets(s.frames(), ErrorCode.REFUSED_STREAM).length, 100);
    // the streams in flight were released
    assert.deepEqual(s.handler.aborted.sort(), ["/b", "/e"]);
  });
});

Deno.test("http2: a rapid reset flood (HEADERS + RST_STREAM) gets GOAWAY ENHANCE_YOUR_CALM", async () => {
  const flood = (n: number) => {
    const parts: Uint8Array[] = [];
    for (let i = 0; i < n; i++) {
      parts.push(
        headers(2 * i + 1, req("POST", "/x")),
        rst(2 * i + 1, ErrorCode.CANCEL),
      );
    }
    return concat(...parts);
  };
  await withSession({ maxStreams: 10 }, async (s) => {
    s.handshake();
    s.send(flood(200));
    assert.ok(s.pipe.open);
    assert.deepEqual(s.next(), []);
    assert.equal(s.handler.aborted.length, 200);
    s.send(get(401, "/after"));
    await until(() => s.response(401)?.ended === true);
  });
  await withSession({ maxStreams: 10 }, (s) => {
    s.handshake();
    s.send(flood(201));
    assertGoaway(s, ErrorCode.ENHANCE_YOUR_CALM);
    assert.equal(s.goaway()?.lastStreamId, 401);
    assert.equal(s.handler.aborted.length, 201);
  });
});

Deno.test("http2: a client RST_STREAM while the handler runs: the reply is never written", async () => {
  await withSession({}, async (s) => {
    s.handshake();
    let release = () => {};
    s.handler.hold = new Promise((r) => release = r);
    s.send(post(1, "/slow", "body"));
    s.send(rst(1, ErrorCode.CANCEL));
    release();
    await settle();
    assert.equal(s.response(1), undefined);
    assert.deepEqual(
      s.handler.aborted,
      [],
      "the sink had ended: nothing to abort",
    );
    assert.equal(s.conn.busy, false);
    s.send(post(3, "/next", ""));
    await until(() => s.response(3)?.ended === true);
  });
});

Deno.test("http2: a client RST_STREAM mid-body aborts the sink", async () => {
  await withSession({}, async (s) => {
    s.handshake();
    s.send(headers(1, req("POST", "/mid")), data(1, "part"));
    s.send(rst(1, ErrorCode.CANCEL));
    assert.deepEqual(s.handler.aborted, ["/mid"]);
    assert.deepEqual(s.next(), []);
    // the client closed it: its DATA after is a STREAM_CLOSED error (RFC 9113 5.1)
    s.send(data(1, "rest", Flag.END_STREAM));
    await settle();
    const [reset, ...more] = s.next();
    assert.deepEqual(more, []);
    assert.equal(reset?.type, FrameType.RST_STREAM);
    assert.equal(reset?.streamId, 1);
    assert.equal(
      reset &&
        new DataView(reset.payload.buffer, reset.payload.byteOffset).getUint32(
          0,
        ),
      ErrorCode.STREAM_CLOSED,
    );
    assert.ok(s.pipe.open);
  });
});

Deno.test("http2: trailers end the body", async () => {
  await withSession({}, async (s) => {
    s.handshake();
    s.send(
      headers(1, req("POST", "/trailers", [["content-length", "5"]])),
      data(1, "hello"),
      headers(1, [["x-checksum", "1"]], Flag.END_STREAM),
    );
    await until(() => s.response(1)?.ended === true);
    assert.deepEqual(json(s.response(1)), {
      target: "/trailers",
      length: 5,
      sum: checksum(0, encoder.encode("hello")),
    });
    // trailers over CONTINUATION
    const block = encodeHeaders([["x-t", "2"]]);
    s.send(
      headers(3, req("POST", "/t2")),
      data(3, "ab"),
      frame(FrameType.HEADERS, Flag.END_STREAM, 3, block.subarray(0, 2)),
      frame(FrameType.CONTINUATION, Flag.END_HEADERS, 3, block.subarray(2)),
    );
    await until(() => s.response(3)?.ended === true);
    assert.equal((json(s.response(3)) as { length: number }).length, 2);
  });
});

Deno.test("http2: a header block that ends stops the headers timeout", async () => {
  await withSession({ limits: { headersTimeoutMs: 20 } }, async (s) => {
    s.handshake();
    let release = () => {};
    s.handler.hold = new Promise((r) => release = r);
    // trailers over CONTINUATION, then the handler takes its time
    const block = encodeHeaders([["x-t", "1"]]);
    s.send(
      headers(1, req("POST", "/slow")),
      data(1, "ab"),
      frame(FrameType.HEADERS, Flag.END_STREAM, 1, block.subarray(0, 1)),
      frame(FrameType.CONTINUATION, Flag.END_HEADERS, 1, block.subarray(1)),
    );
    await sleep(50);
    assert.ok(s.pipe.open);
    assert.equal(s.goaway(), undefined);
    release();
    await until(() => s.response(1)?.ended === true);
  });
});

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

const handshake = concat(PREFACE, settings());
const hpackOf = (list: HeaderList) => encodeHeaders(list);

/** Bytes that end the connection with GOAWAY `code`; `raw` bytes start without the preface. */
const CONNECTION_ERRORS: Array<{
  name: string;
  bytes: Uint8Array;
  code: number;
  raw?: boolean;
}> = [
  {
    name: "not the preface",
    raw: true,
    bytes: encoder.encode("GET / HTTP/1.1\r\nhost: a\r\n\r\n"),
    code: ErrorCode.PROTOCOL_ERROR,
  },
  {
    name: "a first frame other than SETTINGS",
    raw: true,
    bytes: concat(PREFACE, frame(FrameType.PING, 0, 0, new Uint8Array(8))),
    code: ErrorCode.PROTOCOL_ERROR,
  },
  {
    name: "HEADERS on stream 0",
    bytes: headers(0, req("GET", "/")),
    code: ErrorCode.PROTOCOL_ERROR,
  },
  {
    name: "HEADERS on an even stream",
    bytes: headers(2, req("GET", "/")),
    code: ErrorCode.PROTOCOL_ERROR,
  },
  {
    name: "a frame over 16384 bytes (its header is enough)",
    bytes: frame(FrameType.DATA, 0, 1, new Uint8Array(16_385)).subarray(0, 9),
    code: ErrorCode.FRAME_SIZE_ERROR,
  },
  {
    name: "SETTINGS of 5 bytes",
    bytes: frame(FrameType.SETTINGS, 0, 0, new Uint8Array(5)),
    code: ErrorCode.FRAME_SIZE_ERROR,
  },
  {
    name: "a SETTINGS ACK with a payload",
    bytes: frame(FrameType.SETTINGS, Flag.ACK, 0, new Uint8Array(6)),
    code: ErrorCode.FRAME_SIZE_ERROR,
  },
  {
    name: "ENABLE_PUSH=2",
    bytes: settings([[Setting.ENABLE_PUSH, 2]]),
    code: ErrorCode.PROTOCOL_ERROR,
  },
  {
    name: "INITIAL_WINDOW_SIZE over 2^31-1",
    bytes: settings([[Setting.INITIAL_WINDOW_SIZE, 2 ** 31]]),
    code: ErrorCode.FLOW_CONTROL_ERROR,
  },
  {
    name: "MAX_FRAME_SIZE under 16384",
    bytes: settings([[Setting.MAX_FRAME_SIZE, 16_383]]),
    code: ErrorCode.PROTOCOL_ERROR,
  },
  {
    name: "SETTINGS on a stream",
    bytes: frame(FrameType.SETTINGS, 0, 1),
    code: ErrorCode.PROTOCOL_ERROR,
  },
  {
    name: "a header block interrupted by DATA (on an open stream)",
    bytes: concat(
      headers(1, req("POST", "/")),
      frame(FrameType.HEADERS, 0, 3, hpackOf(req("POST", "/"))),
      data(1, "x"),
    ),
    code: ErrorCode.PROTOCOL_ERROR,
  },
  {
    name: "a header block continued on another stream",
    bytes: concat(
      frame(FrameType.HEADERS, 0, 1, hpackOf(req("POST", "/"))),
      frame(FrameType.CONTINUATION, Flag.END_HEADERS, 3),
    ),
    code: ErrorCode.PROTOCOL_ERROR,
  },
  {
    name: "CONTINUATION without a header block",
    bytes: frame(
      FrameType.CONTINUATION,
      Flag.END_HEADERS,
      1,
      hpackOf(req("GET", "/")),
    ),
    code: ErrorCode.PROTOCOL_ERROR,
  },
  {
    name: "PUSH_PROMISE",
    bytes: frame(FrameType.PUSH_PROMISE, Flag.END_HEADERS, 1, u32(2)),
    code: ErrorCode.PROTOCOL_ERROR,
  },
  {
    name: "garbage HPACK (index 0)",
    bytes: frame(FrameType.HEADERS, Flag.END_HEADERS, 1, Uint8Array.of(0x80)),
    code: ErrorCode.COMPRESSION_ERROR,
  },
  {
    name: "garbage HPACK (a truncated literal)",
    bytes: frame(
      FrameType.HEADERS,
      Flag.END_HEADERS,
      1,
      Uint8Array.of(0x00, 0x05, 0x61),
    ),
    code: ErrorCode.COMPRESSION_ERROR,
  },
  {
    name: "a header list over maxHeaderBytes",
    bytes: headers(
      1,
      req("GET", "/", [["x-big", "b".repeat(LIMITS.maxHeaderBytes)]]),
    ),
    code: ErrorCode.COMPRESSION_ERROR,
  },
  {
    name: "a header block over 2 x maxHeaderBytes",
    bytes: concat(
      frame(FrameType.HEADERS, 0, 1, new Uint8Array(MAX_FRAME_SIZE)),
      frame(FrameType.CONTINUATION, 0, 1, new Uint8Array(1)),
    ),
    code: ErrorCode.ENHANCE_YOUR_CALM,
  },
  {
    // a CONTINUATION flood of empty frames must not grow a block forever
    name: "endless empty CONTINUATION frames",
    bytes: concat(
      frame(FrameType.HEADERS, 0, 1, new Uint8Array(0)),
      ...Array.from(
        { length: 20_000 },
        () => frame(FrameType.CONTINUATION, 0, 1),
      ),
    ),
    code: ErrorCode.ENHANCE_YOUR_CALM,
  },
  {
    name: "a WINDOW_UPDATE of 0 on stream 0",
    bytes: windowUpdate(0, 0),
    code: ErrorCode.PROTOCOL_ERROR,
  },
  {
    name: "a connection window over 2^31-1",
    bytes: windowUpdate(0, 2 ** 31 - 1),
    code: ErrorCode.FLOW_CONTROL_ERROR,
  },
  {
    name: "WINDOW_UPDATE of 3 bytes",
    bytes: frame(FrameType.WINDOW_UPDATE, 0, 0, new Uint8Array(3)),
    code: ErrorCode.FRAME_SIZE_ERROR,
  },
  {
    name: "PING of 7 bytes",
    bytes: frame(FrameType.PING, 0, 0, new Uint8Array(7)),
    code: ErrorCode.FRAME_SIZE_ERROR,
  },
  {
    name: "PING on a stream",
    bytes: frame(FrameType.PING, 0, 1, new Uint8Array(8)),
    code: ErrorCode.PROTOCOL_ERROR,
  },
  {
    name: "DATA on an idle stream",
    bytes: data(1, "x"),
    code: ErrorCode.PROTOCOL_ERROR,
  },
  {
    name: "DATA on stream 0",
    bytes: data(0, "x"),
    code: ErrorCode.PROTOCOL_ERROR,
  },
  {
    name: "RST_STREAM on an idle stream",
    bytes: rst(1, ErrorCode.CANCEL),
    code: ErrorCode.PROTOCOL_ERROR,
  },
  {
    name: "RST_STREAM of 3 bytes",
    bytes: concat(
      headers(1, req("POST", "/")),
      frame(FrameType.RST_STREAM, 0, 1, new Uint8Array(3)),
    ),
    code: ErrorCode.FRAME_SIZE_ERROR,
  },
  {
    name: "padding as long as the frame",
    bytes: concat(
      headers(1, req("POST", "/")),
      frame(FrameType.DATA, Flag.PADDED, 1, Uint8Array.of(3, 0, 0)),
    ),
    code: ErrorCode.PROTOCOL_ERROR,
  },
  {
    name: "HEADERS too short for PRIORITY",
    bytes: frame(
      FrameType.HEADERS,
      Flag.END_HEADERS | Flag.PRIORITY,
      1,
      new Uint8Array(4),
    ),
    code: ErrorCode.FRAME_SIZE_ERROR,
  },
];

Deno.test("http2: protocol errors get GOAWAY with their code and end the pipe", async (t) => {
  for (const c of CONNECTION_ERRORS) {
    await t.step(c.name, () =>
      withSession({}, (s) => {
        s.send(c.raw === true ? c.bytes : concat(handshake, c.bytes));
        assertGoaway(s, c.code, c.name);
        assert.ok(!s.pipe.destroyed);
        assert.equal(s.conn.busy, false);
        // nothing more is read
        const n = s.frames().length;
        s.send(
          get(101, "/after"),
          frame(FrameType.PING, 0, 0, new Uint8Array(8)),
        );
        assert.equal(s.frames().length, n);
      }));
  }
});

/** Bytes on stream 1 that reset it with `code`; the connection then serves stream 3. */
const STREAM_ERRORS: Array<{ name: string; bytes: Uint8Array; code: number }> =
  [
    {
      name: "no :path",
      bytes: headers(
        1,
        [[":method", "GET"], [":scheme", "https"]],
        Flag.END_STREAM,
      ),
      code: ErrorCode.PROTOCOL_ERROR,
    },
    {
      name: "no :method",
      bytes: headers(
        1,
        [[":scheme", "https"], [":path", "/"]],
        Flag.END_STREAM,
      ),
      code: ErrorCode.PROTOCOL_ERROR,
    },
    {
      name: "an empty :path",
      bytes: headers(1, req("GET", ""), Flag.END_STREAM),
      code: ErrorCode.PROTOCOL_ERROR,
    },
    {
      name: "an upper-case header name",
      bytes: headers(1, req("GET", "/", [["X-Upper", "1"]]), Flag.END_STREAM),
      code: ErrorCode.PROTOCOL_ERROR,
    },
    {
      name: "connection: keep-alive",
      bytes: headers(
        1,
        req("GET", "/", [["connection", "keep-alive"]]),
        Flag.END_STREAM,
      ),
      code: ErrorCode.PROTOCOL_ERROR,
    },
    {
      name: "te: gzip",
      bytes: headers(1, req("GET", "/", [["te", "gzip"]]), Flag.END_STREAM),
      code: ErrorCode.PROTOCOL_ERROR,
    },
    {
      name: "a pseudo-header after a header",
      bytes: headers(
        1,
        [...req("GET", "/", [["x", "1"]]), [":method", "GET"]],
        Flag.END_STREAM,
      ),
      code: ErrorCode.PROTOCOL_ERROR,
    },
    {
      name: "a repeated pseudo-header",
      bytes: headers(
        1,
        [...req("GET", "/"), [":path", "/again"]],
        Flag.END_STREAM,
      ),
      code: ErrorCode.PROTOCOL_ERROR,
    },
    {
      name: "an unknown pseudo-header",
      bytes: headers(
        1,
        [[":status", "200"], ...req("GET", "/")],
        Flag.END_STREAM,
      ),
      code: ErrorCode.PROTOCOL_ERROR,
    },
    {
      name: "a malformed content-length",
      bytes: headers(1, req("POST", "/", [["content-length", "-1"]])),
      code: ErrorCode.PROTOCOL_ERROR,
    },
    {
      name: "content-length 5, END_STREAM on HEADERS",
      bytes: headers(
        1,
        req("POST", "/", [["content-length", "5"]]),
        Flag.END_STREAM,
      ),
      code: ErrorCode.PROTOCOL_ERROR,
    },
    {
      name: "content-length 5, 3 bytes of DATA",
      bytes: concat(
        headers(1, req("POST", "/", [["content-length", "5"]])),
        data(1, "abc", Flag.END_STREAM),
      ),
      code: ErrorCode.PROTOCOL_ERROR,
    },
    {
      name: "content-length 2, 3 bytes of DATA (before END_STREAM)",
      bytes: concat(
        headers(1, req("POST", "/", [["content-length", "2"]])),
        data(1, "abc"),
      ),
      code: ErrorCode.PROTOCOL_ERROR,
    },
    {
      name: "content-length 5, 3 bytes then trailers",
      bytes: concat(
        headers(1, req("POST", "/", [["content-length", "5"]])),
        data(1, "abc"),
        headers(1, [["x", "1"]], Flag.END_STREAM),
      ),
      code: ErrorCode.PROTOCOL_ERROR,
    },
    {
      name: "trailers without END_STREAM",
      bytes: concat(headers(1, req("POST", "/")), headers(1, [["x", "1"]])),
      code: ErrorCode.PROTOCOL_ERROR,
    },
    {
      name: "DATA after END_STREAM",
      bytes: concat(post(1, "/", "abc"), data(1, "more")),
      code: ErrorCode.STREAM_CLOSED,
    },
    {
      name: "a stream WINDOW_UPDATE of 0",
      bytes: concat(headers(1, req("POST", "/")), windowUpdate(1, 0)),
      code: ErrorCode.PROTOCOL_ERROR,
    },
    {
      name: "a stream window over 2^31-1",
      bytes: concat(headers(1, req("POST", "/")), windowUpdate(1, 2 ** 31 - 1)),
      code: ErrorCode.FLOW_CONTROL_ERROR,
    },
    {
      name: "PRIORITY of 4 bytes",
      bytes: concat(
        headers(1, req("POST", "/")),
        frame(FrameType.PRIORITY, 0, 1, new Uint8Array(4)),
      ),
      code: ErrorCode.FRAME_SIZE_ERROR,
    },
  ];

Deno.test("http2: stream errors get RST_STREAM and the connection goes on", async (t) => {
  for (const c of STREAM_ERRORS) {
    await t.step(c.name, () =>
      withSession({}, async (s) => {
        s.handshake();
        s.send(c.bytes);
        const fresh = s.next();
        assert.deepEqual(
          fresh.map((f) => [f.type, f.streamId, word(f.payload)]),
          [[FrameType.RST_STREAM, 1, c.code]],
        );
        s.send(post(3, "/next", "ok"));
        await until(() => s.response(3)?.ended === true);
        await settle();
        assert.equal(s.response(3)?.status, 200);
        // no reply on the stream that was reset
        assert.equal(s.response(1)?.status, undefined);
        assert.ok(s.pipe.open);
        assert.equal(s.conn.busy, false);
      }));
  }
});

// ---------------------------------------------------------------------------
// drain()
// ---------------------------------------------------------------------------

Deno.test("http2: drain() sends GOAWAY NO_ERROR, refuses new streams, ends after the last reply", async () => {
  await withSession({}, async (s) => {
    s.handshake();
    s.send(headers(1, req("POST", "/inflight")), data(1, "ab"));
    s.conn.drain();
    assert.deepEqual(s.goaway(), { lastStreamId: 1, code: ErrorCode.NO_ERROR });
    assert.ok(s.pipe.open);
    s.send(get(3, "/late"));
    assert.deepEqual(resets(s.frames(), ErrorCode.REFUSED_STREAM), [3]);
    assert.equal(s.handler.heads.length, 1);
    assert.ok(s.pipe.open);
    s.send(data(1, "c", Flag.END_STREAM));
    await until(() => s.pipe.ended);
    assert.deepEqual(json(s.response(1)), {
      target: "/inflight",
      length: 3,
      sum: checksum(0, encoder.encode("abc")),
    });
    assert.ok(s.response(1)?.ended);
  });
});

Deno.test("http2: drain() with nothing in flight ends at once; so does a client GOAWAY", async () => {
  await withSession({}, (s) => {
    s.handshake();
    s.conn.drain();
    assert.deepEqual(s.goaway(), { lastStreamId: 0, code: ErrorCode.NO_ERROR });
    assert.ok(s.pipe.ended);
    s.conn.drain(); // once closed, nothing more
  });
  await withSession({}, (s) => {
    s.handshake();
    s.send(frame(FrameType.GOAWAY, 0, 0, u32(0, ErrorCode.NO_ERROR)));
    assert.ok(s.pipe.ended);
  });
});

// ---------------------------------------------------------------------------
// Timeouts and a slow reader
// ---------------------------------------------------------------------------

Deno.test("http2: no preface within headersTimeoutMs: the pipe is destroyed", async () => {
  await withSession({ limits: { headersTimeoutMs: 20 } }, async (s) => {
    s.send(PREFACE.subarray(0, 10));
    await sleep(5);
    assert.ok(s.pipe.open);
    await until(() => s.pipe.destroyed);
  });
  // the preface without SETTINGS is no better
  await withSession({ limits: { headersTimeoutMs: 20 } }, async (s) => {
    s.send(PREFACE);
    await until(() => s.pipe.destroyed);
  });
});

Deno.test("http2: a header block that never ends gets GOAWAY", async () => {
  await withSession({ limits: { headersTimeoutMs: 20 } }, async (s) => {
    s.handshake();
    s.send(frame(FrameType.HEADERS, 0, 1, hpackOf(req("GET", "/"))));
    await until(() => s.pipe.ended);
    assertGoaway(s, ErrorCode.PROTOCOL_ERROR);
  });
});

Deno.test("http2: a body that stops gets 408 and RST_STREAM NO_ERROR", async () => {
  await withSession({ limits: { bodyTimeoutMs: 40 } }, async (s) => {
    s.handshake();
    s.send(headers(1, req("POST", "/stalled")), data(1, "a"));
    await until(() => s.response(1)?.reset !== undefined);
    const r = s.response(1);
    assert.equal(r?.status, 408);
    assert.equal(r?.ended, true);
    assert.equal(r?.reset, ErrorCode.NO_ERROR);
    assert.deepEqual(s.handler.aborted, ["/stalled"]);
    assert.equal(s.handler.failures[0]?.status, 408);
    assert.ok(s.pipe.open);
    // a body that does arrive in time is not cut off
    s.send(headers(3, req("POST", "/ok")), data(3, "a"));
    await sleep(5);
    s.send(data(3, "b", Flag.END_STREAM));
    await until(() => s.response(3)?.ended === true);
    await sleep(60);
    assert.equal(s.response(3)?.status, 200);
    assert.equal(s.response(3)?.reset, undefined);
    assert.equal(s.handler.failures.length, 1);
  });
});

Deno.test("http2: a reply the client grants no window is cancelled after the body timeout", async () => {
  await withSession({ limits: { bodyTimeoutMs: 40 } }, async (s) => {
    s.handshake([[Setting.INITIAL_WINDOW_SIZE, 0]]);
    s.send(get(1, "/big/100"));
    await until(() => s.response(1)?.status !== undefined);
    assert.deepEqual(s.response(1)?.dataFrames, []);
    assert.equal(s.conn.busy, true);
    await until(() => s.response(1)?.reset !== undefined);
    assert.equal(s.response(1)?.reset, ErrorCode.CANCEL);
    assert.equal(s.conn.busy, false, "the held reply is dropped");
    // a window that comes later sends nothing for it
    s.send(windowUpdate(1, 1000));
    await settle();
    assert.deepEqual(s.response(1)?.dataFrames, []);
    assert.ok(s.pipe.open);
  });
});

Deno.test("http2: an idle connection gets GOAWAY NO_ERROR and ends; a stream in flight keeps it", async () => {
  await withSession({ limits: { idleTimeoutMs: 30 } }, async (s) => {
    s.handshake();
    s.send(headers(1, req("POST", "/long")));
    await sleep(60);
    assert.ok(s.pipe.open);
    s.send(data(1, "x", Flag.END_STREAM));
    await until(() => s.response(1)?.ended === true);
    const answered = performance.now();
    await until(() => s.pipe.ended);
    assert.ok(performance.now() - answered >= 15, "idle timer restarted");
    assert.deepEqual(s.goaway(), { lastStreamId: 1, code: ErrorCode.NO_ERROR });
  });
});

Deno.test("http2: a slow reader (over maxQueuedBytes buffered) is destroyed", async () => {
  await withSession({ limits: { maxQueuedBytes: 1_000 } }, (s) => {
    s.handshake();
    s.pipe.buffered = 1_000;
    s.send(frame(FrameType.PING, 0, 0, new Uint8Array(8)));
    assert.ok(!s.pipe.destroyed, "at the limit is still fine");
    s.pipe.buffered = 1_001;
    s.send(frame(FrameType.PING, 0, 0, new Uint8Array(8)));
    assert.ok(s.pipe.destroyed);
    // nothing more is written
    const n = s.pipe.writes.length;
    s.send(frame(FrameType.PING, 0, 0, new Uint8Array(8)));
    assert.equal(s.pipe.writes.length, n);
  });
});

// ---------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------

interface GenRequest {
  path: string;
  body: Uint8Array;
  /** DATA frame sizes, cycled. */
  sizes: number[];
  /** Where the header block is cut into CONTINUATION frames (fractions). */
  cuts: number[];
  padded: boolean;
  withLength: boolean;
}

const genRequest: fc.Arbitrary<GenRequest> = fc.record({
  path: fc.oneof(
    fc.stringMatching(/^\/[a-z0-9]{0,12}$/).filter((p) =>
      p !== "/cap" && p !== "/refuse"
    ),
    fc.integer({ min: 0, max: 40_000 }).map((n) => `/big/${n}`),
  ),
  body: fc.uint8Array({ maxLength: 3_000 }),
  sizes: fc.array(fc.integer({ min: 1, max: 1_500 }), {
    minLength: 1,
    maxLength: 4,
  }),
  cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 3 }),
  padded: fc.boolean(),
  withLength: fc.boolean(),
});

/** A client's bytes for `requests` on streams 1, 3, 5, ... */
function clientBytes(requests: GenRequest[]): Uint8Array {
  const parts: Uint8Array[] = [
    PREFACE,
    settings([[Setting.INITIAL_WINDOW_SIZE, 1 << 20]]),
    windowUpdate(0, 1 << 20),
  ];
  requests.forEach((r, i) => {
    const id = 2 * i + 1;
    const extra: HeaderList = r.withLength
      ? [["content-length", String(r.body.byteLength)]]
      : [];
    const block = encodeHeaders(req("POST", r.path, extra));
    const cuts = [
      ...new Set(r.cuts.map((c) => Math.floor(c * block.byteLength))),
    ]
      .sort((a, b) => a - b);
    const pieces: Uint8Array[] = [];
    let at = 0;
    for (const c of cuts) {
      pieces.push(block.subarray(at, c));
      at = c;
    }
    pieces.push(block.subarray(at));
    const empty = r.body.byteLength === 0;
    pieces.forEach((piece, j) => {
      const last = j === pieces.length - 1;
      const flags = (last ? Flag.END_HEADERS : 0) |
        (j === 0 && empty ? Flag.END_STREAM : 0);
      parts.push(
        frame(
          j === 0 ? FrameType.HEADERS : FrameType.CONTINUATION,
          flags,
          id,
          piece,
        ),
      );
    });
    for (let off = 0, k = 0; off < r.body.byteLength; k++) {
      const n = Math.min(r.sizes[k % r.sizes.length]!, r.body.byteLength - off);
      const chunk = r.body.subarray(off, off + n);
      off += n;
      const end = off === r.body.byteLength ? Flag.END_STREAM : 0;
      parts.push(
        r.padded
          ? frame(
            FrameType.DATA,
            Flag.PADDED | end,
            id,
            concat(Uint8Array.of(3), chunk, new Uint8Array(3)),
          )
          : frame(FrameType.DATA, end, id, chunk),
      );
    }
  });
  return concat(...parts);
}

/** A stream's response, comparable with deepEqual. */
function summary(r: Response): unknown {
  return {
    status: r.status,
    headers: r.headers,
    body: [...r.body],
    ended: r.ended,
    reset: r.reset,
  };
}

Deno.test("http2 property: a client's bytes cut into arbitrary chunks get the same replies as whole", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(genRequest, { minLength: 1, maxLength: 5 }),
      fc.array(fc.integer({ min: 1, max: 400 }), {
        minLength: 1,
        maxLength: 8,
      }),
      async (requests, cuts) => {
        const wire = clientBytes(requests);
        const whole = new Session();
        const chunked = new Session();
        try {
          whole.send(wire);
          for (let at = 0, k = 0; at < wire.byteLength; k++) {
            const n = cuts[k % cuts.length]!;
            chunked.conn.receive(wire.slice(at, at + n));
            at += n;
          }
          await until(() =>
            whole.responses().size === requests.length &&
            chunked.responses().size === requests.length &&
            [...whole.responses().values(), ...chunked.responses().values()]
              .every((r) => r.ended)
          );
          const a = whole.responses();
          const b = chunked.responses();
          requests.forEach((r, i) => {
            const id = 2 * i + 1;
            const ra = a.get(id);
            const rb = b.get(id);
            assert.ok(ra !== undefined && rb !== undefined);
            assert.deepEqual(summary(rb), summary(ra));
            assert.equal(ra.status, 200);
            assert.equal(ra.reset, undefined);
            const big = /^\/big\/(\d+)$/.exec(r.path);
            if (big !== null) {
              assert.deepEqual(ra.body, pattern(Number(big[1])));
            } else {
              assert.deepEqual(json(ra), {
                target: r.path,
                length: r.body.byteLength,
                sum: checksum(0, r.body),
              });
            }
          });
          for (const s of [whole, chunked]) {
            assert.ok(s.pipe.open);
            assert.equal(
              s.frames().filter((f) => f.type === FrameType.GOAWAY).length,
              0,
            );
          }
        } finally {
          whole.conn.closed();
          chunked.conn.closed();
        }
      },
    ),
    { numRuns: 60 },
  );
});

const streamIds = fc.constantFrom(1, 3, 5, 7, 9);

const genFrame: fc.Arbitrary<Uint8Array> = fc.oneof(
  {
    // anything
    weight: 3,
    arbitrary: fc.record({
      type: fc.integer({ min: 0, max: 12 }),
      flags: fc.integer({ min: 0, max: 255 }),
      streamId: fc.oneof(
        fc.constantFrom(0, 1, 2, 3, 5, 7),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
      ),
      payload: fc.uint8Array({ maxLength: 40 }),
    }).map((f) => frame(f.type, f.flags, f.streamId, f.payload)),
  },
  {
    // a valid request head (perhaps with a CONTINUATION), so that streams open and replies go out
    weight: 4,
    arbitrary: fc.record({
      streamId: streamIds,
      path: fc.constantFrom("/a", "/refuse", "/cap", "/big/20000", "/wide"),
      flags: fc.constantFrom(0, Flag.END_STREAM),
      cut: fc.option(fc.integer({ min: 0, max: 20 }), { nil: undefined }),
    }).map((h) => {
      const block = encodeHeaders(req("POST", h.path));
      if (h.cut === undefined) {
        return frame(
          FrameType.HEADERS,
          Flag.END_HEADERS | h.flags,
          h.streamId,
          block,
        );
      }
      return concat(
        frame(FrameType.HEADERS, h.flags, h.streamId, block.subarray(0, h.cut)),
        frame(
          FrameType.CONTINUATION,
          Flag.END_HEADERS,
          h.streamId,
          block.subarray(h.cut),
        ),
      );
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      streamId: streamIds,
      body: fc.uint8Array({ maxLength: 30 }),
      flags: fc.constantFrom(0, Flag.END_STREAM),
    }).map((d) => data(d.streamId, d.body, d.flags)),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      streamId: fc.constantFrom(0, 1, 3, 5),
      increment: fc.integer({ min: 0, max: 70_000 }),
    }).map((w) => windowUpdate(w.streamId, w.increment)),
  },
  {
    weight: 1,
    arbitrary: fc.tuple(streamIds, fc.integer({ min: 0, max: 13 })).map((
      [id, code],
    ) => rst(id, code)),
  },
  {
    weight: 1,
    arbitrary: fc.array(
      fc.tuple(
        fc.integer({ min: 0, max: 8 }),
        fc.integer({ min: 0, max: 70_000 }),
      ),
      { maxLength: 3 },
    ).map((entries) => settings(entries)),
  },
);

Deno.test("http2 property: arbitrary frames after the handshake never make receive throw", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(genFrame, { maxLength: 30 }),
      fc.boolean(),
      async (frames, oneChunk) => {
        const s = new Session({ maxStreams: 3 });
        try {
          s.handshake([[Setting.INITIAL_WINDOW_SIZE, 100]]);
          if (oneChunk) s.send(...frames);
          else for (const f of frames) s.send(f);
          await settle();
          // bytes written are whole frames, never after the end
          const written = s.frames();
          assert.equal(s.pipe.lateWrites, 0);
          assert.ok(!s.pipe.destroyed);
          if (s.pipe.ended) {
            const clientGoaway = parseFrames(concat(...frames)).some((f) =>
              f.type === FrameType.GOAWAY
            );
            assert.ok(
              clientGoaway || written.at(-1)?.type === FrameType.GOAWAY,
              "ended without a GOAWAY",
            );
          } else {
            // still serving
            s.send(frame(FrameType.PING, 0, 0, new Uint8Array(8)));
            assert.ok(
              s.pipe.ended || s.frames().at(-1)?.type === FrameType.PING,
              "a PING is answered while open",
            );
          }
          // no frame over the largest MAX_FRAME_SIZE the client allowed
          let maxFrame = MAX_FRAME_SIZE;
          for (const f of parseFrames(concat(...frames))) {
            if (f.type !== FrameType.SETTINGS || f.flags & Flag.ACK) continue;
            const value = settingsOf(f.payload).get(Setting.MAX_FRAME_SIZE);
            if (value !== undefined) maxFrame = Math.max(maxFrame, value);
          }
          for (const f of written) assert.ok(f.payload.byteLength <= maxFrame);
        } finally {
          s.conn.closed();
        }
      },
    ),
    { numRuns: 300 },
  );
});
