import assert from "node:assert/strict";
import type { Eviction } from "../../models/mod.ts";
import { StatusMemo } from "./status_memo.ts";

const at = (rv: string, migrated?: number): Eviction => ({
  metadata: { name: "e", resourceVersion: rv },
  spec: { hypervisor: "h", reason: "r" },
  ...(migrated === undefined ? {} : { status: { migratedCount: migrated } }),
});

Deno.test("StatusMemo: a stale cache gets the written status; a newer one wins", () => {
  const memo = new StatusMemo();
  memo.remember("e", "5", at("6", 3));
  assert.equal(memo.freshest("e", at("5", 1)).status?.migratedCount, 3);
  assert.equal(memo.freshest("e", at("7", 4)).status?.migratedCount, 4);
  // Once the cache moved on, the memo is dropped.
  assert.equal(memo.freshest("e", at("5", 1)).status?.migratedCount, 1);
  memo.remember("e", "8", at("9", 5));
  memo.forget("e");
  assert.equal(memo.freshest("e", at("8", 2)).status?.migratedCount, 2);
});
