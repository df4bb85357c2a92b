/**
 * Raw client connections for tests of the servers' timeouts: a TLS
 * connection that sends only what the test writes, and a read until the
 * server closes it.
 *
 * @module
 */

/** A raw TLS connection to the server, offering `alpn`. */
export async function rawTls(
  port: number,
  certPem: string,
  alpn: string[] = ["http/1.1"],
): Promise<Deno.TlsConn> {
  const conn = await Deno.connectTls({
    hostname: "localhost",
    port,
    caCerts: [certPem],
    alpnProtocols: alpn,
  });
  await conn.handshake();
  return conn;
}

/** Reads until the server closes; the ms it took and what was read. */
export async function untilClosed(
  conn: Deno.Conn,
  giveUpMs: number,
): Promise<{ ms: number; text: string }> {
  const started = performance.now();
  const buf = new Uint8Array(4096);
  let text = "";
  const giveUp = setTimeout(() => conn.close(), giveUpMs);
  try {
    for (;;) {
      const n = await conn.read(buf);
      if (n === null) break;
      text += new TextDecoder().decode(buf.subarray(0, n));
    }
  } catch {
    // reset by the server, or closed by the give-up timer
  } finally {
    clearTimeout(giveUp);
  }
  try {
    conn.close();
  } catch {
    // already closed
  }
  return { ms: performance.now() - started, text };
}
