import assert from "node:assert/strict";
import { deadlineMs, withDeadline, within } from "./deadline.ts";

Deno.test("withDeadline: a promise that settles in time gives its value", async () => {
  assert.equal(
    await withDeadline(Promise.resolve(7), 60_000, () => Promise.resolve("x")),
    7,
  );
  await assert.rejects(
    withDeadline(
      Promise.reject(new Error("own")),
      60_000,
      () => Promise.resolve("x"),
    ),
    /^Error: own$/,
  );
});

Deno.test("withDeadline: a promise that never settles fails with what was pending", async () => {
  const never = new Promise<number>(() => {});
  await assert.rejects(
    withDeadline(never, 5, () => Promise.resolve("it was waiting for X")),
    { message: "it was waiting for X" },
  );
  await assert.rejects(
    withDeadline(never, 5, () => Promise.reject("no report")),
    { message: "(the report failed: no report)" },
  );
});

Deno.test("within: the value, or the fallback when it fails or hangs", async () => {
  assert.equal(await within(Promise.resolve("ok"), 60_000, "late"), "ok");
  assert.equal(
    await within(Promise.reject(new Error()), 60_000, "late"),
    "late",
  );
  assert.equal(await within(new Promise<string>(() => {}), 5, "late"), "late");
});

Deno.test("deadlineMs: seconds > 0, else one line naming the value", () => {
  const table: [string | undefined, number | RegExp][] = [
    ["600", 600_000],
    ["0.5", 500],
    ["0", /--deadline-s must be a number of seconds > 0, got 0$/],
    ["-3", /got -3$/],
    ["ten", /got ten$/],
    ["", /got $/],
    [undefined, /got undefined$/],
    ["Infinity", /got Infinity$/],
  ];
  for (const [text, want] of table) {
    if (typeof want === "number") {
      assert.equal(deadlineMs(text), want, String(text));
    } else assert.throws(() => deadlineMs(text), want, String(text));
  }
});
