/**
 * Structured JSON-lines logging on pino: every line carries `level`,
 * `time`, the logger `name` and, inside handlers, the object `key`.
 *
 * @module
 */

import { pino } from "pino";

/** A structured logger (pino). */
export type Logger = pino.Logger;

/** Where log lines go: anything with `write(line)`. */
export interface LogDestination {
  /** Receives one serialized JSON line (with trailing newline). */
  write(line: string): void;
}

/** Options of {@linkcode createLogger}. */
export interface LoggerOptions {
  /** Logger name (the `name` field); default "operator". */
  name?: string;
  /** Minimum level: trace, debug, info, warn, error, fatal, silent. */
  level?: string;
  /** Destination of the lines; default stdout. */
  destination?: LogDestination;
}

const LEVELS = new Set([
  "trace",
  "debug",
  "info",
  "warn",
  "error",
  "fatal",
  "silent",
]);

/**
 * Creates the root logger. Use `logger.child({ name: "x" })` for a named
 * sub-logger and `logger.child({ key })` for per-object lines.
 *
 * @example
 * ```ts
 * import { createLogger } from "./logger.ts";
 * const lines: string[] = [];
 * const log = createLogger({ name: "demo", destination: { write: (l) => lines.push(l) } });
 * log.child({ key: "ns/a" }).info("reconciled");
 * console.assert(JSON.parse(lines[0] ?? "{}").key === "ns/a");
 * ```
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? "info";
  if (!LEVELS.has(level)) {
    throw new RangeError(
      `log level must be one of ${[...LEVELS].join(", ")}, got "${level}"`,
    );
  }
  const opts: pino.LoggerOptions = {
    name: options.name ?? "operator",
    level,
    base: null,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
  };
  if (options.destination !== undefined) {
    return pino(opts, options.destination);
  }
  return pino(opts, pino.destination({ fd: 1, sync: true }));
}

/**
 * A logger that drops everything, for tests and benchmarks.
 *
 * @example
 * ```ts
 * import { silentLogger } from "./logger.ts";
 * silentLogger().info("nothing");
 * ```
 */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
