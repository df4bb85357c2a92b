import assert from "node:assert/strict";
import fc from "fast-check";
import { bearerToken } from "./metrics_auth.ts";

Deno.test("bearerToken reads only a Bearer header with one token", () => {
  const table: [string | null, string | undefined][] = [
    [null, undefined],
    ["", undefined],
    ["Bearer", undefined],
    ["Bearer ", undefined],
    ["Basic dXNlcjpwYXNz", undefined],
    ["Bearer abc.def", "abc.def"],
    ["bearer abc", "abc"],
    ["BEARER\tabc ", "abc"],
    ["Bearer a b", undefined],
  ];
  for (const [header, want] of table) {
    assert.equal(bearerToken(header), want, JSON.stringify(header));
  }
});

Deno.test("bearerToken returns any token without blanks it is given", () => {
  fc.assert(
    fc.property(
      fc.string({ minLength: 1 }).filter((t) => !/[ \t]/.test(t)),
      (token) => bearerToken(`Bearer ${token}`) === token,
    ),
  );
});
