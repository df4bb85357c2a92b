/**
 * Rendering of a bad value inside a one-line message: JSON-like, with
 * every control, format and line/paragraph separator character escaped,
 * and long values shortened. Whatever the input, the output is one line
 * that cannot fake a log record or a second message.
 *
 * @module
 */

/** Values longer than this many characters are shortened in messages. */
export const MAX_QUOTED_CHARS = 80;

const UNSAFE = /[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Cs}\p{Zl}\p{Zp}]/gu;

function escapeUnsafe(text: string): string {
  return text.replace(UNSAFE, (c) => {
    let out = "";
    for (let i = 0; i < c.length; i++) {
      out += `\\u${c.charCodeAt(i).toString(16).padStart(4, "0")}`;
    }
    return out;
  });
}

function shorten(text: string, max: number, quote: boolean): string {
  const chars = Array.from(text);
  const kept = chars.length <= max ? text : chars.slice(0, max).join("");
  const shown = quote ? JSON.stringify(kept) : kept;
  return chars.length <= max ? shown : `${shown}… (${chars.length} characters)`;
}

/**
 * Renders `value` for a message: strings JSON-quoted, numbers, booleans
 * and null as in JSON, objects and arrays as JSON, a missing value as
 * `nothing`; shortened beyond {@linkcode MAX_QUOTED_CHARS} characters;
 * always one line.
 *
 * @example
 * ```ts
 * import { quoteValue } from "./quote.ts";
 * console.assert(quoteValue("a\nb") === '"a\\nb"');
 * console.assert(quoteValue(3) === "3");
 * console.assert(quoteValue(undefined) === "nothing");
 * ```
 */
export function quoteValue(value: unknown): string {
  switch (typeof value) {
    case "undefined":
      return "nothing";
    case "string":
      return escapeUnsafe(shorten(value, MAX_QUOTED_CHARS, true));
    case "number":
      return String(value);
    case "boolean":
      return String(value);
    case "bigint":
      return `${value.toString()}n`;
    case "object": {
      if (value === null) return "null";
      let json: string | undefined;
      try {
        json = JSON.stringify(value);
      } catch {
        json = undefined;
      }
      if (json === undefined) return "an unprintable object";
      return escapeUnsafe(shorten(json, MAX_QUOTED_CHARS, false));
    }
    default:
      return `a ${typeof value}`;
  }
}
