/**
 * Listen addresses in the `host:port` / `:port` form used by flags.
 *
 * @module
 */

/**
 * Parses `host:port`, `:port` (all interfaces) or `[v6]:port`.
 *
 * @example
 * ```ts
 * import { parseAddress } from "./address.ts";
 * console.assert(parseAddress(":8080").hostname === "0.0.0.0");
 * console.assert(parseAddress("127.0.0.1:0").port === 0);
 * ```
 */
export function parseAddress(
  address: string,
): { hostname: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(address);
  const port = m === null ? NaN : Number(m[3]);
  if (m === null || !(port >= 0 && port <= 65535)) {
    throw new TypeError(
      `address must be "host:port" or ":port", got "${address}"`,
    );
  }
  const host = m[1] ?? m[2] ?? "";
  return { hostname: host === "" ? "0.0.0.0" : host, port };
}
