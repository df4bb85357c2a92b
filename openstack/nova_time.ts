/**
 * Nova's timestamps. The API writes them without a zone
 * (`2026-11-29T22:00:00.000000`) and notifications as Python's
 * `str(datetime)` (`2026-11-29 22:00:00.123456`), both meaning UTC;
 * `Date.parse` would read a zone-less string as local time. One parser for
 * both, so that the API's and the feed's clocks are read alike.
 *
 * @module
 */

const TIMESTAMP =
  /^(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:?\d\d)?$/i;

/**
 * A Nova timestamp in epoch milliseconds (fractions below a millisecond
 * dropped; no zone means UTC), or undefined when the value is not one.
 *
 * @example
 * ```ts
 * import { parseNovaTime } from "./nova_time.ts";
 * console.assert(parseNovaTime("1970-01-01T00:00:01.000000") === 1000);
 * console.assert(parseNovaTime("1970-01-01 00:00:01.500000") === 1500);
 * console.assert(parseNovaTime("1970-01-01T01:00:01+01:00") === 1000);
 * console.assert(parseNovaTime("yesterday") === undefined);
 * ```
 */
export function parseNovaTime(
  value: string | null | undefined,
): number | undefined {
  const m = TIMESTAMP.exec(value ?? "");
  if (m === null) return undefined;
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  const ms = Date.UTC(
    Number(y),
    Number(mo) - 1,
    Number(d),
    Number(h),
    Number(mi),
    Number(s),
  ) + Number((frac ?? "0").padEnd(3, "0").slice(0, 3));
  return Number.isNaN(ms) ? undefined : ms - zoneOffsetMs(zone);
}

/** A zone's offset east of UTC in ms (`Z` or none: 0). */
function zoneOffsetMs(zone: string | undefined): number {
  if (zone === undefined || zone.toUpperCase() === "Z") return 0;
  const sign = zone.startsWith("-") ? -1 : 1;
  const digits = zone.slice(1).replace(":", "");
  return sign *
    (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2))) * 60_000;
}
