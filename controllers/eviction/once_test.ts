import assert from "node:assert/strict";
import fc from "fast-check";
import { maySendAgain, type StartNote, startReleasableFromMs } from "./once.ts";

Deno.test("startReleasableFromMs: from when a direct look may show a start of ours unprocessed", () => {
  const grace = 60_000;
  const rows: Array<[string, StartNote | undefined, number | undefined]> = [
    ["no answer yet: never", { id: "a", state: "pending" }, undefined],
    [
      "accepted quickly: after the grace period",
      { id: "a", state: "accepted", answeredAtMs: 1000 },
      60_000,
    ],
    [
      "accepted late: after its answer",
      { id: "a", state: "accepted", answeredAtMs: 90_000 },
      90_000,
    ],
    [
      "unknown (5xx, timeout): after that answer",
      { id: "a", state: "unknown", answeredAtMs: 30_000 },
      30_000,
    ],
    [
      "unknown without its time: after the grace",
      { id: "a", state: "unknown" },
      60_000,
    ],
    ["made before a restart: after the grace period", undefined, 60_000],
  ];
  for (const [name, note, want] of rows) {
    assert.equal(startReleasableFromMs(0, note, grace), want, name);
  }
});

Deno.test("maySendAgain: a confirm or abort is sent again only after a look begun after its answer", () => {
  const rows: Array<[string, Parameters<typeof maySendAgain>, boolean]> = [
    ["never sent", [undefined, 0], true],
    ["sent, no answer", [{ sentAtMs: 0 }, 1_000_000], false],
    [
      "answered, the look began before",
      [{ sentAtMs: 0, answeredAtMs: 10 }, 9],
      false,
    ],
    [
      "answered, the look began at it",
      [{ sentAtMs: 0, answeredAtMs: 10 }, 10],
      true,
    ],
    ["answered, a timeout must pass", [
      { sentAtMs: 0, answeredAtMs: 10 },
      100,
      100,
    ], false],
    ["answered, the timeout passed", [
      { sentAtMs: 0, answeredAtMs: 10 },
      110,
      100,
    ], true],
  ];
  for (const [name, args, want] of rows) {
    assert.equal(maySendAgain(...args), want, name);
  }
});

Deno.test("property: no look begun before a start's answer releases it, whatever the timings", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 1e6 }),
      fc.integer({ min: 0, max: 1e6 }),
      fc.integer({ min: 0, max: 1e6 }),
      fc.constantFrom<StartNote["state"]>("accepted", "unknown"),
      fc.integer({ min: -1e6, max: 1e6 }),
      (started, answerDelay, grace, state, lookOffset) => {
        const answeredAtMs = started + answerDelay;
        const from = startReleasableFromMs(started, {
          id: "a",
          state,
          answeredAtMs,
        }, grace);
        assert.ok(from !== undefined && from >= answeredAtMs);
        const looked = answeredAtMs + lookOffset;
        if (looked < answeredAtMs) assert.ok(looked < from);
      },
    ),
  );
});
