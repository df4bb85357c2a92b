/**
 * From an object validator (`validateEvictionPolicy`, `validateEviction`)
 * to a validator of the framework's admission request. Parsing the
 * AdmissionReview itself (400s, 413s, the response) is the framework's job
 * (framework/admission.ts, framework/webhook_server.ts).
 *
 * @module
 */

import {
  type AdmissionRequest,
  type AdmissionResult,
  allow,
} from "../framework/admission.ts";

/**
 * Adapts an object validator (`validateEvictionPolicy`,
 * `validateEviction`) to a validator of the framework's
 * {@linkcode AdmissionRequest}: CREATE passes no
 * old object, UPDATE passes `oldObject`, DELETE and CONNECT are allowed
 * without calling it. `context` is called once per CREATE or UPDATE
 * request (read it from the informer caches there).
 *
 * @example
 * ```ts
 * import { objectValidator } from "./admission_review.ts";
 * import { validateEvictionPolicy } from "./eviction_policy.ts";
 * const validate = objectValidator(validateEvictionPolicy, () => ({ runningEvictions: [] }));
 * const result = validate({
 *   uid: "1", operation: "CREATE", name: "default", namespace: "", userInfo: {},
 *   object: { metadata: { name: "default" }, spec: { maxConcurrentMigrations: 2 } },
 *   oldObject: undefined, dryRun: false,
 * });
 * console.assert(result.allowed);
 * ```
 */
export function objectValidator<C>(
  validate: (newObj: unknown, oldObj: unknown, context: C) => AdmissionResult,
  context: (request: AdmissionRequest<unknown>) => C,
): (request: AdmissionRequest<unknown>) => AdmissionResult {
  return (request) => {
    switch (request.operation) {
      case "CREATE":
        return validate(request.object, undefined, context(request));
      case "UPDATE":
        return validate(request.object, request.oldObject, context(request));
      default:
        return allow();
    }
  };
}
