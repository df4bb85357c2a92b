import { strict as assert } from "node:assert";
import { policySettings } from "../limits/resolve.ts";
import { evictionContextFrom } from "./context.ts";
import { HOLD_WARNING, validateEviction } from "./eviction.ts";

const obj = {
  metadata: { name: "node001" },
  spec: { hypervisor: "node001", reason: "kernel" },
};
const settings = policySettings({
  maxConcurrentMigrations: 2,
  abortStuckMigrations: false,
});

Deno.test("eviction webhook: Hold warns at creation, Warn and updates do not", () => {
  const cases: {
    check: "Warn" | "Hold" | undefined;
    old: unknown;
    warned: boolean;
  }[] = [
    { check: "Hold", old: undefined, warned: true },
    { check: "Warn", old: undefined, warned: false },
    { check: undefined, old: undefined, warned: false },
    { check: "Hold", old: obj, warned: false },
  ];
  for (const c of cases) {
    const ctx = evictionContextFrom([], () => [], settings, c.check);
    const v = validateEviction(obj, c.old, ctx);
    assert.equal(v.allowed, true);
    assert.equal(
      (v.warnings ?? []).includes(HOLD_WARNING),
      c.warned,
      String(c.check),
    );
  }
});
