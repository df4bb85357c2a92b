import assert from "node:assert/strict";
import { lastPassBy, passesAfter, passesOf, withinPasses } from "./pass_log.ts";

const line = (time: string, key: string, wait?: number, msg = "reconciled") =>
  JSON.stringify({
    level: 20,
    time,
    name: "evictor",
    key,
    ...(wait === undefined ? {} : { requeueAfterMs: wait }),
    msg,
  });

const LOG = [
  line("2026-01-01T00:00:01.000Z", "node001", 1000),
  line("2026-01-01T00:00:01.500Z", "node002", 2000),
  line(
    "2026-01-01T00:00:02.000Z",
    "node001",
    1000,
    "glanced at the migrations: quiet",
  ),
  '{"cut": "reconciled',
  line("2026-01-01T00:00:03.000Z", "node001"),
  JSON.stringify({
    time: "2026-01-01T00:00:04.000Z",
    key: "node001",
    msg: "reconciled",
    requeueAfterMs: null,
  }),
].join("\n");

Deno.test("pass log: the passes over one key, with the waits they asked for", () => {
  const passes = passesOf(LOG, "node001");
  assert.deepEqual(passes.map((p) => [p.atMs % 10_000, p.requeueAfterMs]), [
    [1000, 1000],
    [3000, undefined],
    [4000, undefined],
  ]);
  const at = Date.parse("2026-01-01T00:00:02.500Z");
  assert.equal(passesAfter(passes, at).length, 2);
  assert.equal(lastPassBy(passes, at)?.requeueAfterMs, 1000);
  assert.equal(lastPassBy(passes, at - 5_000), undefined);
  assert.deepEqual(passesOf(LOG, "node003"), []);
});

Deno.test("pass log: withinPasses counts the passes ended before each read of the object", async () => {
  const t0 = Date.parse("2026-01-01T00:00:00.000Z");
  let log = "";
  let shown = false;
  let reads = 0;
  const opts = { timeoutMs: 5_000, describe: () => Promise.resolve("(log)") };
  // shown on the second read, after one pass: at most two passes
  const n = await withinPasses(() => Promise.resolve(log), "k", t0, 2, () => {
    reads++;
    if (reads === 1) log = line("2026-01-01T00:00:01.000Z", "k", 1000);
    if (reads === 2) shown = true;
    return Promise.resolve(shown);
  }, opts);
  assert.equal(n, 2);
  // two passes ended, the object still does not show it: a failure
  log = [1, 2].map((s) => line(`2026-01-01T00:00:0${s}.000Z`, "k", 1000)).join(
    "\n",
  );
  await assert.rejects(
    withinPasses(
      () => Promise.resolve(log),
      "k",
      t0,
      2,
      () => Promise.resolve(false),
      opts,
    ),
    /not shown after 2 passes over k \(expected within 2\)\n\(log\)/,
  );
  // no pass at all: the deadline
  await assert.rejects(
    withinPasses(
      () => Promise.resolve(""),
      "k",
      t0,
      2,
      () => Promise.resolve(false),
      {
        ...opts,
        timeoutMs: 250,
      },
    ),
    /only 0 passes over k within 250 ms/,
  );
});
