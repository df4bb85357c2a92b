import assert from "node:assert/strict";
import { DrainMemory } from "./memory.ts";

Deno.test("DrainMemory: one forget drops the drain's state", () => {
  const m = new DrainMemory();
  m.of("e").starts.set("a", {
    id: "a",
    kind: "live",
    state: "pending",
    issuedAtMs: 0,
  });
  m.of("e").ram.set("a", 1024);
  m.of("other").ram.set("b", 2048);
  m.forget("e");
  assert.equal(m.of("e").starts.size, 0);
  assert.equal(m.of("e").ram.size, 0);
  assert.equal(m.of("other").ram.get("b"), 2048);
});
