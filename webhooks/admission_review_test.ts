import assert from "node:assert/strict";
import fc from "fast-check";
import {
  admissionReviewResponse,
  INTERNAL_ERROR_MESSAGE,
  objectValidator,
  type ReviewRequest,
  type ReviewValidator,
} from "./admission_review.ts";
import { validateEvictionPolicy } from "./eviction_policy.ts";
import { validateEviction } from "./eviction.ts";
import { allowed, denied } from "./verdict.ts";
import { policySettings } from "../controllers/eviction/concurrency.ts";

function review(request: Record<string, unknown>): unknown {
  return {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: { uid: "705ab4f5-6393-11e8-b7cc-42010a800002", ...request },
  };
}

const policyValidator = objectValidator(
  validateEvictionPolicy,
  () => ({ runningEvictions: [] }),
);

Deno.test("admissionReviewResponse: allowed, with warnings, echoes uid and apiVersion", () => {
  const out = admissionReviewResponse(
    review({
      operation: "CREATE",
      object: {
        metadata: { name: "default" },
        spec: {
          maxConcurrentMigrations: 4,
          traitLimits: [{ trait: "CUSTOM_A", maxConcurrentMigrations: 4 }],
        },
      },
    }),
    policyValidator,
  );
  assert.deepEqual(out, {
    status: 200,
    body: {
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      response: {
        uid: "705ab4f5-6393-11e8-b7cc-42010a800002",
        allowed: true,
        warnings: [
          "spec.traitLimits[0].maxConcurrentMigrations: 4 for CUSTOM_A equals the default spec.maxConcurrentMigrations, so it has no effect",
        ],
      },
    },
  });
});

Deno.test("admissionReviewResponse: denied with status 403 and the message", () => {
  const out = admissionReviewResponse(
    JSON.stringify(review({
      operation: "UPDATE",
      dryRun: true,
      object: { metadata: { name: "x" }, spec: {} },
      oldObject: { metadata: { name: "default" }, spec: {} },
    })),
    policyValidator,
  );
  assert.deepEqual(out, {
    status: 200,
    body: {
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      response: {
        uid: "705ab4f5-6393-11e8-b7cc-42010a800002",
        allowed: false,
        status: {
          status: "Failure",
          code: 403,
          reason: "Forbidden",
          message:
            'metadata.name: got "x"; expected "default", because there is one EvictionPolicy per cluster',
        },
      },
    },
  });
});

Deno.test("admissionReviewResponse: the request reaches the validator parsed", () => {
  let seen: ReviewRequest | undefined;
  admissionReviewResponse(
    review({
      operation: "UPDATE",
      kind: { group: "kvm.cloud.sap", version: "v1", kind: "Eviction" },
      name: "n1",
      object: { a: 1 },
      oldObject: { a: 0 },
      dryRun: true,
      userInfo: { username: "alice" },
    }),
    (r) => {
      seen = r;
      return allowed();
    },
  );
  assert.deepEqual(seen, {
    uid: "705ab4f5-6393-11e8-b7cc-42010a800002",
    operation: "UPDATE",
    kind: { group: "kvm.cloud.sap", version: "v1", kind: "Eviction" },
    name: "n1",
    namespace: "",
    object: { a: 1 },
    oldObject: { a: 0 },
    dryRun: true,
  });
});

