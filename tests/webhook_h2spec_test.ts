/**
 * The HTTP/2 conformance suite h2spec (github.com/summerwind/h2spec, pinned
 * and built by `hack/h2spec/build.sh`) against our HTTP/2 layer,
 * {@linkcode Http2Connection}, served over `node:tls` the way
 * `framework/webhook_server.ts` serves it (ALPN "h2", the socket as a
 * {@linkcode Pipe}, its bytes to `receive`, its close to `closed`): every
 * case must pass.
 *
 * The connection is driven with a handler that accepts every request and
 * body and answers 200 JSON, not with the real WebhookServer: h2spec sends
 * its requests without a content type, so the server's route checks would
 * answer before the body has arrived and several cases (which go on sending
 * DATA and expect a particular frame back) would race against that early
 * reply. The routes are tested elsewhere; this is about the framing.
 */
import assert from "node:assert/strict";
import type { Socket } from "node:net";
import tls from "node:tls";
import { fileURLToPath } from "node:url";
import { Http2Connection } from "../framework/http2.ts";
import {
  type ConnectionLimits,
  jsonReply,
  type RequestHandler,
} from "../framework/http_exchange.ts";
import { pipeOf } from "../framework/webhook_server.ts";
import { generateSelfSignedCertificate } from "../framework/self_signed.ts";

/** Cases h2spec v2.2.1 runs without `--strict`. */
const H2SPEC_CASES = 145;
/** Bounds a run that hangs (h2spec gives each case `-o 2` seconds). */
const H2SPEC_DEADLINE_MS = 120_000;

const LIMITS: ConnectionLimits = {
  headersTimeoutMs: 10_000,
  bodyTimeoutMs: 10_000,
  idleTimeoutMs: 60_000,
  maxHeaderBytes: 65_536,
  maxQueuedBytes: 1 << 20,
};
const MAX_STREAMS = 100;

/** Takes any request and body, answers 200 with the body's length. */
const acceptAll: RequestHandler = {
  begin: () => {
    let bytes = 0;
    return {
      data: (chunk) => {
        bytes += chunk.byteLength;
        return undefined;
      },
      end: () => Promise.resolve(jsonReply(200, { bytes })),
      abort: () => {},
    };
  },
  failure: (status, message) => jsonReply(status, { message }),
};

interface Server {
  port: number;
  /** Destroys every socket and closes the listener. */
  close(): Promise<void>;
}

