import assert from "node:assert/strict";
import fc from "fast-check";
import { quoteValue } from "./quote.ts";

Deno.test("quoteValue: table", () => {
  assert.equal(quoteValue(undefined), "nothing");
  assert.equal(quoteValue(null), "null");
  assert.equal(quoteValue(3), "3");
  assert.equal(quoteValue(NaN), "NaN");
  assert.equal(quoteValue(true), "true");
  assert.equal(quoteValue(10n), "10n");
  assert.equal(quoteValue("abc"), '"abc"');
  assert.equal(quoteValue('a"b'), '"a\\"b"');
  assert.equal(quoteValue("a\nb\r"), '"a\\nb\\r"');
  assert.equal(quoteValue("a\u2028b\u202eb"), '"a\\u2028b\\u202eb"');
  assert.equal(quoteValue("\u0085"), '"\\u0085"');
  assert.equal(quoteValue("é"), '"é"');
  assert.equal(quoteValue([1, "x"]), '[1,"x"]');
  assert.equal(quoteValue({ a: 1 }), '{"a":1}');
  assert.equal(
    quoteValue("x".repeat(81)),
    `"${"x".repeat(80)}"… (81 characters)`,
  );
  const cyclic: Record<string, unknown> = {};
  cyclic["self"] = cyclic;
  assert.equal(quoteValue(cyclic), "an unprintable object");
  assert.equal(quoteValue(() => 1), "a function");
});

Deno.test("property: quoteValue is always one short line without control characters", () => {
  fc.assert(
    fc.property(fc.anything(), fc.string({ unit: "binary" }), (v, s) => {
      for (const out of [quoteValue(v), quoteValue(s)]) {
        assert.ok(!/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u.test(out), out);
        assert.ok(Array.from(out).length < 200);
      }
    }),
  );
});
