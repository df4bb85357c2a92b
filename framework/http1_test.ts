import assert from "node:assert/strict";
import { FakePipe } from "../tests/harness/fake_pipe.ts";
import fc from "fast-check";
import {
  ChunkedDecoder,
  Http1Connection,
  parseHead,
  serializeReply,
} from "./http1.ts";
import type {
  BodySink,
  ConnectionLimits,
  Reply,
  RequestHandler,
  RequestHead,
} from "./http_exchange.ts";
import { jsonReply } from "./http_exchange.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/**
 * Echoes each request (target and body) as JSON; "/refuse" is refused at
 * its head, "/cap" after 4 body bytes.
 */
class EchoHandler implements RequestHandler {
  aborted = 0;
  heads: RequestHead[] = [];
  begin(head: RequestHead): Reply | BodySink {
    this.heads.push(head);
    if (head.target === "/refuse") return jsonReply(429, { refused: true });
    const chunks: Uint8Array[] = [];
    let n = 0;
    return {
      data: (chunk) => {
        n += chunk.byteLength;
        if (head.target === "/cap" && n > 4) return jsonReply(413, { n });
        chunks.push(chunk.slice());
        return undefined;
      },
      end: () =>
        Promise.resolve(
          jsonReply(200, {
            target: head.target,
            body: chunks.map((c) => dec.decode(c)).join(""),
          }),
        ),
      abort: () => this.aborted++,
    };
  }
  failure(status: number, message: string): Reply {
    return jsonReply(status, { message });
  }
}

const LIMITS: ConnectionLimits = {
  headersTimeoutMs: 10_000,
  bodyTimeoutMs: 10_000,
  idleTimeoutMs: 10_000,
  maxHeaderBytes: 1024,
  maxQueuedBytes: 1 << 20,
};

function connection(limits: Partial<ConnectionLimits> = {}) {
  const pipe = new FakePipe();
  const handler = new EchoHandler();
  const conn = new Http1Connection(pipe, handler, { ...LIMITS, ...limits });
  return { pipe, handler, conn };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

/** Waits until the pipe holds `n` final replies (not 100 Continue). */
async function replies(pipe: FakePipe, n: number): Promise<Reply[]> {
  for (let i = 0; i < 200; i++) {
    const got = parseReplies(pipe.text());
    if (got.length >= n) return got;
    await tick();
  }
  return parseReplies(pipe.text());
}

/** Parses HTTP/1.1 replies written by the server (bodies by content-length). */
function parseReplies(text: string): Reply[] {
  const out: Reply[] = [];
  let rest = text;
  while (rest.length > 0) {
    const end = rest.indexOf("\r\n\r\n");
    if (end < 0) break;
    const lines = rest.slice(0, end).split("\r\n");
    const status = Number(lines[0]?.split(" ")[1]);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const i = line.indexOf(":");
      headers[line.slice(0, i)] = line.slice(i + 1).trim();
    }
    const len = Number(headers["content-length"] ?? 0);
    const body = rest.slice(end + 4, end + 4 + len);
    rest = rest.slice(end + 4 + len);
    if (status === 100) continue;
    out.push({ status, headers, body: enc.encode(body) });
  }
  return out;
}

function json(reply: Reply | undefined): Record<string, unknown> {
  assert.ok(reply !== undefined, "no reply");
  return JSON.parse(dec.decode(reply.body));
}

function post(target: string, body: string, extra = ""): string {
  return `POST ${target} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n${extra}content-length: ${
    enc.encode(body).byteLength
  }\r\n\r\n${body}`;
}

