import assert from "node:assert/strict";
import fc from "fast-check";
import { disabledByUs, ourDisabledReason } from "./compute_service.ts";

Deno.test("ourDisabledReason: table", () => {
  const rows: [string, string][] = [
    ["kernel 6.12", "evictor: kernel 6.12"],
    ["  two\nlines  ", "evictor: two lines"],
    ["x".repeat(300), "evictor: " + "x".repeat(246)],
  ];
  for (const [input, expected] of rows) {
    assert.equal(ourDisabledReason(input), expected);
  }
});

Deno.test("disabledByUs: table", () => {
  assert.equal(disabledByUs(undefined), false);
  assert.equal(disabledByUs(null), false);
  assert.equal(disabledByUs(""), false);
  assert.equal(disabledByUs("maintenance by ops"), false);
  assert.equal(disabledByUs("evictor: kernel"), true);
});

Deno.test("every reason we write is recognised as ours, one line, <= 255", () => {
  fc.assert(fc.property(fc.string(), (reason) => {
    const written = ourDisabledReason(reason);
    assert.ok(disabledByUs(written));
    assert.ok(written.length <= 255);
    assert.ok(!/[\r\n]/.test(written));
  }));
});
