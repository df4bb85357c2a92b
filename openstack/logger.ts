/**
 * The logger interface the OpenStack client writes to. It matches pino's
 * call shape (`logger.info(obj, msg)`), so the operator's pino logger can be
 * passed as is.
 *
 * @module
 */

/**
 * A structured logger with pino's call shape.
 *
 * @example
 * ```ts
 * import type { Logger } from "./logger.ts";
 * const logger: Logger = {
 *   debug: () => {},
 *   info: (obj, msg) => console.log(msg, obj),
 *   warn: (obj, msg) => console.warn(msg, obj),
 * };
 * logger.info({ requestId: "req-1" }, "live migration accepted");
 * ```
 */
export interface Logger {
  /** Detailed events (every HTTP call). */
  debug(obj: Record<string, unknown>, msg?: string): void;
  /** Actions that change state in OpenStack. */
  info(obj: Record<string, unknown>, msg?: string): void;
  /** Retries, re-authentication and other recoverable trouble. */
  warn(obj: Record<string, unknown>, msg?: string): void;
}

/**
 * A logger that drops everything.
 *
 * @example
 * ```ts
 * import { silentLogger } from "./logger.ts";
 * silentLogger.info({}, "nobody hears this");
 * ```
 */
export const silentLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
};

/**
 * Removes the query string from a URL for logging, keeping only its origin
 * and path (query strings never carry secrets in our calls, but this keeps
 * log lines short and safe).
 *
 * @example
 * ```ts
 * import { urlForLog } from "./logger.ts";
 * console.log(urlForLog("http://nova/v2.1/servers/detail?host=a")); // http://nova/v2.1/servers/detail
 * ```
 */
export function urlForLog(url: string): string {
  const q = url.indexOf("?");
  return q === -1 ? url : url.slice(0, q);
}
