import { strict as assert } from "node:assert";
import { forecastToWrite, withForecast } from "./forecast_status.ts";

const NOW = Date.parse("2026-01-01T00:00:00Z");
const iso = (s: number) => new Date(NOW + s * 1000).toISOString();

Deno.test("forecastToWrite: keep or rewrite (seconds from now)", () => {
  const cases: [
    string,
    string | undefined,
    number | undefined,
    string | undefined,
  ][] = [
    // name, written, forecast (s), written after
    ["none written: the forecast", undefined, 90, iso(90)],
    ["to the second, never sooner", undefined, 90.2, iso(91)],
    ["no forecast: removed", iso(90), undefined, undefined],
    ["30 s later: kept", iso(90), 120, iso(90)],
    ["31 s later: rewritten", iso(90), 121, iso(121)],
    ["30 s sooner: kept", iso(90), 60, iso(90)],
    ["31 s sooner: rewritten", iso(90), 59, iso(59)],
    // an hour left: 10 % is 6 min
    ["5 min off an hour: kept", iso(3600), 3300, iso(3600)],
    ["7 min off an hour: rewritten", iso(3600), 3180, iso(3180)],
    ["10 % of the new time left", iso(1000), 1100, iso(1000)],
    ["past: the 30 s floor", iso(-100), -60, iso(-60)],
    ["a written value that is no time: rewritten", "soon", 90, iso(90)],
  ];
  for (const [name, written, s, after] of cases) {
    assert.equal(
      forecastToWrite(
        written,
        s === undefined ? undefined : NOW + s * 1000,
        NOW,
      ),
      after,
      name,
    );
  }
});

Deno.test("withForecast: removed once the drain has finished or nothing is known", () => {
  const now = new Date(NOW);
  assert.equal(
    withForecast({ predictedFinishAt: iso(10) }, NOW + 20_000, now)
      .predictedFinishAt,
    iso(10),
  );
  assert.ok(
    !("predictedFinishAt" in
      withForecast(
        { predictedFinishAt: iso(10), finishedAt: iso(0) },
        NOW,
        now,
      )),
  );
  assert.ok(
    !("predictedFinishAt" in
      withForecast({ predictedFinishAt: iso(10) }, undefined, now)),
  );
});
