import assert from "node:assert/strict";
import fc from "fast-check";
import type { Eviction } from "../../models/mod.ts";
import { DrainMemory } from "./memory.ts";

const cached = (rv: string, migrated = 0): Eviction => ({
  metadata: { name: "e", resourceVersion: rv },
  spec: { hypervisor: "h", reason: "r" },
  status: { migratedCount: migrated },
});

Deno.test("DrainMemory.freshest: table", () => {
  const rows: Array<[string, string, string | undefined, number]> = [
    ["cache older than the write: the write", "5", "3", 9],
    ["cache at the write: the cache", "5", "5", 1],
    ["cache past the write: the cache", "5", "7", 1],
    ["versions not numbers, not equal: the write", "b", "a", 9],
    ["versions not numbers, equal: the cache", "b", "b", 1],
  ];
  for (const [name, written, seen, want] of rows) {
    const m = new DrainMemory();
    m.remember("e", written, { migratedCount: 9 });
    const got = m.freshest("e", cached(seen ?? "", 1));
    assert.equal(got.status?.migratedCount, want, name);
    if (want === 9) assert.equal(got.metadata?.resourceVersion, written, name);
  }
});

Deno.test("DrainMemory: one forget drops the status and the drain's state", () => {
  const m = new DrainMemory();
  m.remember("e", "5", { migratedCount: 9 });
  m.of("e").starts.set("a", {
    id: "a",
    kind: "live",
    state: "pending",
    issuedAtMs: 0,
  });
  m.forget("e");
  assert.equal(m.freshest("e", cached("3", 1)).status?.migratedCount, 1);
  assert.equal(m.of("e").starts.size, 0);
});

Deno.test("property: after two quick writes no older status comes back", () => {
  fc.assert(fc.property(
    fc.array(fc.integer({ min: 1, max: 1000 }), { minLength: 2, maxLength: 8 }),
    fc.nat(),
    (gaps, lag) => {
      const m = new DrainMemory();
      let rv = 1;
      const history: number[] = [rv];
      for (const g of gaps) {
        rv += g;
        history.push(rv);
        m.remember("e", String(rv), { migratedCount: rv });
      }
      // The cache shows any version up to the last write.
      const seen = history[lag % history.length] ?? 1;
      const got = m.freshest("e", cached(String(seen), seen));
      assert.equal(got.status?.migratedCount, rv);
    },
  ));
});
