import assert from "node:assert/strict";
import fc from "fast-check";
import {
  FIRST_LOOK_SHARE,
  FIRST_LOOK_WINDOW,
  firstLookAt,
  glanceIsQuiet,
  pastConductor,
} from "./first_look.ts";

Deno.test("firstLookAt: table", () => {
  const rows: Array<
    [string, number, number | undefined, number, boolean, unknown]
  > = [
    ["not looked at since the start", 10_000, undefined, 2000, false, 12_000],
    [
      "looked at the start itself (the starting pass)",
      10_000,
      10_000,
      2000,
      false,
      12_000,
    ],
    ["a pass woken soon after", 10_000, 10_400, 2000, false, 12_000],
    ["seen copying: the model times it", 10_000, 12_000, 2000, true, undefined],
    [
      "a timer a little early still counts",
      10_000,
      11_500,
      2000,
      true,
      undefined,
    ],
    [
      "still with the conductor: again a poll later",
      10_000,
      12_000,
      2000,
      false,
      14_000,
    ],
    [
      "a late look, still not past the conductor",
      10_000,
      13_000,
      2000,
      false,
      15_000,
    ],
    [
      "the window over: the model times it",
      10_000,
      16_000,
      2000,
      false,
      undefined,
    ],
    ["looked long after", 10_000, 60_000, 2000, false, undefined],
    [
      "a faster clock: the poll interval in its ms",
      0,
      undefined,
      40_000,
      false,
      40_000,
    ],
  ];
  for (const [name, issued, last, poll, past, want] of rows) {
    assert.equal(firstLookAt(issued, last, poll, past), want, name);
  }
  // A record still `accepted` (the conductor deciding, slow on a loaded
  // cloud) keeps the looks a poll interval apart past the window.
  assert.equal(firstLookAt(10_000, 40_000, 2000, false, true), 42_000);
  assert.equal(firstLookAt(10_000, 40_000, 2000, true, true), undefined);
});

Deno.test("pastConductor: table", () => {
  const rows: Array<[string | undefined, boolean]> = [
    [undefined, false],
    ["accepted", false],
    ["queued", true],
    ["preparing", true],
    ["running", true],
    ["completed", true],
    ["error", false],
    ["failed", false],
    ["cancelled", false],
  ];
  for (const [status, want] of rows) {
    assert.equal(pastConductor(status), want, String(status));
  }
});

Deno.test("property: a start is looked at a poll interval after it, then every poll interval while not past the conductor, within the window; never sooner than a poll interval after a look", () => {
  fc.assert(fc.property(
    fc.integer({ min: 0, max: 1e9 }),
    fc.option(fc.integer({ min: 0, max: 1e6 }), { nil: undefined }),
    fc.integer({ min: 1, max: 600_000 }),
    fc.boolean(),
    (issued, after, poll, past) => {
      const last = after === undefined ? undefined : issued + after;
      const at = firstLookAt(issued, last, poll, past);
      if (past) return assert.equal(at, undefined);
      if (after === undefined || after < poll * FIRST_LOOK_SHARE) {
        return assert.equal(at, issued + poll);
      }
      if (after >= poll * FIRST_LOOK_WINDOW) {
        return assert.equal(at, undefined);
      }
      assert.equal(at, (last ?? 0) + poll);
      // looks end within the window plus one poll interval
      assert.ok((at ?? 0) - issued <= poll * (FIRST_LOOK_WINDOW + 1));
    },
  ));
});

Deno.test("glanceIsQuiet: table", () => {
  const ours = (id: string) => id !== "adopted";
  const rows: Array<[string, string[], Record<string, string>, boolean]> = [
    ["nothing in flight", [], {}, true],
    ["ours copying", ["a"], { a: "running" }, true],
    ["ours waiting in Nova's queue", ["a"], { a: "queued" }, true],
    ["ours still with the conductor", ["a"], { a: "accepted" }, true],
    ["ours failed at once (NoValidHost)", ["a"], { a: "error" }, false],
    ["one ended: a slot to refill", ["a", "b"], {
      a: "running",
      b: "completed",
    }, false],
    ["a cold one finished (to confirm)", ["a"], { a: "finished" }, false],
    ["ours not listed yet", ["a"], {}, false],
    [
      "an adopted one not listed (Nova may not show it yet)",
      ["adopted"],
      {},
      true,
    ],
    ["an adopted one cancelled", ["adopted"], { adopted: "cancelled" }, false],
  ];
  for (const [name, inFlight, statuses, want] of rows) {
    assert.equal(
      glanceIsQuiet(inFlight, ours, (id) => statuses[id]),
      want,
      name,
    );
  }
});

Deno.test("property: a glance is quiet only when every migration in flight is in progress and each start of ours is listed", () => {
  const statuses = [
    undefined,
    "accepted",
    "queued",
    "preparing",
    "running",
    "completed",
    "finished",
    "error",
    "failed",
    "cancelled",
  ];
  fc.assert(fc.property(
    fc.array(
      fc.record({
        ours: fc.boolean(),
        status: fc.constantFrom(...statuses),
      }),
      { maxLength: 8 },
    ),
    (vms) => {
      const ids = vms.map((_, i) => `vm${i}`);
      const at = (id: string) => vms[Number(id.slice(2))];
      const quiet = glanceIsQuiet(
        ids,
        (id) => at(id)?.ours ?? false,
        (id) => at(id)?.status,
      );
      const anyToActOn = vms.some((v) =>
        v.status === undefined
          ? v.ours
          : !["accepted", "queued", "preparing", "running"].includes(
            v.status,
          )
      );
      assert.equal(quiet, !anyToActOn);
    },
  ));
});
