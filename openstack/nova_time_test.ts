import assert from "node:assert/strict";
import fc from "fast-check";
import { parseNovaTime } from "./nova_time.ts";

Deno.test("parseNovaTime: the API's and the feed's forms are UTC; zones honoured; anything else undefined", () => {
  const table: [string | null | undefined, number | undefined][] = [
    ["2026-11-29T12:00:00.000000", Date.UTC(2026, 10, 29, 12)],
    ["2026-11-29T12:00:00", Date.UTC(2026, 10, 29, 12)],
    ["2026-11-29T12:00:00+01:00", Date.UTC(2026, 10, 29, 11)],
    ["2026-11-29T12:00:00-0130", Date.UTC(2026, 10, 29, 13, 30)],
    ["2026-11-29T12:00:00.123Z", Date.UTC(2026, 10, 29, 12, 0, 0, 123)],
    ["1970-01-01 00:00:01.500000", 1500],
    ["1970-01-01 00:00:01", 1000],
    ["2026-12-03 07:40:23.123456", Date.UTC(2026, 11, 3, 7, 40, 23, 123)],
    ["2026-12-03T07:40:23.1", Date.UTC(2026, 11, 3, 7, 40, 23, 100)],
    ["2026-12-03 07:40", undefined],
    ["not a time", undefined],
    ["yesterday", undefined],
    ["", undefined],
    [null, undefined],
    [undefined, undefined],
  ];
  for (const [text, want] of table) {
    assert.equal(parseNovaTime(text), want, String(text));
  }
});

Deno.test("parseNovaTime: reads back what Nova's two forms write, to the millisecond", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 4_102_444_799_999 }),
      fc.boolean(),
      (ms, feed) => {
        const iso = new Date(ms).toISOString().replace(/Z$/, "000");
        const text = feed ? iso.replace("T", " ") : iso;
        assert.equal(parseNovaTime(text), ms, text);
      },
    ),
  );
});
