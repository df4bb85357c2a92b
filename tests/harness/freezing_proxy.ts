/**
 * A TCP proxy on loopback that can freeze: it stops forwarding in both
 * directions while keeping every connection open, as a NAT or firewall
 * that forgets a connection does. It plays a broker connection that goes
 * silent without closing, to test that heartbeats notice it.
 *
 * @module
 */

/** A running proxy. */
export interface FreezingProxy {
  /** The port it listens on (127.0.0.1). */
  readonly port: number;
  /** Stops forwarding (connections stay open; bytes are read and held). */
  freeze(): void;
  /** Stops listening and closes every connection. */
  close(): Promise<void>;
}

/**
 * Starts a proxy on 127.0.0.1 in front of `127.0.0.1:targetPort`.
 *
 * @example
 * ```ts ignore
 * import { startFreezingProxy } from "./freezing_proxy.ts";
 * const proxy = startFreezingProxy(5672);
 * proxy.freeze();
 * await proxy.close();
 * ```
 */
export function startFreezingProxy(targetPort: number): FreezingProxy {
  if (!Number.isInteger(targetPort) || targetPort <= 0 || targetPort > 65535) {
    throw new RangeError(
      `targetPort must be an integer in 1..65535, got ${targetPort}`,
    );
  }
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const open = new Set<Deno.Conn>();
  const tasks = new Set<Promise<void>>();
  let frozen = false;
  const closeQuietly = (c: Deno.Conn) => {
    if (!open.delete(c)) return;
    try {
      c.close();
    } catch {
      // already closed
    }
  };
  const pump = async (from: Deno.Conn, to: Deno.Conn) => {
    const buf = new Uint8Array(64 * 1024);
    try {
      while (true) {
        const n = await from.read(buf);
        if (n === null) break;
        // Frozen: what arrives is swallowed, nothing goes on, nothing closes.
        if (frozen) continue;
        let off = 0;
        while (off < n) off += await to.write(buf.subarray(off, n));
      }
    } catch {
      // one side went away
    }
    if (!frozen) {
      closeQuietly(from);
      closeQuietly(to);
    }
  };
  const track = (p: Promise<void>) => {
    tasks.add(p);
    void p.finally(() => tasks.delete(p));
  };
  track((async () => {
    try {
      for await (const client of listener) {
        open.add(client);
        track((async () => {
          let server: Deno.Conn;
          try {
            server = await Deno.connect({
              hostname: "127.0.0.1",
              port: targetPort,
            });
          } catch {
            closeQuietly(client);
            return;
          }
          open.add(server);
          await Promise.all([pump(client, server), pump(server, client)]);
        })());
      }
    } catch {
      // the listener was closed
    }
  })());
  return {
    port: (listener.addr as Deno.NetAddr).port,
    freeze: () => {
      frozen = true;
    },
    close: async () => {
      try {
        listener.close();
      } catch {
        // already closed
      }
      for (const c of [...open]) closeQuietly(c);
      await Promise.all([...tasks]);
    },
  };
}
