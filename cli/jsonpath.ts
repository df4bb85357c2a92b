/**
 * The subset of kubectl's JSONPath templates (`-o jsonpath=...`,
 * custom-columns, a CRD's printer columns) that the plugin evaluates:
 * text outside braces, `{.a.b}`, `{$.a}`, `['a.b']`, `[n]` and `[-n]`,
 * `[a:b]`, `[*]`, `.*`, filters `[?(@.type=="Evicting")]` (`==`, `!=`,
 * `<`, `<=`, `>`, `>=`, or a field's presence), `{range ...}...{end}` and
 * string literals `{"\n"}`. Missing keys give nothing, as kubectl's
 * `--allow-missing-template-keys` (its default) does. Anything else
 * (recursive descent `..`, unions, functions) is a {@linkcode JsonPathError}.
 *
 * @module
 */

/** A template or expression that this subset cannot read; one line. */
export class JsonPathError extends Error {
  override name = "JsonPathError";
}

type Step =
  | { kind: "field"; name: string }
  | { kind: "wildcard" }
  | {
    kind: "slice";
    start: number | undefined;
    end: number | undefined;
    step: number | undefined;
    index: boolean;
  }
  | {
    kind: "filter";
    path: Step[];
    op: string | undefined;
    value: unknown;
  };

type Node =
  | { kind: "text"; text: string }
  | { kind: "path"; steps: Step[] }
  | { kind: "range"; steps: Step[]; body: Node[] };

/**
 * A parsed template; {@linkcode parseJsonPath} makes one.
 */
export interface JsonPathTemplate {
  /** The template as given. */
  readonly source: string;
  /** @internal */
  readonly nodes: readonly Node[];
}

const FIELD_CHAR = /[A-Za-z0-9_\-/$]/;

/** Reads one path (`.a.b[0]`, `@.x`, `$.y`) starting at `s[i]`. */
function readPath(
  s: string,
  start: number,
  stopAt: (c: string) => boolean,
): { steps: Step[]; end: number } {
  const steps: Step[] = [];
  let i = start;
  if (s[i] === "$" || s[i] === "@") i++;
  while (i < s.length && !stopAt(s[i] ?? "")) {
    const c = s[i];
    if (c === ".") {
      if (s[i + 1] === ".") {
        throw new JsonPathError(
          `recursive descent ".." is not supported (in ${JSON.stringify(s)})`,
        );
      }
      i++;
      if (s[i] === "*") {
        steps.push({ kind: "wildcard" });
        i++;
        continue;
      }
      let name = "";
      while (i < s.length) {
        const ch = s[i] ?? "";
        if (ch === "\\" && i + 1 < s.length) {
          name += s[i + 1];
          i += 2;
        } else if (FIELD_CHAR.test(ch)) {
          name += ch;
          i++;
        } else break;
      }
      // `{.}` is the value itself: no step
      if (name !== "") steps.push({ kind: "field", name });
    } else if (c === "[") {
      const close = matching(s, i);
      steps.push(bracket(s.slice(i + 1, close), s));
      i = close + 1;
    } else if (c === " " || c === "\t") {
      break;
    } else {
      throw new JsonPathError(
        `unexpected ${JSON.stringify(c)} at position ${i + 1} of ${
          JSON.stringify(s)
        }`,
      );
    }
  }
  return { steps, end: i };
}

/** The index of the `]` that closes the `[` at `open` (quotes respected). */
function matching(s: string, open: number): number {
  let depth = 0;
  let quote: string | undefined;
  for (let i = open; i < s.length; i++) {
    const c = s[i];
    if (quote !== undefined) {
      if (c === "\\") i++;
      else if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === "[") depth++;
    else if (c === "]" && --depth === 0) return i;
  }
  throw new JsonPathError(`unclosed "[" in ${JSON.stringify(s)}`);
}

