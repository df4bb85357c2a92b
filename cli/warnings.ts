/**
 * The API server's warnings (admission webhooks' `warnings`, deprecated
 * APIs, dropped fields) on the terminal, as kubectl shows them: each
 * `Warning:` response header of code 299 becomes a line `Warning: TEXT` on
 * stderr, once per text. client-node has no warning handler, so a
 * middleware reads the headers of every response.
 *
 * @module
 */
import type * as k8s from "@kubernetes/client-node";

/** One warning of a `Warning` header (RFC 7234 section 5.5). */
export interface HeaderWarning {
  /** The warn-code; the API server uses 299 ("miscellaneous persistent"). */
  code: number;
  /** The warn-agent; the API server sends "-". */
  agent: string;
  /** The warn-text, unquoted. */
  text: string;
}

/**
 * The warnings of a `Warning` header value. Several headers arrive joined
 * by ", " (fetch joins repeated headers), and a comma may stand inside a
 * quoted text, so the value is read as the RFC's grammar, not split. A
 * malformed rest is dropped, as client-go drops it.
 *
 * @example
 * ```ts
 * import { parseWarningHeader } from "./warnings.ts";
 * const w = parseWarningHeader('299 - "a, b", 299 - "say \\"c\\""');
 * console.assert(w[0]?.text === "a, b" && w[1]?.text === 'say "c"');
 * ```
 */
export function parseWarningHeader(value: string): HeaderWarning[] {
  const out: HeaderWarning[] = [];
  let i = 0;
  const skip = (chars: string) => {
    while (i < value.length && chars.includes(value[i] ?? "")) i++;
  };
  const quoted = (): string | undefined => {
    if (value[i] !== '"') return undefined;
    let text = "";
    for (i++; i < value.length; i++) {
      const c = value[i];
      if (c === "\\" && i + 1 < value.length) text += value[++i];
      else if (c === '"') {
        i++;
        return text;
      } else text += c;
    }
    return undefined; // unterminated
  };
  for (;;) {
    skip(" \t,");
    if (i >= value.length) return out;
    const code = /^\d{3} /.exec(value.slice(i));
    if (code === null) return out;
    i += 4;
    const agent = /^[^\s"]+ /.exec(value.slice(i));
    if (agent === null) return out;
    i += agent[0].length;
    const text = quoted();
    if (text === undefined) return out;
    out.push({
      code: Number(code[0].trim()),
      agent: agent[0].trim(),
      text,
    });
    skip(" \t");
    if (value[i] === '"' && quoted() === undefined) return out; // warn-date
    skip(" \t");
    if (i < value.length && value[i] !== ",") return out;
  }
}

/**
 * A sink for warnings that writes each text once, as `Warning: TEXT`
 * (kubectl's form and de-duplication).
 *
 * @example
 * ```ts
 * import { warningPrinter } from "./warnings.ts";
 * const lines: string[] = [];
 * const warn = warningPrinter((l) => lines.push(l));
 * warn("x"); warn("x");
 * console.assert(lines.length === 1 && lines[0] === "Warning: x");
 * ```
 */
export function warningPrinter(
  err: (line: string) => void,
): (text: string) => void {
  const seen = new Set<string>();
  return (text) => {
    const line = text.replace(/\s*\n\s*/g, " ").trim();
    if (line === "" || seen.has(line)) return;
    seen.add(line);
    err(`Warning: ${line}`);
  };
}

/**
 * A client-node middleware that hands the code-299 warnings of every
 * response (errors included: a denied request may warn too) to `warn`.
 *
 * @example
 * ```ts ignore
 * const config = k8s.createConfiguration({ ..., promiseMiddleware: [warningMiddleware(warn)] });
 * ```
 */
export function warningMiddleware(
  warn: (text: string) => void,
): k8s.Middleware {
  return {
    pre: (request) => Promise.resolve(request),
    post: (response) => {
      const header = response.headers["warning"];
      if (header !== undefined) {
        for (const w of parseWarningHeader(header)) {
          if (w.code === 299) warn(w.text);
        }
      }
      return Promise.resolve(response);
    },
  };
}