Deno.test("parseHead: framing, keep-alive and expectations from the head", () => {
  const cases: Array<{
    head: string;
    framing?: unknown;
    keepAlive?: boolean;
    expectContinue?: boolean;
    status?: number;
    message?: RegExp;
  }> = [
    {
      head: "POST /v HTTP/1.1\r\nContent-Length: 12",
      framing: { kind: "length", bytes: 12 },
      keepAlive: true,
      expectContinue: false,
    },
    {
      head: "GET /v?x=1 HTTP/1.1\r\nhost: a",
      framing: { kind: "length", bytes: 0 },
      keepAlive: true,
    },
    {
      head: "POST /v HTTP/1.1\r\nTransfer-Encoding: Chunked",
      framing: { kind: "chunked" },
    },
    {
      head: "POST /v HTTP/1.1\r\ncontent-length: 5\r\ncontent-length: 5",
      framing: { kind: "length", bytes: 5 },
    },
    {
      head: "POST /v HTTP/1.1\r\ncontent-length: 5, 5",
      framing: { kind: "length", bytes: 5 },
    },
    { head: "POST /v HTTP/1.1\r\nConnection: close", keepAlive: false },
    { head: "POST /v HTTP/1.0\r\nhost: a", keepAlive: false },
    {
      head: "POST /v HTTP/1.1\r\nexpect: 100-Continue\r\ncontent-length: 3",
      expectContinue: true,
    },
    {
      head: "POST /v HTTP/1.1\r\ncontent-length: 5\r\ncontent-length: 6",
      status: 400,
      message: /conflicting content-length values 5, 6/,
    },
    {
      head: "POST /v HTTP/1.1\r\ncontent-length: -1",
      status: 400,
      message: /malformed content-length "-1"/,
    },
    {
      head:
        "POST /v HTTP/1.1\r\ntransfer-encoding: chunked\r\ncontent-length: 5",
      status: 400,
      message: /both transfer-encoding and content-length/,
    },
    {
      head: "POST /v HTTP/1.1\r\ntransfer-encoding: gzip, chunked",
      status: 501,
      message: /unsupported transfer-encoding "gzip, chunked"/,
    },
    {
      head: "POST /v HTTP/2.0",
      status: 505,
      message: /unsupported protocol "HTTP\/2.0"/,
    },
    { head: "POST /v", status: 400, message: /malformed request line/ },
    { head: "POST * HTTP/1.1", status: 400, message: /request target "\*"/ },
    { head: "P(ST /v HTTP/1.1", status: 400, message: /malformed method/ },
    {
      head: "POST /v HTTP/1.1\r\nhost: a\r\n folded",
      status: 400,
      message: /malformed header line " folded"/,
    },
    {
      head: "POST /v HTTP/1.1\r\nno colon here",
      status: 400,
      message: /malformed header line/,
    },
    {
      head: "POST /v HTTP/1.1\r\nx-a: b\u0000c",
      status: 400,
      message: /malformed value of header x-a/,
    },
    {
      head: "POST /v HTTP/1.1\r\nexpect: magic",
      status: 417,
      message: /unsupported expectation "magic"/,
    },
  ];
  for (const c of cases) {
    const p = parseHead(c.head);
    if (c.status !== undefined) {
      assert.equal(p.ok, false, c.head);
      if (!p.ok) {
        assert.equal(p.status, c.status, c.head);
        assert.match(p.message, c.message ?? /./, c.head);
      }
      continue;
    }
    assert.ok(p.ok, c.head);
    if (c.framing !== undefined) assert.deepEqual(p.framing, c.framing, c.head);
    if (c.keepAlive !== undefined) {
      assert.equal(p.keepAlive, c.keepAlive, c.head);
    }
    if (c.expectContinue !== undefined) {
      assert.equal(p.expectContinue, c.expectContinue, c.head);
    }
  }
  const p = parseHead(
    "POST /v?a=b HTTP/1.1\r\nX-Thing:  spaced  \r\nx-thing: 2",
  );
  assert.ok(p.ok);
  assert.equal(p.head.target, "/v?a=b");
  assert.equal(p.head.headers.get("x-thing"), "spaced, 2");
});

