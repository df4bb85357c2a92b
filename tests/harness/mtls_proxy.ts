/**
 * A TLS front for the Nova simulator that, like a cloud behind a
 * client-certificate gateway, completes a handshake only with a client
 * certificate signed by its CA (node:https, `requestCert` and
 * `rejectUnauthorized`). It forwards every request to the simulator and
 * rewrites the simulator's origin in answers (the catalog) to its own, so
 * that Keystone and every endpoint are reached through it.
 *
 * @module
 */
import https from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type CertificatePair, createTestCa } from "./pki.ts";

/** A running front. */
export interface MtlsProxy {
  /** `https://127.0.0.1:PORT`. */
  origin: string;
  /** The CA of the server and of accepted client certificates. */
  caCertPem: string;
  /** A client certificate it accepts. */
  client: CertificatePair;
  /** Subjects (CN) of the client certificates of the requests served. */
  clients: string[];
  /** Stops it. */
  close(): Promise<void>;
}

/** The request body as text (the OpenStack APIs speak JSON). */
async function body(req: IncomingMessage): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const chunk of req) {
    text += decoder.decode(chunk as Uint8Array, { stream: true });
  }
  return text + decoder.decode();
}

/**
 * Starts a front for the simulator at `upstream` (`http://127.0.0.1:PORT`).
 *
 * @example
 * ```ts ignore
 * const front = await startMtlsProxy(new URL(sim.authUrl).origin);
 * ```
 */
export async function startMtlsProxy(upstream: string): Promise<MtlsProxy> {
  const ca = await createTestCa("evictor-mtls-ca");
  const serving = await ca.issue({
    commonName: "keystone-front",
    hosts: ["127.0.0.1"],
    usage: "server",
  });
  const client = await ca.issue({ commonName: "evictor", usage: "client" });
  const clients: string[] = [];
  let origin = "";
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const peer = (req.socket as unknown as {
      getPeerCertificate(): { subject?: { CN?: string } };
    }).getPeerCertificate();
    clients.push(peer.subject?.CN ?? "(none)");
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
      if (k === "host" || k === "connection" || v === undefined) continue;
      headers.set(k, Array.isArray(v) ? v.join(", ") : v);
    }
    const payload = req.method === "GET" || req.method === "HEAD"
      ? undefined
      : await body(req);
    const answer = await fetch(`${upstream}${req.url ?? "/"}`, {
      method: req.method ?? "GET",
      headers,
      ...(payload === undefined ? {} : { body: payload }),
    });
    const text = (await answer.text()).replaceAll(upstream, origin);
    const out: Record<string, string> = {};
    answer.headers.forEach((v, k) => {
      if (k !== "content-length" && k !== "content-encoding") out[k] = v;
    });
    res.writeHead(answer.status, out);
    res.end(text);
  };
  const server = https.createServer({
    cert: serving.certPem,
    key: serving.keyPem,
    ca: [ca.certPem],
    requestCert: true,
    rejectUnauthorized: true,
  }, (req, res) => {
    handle(req, res).catch((e) => {
      res.writeHead(502);
      res.end(String(e));
    });
  });
  await new Promise<void>((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve())
  );
  origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    caCertPem: ca.certPem,
    client,
    clients,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
