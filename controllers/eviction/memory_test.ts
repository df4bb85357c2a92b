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

Deno.test("DrainMemory: forget also drops the drain's ledger count and its place in the budget line", () => {
  const m = new DrainMemory();
  m.ledger.set("e", 3);
  m.ledger.set("other", 2);
  m.budgetWaiters.add("e");
  m.budgetWaiters.add("other");
  m.forget("e");
  assert.equal(m.ledger.get("e"), 0);
  assert.equal(m.ledger.get("other"), 2);
  assert.equal(m.budgetWaiters.standing("e"), undefined);
  assert.equal(m.budgetWaiters.standing("other"), "waiting");
});