Deno.test("ChunkedDecoder: bodies, extensions, trailers and malformed encodings", () => {
  const decode = (text: string) => {
    const step = new ChunkedDecoder(64).feed(enc.encode(text));
    return {
      body: step.data.map((d) => dec.decode(d)).join(""),
      done: step.done,
      consumed: step.consumed,
      error: step.error,
    };
  };
  assert.deepEqual(decode("5\r\nhello\r\n0\r\n\r\nNEXT"), {
    body: "hello",
    done: true,
    consumed: 15,
    error: undefined,
  });
  assert.equal(
    decode("3;ext=1\r\nabc\r\nA\r\n0123456789\r\n0\r\n\r\n").body,
    "abc0123456789",
  );
  assert.equal(decode("3\r\nabc\r\n0\r\nx-trailer: 1\r\n\r\n").done, true);
  assert.equal(decode("3\r\nabc\r\n").done, false);
  assert.match(decode("zz\r\n").error ?? "", /malformed chunk size "zz"/);
  assert.match(decode("123456789\r\n").error ?? "", /malformed chunk size/);
  assert.match(
    decode("3\r\nabcd\r\n").error ?? "",
    /chunk data longer than its size/,
  );
  assert.match(decode("3\nabc").error ?? "", /without CR/);
  assert.match(decode("1" + " ".repeat(80)).error ?? "", /exceeds 64 bytes/);
  // a line of megabytes is refused, not converted (a spread of it would throw)
  assert.match(decode("1".repeat(2_000_000)).error ?? "", /exceeds 64 bytes/);
});

Deno.test("ChunkedDecoder: any split of the input gives the same body", () => {
  fc.assert(
    fc.property(
      fc.array(fc.string({ minLength: 1, maxLength: 40 }), { maxLength: 6 }),
      fc.array(fc.nat(200), { maxLength: 8 }),
      (chunks, cuts) => {
        const body = chunks.join("");
        const wire =
          chunks.map((c) =>
            `${enc.encode(c).byteLength.toString(16)}\r\n${c}\r\n`
          ).join("") + "0\r\n\r\n";
        const bytes = enc.encode(wire);
        const at = [...new Set(cuts.map((c) => c % (bytes.byteLength + 1)))]
          .sort((a, b) => a - b);
        const decoder = new ChunkedDecoder(64);
        const got: Uint8Array[] = [];
        let done = false;
        let from = 0;
        for (const to of [...at, bytes.byteLength]) {
          const step = decoder.feed(bytes.subarray(from, to));
          assert.equal(step.error, undefined);
          assert.equal(step.consumed, to - from);
          got.push(...step.data);
          done = step.done;
          from = to;
        }
        assert.ok(done);
        const all = new Uint8Array(got.reduce((n, g) => n + g.byteLength, 0));
        let i = 0;
        for (const g of got) {
          all.set(g, i);
          i += g.byteLength;
        }
        assert.equal(dec.decode(all), body);
      },
    ),
  );
});

Deno.test("serializeReply: one buffer with the status line, headers, length and body", () => {
  const bytes = serializeReply(
    jsonReply(429, { a: 1 }, { "retry-after": "1" }),
    true,
  );
  assert.equal(
    dec.decode(bytes),
    'HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: 1\r\ncontent-length: 7\r\nconnection: close\r\n\r\n{"a":1}',
  );
});

