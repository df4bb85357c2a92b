/**
 * Aligned columns as kubectl prints them: each column as wide as its
 * widest cell, three spaces between columns, no trailing blanks.
 *
 * @module
 */

/**
 * The rows as aligned lines.
 *
 * @example
 * ```ts
 * import { alignColumns } from "./columns.ts";
 * console.log(alignColumns([["NAME", "STATE"], ["node042", "Running"]]).join("\n"));
 * // NAME      STATE
 * // node042   Running
 * ```
 */
export function alignColumns(rows: readonly (readonly string[])[]): string[] {
  const widths = (rows[0] ?? []).map((_, i) =>
    Math.max(...rows.map((r) => (r[i] ?? "").length))
  );
  return rows.map((r) =>
    r.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join("   ").trimEnd()
  );
}
