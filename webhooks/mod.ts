/**
 * The validating admission webhook of evictor: pure validate functions for
 * EvictionPolicy and Eviction, their contexts, and the AdmissionReview v1
 * request/response handling around them.
 *
 * @module
 */

export * from "./eviction_policy.ts";
export * from "./eviction.ts";
export * from "./context.ts";
export * from "./admission_review.ts";
export * from "./register.ts";