function bracket(inner: string, whole: string): Step {
  const t = inner.trim();
  if (t === "*") return { kind: "wildcard" };
  const quoted = /^(['"])(.*)\1$/.exec(t);
  if (quoted) return { kind: "field", name: quoted[2] ?? "" };
  if (/^-?\d+$/.test(t)) {
    return {
      kind: "slice",
      start: Number(t),
      end: undefined,
      step: undefined,
      index: true,
    };
  }
  const slice = /^(-?\d*):(-?\d*)(?::(\d*))?$/.exec(t);
  if (slice) {
    const num = (x: string | undefined) =>
      x === undefined || x === "" ? undefined : Number(x);
    return {
      kind: "slice",
      start: num(slice[1]),
      end: num(slice[2]),
      step: num(slice[3]),
      index: false,
    };
  }
  const filter = /^\?\((.*)\)$/s.exec(t);
  if (filter) return filterStep((filter[1] ?? "").trim(), whole);
  throw new JsonPathError(
    `"[${inner}]" is not supported in ${
      JSON.stringify(whole)
    }: expected [n], [a:b], [*], ['name'] or [?(@.field=="value")]`,
  );
}

function filterStep(cond: string, whole: string): Step {
  if (!cond.startsWith("@")) {
    throw new JsonPathError(
      `filter "${cond}" is not supported in ${
        JSON.stringify(whole)
      }: expected @.field OP value`,
    );
  }
  const { steps, end } = readPath(cond, 0, (c) => "<>=! ".includes(c));
  const rest = cond.slice(end).trim();
  if (rest === "") {
    return { kind: "filter", path: steps, op: undefined, value: undefined };
  }
  const m = /^(==|!=|<=|>=|<|>)\s*(.+)$/s.exec(rest);
  if (m === null) {
    throw new JsonPathError(
      `filter "${cond}" is not supported in ${
        JSON.stringify(whole)
      }: expected ==, !=, <, <=, > or >=`,
    );
  }
  return {
    kind: "filter",
    path: steps,
    op: m[1],
    value: literal((m[2] ?? "").trim(), whole),
  };
}

function literal(text: string, whole: string): unknown {
  const q = /^(['"])(.*)\1$/s.exec(text);
  if (q) return q[2];
  if (text === "true" || text === "false") return text === "true";
  if (/^-?\d+(\.\d+)?$/.test(text)) return Number(text);
  throw new JsonPathError(
    `value ${text} is not supported in ${
      JSON.stringify(whole)
    }: expected a quoted string, a number, true or false`,
  );
}

function unescape(body: string): string {
  return body.replace(
    /\\(.)/g,
    (_, c: string) =>
      ({ n: "\n", t: "\t", r: "\r" } as Record<string, string>)[c] ?? c,
  );
}

/**
 * Parses a kubectl JSONPath template such as `{.items[*].metadata.name}` or
 * `{range .items[*]}{.metadata.name}{"\n"}{end}`.
 *
 * @throws {JsonPathError} for what this subset does not read.
 *
 * @example
 * ```ts
 * import { parseJsonPath } from "./jsonpath.ts";
 * parseJsonPath("{.items[*].metadata.name}");
 * ```
 */
export function parseJsonPath(template: string): JsonPathTemplate {
  const root: Node[] = [];
  const stack: { nodes: Node[] }[] = [{ nodes: root }];
  let i = 0;
  const top = () => stack[stack.length - 1]?.nodes ?? root;
  while (i < template.length) {
    const open = template.indexOf("{", i);
    if (open < 0) {
      top().push({ kind: "text", text: template.slice(i) });
      break;
    }
    if (open > i) top().push({ kind: "text", text: template.slice(i, open) });
    const close = closing(template, open);
    const inner = template.slice(open + 1, close).trim();
    i = close + 1;
    const str = /^"((?:[^"\\]|\\.)*)"$/s.exec(inner);
    if (str) {
      top().push({ kind: "text", text: unescape(str[1] ?? "") });
    } else if (inner === "end") {
      if (stack.length === 1) {
        throw new JsonPathError(
          `{end} without {range} in ${JSON.stringify(template)}`,
        );
      }
      stack.pop();
    } else if (/^range\s/.test(inner)) {
      const steps = wholePath(inner.slice(5).trim(), template);
      const body: Node[] = [];
      top().push({ kind: "range", steps, body });
      stack.push({ nodes: body });
    } else {
      top().push({ kind: "path", steps: wholePath(inner, template) });
    }
  }
  if (stack.length > 1) {
    throw new JsonPathError(
      `{range} without {end} in ${JSON.stringify(template)}`,
    );
  }
  return { source: template, nodes: root };
}

function closing(s: string, open: number): number {
  let quote = false;
  for (let i = open + 1; i < s.length; i++) {
    const c = s[i];
    if (c === "\\") i++;
    else if (c === '"') quote = !quote;
    else if (c === "}" && !quote) return i;
  }
  throw new JsonPathError(`unclosed "{" in ${JSON.stringify(s)}`);
}

function wholePath(expr: string, template: string): Step[] {
  if (expr === "") {
    throw new JsonPathError(`empty {} in ${JSON.stringify(template)}`);
  }
  if (/^[A-Za-z_]+\(/.test(expr) || /^(len|not|and|or)\b/.test(expr)) {
    throw new JsonPathError(
      `function "${expr}" is not supported in ${JSON.stringify(template)}`,
    );
  }
  if (!/^[.$@\[]/.test(expr) && !FIELD_CHAR.test(expr[0] ?? "")) {
    throw new JsonPathError(
      `"${expr}" is not a path in ${
        JSON.stringify(template)
      }: expected one such as .metadata.name`,
    );
  }
  // `{metadata.name}` as kubectl's relaxed paths take it
  const path = FIELD_CHAR.test(expr[0] ?? "") && expr[0] !== "$"
    ? `.${expr}`
    : expr;
  const { steps, end } = readPath(path, 0, () => false);
  if (end < path.length) {
    const rest = path.slice(end).trim();
    throw new JsonPathError(
      `"${rest}" is not supported in ${
        JSON.stringify(template)
      } (unions and several paths in one {} are not)`,
    );
  }
  return steps;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function step(values: unknown[], s: Step, source: string): unknown[] {
  const out: unknown[] = [];
  for (const v of values) {
    if (v === null || v === undefined) continue;
    switch (s.kind) {
      case "field":
        if (isObject(v) && Object.hasOwn(v, s.name)) out.push(v[s.name]);
        break;
      case "wildcard":
        if (Array.isArray(v)) out.push(...v);
        else if (isObject(v)) {
          for (const k of Object.keys(v).sort()) out.push(v[k]);
        }
        break;
      case "slice": {
        if (!Array.isArray(v)) {
          throw new JsonPathError(
            `${JSON.stringify(source)}: ${typeName(v)} is not an array`,
          );
        }
        const n = v.length;
        let start = s.start ?? 0;
        if (start < 0) start += n;
        let end = s.index ? start + 1 : s.end ?? n;
        if (!s.index && end < 0) end += n;
        if (start === end) break;
        if (start < 0 || start >= n || end > n || end < 0) {
          throw new JsonPathError(
            `${JSON.stringify(source)}: array index out of bounds: index ${
              start >= n || start < 0 ? start : end - 1
            }, length ${n}`,
          );
        }
        for (let i = start; i < end; i += s.step ?? 1) out.push(v[i]);
        break;
      }
      case "filter": {
        if (!Array.isArray(v)) {
          throw new JsonPathError(
            `${JSON.stringify(source)}: ${typeName(v)} is not an array`,
          );
        }
        for (const item of v) {
          const left = walk([item], s.path, source);
          if (
            s.op === undefined
              ? left.length > 0
              : left.some((l) => compare(l, s.op ?? "", s.value))
          ) out.push(item);
        }
        break;
      }
    }
  }
  return out;
}

function typeName(v: unknown): string {
  return Array.isArray(v) ? "array" : v === null ? "null" : typeof v;
}

function compare(a: unknown, op: string, b: unknown): boolean {
  switch (op) {
    case "==":
      return a === b;
    case "!=":
      return a !== b;
  }
  if (
    typeof a !== typeof b || (typeof a !== "number" && typeof a !== "string")
  ) {
    return false;
  }
  const x = a as number | string;
  const y = b as number | string;
  return op === "<"
    ? x < y
    : op === "<="
    ? x <= y
    : op === ">"
    ? x > y
    : x >= y;
}

function walk(values: unknown[], steps: readonly Step[], source: string) {
  let cur = values;
  for (const s of steps) cur = step(cur, s, source);
  return cur;
}

/**
 * The values a one-path template (`{.status.migratedCount}` or
 * `.status.migratedCount`) finds in `data`: none when a key is missing.
 *
 * @example
 * ```ts
 * import { findValues, parseJsonPath } from "./jsonpath.ts";
 * const t = parseJsonPath('{.c[?(@.type=="A")].reason}');
 * console.assert(findValues(t, { c: [{ type: "A", reason: "x" }] })[0] === "x");
 * ```
 */
export function findValues(t: JsonPathTemplate, data: unknown): unknown[] {
  const paths = t.nodes.filter((n) => n.kind === "path");
  const first = paths[0];
  if (paths.length !== 1 || first === undefined || t.nodes.length !== 1) {
    throw new JsonPathError(
      `${JSON.stringify(t.source)} is not one path such as {.metadata.name}`,
    );
  }
  return walk([data], first.steps, t.source);
}

/**
 * A value as kubectl's JSONPath prints it: strings as they are, objects
 * and arrays as compact JSON, numbers and booleans as text.
 *
 * @example
 * ```ts
 * import { printValue } from "./jsonpath.ts";
 * console.assert(printValue({ a: 1 }) === '{"a":1}');
 * ```
 */
export function printValue(v: unknown): string {
  if (typeof v === "string") return v;
  if (v === null || v === undefined) return "null";
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

function render(nodes: readonly Node[], data: unknown, source: string): string {
  let out = "";
  for (const n of nodes) {
    if (n.kind === "text") out += n.text;
    else if (n.kind === "path") {
      out += walk([data], n.steps, source).map(printValue).join(" ");
    } else {
      for (const item of walk([data], n.steps, source)) {
        out += render(n.body, item, source);
      }
    }
  }
  return out;
}

/**
 * Executes a template against `data` as `kubectl -o jsonpath=...` does.
 *
 * @throws {JsonPathError} when an index is out of bounds or a value is no array.
 *
 * @example
 * ```ts
 * import { executeJsonPath, parseJsonPath } from "./jsonpath.ts";
 * const t = parseJsonPath('{range .items[*]}{.n}{"\\n"}{end}');
 * console.assert(executeJsonPath(t, { items: [{ n: "a" }, { n: "b" }] }) === "a\nb\n");
 * ```
 */
export function executeJsonPath(t: JsonPathTemplate, data: unknown): string {
  return render(t.nodes, data, t.source);
}
