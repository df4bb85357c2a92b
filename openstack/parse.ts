/**
 * Parsing of response bodies with zod, once, at the boundary.
 *
 * @module
 */

import type { z } from "zod";
import { InvalidResponseError } from "./errors.ts";
import type { HttpResponse } from "./http.ts";

/**
 * Parses a response body with a schema; a mismatch becomes an
 * {@linkcode InvalidResponseError} naming the call and the first bad field.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { parseBody } from "./parse.ts";
 * const n = parseBody(z.object({ n: z.number() }), {
 *   status: 200, headers: new Headers(), json: { n: 1 }, requestId: undefined,
 * }, "GET /x");
 * console.log(n.n); // 1
 * ```
 */
export function parseBody<S extends z.ZodType>(
  schema: S,
  res: HttpResponse,
  what: string,
): z.output<S> {
  const result = schema.safeParse(res.json);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const at = issue === undefined || issue.path.length === 0
    ? "body"
    : issue.path.map(String).join(".");
  throw new InvalidResponseError(
    `${what}: unexpected response: ${at}: ${issue?.message ?? "invalid"}`,
    res.requestId === undefined ? {} : { requestId: res.requestId },
  );
}
