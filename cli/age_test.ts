import assert from "node:assert/strict";
import fc from "fast-check";
import { ageSince, humanAge } from "./age.ts";

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;

Deno.test("humanAge: kubectl's ages (apimachinery's HumanDuration)", () => {
  const rows: [number, string][] = [
    [-3 * S, "<invalid>"],
    [-1500, "0s"],
    [0, "0s"],
    [999, "0s"],
    [45 * S, "45s"],
    [119 * S, "119s"],
    [2 * M, "2m"],
    [5 * M + 3 * S, "5m3s"],
    [9 * M + 59 * S, "9m59s"],
    [10 * M + 30 * S, "10m"],
    [179 * M, "179m"],
    [3 * H, "3h"],
    [3 * H + 5 * M, "3h5m"],
    [7 * H + 59 * M, "7h59m"],
    [8 * H + 30 * M, "8h"],
    [47 * H, "47h"],
    [2 * D, "2d"],
    [2 * D + 4 * H, "2d4h"],
    [8 * D, "8d"],
    [729 * D, "729d"],
    [730 * D, "2y"],
    [740 * D, "2y10d"],
    [9 * 365 * D, "9y"],
  ];
  for (const [ms, want] of rows) assert.equal(humanAge(ms), want, String(ms));
});

Deno.test("humanAge never falls as the age grows (property)", () => {
  const toMs = (age: string): number => {
    let ms = 0;
    for (const [, n, u] of age.matchAll(/(\d+)([smhdy])/g)) {
      ms += Number(n) * { s: S, m: M, h: H, d: D, y: 365 * D }[u as "s"];
    }
    return ms;
  };
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 20 * 365 * D }),
      fc.integer({ min: 0, max: 365 * D }),
      (a, more) => {
        assert.ok(toMs(humanAge(a)) <= toMs(humanAge(a + more)));
        // the shown age is never more than the age
        assert.ok(toMs(humanAge(a)) <= a);
      },
    ),
  );
});

Deno.test("ageSince: a timestamp's age, <invalid> for none", () => {
  const now = Date.parse("2026-01-01T01:00:00Z");
  assert.equal(ageSince("2026-01-01T00:55:00Z", now), "5m");
  assert.equal(ageSince("yesterday-ish", now), "<invalid>");
});