Deno.test("Http1Connection: any split of a keep-alive stream of requests gives the same replies", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.record({
          body: fc.string({ maxLength: 60 }),
          chunked: fc.boolean(),
        }),
        { minLength: 1, maxLength: 4 },
      ),
      fc.array(fc.nat(2000), { maxLength: 10 }),
      async (requests, cuts) => {
        const { pipe, handler, conn } = connection();
        const wire = requests.map((r, i) => {
          if (!r.chunked) return post(`/r${i}`, r.body);
          const b = enc.encode(r.body);
          const chunk = b.byteLength === 0
            ? ""
            : `${b.byteLength.toString(16)}\r\n${r.body}\r\n`;
          return `POST /r${i} HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n${chunk}0\r\n\r\n`;
        }).join("");
        const bytes = enc.encode(wire);
        const at = [...new Set(cuts.map((c) => c % (bytes.byteLength + 1)))]
          .sort((a, b) => a - b);
        let from = 0;
        for (const to of [...at, bytes.byteLength]) {
          conn.receive(bytes.slice(from, to));
          from = to;
          await tick();
        }
        const got = await replies(pipe, requests.length);
        conn.closed();
        assert.equal(got.length, requests.length);
        got.forEach((reply, i) => {
          assert.equal(reply.status, 200);
          assert.deepEqual(json(reply), {
            target: `/r${i}`,
            body: requests[i]?.body,
          });
        });
        assert.equal(handler.heads.length, requests.length);
        assert.equal(pipe.ended || pipe.destroyed, false);
      },
    ),
    { numRuns: 60 },
  );
});

Deno.test("Http1Connection: a refused request's body is dropped and the connection goes on", async () => {
  const { pipe, conn } = connection();
  // refused at its head: the body that follows is read past, not handled
  conn.receive(enc.encode(post("/refuse", "x".repeat(100)) + post("/ok", "1")));
  // refused halfway (after 4 bytes): the rest is dropped
  conn.receive(enc.encode(post("/cap", "0123456789") + post("/ok", "2")));
  const got = await replies(pipe, 4);
  conn.closed();
  assert.deepEqual(got.map((r) => r.status), [429, 200, 413, 200]);
  assert.deepEqual(json(got[1]), { target: "/ok", body: "1" });
  assert.deepEqual(json(got[3]), { target: "/ok", body: "2" });
  assert.equal(pipe.ended, false);
});

Deno.test("Http1Connection: 100 Continue before a body the client holds back", async () => {
  const { pipe, conn } = connection();
  conn.receive(
    enc.encode(
      "POST /v HTTP/1.1\r\nexpect: 100-continue\r\ncontent-length: 2\r\n\r\n",
    ),
  );
  assert.equal(pipe.text(), "HTTP/1.1 100 Continue\r\n\r\n");
  conn.receive(enc.encode("{}"));
  const got = await replies(pipe, 1);
  assert.equal(got[0]?.status, 200);
  // refused at its head: no 100, the final answer, and the connection closes
  const second = connection();
  second.conn.receive(
    enc.encode(
      "POST /refuse HTTP/1.1\r\nexpect: 100-continue\r\ncontent-length: 2\r\n\r\n",
    ),
  );
  assert.match(second.pipe.text(), /^HTTP\/1\.1 429 .*connection: close\r\n/s);
  assert.equal(second.pipe.ended, true);
  conn.closed();
  second.conn.closed();
});

Deno.test("Http1Connection: malformed or oversized heads get their status and the connection closes", async () => {
  const cases: Array<[string, number, RegExp]> = [
    ["GARBAGE\r\n\r\n", 400, /malformed request line/],
    [
      `POST /v HTTP/1.1\r\nx: ${"a".repeat(2000)}\r\n\r\n`,
      431,
      /exceeds 1024 bytes/,
    ],
    [`POST /v HTTP/1.1\r\nx: ${"a".repeat(2000)}`, 431, /exceeds 1024 bytes/],
    [
      "POST /v HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
      400,
      /malformed chunked body/,
    ],
  ];
  for (const [wire, status, message] of cases) {
    const { pipe, conn } = connection();
    conn.receive(enc.encode(wire));
    const got = await replies(pipe, 1);
    assert.equal(got[0]?.status, status, wire.slice(0, 40));
    assert.match(String(json(got[0]).message), message);
    assert.equal(got[0]?.headers["connection"], "close");
    assert.equal(pipe.ended, true);
    // what the client sends after is not handled
    conn.receive(enc.encode(post("/ok", "1")));
    await tick();
    assert.equal(parseReplies(pipe.text()).length, 1);
    conn.closed();
  }
});

