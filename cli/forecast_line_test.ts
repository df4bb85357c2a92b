import { strict as assert } from "node:assert";
import type { Eviction } from "../models/mod.ts";
import { forecastLine } from "./forecast_line.ts";

const NOW = Date.parse("2026-01-01T01:00:00Z");
const ev = (predictedFinishAt?: string): Eviction => ({
  metadata: { name: "n1" },
  spec: { hypervisor: "n1", reason: "r" },
  status: predictedFinishAt === undefined ? {} : { predictedFinishAt },
});

Deno.test("forecastLine: table", () => {
  const cases: [string | undefined, string | undefined][] = [
    [undefined, undefined],
    ["not a time", undefined],
    ["2026-01-01T01:05:00Z", "n1: ends ~01:05:00 (in 5m)"],
    ["2026-01-01T01:00:01Z", "n1: ends ~01:00:01 (in 1m)"],
    ["2026-01-01T03:10:00Z", "n1: ends ~03:10:00 (in 130m)"],
    ["2026-01-01T00:59:00Z", "n1: ends ~00:59:00 (due now)"],
  ];
  for (const [at, line] of cases) {
    assert.equal(forecastLine(ev(at), NOW), line, String(at));
  }
});
