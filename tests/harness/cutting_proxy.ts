/**
 * A TCP proxy on loopback that can cut a client's connection right after a
 * request went through it: the request reaches the server, its answer never
 * reaches the client. It plays a keep-alive connection to Nova that closes
 * after an action went out and before any answer, to test that the HTTP
 * layer does not send the action a second time.
 *
 * @module
 */

const decoder = new TextDecoder();

/** A running proxy. */
export interface CuttingProxy {
  /** The port it listens on (127.0.0.1). */
  readonly port: number;
  /**
   * Arms a cut: the next client connection whose request bytes contain
   * `marker` is closed as soon as those bytes have been passed on to the
   * server (the server's answer is read and thrown away).
   */
  cutNext(marker: string): void;
  /** How many times `marker` went through towards the server. */
  seen(marker: string): number;
  /** Client connections accepted so far. */
  connections(): number;
  /** Stops listening and closes every connection. */
  close(): Promise<void>;
}

function countOf(text: string, marker: string): number {
  return text.split(marker).length - 1;
}

/**
 * Starts a proxy on 127.0.0.1 in front of `127.0.0.1:targetPort`.
 *
 * @example
 * ```ts ignore
 * import { startCuttingProxy } from "./cutting_proxy.ts";
 * const proxy = startCuttingProxy(8774);
 * proxy.cutNext("os-migrateLive");
 * await proxy.close();
 * ```
 */
export function startCuttingProxy(targetPort: number): CuttingProxy {
  if (!Number.isInteger(targetPort) || targetPort <= 0 || targetPort > 65535) {
    throw new RangeError(
      `targetPort must be an integer in 1..65535, got ${targetPort}`,
    );
  }
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const open = new Set<Deno.Conn>();
  const tasks = new Set<Promise<void>>();
  const passed: string[] = [];
  let armed: string | undefined;
  let accepted = 0;

  const closeQuietly = (c: Deno.Conn) => {
    if (!open.delete(c)) return;
    try {
      c.close();
    } catch { /* already closed */ }
  };

  const relay = async (client: Deno.Conn) => {
    let upstream: Deno.Conn;
    try {
      upstream = await Deno.connect({
        hostname: "127.0.0.1",
        port: targetPort,
      });
    } catch {
      closeQuietly(client);
      return;
    }
    open.add(upstream);
    let cut = false;
    const back = (async () => {
      const buf = new Uint8Array(64 * 1024);
      for (;;) {
        let n: number | null;
        try {
          n = await upstream.read(buf);
        } catch {
          break;
        }
        if (n === null) break;
        if (cut) continue; // the answer of a cut request is thrown away
        try {
          await client.write(buf.subarray(0, n));
        } catch {
          break;
        }
      }
      closeQuietly(client);
      closeQuietly(upstream);
    })();
    let text = "";
    const buf = new Uint8Array(64 * 1024);
    for (;;) {
      let n: number | null;
      try {
        n = await client.read(buf);
      } catch {
        break;
      }
      if (n === null) break;
      const chunk = buf.slice(0, n);
      text += decoder.decode(chunk, { stream: true });
      passed.push(decoder.decode(chunk));
      try {
        await upstream.write(chunk);
      } catch {
        break;
      }
      if (armed !== undefined && text.includes(armed)) {
        // The request is on its way to the server: cut the client off before
        // any answer. The upstream side stays open until the server answers
        // (read and dropped by `back`) so the server handles it normally.
        armed = undefined;
        cut = true;
        closeQuietly(client);
        break;
      }
    }
    if (!cut) closeQuietly(upstream);
    await back;
  };

  const acceptLoop = (async () => {
    for (;;) {
      let client: Deno.Conn;
      try {
        client = await listener.accept();
      } catch {
        return;
      }
      accepted++;
      open.add(client);
      const t = relay(client).finally(() => tasks.delete(t));
      tasks.add(t);
    }
  })();

  return {
    port: (listener.addr as Deno.NetAddr).port,
    cutNext: (marker) => {
      if (marker === "") {
        throw new TypeError('marker must be a non-empty string, got ""');
      }
      armed = marker;
    },
    seen: (marker) => countOf(passed.join(""), marker),
    connections: () => accepted,
    close: async () => {
      listener.close();
      await acceptLoop;
      for (const c of [...open]) closeQuietly(c);
      await Promise.all([...tasks]);
    },
  };
}
