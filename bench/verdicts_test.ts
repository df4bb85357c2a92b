import assert from "node:assert/strict";
import { verdictsOf } from "./verdicts.ts";

Deno.test("verdictsOf: each target against its figure, at most its value", () => {
  const figures = {
    ratio: 1.1,
    computeCallsPerVm: 5.71,
    vmsMigratedTwice: 0,
    budgetPeak: 10,
    label: "x",
  };
  assert.deepEqual(
    verdictsOf(figures, {
      ratioAtMost: 1.1,
      computeCallsPerVmAtMost: 5.7,
      vmsMigratedTwice: 0,
      budgetPeakAtMost: 10,
    }),
    {
      ratioAtMost: { value: 1.1, met: true },
      computeCallsPerVmAtMost: { value: 5.71, met: false },
      vmsMigratedTwice: { value: 0, met: true },
      budgetPeakAtMost: { value: 10, met: true },
    },
  );
  const missing = verdictsOf(figures, { labelAtMost: 1, goneAtMost: 1 });
  assert.ok(Number.isNaN(missing.labelAtMost?.value));
  assert.equal(missing.labelAtMost?.met, false);
  assert.equal(missing.goneAtMost?.met, false);
});
