/**
 * Translates the small subset of CEL that our CRDs use into a JavaScript
 * expression over `self`, so that the generated zod schemas refuse what the
 * API server refuses. Anything outside the subset stops generation with the
 * rule and its place named, rather than being silently skipped.
 *
 * Supported: `self` paths, `has(path)`, string literals in single quotes,
 * `==`, `!=`, `&&`, `||`, `!`, `>`, `>=`, `<`, `<=`, integers, parentheses,
 * `.size()` and `.trim()`.
 *
 * @module
 */

const TOKEN =
  /\s*(has\(|self(?:\.[A-Za-z_][A-Za-z0-9_]*(?![A-Za-z0-9_(]))*|'[^'\\]*'|\d+|==|!=|>=|<=|&&|\|\||[!()<>]|\.size\(\)|\.trim\(\))/y;

/**
 * Returns a JavaScript expression equivalent to `rule`.
 *
 * @example
 * ```ts
 * import { celToJs } from "./cel_to_js.ts";
 * console.log(celToJs("self.name == 'default'", "X")); // (self?.name) === "default"
 * ```
 */
export function celToJs(rule: string, where: string): string {
  const out: string[] = [];
  const hasDepth: number[] = [];
  let depth = 0;
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < rule.trimEnd().length) {
    const at = TOKEN.lastIndex;
    const match = TOKEN.exec(rule);
    const token = match?.[1];
    if (!token) {
      throw new TypeError(
        `unsupported CEL at ${where}, offset ${at} of rule "${rule}": extend hack/cel_to_js.ts`,
      );
    }
    if (token === "has(") {
      hasDepth.push(depth++);
      out.push("(");
    } else if (token === "(") {
      depth++;
      out.push("(");
    } else if (token === ")") {
      depth--;
      if (hasDepth.at(-1) === depth) {
        hasDepth.pop();
        out.push(" !== undefined)");
      } else out.push(")");
    } else if (token.startsWith("self")) {
      out.push(`(${token.replaceAll(".", "?.")})`);
    } else if (token.startsWith("'")) {
      out.push(JSON.stringify(token.slice(1, -1)));
    } else if (token === "==") out.push(" === ");
    else if (token === "!=") out.push(" !== ");
    else if (token === ".size()") out.push(".length");
    else if (token === ".trim()") out.push(".trim()");
    else if (["&&", "||", ">=", "<=", ">", "<"].includes(token)) {
      out.push(` ${token} `);
    } else out.push(token);
  }
  if (depth !== 0) {
    throw new TypeError(
      `unbalanced parentheses in CEL at ${where}: "${rule}"`,
    );
  }
  return out.join("");
}
