/**
 * Does Deno's `node:http2` server survive hostile HTTP/2 load? (task
 * `bench:http2-crash`): writes bench/reports/http2_crash.json. Not a test.
 *
 * The webhook serves HTTP/2 with its own framing over `node:tls`
 * (framework/http2.ts), not with `node:http2`; this is the evidence for
 * that choice. Each run starts a bare `node:http2` secure server
 * (HTTP/1.1 allowed, as the webhook's HTTP/2 version was) in a child
 * process and sends it `--rounds` rounds of `--clients` HTTP/2 sessions
 * at once, each POSTing a ~`--mib` MiB body, then records how the child
 * ended: still serving, or killed by a signal. Two server behaviours:
 *
 * - `read`: every body is read and answered 200.
 * - `refuse`: past 8 requests in flight, answer 429 at once and close the
 *   stream (what a webhook does to bound its memory).
 *
 * Usage: deno run -A bench/http2_crash.ts [--runs 6] [--clients 200]
 *   [--mib 1] [--rounds 2]
 *
 * @module
 */

import http2 from "node:http2";
import { parseArgs } from "node:util";
import { generateSelfSignedCertificate } from "../framework/self_signed.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    runs: { type: "string", default: "6" },
    clients: { type: "string", default: "200" },
    mib: { type: "string", default: "1" },
    rounds: { type: "string", default: "2" },
    serve: { type: "string", default: "" },
    cert: { type: "string", default: "" },
    key: { type: "string", default: "" },
  },
});

/** How the server answers (see the module documentation). */
type Mode = "read" | "refuse";

if (values.serve !== "") {
  // the child: a bare node:http2 server, its port on stdout
  const mode = values.serve as Mode;
  let inFlight = 0;
  const server = http2.createSecureServer({
    cert: await Deno.readTextFile(values.cert),
    key: await Deno.readTextFile(values.key),
    allowHTTP1: true,
  }, (req, res) => {
    if (mode === "refuse" && inFlight >= 8) {
      res.writeHead(429, { "content-type": "application/json" });
      res.end('{"code":429}');
      req.stream.close(http2.constants.NGHTTP2_NO_ERROR);
      return;
    }
    inFlight++;
    let bytes = 0;
    req.on("data", (c: Uint8Array) => bytes += c.byteLength);
    req.on("end", () => {
      inFlight--;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ bytes }));
    });
    req.on("error", () => inFlight--);
  });
  server.on("sessionError", () => {});
  server.on("tlsClientError", () => {});
  server.listen(0, "127.0.0.1", () => {
    const addr = server.address();
    console.log(typeof addr === "object" && addr !== null ? addr.port : 0);
  });
  await new Promise(() => {});
}

/** One round: `clients` sessions at once, one ~`mib` MiB POST each. */
async function round(
  port: number,
  ca: string,
  clients: number,
  body: string,
  statuses: Record<string, number>,
): Promise<void> {
  await Promise.all(
    Array.from({ length: clients }, () =>
      new Promise<void>((resolve) => {
        const session = http2.connect(`https://localhost:${port}`, { ca });
        session.on("error", () => {});
        const req = session.request({
          ":method": "POST",
          ":path": "/",
          "content-type": "application/json",
        });
        let status = "no answer";
        const done = (key: string) => {
          statuses[key] = (statuses[key] ?? 0) + 1;
          session.destroy();
          resolve();
        };
        req.on("response", (h) => status = String(h[":status"]));
        req.on("data", () => {});
        req.on("end", () => done(status));
        req.on("error", (err: Error) => done(err.name));
        req.setTimeout(20_000, () => done("timeout"));
        req.end(body);
      })),
  );
}

/** One run against a fresh server: how it ended. */
async function run(
  mode: Mode,
  files: { cert: string; key: string; ca: string },
  clients: number,
  body: string,
  rounds: number,
): Promise<{ mode: Mode; ended: string; statuses: Record<string, number> }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--allow-net",
      new URL(import.meta.url).pathname,
      `--serve=${mode}`,
      `--cert=${files.cert}`,
      `--key=${files.key}`,
    ],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const { value } = await reader.read();
  reader.releaseLock();
  const port = Number(value?.trim());
  const statuses: Record<string, number> = {};
  for (let r = 0; r < rounds; r++) {
    await round(port, files.ca, clients, body, statuses);
  }
  // a crash may come a moment after the last answer
  const ended = await Promise.race([
    child.status.then((s) => s.signal ?? `exit ${s.code}`),
    new Promise<string>((r) => setTimeout(() => r("alive"), 500)),
  ]);
  const stderr = child.stderr.pipeThrough(new TextDecoderStream())
    .getReader();
  if (ended === "alive") child.kill("SIGKILL");
  await child.status;
  let text = "";
  for (;;) {
    const { value, done } = await stderr.read();
    if (done) break;
    text += value;
  }
  // nghttp2's assertion text, when it aborted on one
  const assertion = /Assertion `[^']+' failed/.exec(text)?.[0];
  return {
    mode,
    ended: assertion === undefined ? ended : `${ended}: ${assertion}`,
    statuses,
  };
}

const runs = Number(values.runs);
const clients = Number(values.clients);
const rounds = Number(values.rounds);
const dir = await Deno.makeTempDir({ prefix: "evictor-http2-crash-" });
try {
  const pair = await generateSelfSignedCertificate({
    hosts: ["localhost", "127.0.0.1"],
  });
  const files = { cert: `${dir}/tls.crt`, key: `${dir}/tls.key`, ca: "" };
  await Deno.writeTextFile(files.cert, pair.certPem);
  await Deno.writeTextFile(files.key, pair.keyPem);
  files.ca = pair.certPem;
  const body = JSON.stringify({
    pad: "x".repeat(Number(values.mib) * 1024 * 1024),
  });
  const results = [];
  for (const mode of ["read", "refuse"] as const) {
    for (let i = 0; i < runs; i++) {
      const r = await run(mode, files, clients, body, rounds);
      console.error(JSON.stringify(r));
      results.push(r);
    }
  }
  const report = {
    date: new Date().toISOString(),
    deno: Deno.version.deno,
    clients,
    mib: Number(values.mib),
    rounds,
    crashed: results.filter((r) => r.ended !== "alive").length,
    runs: results.length,
    results,
  };
  const path = new URL("./reports/http2_crash.json", import.meta.url).pathname;
  await Deno.writeTextFile(path, JSON.stringify(report, null, 2) + "\n");
  console.log(
    `${report.crashed} of ${report.runs} runs ended the server (${path})`,
  );
} finally {
  await Deno.remove(dir, { recursive: true });
}