Deno.test("Http1Connection: Connection: close and drain end the connection after the reply", async () => {
  const a = connection();
  a.conn.receive(enc.encode(post("/v", "1", "connection: close\r\n")));
  const got = await replies(a.pipe, 1);
  assert.equal(got[0]?.headers["connection"], "close");
  assert.equal(a.pipe.ended, true);
  a.conn.closed();

  const idle = connection();
  idle.conn.drain();
  assert.equal(idle.pipe.ended, true);
  idle.conn.closed();

  const busy = connection();
  busy.conn.receive(enc.encode(post("/v", "12").slice(0, -1)));
  busy.conn.drain();
  assert.equal(busy.pipe.ended, false, "a request in flight is answered");
  busy.conn.receive(enc.encode("2"));
  const last = await replies(busy.pipe, 1);
  assert.equal(last[0]?.status, 200);
  assert.equal(last[0]?.headers["connection"], "close");
  assert.equal(busy.pipe.ended, true);
  busy.conn.closed();
});

Deno.test("Http1Connection: the next request waits, paused, while one is handled", async () => {
  const { pipe, conn } = connection();
  conn.receive(enc.encode(post("/a", "1") + post("/b", "2")));
  assert.equal(pipe.paused, true);
  const got = await replies(pipe, 2);
  assert.equal(pipe.paused, false);
  assert.deepEqual(got.map((r) => json(r).target), ["/a", "/b"]);
  conn.closed();
});

Deno.test("Http1Connection: a connection closed while its request is handled writes nothing", async () => {
  const { pipe, handler, conn } = connection();
  conn.receive(enc.encode(post("/v", "12").slice(0, -1)));
  conn.closed();
  assert.equal(handler.aborted, 1, "the body's sink is released");
  conn.receive(enc.encode("2"));
  await tick();
  assert.equal(pipe.text(), "");
});

Deno.test("Http1Connection: head, body and idle timeouts", async () => {
  const limits = { headersTimeoutMs: 40, bodyTimeoutMs: 40, idleTimeoutMs: 80 };
  const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
  // nothing sent
  const silent = connection(limits);
  await wait(70);
  assert.equal(silent.pipe.destroyed, true);
  silent.conn.closed();
  // a head that never ends
  const slow = connection(limits);
  slow.conn.receive(enc.encode("POST /v HTTP/1.1\r\n"));
  await wait(70);
  assert.equal(slow.pipe.destroyed, true);
  slow.conn.closed();
  // a body that stops: 408, closed
  const half = connection(limits);
  half.conn.receive(enc.encode(post("/v", "1234").slice(0, -2)));
  await wait(70);
  const got = parseReplies(half.pipe.text());
  assert.equal(got[0]?.status, 408);
  assert.match(String(json(got[0]).message), /did not arrive within 40 ms/);
  assert.equal(half.pipe.ended, true);
  assert.equal(half.handler.aborted, 1);
  half.conn.closed();
  // idle after an answer: kept past the head timeout, closed after the idle one
  const idle = connection(limits);
  idle.conn.receive(enc.encode(post("/v", "1")));
  await replies(idle.pipe, 1);
  await wait(55);
  assert.equal(idle.pipe.destroyed, false);
  await wait(60);
  assert.equal(idle.pipe.destroyed, true);
  idle.conn.closed();
});

Deno.test("Http1Connection: a client that reads no replies is cut off", async () => {
  const { pipe, conn } = connection({ maxQueuedBytes: 100 });
  pipe.buffered = 101;
  conn.receive(enc.encode(post("/v", "1")));
  await replies(pipe, 1);
  assert.equal(pipe.destroyed, true);
  conn.closed();
});
