/**
 * A benchmark report's targets against its figures: each target named
 * `FIGUREAtMost` (or `FIGURE`, an exact ceiling such as 0 VMs moved twice)
 * is met when that figure is at most its value.
 *
 * @module
 */

/** One target's figure and whether it is met. */
export interface Verdict {
  value: number;
  met: boolean;
}

/**
 * The verdict of each target; a target whose figure is missing or not a
 * number is not met (its value NaN).
 *
 * @example
 * ```ts
 * import { verdictsOf } from "./verdicts.ts";
 * const v = verdictsOf({ ratio: 1.2, vmsMigratedTwice: 0 }, { ratioAtMost: 1.1, vmsMigratedTwice: 0 });
 * console.assert(!v.ratioAtMost?.met && v.vmsMigratedTwice?.met);
 * ```
 */
export function verdictsOf(
  figures: Readonly<Record<string, unknown>>,
  targets: Readonly<Record<string, number>>,
): Record<string, Verdict> {
  return Object.fromEntries(
    Object.entries(targets).map(([name, limit]) => {
      const figure = figures[name.replace(/AtMost$/, "")];
      const value = typeof figure === "number" ? figure : Number.NaN;
      return [name, { value, met: value <= limit }];
    }),
  );
}
