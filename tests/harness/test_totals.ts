/**
 * The closing line of `deno task test`: deno test's summary of each part
 * run (the main suite, the real-OpenStack lane) read from its output, and
 * one plain `tests: N passed, N failed` line totalling them, so that the
 * last line of the run counts every test it ran.
 *
 * @module
 */

/** What one `deno test` run counted. */
export interface TestCounts {
  passed: number;
  failed: number;
  ignored: number;
}

/** One part of the run and what it counted (undefined: no summary seen). */
export interface TestPart {
  /** Its name, for the breakdown line. */
  name: string;
  /** deno test's counts, undefined when it printed no summary. */
  counts: TestCounts | undefined;
  /** Its exit code. */
  code: number;
}

const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");

/**
 * deno test's summary in one line of its output, e.g.
 * `ok | 12 passed (3 steps) | 0 failed | 2 ignored (4s)`; undefined for
 * any other line. Colour escapes are ignored.
 *
 * @example
 * ```ts
 * import { summaryOf } from "./test_totals.ts";
 * console.log(summaryOf("FAILED | 3 passed | 1 failed (2s)"));
 * // { passed: 3, failed: 1, ignored: 0 }
 * ```
 */
export function summaryOf(line: string): TestCounts | undefined {
  const m = line.replace(ANSI, "").trim().match(
    /^(?:ok|FAILED) \| (\d+) passed[^|]*\| (\d+) failed(?:[^|]*\| (\d+) ignored)?/,
  );
  if (!m) return undefined;
  return {
    passed: Number(m[1]),
    failed: Number(m[2]),
    ignored: Number(m[3] ?? 0),
  };
}

/**
 * Reads a run's output line by line (chunks may cut lines anywhere) and
 * keeps the last summary seen.
 *
 * @example
 * ```ts
 * import { SummaryScanner } from "./test_totals.ts";
 * const s = new SummaryScanner();
 * s.push("ok | 2 passed | 0 ");
 * s.push("failed (1s)\n");
 * console.log(s.counts?.passed); // 2
 * ```
 */
export class SummaryScanner {
  #pending = "";
  /** The last summary seen, if any. */
  counts: TestCounts | undefined;

  /** Takes the next piece of output. */
  push(text: string): void {
    const lines = (this.#pending + text).split("\n");
    this.#pending = lines.pop() ?? "";
    for (const line of lines) this.counts = summaryOf(line) ?? this.counts;
  }

  /** The end of the output: a last line without a newline counts too. */
  end(): void {
    this.push("\n");
  }
}

function countsText(c: TestCounts): string {
  return `${c.passed} passed, ${c.failed} failed${
    c.ignored > 0 ? `, ${c.ignored} skipped` : ""
  }`;
}

/**
 * The closing lines: one per part (when there are several), then the
 * total as `tests: N passed, N failed` (`, N skipped` when some were
 * ignored). A part that failed without a summary (it crashed, or its
 * cloud did not start) counts as one failed test, said on its line, so
 * that the total never reads green for a red run.
 *
 * @example
 * ```ts
 * import { totalLines } from "./test_totals.ts";
 * console.log(totalLines([
 *   { name: "main suite", counts: { passed: 10, failed: 0, ignored: 1 }, code: 0 },
 *   { name: "real-OpenStack lane", counts: { passed: 5, failed: 0, ignored: 0 }, code: 0 },
 * ]).at(-1)); // tests: 15 passed, 0 failed, 1 skipped
 * ```
 */
export function totalLines(parts: readonly TestPart[]): string[] {
  const total: TestCounts = { passed: 0, failed: 0, ignored: 0 };
  const lines: string[] = [];
  for (const p of parts) {
    let c = p.counts;
    let note = "";
    if (c === undefined) {
      c = { passed: 0, failed: p.code === 0 ? 0 : 1, ignored: 0 };
      note = p.code === 0
        ? " (no summary printed)"
        : ` (ended with exit ${p.code} before its summary: counted as 1 failed)`;
    } else if (p.code !== 0 && c.failed === 0) {
      // exit non-zero with every test passed: a leak or a crash after them
      c = { ...c, failed: 1 };
      note = ` (exit ${p.code} after its tests: counted as 1 failed)`;
    }
    total.passed += c.passed;
    total.failed += c.failed;
    total.ignored += c.ignored;
    if (parts.length > 1) {
      lines.push(`tests: ${p.name}: ${countsText(c)}${note}`);
    } else if (note !== "") lines.push(`tests: ${p.name}${note}`);
  }
  lines.push(`tests: ${countsText(total)}`);
  return lines;
}