async function startServer(cert: string, key: string): Promise<Server> {
  // raw sockets (also those mid-handshake) and TLS sockets, to close at the end
  const sockets = new Set<Socket | tls.TLSSocket>();
  const track = (socket: Socket | tls.TLSSocket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  };
  // as WebhookServer's start and #connected
  const server = tls.createServer({
    cert,
    key,
    ALPNProtocols: ["h2"],
    minVersion: "TLSv1.2",
  }, (socket) => {
    track(socket);
    socket.setNoDelay(true);
    const conn = new Http2Connection(
      pipeOf(socket),
      acceptAll,
      LIMITS,
      MAX_STREAMS,
    );
    socket.on("data", (chunk: Uint8Array) => conn.receive(chunk));
    socket.once("close", () => conn.closed());
    socket.on("error", () => {});
  });
  server.on("connection", (socket: Socket) => track(socket));
  server.on("tlsClientError", () => {});
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  assert.ok(address !== null && typeof address === "object");
  return {
    port: address.port,
    close: async () => {
      const closed = new Promise<void>((resolve) =>
        server.close(() => resolve())
      );
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

/** The h2spec binary: built from hack/h2spec/go.mod on first use, then cached. */
async function h2specBinary(): Promise<string> {
  const script = fileURLToPath(
    new URL("../hack/h2spec/build.sh", import.meta.url),
  );
  const out = await new Deno.Command("bash", {
    args: [script],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  assert.ok(
    out.success,
    `hack/h2spec/build.sh failed with exit code ${out.code}:\n${
      decoder.decode(out.stderr)
    }`,
  );
  return decoder.decode(out.stdout).trim();
}

interface CaseResult {
  /** The spec and section, e.g. "http2 6.5. SETTINGS". */
  section: string;
  /** The case's number within its section and its description. */
  name: string;
  outcome: "passed" | "failed" | "skipped";
  /** What h2spec expected and what it got (failures only). */
  message: string;
}

const ENTITIES: Record<string, string> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
};

function unescapeXml(text: string): string {
  return text.replace(
    /&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g,
    (whole, ref: string) =>
      ref.startsWith("#x")
        ? String.fromCodePoint(parseInt(ref.slice(2), 16))
        : ref.startsWith("#")
        ? String.fromCodePoint(Number(ref.slice(1)))
        : ENTITIES[ref] ?? whole,
  );
}

/** h2spec's "expected lines, then the actual line" as one line; other errors as they are. */
function describeFailure(text: string): string {
  const lines = text.trim().split("\n").map((l) => l.trim());
  if (lines.length < 2) return lines.join("");
  return `expected ${lines.slice(0, -1).join(" or ")}; got ${lines.at(-1)}`;
}

/**
 * The cases of h2spec's JUnit report. Read with patterns, not an XML parser:
 * h2spec writes its failure messages into the report unescaped.
 */
function parseJUnit(xml: string): CaseResult[] {
  const cases: CaseResult[] = [];
  const suites = xml.matchAll(
    /<testsuite name="([^"]*)" package="([^"]*)"[^>]*>([\s\S]*?)<\/testsuite>/g,
  );
  for (const [, title = "", pkg = "", body = ""] of suites) {
    // pkg is e.g. "http2/6.5", title "6.5. SETTINGS"
    const section = `${unescapeXml(pkg).split("/")[0]} ${unescapeXml(title)}`;
    const testcases = body.matchAll(
      /<testcase [^>]*?classname="([^"]*)"[^>]*>([\s\S]*?)<\/testcase>/g,
    );
    let seq = 0;
    for (const [, desc = "", inner = ""] of testcases) {
      seq++;
      const failure = inner.match(
        /<(failure|error)>([\s\S]*?)<\/(?:failure|error)>/,
      );
      cases.push({
        section,
        name: `${seq}: ${unescapeXml(desc)}`,
        outcome: failure
          ? "failed"
          : inner.includes("<skipped")
          ? "skipped"
          : "passed",
        message: failure ? describeFailure(failure[2] ?? "") : "",
      });
    }
  }
  return cases;
}

Deno.test("h2spec: the HTTP/2 layer passes every conformance case", async () => {
  const h2spec = await h2specBinary();
  const { certPem, keyPem } = await generateSelfSignedCertificate({
    hosts: ["127.0.0.1"],
  });
  const dir = await Deno.makeTempDir({ prefix: "evictor-h2spec-" });
  const server = await startServer(certPem, keyPem);
  const abort = new AbortController();
  const deadline = setTimeout(() => abort.abort(), H2SPEC_DEADLINE_MS);
  try {
    const report = `${dir}/report.xml`;
    const out = await new Deno.Command(h2spec, {
      args: [
        "-h",
        "127.0.0.1",
        "-p",
        String(server.port),
        "-t",
        "-k",
        "-o",
        "2",
        "-j",
        report,
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: abort.signal,
    }).output();
    const decoder = new TextDecoder();
    const output = `${decoder.decode(out.stdout)}${decoder.decode(out.stderr)}`;
    // h2spec stops without a report when it cannot connect at all
    const xml = await Deno.readTextFile(report).catch(() => "");
    assert.ok(
      xml !== "",
      `h2spec wrote no report (exit code ${out.code}, signal ${out.signal}):\n${
        output.slice(-4000)
      }`,
    );
    const cases = parseJUnit(xml);
    const notPassed = cases.filter((c) => c.outcome !== "passed");
    assert.equal(
      notPassed.length,
      0,
      `${notPassed.length} of ${cases.length} h2spec cases did not pass:\n${
        notPassed.map((c) =>
          `- ${c.section} / ${c.name}: ${c.outcome}${
            c.message ? `\n    ${c.message}` : ""
          }`
        ).join("\n")
      }`,
    );
    assert.equal(
      cases.length,
      H2SPEC_CASES,
      `h2spec ran ${cases.length} cases, expected ${H2SPEC_CASES}:\n${
        output.slice(-2000)
      }`,
    );
    assert.ok(
      out.success,
      `h2spec exit code ${out.code}:\n${output.slice(-2000)}`,
    );
  } finally {
    clearTimeout(deadline);
    await server.close();
    await Deno.remove(dir, { recursive: true });
  }
});
