import assert from "node:assert/strict";
import fc from "fast-check";
import { objectValidator } from "./admission_review.ts";
import { type AdmissionRequest, deny } from "../framework/admission.ts";
import { validateEvictionPolicy } from "./eviction_policy.ts";
import { validateEviction } from "./eviction.ts";
import { policySettings } from "../limits/resolve.ts";

Deno.test("objectValidator: CREATE has no old object, DELETE and CONNECT are allowed unseen", () => {
  const calls: unknown[][] = [];
  const v = objectValidator((o: unknown, old: unknown, ctx: string) => {
    calls.push([o, old, ctx]);
    return deny("no");
  }, () => "ctx");
  const base = {
    uid: "u",
    userInfo: {},
    name: "",
    namespace: "",
    object: 1,
    oldObject: 0,
    dryRun: false,
  };
  assert.equal(v({ ...base, operation: "CREATE" }).allowed, false);
  assert.equal(v({ ...base, operation: "UPDATE" }).allowed, false);
  assert.equal(v({ ...base, operation: "DELETE" }).allowed, true);
  assert.equal(v({ ...base, operation: "CONNECT" }).allowed, true);
  assert.deepEqual(calls, [[1, undefined, "ctx"], [1, 0, "ctx"]]);
});

const policyValidator = objectValidator(
  validateEvictionPolicy,
  () => ({ runningEvictions: [] }),
);
const evictionValidator = objectValidator(validateEviction, () => ({
  evictions: [{ name: "a", hypervisor: "a", finished: false }],
  hypervisorTraits: () => undefined,
  settings: policySettings({
    maxConcurrentMigrations: 2,
    abortStuckMigrations: false,
  }),
}));

Deno.test("property: any objects give a result, never an exception", () => {
  fc.assert(fc.property(
    fc.constantFrom("CREATE", "UPDATE", "DELETE", "CONNECT" as const),
    fc.anything(),
    fc.anything(),
    fc.boolean(),
    (operation, object, oldObject, dryRun) => {
      const request: AdmissionRequest<unknown> = {
        uid: "u",
        operation,
        userInfo: {},
        name: "",
        namespace: "",
        object,
        oldObject,
        dryRun,
      };
      for (const validate of [policyValidator, evictionValidator]) {
        const result = validate(request);
        assert.equal(typeof result.allowed, "boolean");
        if (!result.allowed) assert.ok(!result.message.includes("\n"));
      }
    },
  ));
});
