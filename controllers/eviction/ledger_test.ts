import assert from "node:assert/strict";
import fc from "fast-check";
import { clusterBudgetLeft } from "../../limits/resolve.ts";
import { InFlightLedger } from "./ledger.ts";

Deno.test("ledger: others take the larger of the ledger and the cache", () => {
  const ledger = new InFlightLedger();
  ledger.set("a", 3);
  ledger.set("b", 1);
  const cached = new Map([["a", 1], ["b", 4], ["c", 2]]);
  assert.equal(ledger.othersInFlight("a", cached), 4 + 2);
  assert.equal(ledger.othersInFlight("x", cached), 3 + 4 + 2);
  ledger.delete("b");
  assert.equal(ledger.othersInFlight("a", cached), 4 + 2);
});

Deno.test("ledger: refuses a bad count, naming the key", () => {
  assert.throws(() => new InFlightLedger().set("e1", -1), /"e1".*-1/);
});

Deno.test("ledger: interleaved passes never exceed the cluster budget together", () => {
  // Each pass wants `want` starts, has `mine` in flight; passes reserve one
  // after another (as they do: reserve is synchronous). The sum in the
  // ledger never exceeds the budget once it was within it.
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 20 }),
      fc.array(
        fc.record({
          key: fc.constantFrom("a", "b", "c", "d"),
          want: fc.integer({ min: 0, max: 8 }),
        }),
        { maxLength: 40 },
      ),
      (budget, passes) => {
        const ledger = new InFlightLedger();
        for (const p of passes) {
          ledger.reserve(p.key, new Map(), (others) => {
            const mine = ledger.get(p.key);
            const left = clusterBudgetLeft(budget, others + mine);
            return mine + Math.min(p.want, left);
          });
          const total = ["a", "b", "c", "d"].reduce(
            (s, k) => s + ledger.get(k),
            0,
          );
          assert.ok(total <= budget, `${total} > ${budget}`);
        }
      },
    ),
  );
});
