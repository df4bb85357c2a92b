import assert from "node:assert/strict";
import { startTimerLagProbe } from "./timer_lag.ts";

Deno.test("timer lag: a blocked event loop shows as the lateness of the next tick", async () => {
  const probe = startTimerLagProbe(20);
  await new Promise((r) => setTimeout(r, 60));
  // block the loop for 300 ms: the tick due meanwhile comes that late
  const until = performance.now() + 300;
  while (performance.now() < until) { /* busy */ }
  await new Promise((r) => setTimeout(r, 60));
  const late = probe.stop();
  assert.ok(late >= 250, `lateness ${late} ms`);
  const after = probe.maxLateMs();
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(probe.maxLateMs(), after, "stopped: no more ticks");
});

Deno.test("timer lag: a bad interval is refused with the value", () => {
  assert.throws(
    () => startTimerLagProbe(0),
    /everyMs: got 0; expected a positive number/,
  );
});
