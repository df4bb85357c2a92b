/**
 * `-o custom-columns=HEADER:PATH,...` as kubectl prints it: one row per
 * object, each cell the values the path finds joined by commas, `<none>`
 * when it finds none; paths relaxed as kubectl relaxes them
 * (`metadata.name`, `.metadata.name`, `{.metadata.name}`).
 *
 * @module
 */
import { alignColumns } from "./columns.ts";
import {
  findValues,
  JsonPathError,
  type JsonPathTemplate,
  parseJsonPath,
  printValue,
} from "./jsonpath.ts";

/** One column of a custom-columns spec. */
export interface CustomColumn {
  /** The header, as given. */
  header: string;
  /** The path of its cells. */
  path: JsonPathTemplate;
}

/**
 * Parses `NAME:.metadata.name,STATE:.status.conditions[0].reason`.
 *
 * @throws {JsonPathError} naming the part that is no `HEADER:PATH`.
 *
 * @example
 * ```ts
 * import { parseCustomColumns } from "./custom_columns.ts";
 * console.assert(parseCustomColumns("NAME:metadata.name")[0]?.header === "NAME");
 * ```
 */
export function parseCustomColumns(spec: string): CustomColumn[] {
  if (spec === "") {
    throw new JsonPathError(
      "custom-columns format specified but no custom columns given: expected HEADER:PATH[,HEADER:PATH...]",
    );
  }
  return splitTopLevel(spec).map((part) => {
    const colon = part.indexOf(":");
    if (colon < 0) {
      throw new JsonPathError(
        `unexpected custom-columns spec: ${part}, expected <header>:<json-path-expr>`,
      );
    }
    const expr = part.slice(colon + 1).trim();
    const braced = /^\{.*\}$/s.test(expr) ? expr : `{${expr}}`;
    return { header: part.slice(0, colon), path: parseJsonPath(braced) };
  });
}

/** Splits on commas outside brackets and quotes (a filter may hold one). */
function splitTopLevel(spec: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote: string | undefined;
  let cur = "";
  for (const c of spec) {
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === "[" || c === "{" || c === "(") depth++;
    else if (c === "]" || c === "}" || c === ")") depth--;
    else if (c === "," && depth === 0) {
      parts.push(cur);
      cur = "";
      continue;
    }
    cur += c;
  }
  parts.push(cur);
  return parts;
}

/**
 * The cells of one object's row.
 *
 * @example
 * ```ts
 * import { customColumnCells, parseCustomColumns } from "./custom_columns.ts";
 * const cols = parseCustomColumns("N:.n,X:.x");
 * console.assert(customColumnCells(cols, { n: ["a", "b"] }).join("|") === "a,b|<none>");
 * ```
 */
export function customColumnCells(
  columns: readonly CustomColumn[],
  object: unknown,
): string[] {
  return columns.map((c) => {
    const values = findValues(c.path, object).flatMap((v) =>
      // a path ending in [*] finds the items, one value each, as kubectl's
      v === undefined ? [] : [v]
    );
    return values.length === 0
      ? "<none>"
      : values.map((v) => printValue(v).replace(/[\r\n]+/g, " ")).join(",");
  });
}

/**
 * The aligned table: the headers, then a row per object.
 *
 * @example
 * ```ts
 * import { customColumnsTable, parseCustomColumns } from "./custom_columns.ts";
 * console.log(customColumnsTable(parseCustomColumns("NAME:.metadata.name"), [{ metadata: { name: "n1" } }]));
 * // NAME
 * // n1
 * ```
 */
export function customColumnsTable(
  columns: readonly CustomColumn[],
  objects: readonly unknown[],
): string {
  return alignColumns([
    columns.map((c) => c.header),
    ...objects.map((o) => customColumnCells(columns, o)),
  ]).join("\n");
}
