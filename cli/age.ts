/**
 * Ages as kubectl prints them (apimachinery's `duration.HumanDuration`):
 * `45s`, `5m3s`, `42m`, `3h5m`, `20h`, `2d4h`, `31d`, `2y10d`.
 *
 * @module
 */

/**
 * The age kubectl shows for `ms` milliseconds: seconds below two minutes,
 * then minutes and seconds below ten minutes, minutes below three hours,
 * hours and minutes below eight hours, hours below two days, days and
 * hours below eight days, days below two years, then years and days.
 *
 * @example
 * ```ts
 * import { humanAge } from "./age.ts";
 * console.assert(humanAge(303_000) === "5m3s");
 * console.assert(humanAge(2 * 86_400_000) === "2d");
 * ```
 */
export function humanAge(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.trunc(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.trunc(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  const days = Math.trunc(hours / 24);
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${days}d` : `${days}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${days}d`;
  const years = Math.trunc(days / 365);
  if (hours < 24 * 365 * 8) {
    const d = days % 365;
    return d === 0 ? `${years}y` : `${years}y${d}d`;
  }
  return `${years}y`;
}

/**
 * The age of an RFC 3339 timestamp as of `nowMs`, as kubectl's date
 * columns show it; `<invalid>` for a value that is no timestamp.
 *
 * @example
 * ```ts
 * import { ageSince } from "./age.ts";
 * console.assert(ageSince("2026-01-01T00:00:00Z", Date.parse("2026-01-01T00:05:03Z")) === "5m3s");
 * ```
 */
export function ageSince(timestamp: string, nowMs: number): string {
  const t = Date.parse(timestamp);
  return Number.isNaN(t) ? "<invalid>" : humanAge(nowMs - t);
}
