import assert from "node:assert/strict";
import { drainEndMs, type DrainStatusLike } from "./conditions.ts";

Deno.test("drainEndMs: finishedAt, or when the drain stopped for a person; a running drain has no end", () => {
  const evicting = (status: string, reason: string) => ({
    conditions: [{
      type: "Evicting",
      status,
      reason,
      lastTransitionTime: "2026-01-01T00:00:50Z",
    }],
  });
  const table: [string, DrainStatusLike | undefined, number | undefined][] = [
    [
      "finished",
      { finishedAt: "2026-01-01T00:02:00Z" },
      Date.UTC(2026, 0, 1, 0, 2),
    ],
    [
      "finished wins over a later condition",
      { finishedAt: "2026-01-01T00:02:00Z", ...evicting("False", "Failed") },
      Date.UTC(2026, 0, 1, 0, 2),
    ],
    [
      "stopped, failed",
      evicting("False", "Failed"),
      Date.UTC(2026, 0, 1, 0, 0, 50),
    ],
    [
      "stopped, waiting for a person",
      evicting("False", "WaitingForPerson"),
      Date.UTC(2026, 0, 1, 0, 0, 50),
    ],
    ["waiting is no end", evicting("True", "Waiting"), undefined],
    ["running", evicting("True", "Running"), undefined],
    ["no status", undefined, undefined],
    ["nothing yet", {}, undefined],
  ];
  for (const [name, status, want] of table) {
    assert.equal(drainEndMs(status), want, name);
  }
});
