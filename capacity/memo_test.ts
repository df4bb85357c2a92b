import { strict as assert } from "node:assert";
import { RecentMemo } from "./memo.ts";

Deno.test("RecentMemo: shares within the TTL, recomputes after, forgets failures", async () => {
  const memo = new RecentMemo<number>(100);
  let calls = 0;
  const f = () => Promise.resolve(++calls);
  const [a, b] = await Promise.all([memo.get("k", 0, f), memo.get("k", 0, f)]);
  assert.deepEqual([a, b, calls], [1, 1, 1]);
  assert.equal(await memo.get("k", 100, f), 1);
  assert.equal(await memo.get("other", 100, f), 2);
  assert.equal(await memo.get("k", 101, f), 3);
  let fail = true;
  const g = () =>
    fail ? Promise.reject(new Error("down")) : Promise.resolve(++calls);
  await assert.rejects(() => memo.get("g", 200, g), /down/);
  fail = false;
  assert.equal(await memo.get("g", 200, g), 4);
  assert.throws(
    () => new RecentMemo(-1),
    /ttlMs must be a number >= 0, got -1/,
  );
});
