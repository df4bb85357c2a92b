/**
 * The request a pure validate function sees, and the adapter from an object
 * validator (`validateEvictionPolicy`, `validateEviction`) to it. Parsing
 * the AdmissionReview itself (400s, 413s, the response) is the framework's
 * webhook server's job (framework/admission.ts); webhooks/register.ts maps
 * its request onto {@linkcode ReviewRequest}.
 *
 * @module
 */

import { allowed, type Verdict } from "./verdict.ts";

/** An admission request, as a validate function sees it. */
export interface ReviewRequest {
  /** Request id (echoed in the response). */
  readonly uid: string;
  /** The operation. */
  readonly operation: "CREATE" | "UPDATE" | "DELETE" | "CONNECT";
  /** The kind of the object, when given. */
  readonly kind:
    | {
      readonly group: string;
      readonly version: string;
      readonly kind: string;
    }
    | undefined;
  /** The object's name ("" when not given). */
  readonly name: string;
  /** The namespace ("" for cluster-scoped objects). */
  readonly namespace: string;
  /** The new object, not parsed (absent on DELETE). */
  readonly object: unknown;
  /** The old object, not parsed (UPDATE and DELETE). */
  readonly oldObject: unknown;
  /** Whether this is a dry run (validated the same; nothing here has side effects). */
  readonly dryRun: boolean;
}

/** A pure validate function over a whole request. */
export type ReviewValidator = (request: ReviewRequest) => Verdict;

/**
 * Adapts an object validator (`validateEvictionPolicy`,
 * `validateEviction`) to a {@linkcode ReviewValidator}: CREATE passes no
 * old object, UPDATE passes `oldObject`, DELETE and CONNECT are allowed
 * without calling it. `context` is called once per CREATE or UPDATE
 * request (read it from the informer caches there).
 *
 * @example
 * ```ts
 * import { objectValidator } from "./admission_review.ts";
 * import { validateEvictionPolicy } from "./eviction_policy.ts";
 * const validate = objectValidator(validateEvictionPolicy, () => ({ runningEvictions: [] }));
 * const verdict = validate({
 *   uid: "1", operation: "CREATE", kind: undefined, name: "default", namespace: "",
 *   object: { metadata: { name: "default" }, spec: { maxConcurrentMigrations: 2 } },
 *   oldObject: undefined, dryRun: false,
 * });
 * console.assert(verdict.allowed);
 * ```
 */
export function objectValidator<C>(
  validate: (newObj: unknown, oldObj: unknown, context: C) => Verdict,
  context: (request: ReviewRequest) => C,
): ReviewValidator {
  return (request) => {
    switch (request.operation) {
      case "CREATE":
        return validate(request.object, undefined, context(request));
      case "UPDATE":
        return validate(request.object, request.oldObject, context(request));
      default:
        return allowed();
    }
  };
}
