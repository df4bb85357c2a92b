/**
 * Text rendering of a drain's progress, shared by the kubectl plugin and the
 * demo: a bar of migrated, in-flight, failed, skipped and waiting VMs.
 *
 * @module
 */

/** The counts a progress bar shows. */
export interface DrainCounts {
  migrated: number;
  inFlight: number;
  /** Still on the host, including those in flight, failed and skipped. */
  outstanding: number;
  /** status.failed: migrations that failed (ERROR, refused, out of attempts). */
  failed: number;
  /**
   * status.skipped: VMs left alone, not failed: they wait for a person
   * (SUSPENDED, RESCUE, SHELVED, refused by Nova) or for their deletion.
   */
  skipped: number;
}

/**
 * Renders `counts` as a fixed-width bar: `#` migrated, `>` in flight, `!`
 * failed, `?` skipped (waits for a person), `.` waiting.
 *
 * @example
 * ```ts
 * import { renderBar } from "./progress.ts";
 * console.log(renderBar({ migrated: 5, inFlight: 2, outstanding: 5, failed: 1, skipped: 1 }, 10));
 * // [#####>>!?.]
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
    counts.outstanding - counts.inFlight - counts.failed - counts.skipped,
  );
  const parts: [string, number][] = [
    ["#", counts.migrated],
    [">", counts.inFlight],
    ["!", counts.failed],
    ["?", counts.skipped],
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
 * One line: the bar, then the counts in words (skipped VMs only when there
 * are some: they are the ones a person must see to).
 *
 * @example
 * ```ts
 * import { renderProgressLine } from "./progress.ts";
 * console.log(renderProgressLine("node042", { migrated: 3, inFlight: 1, outstanding: 2, failed: 0, skipped: 1 }));
 * // node042        [##################>>>>>>??????]   3/5 migrated, 1 in flight, 2 outstanding, 0 failed, 1 skipped
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
  }/${total} migrated, ${counts.inFlight} in flight, ${counts.outstanding} outstanding, ${counts.failed} failed${
    counts.skipped > 0 ? `, ${counts.skipped} skipped` : ""
  }`;
}

/**
 * Progress lines on stderr, one per name when it changes; with one name on
 * a terminal, rewritten in place. `end` is what a line of another kind
 * must begin with (a newline once a line was rewritten in place).
 *
 * @example
 * ```ts
 * import { ProgressLines } from "./progress.ts";
 * const out: string[] = [];
 * const p = new ProgressLines((l) => out.push(l), true);
 * p.show("n1", "a"); p.show("n1", "a"); p.show("n1", "b");
 * console.assert(out.join("|") === "\ra|\rb" && p.end === "\n");
 * ```
 */
export class ProgressLines {
  readonly #shown = new Map<string, string>();
  readonly #err: (line: string) => void;
  readonly #inPlace: boolean;

  /** `inPlace`: rewrite the one line (a terminal following one name). */
  constructor(err: (line: string) => void, inPlace: boolean) {
    this.#err = err;
    this.#inPlace = inPlace;
  }

  /** Shows `line` for `name` when it differs from the last shown. */
  show(name: string, line: string): void {
    if (line === this.#shown.get(name)) return;
    this.#err(this.#inPlace ? `\r${line}` : line);
    this.#shown.set(name, line);
  }

  /** What a line of another kind begins with. */
  get end(): string {
    return this.#inPlace && this.#shown.size > 0 ? "\n" : "";
  }
}
