/**
 * Text rendering of a drain's progress, shared by the kubectl plugin and the
 * demo: a bar of migrated, in-flight, failed and outstanding VMs.
 *
 * @module
 */

/** The counts a progress bar shows. */
export interface DrainCounts {
  migrated: number;
  inFlight: number;
  /** Still on the host, including those in flight and failed. */
  outstanding: number;
  failed: number;
}

/**
 * Renders `counts` as a fixed-width bar: `#` migrated, `>` in flight, `!`
 * failed, `.` waiting.
 *
 * @example
 * ```ts
 * import { renderBar } from "./progress.ts";
 * console.log(renderBar({ migrated: 5, inFlight: 2, outstanding: 5, failed: 1 }, 10));
 * // [#####>>!..]
 * ```
 */
export function renderBar(counts: DrainCounts, width = 30): string {
  if (!Number.isInteger(width) || width < 1) {
    throw new RangeError(`width must be an integer >= 1, got ${width}`);
  }
  const total = counts.migrated + counts.outstanding;
  if (total === 0) return `[${"#".repeat(width)}]`;
  const waiting = Math.max(
    0,
    counts.outstanding - counts.inFlight - counts.failed,
  );
  const parts: [string, number][] = [
    ["#", counts.migrated],
    [">", counts.inFlight],
    ["!", counts.failed],
    [".", waiting],
  ];
  // Largest-remainder rounding so that the cells always add up to `width`.
  const exact = parts.map(([, n]) => (n / total) * width);
  const cells = exact.map(Math.floor);
  let left = width - cells.reduce((a, b) => a + b, 0);
  const order = exact
    .map((x, i) => ({ i, r: x - Math.floor(x) }))
    .sort((a, b) => b.r - a.r || a.i - b.i);
  for (const { i } of order) {
    if (left <= 0) break;
    cells[i] = (cells[i] ?? 0) + 1;
    left--;
  }
  return `[${parts.map(([c], i) => c.repeat(cells[i] ?? 0)).join("")}]`;
}

/**
 * One line: the bar, then the counts in words.
 *
 * @example
 * ```ts
 * import { renderProgressLine } from "./progress.ts";
 * console.log(renderProgressLine("node042", { migrated: 3, inFlight: 1, outstanding: 2, failed: 0 }));
 * ```
 */
export function renderProgressLine(
  name: string,
  counts: DrainCounts,
  width = 30,
): string {
  const total = counts.migrated + counts.outstanding;
  return `${name.padEnd(14)} ${renderBar(counts, width)} ${
    String(counts.migrated).padStart(3)
  }/${total} migrated, ${counts.inFlight} in flight, ${counts.outstanding} outstanding, ${counts.failed} failed`;
}
