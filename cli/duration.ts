/**
 * Durations as kubectl's flags take them (Go's `time.ParseDuration`:
 * `90s`, `5m`, `1h30m`, `1.5h`, `300ms`), with a bare number read as
 * seconds, as the plugin's `--timeout` always took it.
 *
 * @module
 */

const UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  "µs": 1e-3,
  "μs": 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * Milliseconds of a duration such as `5m`, `90s`, `1h30m` or `2.5s`; a
 * bare number is seconds. Undefined when `text` is not one (or negative).
 *
 * @example
 * ```ts
 * import { durationMs } from "./duration.ts";
 * console.assert(durationMs("1h30m") === 5_400_000);
 * console.assert(durationMs("90") === 90_000);
 * console.assert(durationMs("5x") === undefined);
 * ```
 */
export function durationMs(text: string): number | undefined {
  const t = text.trim();
  if (/^\d+(\.\d+)?$/.test(t)) return Number(t) * 1000;
  if (t === "" || !/^(\d+(\.\d*)?|\.\d+)[a-zµμ]+/.test(t)) return undefined;
  let ms = 0;
  let rest = t;
  while (rest !== "") {
    const m = /^(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/.exec(rest);
    if (m === null) return undefined;
    ms += Number(m[1]) * (UNIT_MS[m[2] ?? ""] ?? NaN);
    rest = rest.slice(m[0].length);
  }
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * Parses the value of a duration flag, or throws a `RangeError` naming
 * the flag, the value and the expected form.
 *
 * @example
 * ```ts
 * import { parseDurationFlag } from "./duration.ts";
 * console.assert(parseDurationFlag("--timeout", "5m") === 300_000);
 * ```
 */
export function parseDurationFlag(flag: string, text: string): number {
  const ms = durationMs(text);
  if (ms === undefined) {
    throw new RangeError(
      `${flag} "${text}" is not valid: expected a duration such as 90s, 5m or 1h30m (a bare number is seconds; 0 waits forever)`,
    );
  }
  return ms;
}

/**
 * A duration as people write it back (`5m`, `1h30m`, `2.5s`), for messages.
 *
 * @example
 * ```ts
 * import { formatDuration } from "./duration.ts";
 * console.assert(formatDuration(5_400_000) === "1h30m");
 * console.assert(formatDuration(3000) === "3s");
 * ```
 */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = (ms % 60_000) / 1000;
  return `${h > 0 ? `${h}h` : ""}${m > 0 ? `${m}m` : ""}${
    s > 0 ? `${Number(s.toFixed(3))}s` : ""
  }`;
}

/**
 * Seconds as `1h02m03s`, `4m05s` or `7s`.
 *
 * @example
 * ```ts
 * import { formatSeconds } from "./duration.ts";
 * console.log(formatSeconds(3723)); // 1h02m03s
 * ```
 */
export function formatSeconds(total: number): string {
  const s = Math.max(0, Math.round(total));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  const two = (n: number) => String(n).padStart(2, "0");
  if (h > 0) return `${h}h${two(m)}m${two(sec)}s`;
  if (m > 0) return `${m}m${two(sec)}s`;
  return `${sec}s`;
}