Deno.test("admissionReviewResponse: malformed bodies get 400", async (t) => {
  const cases: Array<[string, unknown, string]> = [
    ["empty body", "", "the body is not valid JSON"],
    ["invalid JSON", "{", "the body is not valid JSON"],
    [
      "JSON null",
      null,
      'not an admission.k8s.io/v1 AdmissionReview: "the body" is missing or invalid',
    ],
    [
      "an array",
      [],
      'not an admission.k8s.io/v1 AdmissionReview: "the body" is missing or invalid',
    ],
    [
      "v1beta1",
      {
        ...(review({ operation: "CREATE" }) as object),
        apiVersion: "admission.k8s.io/v1beta1",
      },
      'not an admission.k8s.io/v1 AdmissionReview: "apiVersion" is missing or invalid',
    ],
    [
      "missing uid",
      {
        apiVersion: "admission.k8s.io/v1",
        kind: "AdmissionReview",
        request: { operation: "CREATE" },
      },
      'not an admission.k8s.io/v1 AdmissionReview: "request.uid" is missing or invalid',
    ],
    [
      "empty uid",
      review({ uid: "", operation: "CREATE" }),
      'not an admission.k8s.io/v1 AdmissionReview: "request.uid" is missing or invalid',
    ],
    [
      "unknown operation",
      review({ operation: "PATCH" }),
      'not an admission.k8s.io/v1 AdmissionReview: "request.operation" is missing or invalid',
    ],
    [
      "no request",
      { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview" },
      'not an admission.k8s.io/v1 AdmissionReview: "request" is missing or invalid',
    ],
  ];
  for (const [name, body, message] of cases) {
    await t.step(name, () => {
      assert.deepEqual(admissionReviewResponse(body, () => allowed()), {
        status: 400,
        body: {
          kind: "Status",
          apiVersion: "v1",
          status: "Failure",
          code: 400,
          reason: "BadRequest",
          message,
        },
      });
    });
  }
});

Deno.test("admissionReviewResponse: a throwing or broken validator denies with a constant message", () => {
  const throwing: ReviewValidator = () => {
    throw new Error("secret detail");
  };
  const broken = (() => ({ allowed: false })) as unknown as ReviewValidator;
  for (const v of [throwing, broken]) {
    const out = admissionReviewResponse(review({ operation: "CREATE" }), v);
    assert.equal(out.status, 200);
    const text = JSON.stringify(out.body);
    assert.ok(text.includes(INTERNAL_ERROR_MESSAGE));
    assert.ok(!text.includes("secret detail"));
  }
});

Deno.test("objectValidator: CREATE has no old object, DELETE and CONNECT are allowed unseen", () => {
  const calls: unknown[][] = [];
  const v = objectValidator((o: unknown, old: unknown, ctx: string) => {
    calls.push([o, old, ctx]);
    return denied("no");
  }, () => "ctx");
  const base = {
    uid: "u",
    kind: undefined,
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

const evictionValidator = objectValidator(validateEviction, () => ({
  evictions: [{ name: "a", hypervisor: "a", finished: false }],
  hypervisorTraits: () => undefined,
  settings: policySettings({
    maxConcurrentMigrations: 2,
    abortStuckMigrations: false,
  }),
}));

function checkOutcome(out: { status: number; body: unknown }): void {
  assert.ok(out.status === 200 || out.status === 400);
  const text = JSON.stringify(out.body);
  assert.equal(typeof text, "string");
  if (out.status === 200) {
    const body = out.body as {
      apiVersion: unknown;
      response: { uid: unknown; allowed: unknown };
    };
    assert.equal(body.apiVersion, "admission.k8s.io/v1");
    assert.equal(typeof body.response.uid, "string");
    assert.equal(typeof body.response.allowed, "boolean");
  }
}

Deno.test("property: random bodies never make the handler throw", () => {
  const bodyArb = fc.oneof(
    fc.jsonValue(),
    fc.anything({ withNullPrototype: true, withObjectString: true }),
    fc.string(),
    fc.json(),
    fc.record({
      apiVersion: fc.constantFrom("admission.k8s.io/v1", "v1", 1),
      kind: fc.constantFrom("AdmissionReview", "Status"),
      request: fc.record({
        uid: fc.oneof(fc.uuid(), fc.string(), fc.anything()),
        operation: fc.oneof(
          fc.constantFrom("CREATE", "UPDATE", "DELETE", "CONNECT"),
          fc.anything(),
        ),
        object: fc.anything(),
        oldObject: fc.anything(),
        dryRun: fc.oneof(fc.boolean(), fc.anything()),
      }, { requiredKeys: [] }),
    }, { requiredKeys: [] }),
  );
  fc.assert(
    fc.property(bodyArb, (body) => {
      checkOutcome(admissionReviewResponse(body, policyValidator));
      checkOutcome(admissionReviewResponse(body, evictionValidator));
    }),
    { numRuns: 1000 },
  );
});

Deno.test("property: the uid is echoed for every well-formed review", () => {
  fc.assert(fc.property(
    fc.string({ minLength: 1 }),
    fc.constantFrom("CREATE", "UPDATE", "DELETE", "CONNECT"),
    fc.anything(),
    fc.anything(),
    (uid, operation, object, oldObject) => {
      const out = admissionReviewResponse(
        {
          apiVersion: "admission.k8s.io/v1",
          kind: "AdmissionReview",
          request: { uid, operation, object, oldObject },
        },
        evictionValidator,
      );
      assert.equal(out.status, 200);
      assert.equal(
        (out.body as { response: { uid: string } }).response.uid,
        uid,
      );
    },
  ));
});
