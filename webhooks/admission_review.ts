/**
 * AdmissionReview v1 in, AdmissionReview v1 (or a 400) out, around a pure
 * validate function. Pure and synchronous, and it never throws, whatever
 * the body: a body that is not an `admission.k8s.io/v1` AdmissionReview
 * with a `request.uid` gets status 400 and a `Status` body; a validate
 * function that throws gets a denial with a constant message (the
 * exception is not shown to the client).
 *
 * @module
 */

import { z } from "zod";
import { quoteValue } from "../controllers/eviction/concurrency_quote.ts";
import { allowed, denied, type Verdict } from "./verdict.ts";

/** The AdmissionReview apiVersion this webhook speaks. */
export const ADMISSION_REVIEW_API_VERSION = "admission.k8s.io/v1";

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

/** The HTTP status and JSON body to answer with. */
export interface ReviewOutcome {
  /** 200, or 400 for a body that is not an AdmissionReview v1. */
  readonly status: 200 | 400;
  /** The JSON body. */
  readonly body: unknown;
}

/** The denial message when the validate function throws. */
export const INTERNAL_ERROR_MESSAGE =
  "the validating webhook failed internally; see the operator logs";

const ReviewSchema = z.looseObject({
  apiVersion: z.literal(ADMISSION_REVIEW_API_VERSION),
  kind: z.literal("AdmissionReview"),
  request: z.looseObject({
    uid: z.string().min(1),
    kind: z.looseObject({
      group: z.string(),
      version: z.string(),
      kind: z.string(),
    }).optional(),
    operation: z.enum(["CREATE", "UPDATE", "DELETE", "CONNECT"]),
    name: z.string().optional(),
    namespace: z.string().optional(),
    object: z.unknown().optional(),
    oldObject: z.unknown().optional(),
    dryRun: z.boolean().optional(),
  }),
});

function badRequest(message: string): ReviewOutcome {
  return {
    status: 400,
    body: {
      kind: "Status",
      apiVersion: "v1",
      status: "Failure",
      code: 400,
      reason: "BadRequest",
      message,
    },
  };
}

function reviewFor(uid: string, verdict: Verdict): unknown {
  const response: Record<string, unknown> = { uid, allowed: verdict.allowed };
  if (!verdict.allowed) {
    response["status"] = {
      status: "Failure",
      code: 403,
      reason: "Forbidden",
      message: verdict.message,
    };
  }
  if (verdict.warnings.length > 0) response["warnings"] = [...verdict.warnings];
  return {
    apiVersion: ADMISSION_REVIEW_API_VERSION,
    kind: "AdmissionReview",
    response,
  };
}

function sane(verdict: unknown): Verdict {
  if (typeof verdict !== "object" || verdict === null) {
    return denied(INTERNAL_ERROR_MESSAGE);
  }
  const v = verdict as Record<string, unknown>;
  const rawWarnings = v["warnings"];
  const warnings = Array.isArray(rawWarnings)
    ? rawWarnings.filter((w): w is string => typeof w === "string")
    : [];
  if (v["allowed"] === true) return allowed(warnings);
  const message = v["message"];
  return denied(
    typeof message === "string" && message !== ""
      ? message
      : INTERNAL_ERROR_MESSAGE,
    warnings,
  );
}

function handle(body: unknown, validate: ReviewValidator): ReviewOutcome {
  let json: unknown = body;
  if (typeof body === "string") {
    try {
      json = JSON.parse(body);
    } catch {
      return badRequest("the body is not valid JSON");
    }
  }
  const parsed = ReviewSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue === undefined || issue.path.length === 0
      ? "the body"
      : issue.path.map((k) => String(k)).join(".");
    return badRequest(
      `not an ${ADMISSION_REVIEW_API_VERSION} AdmissionReview: ${
        quoteValue(where)
      } is missing or invalid`,
    );
  }
  const r = parsed.data.request;
  const request: ReviewRequest = {
    uid: r.uid,
    operation: r.operation,
    kind: r.kind === undefined
      ? undefined
      : { group: r.kind.group, version: r.kind.version, kind: r.kind.kind },
    name: r.name ?? "",
    namespace: r.namespace ?? "",
    object: r.object,
    oldObject: r.oldObject,
    dryRun: r.dryRun ?? false,
  };
  let verdict: Verdict;
  try {
    verdict = sane(validate(request));
  } catch {
    verdict = denied(INTERNAL_ERROR_MESSAGE);
  }
  return { status: 200, body: reviewFor(r.uid, verdict) };
}

/**
 * Answers one AdmissionReview body: `body` is the parsed JSON (or the raw
 * body text, which is parsed here). Returns status 400 with a `Status` body
 * for anything that is not an `admission.k8s.io/v1` AdmissionReview with a
 * `request.uid` and an `operation`; otherwise status 200 and the response
 * review, which echoes `uid` and `apiVersion`, carries the warnings, and on
 * denial `status: {code: 403, reason: "Forbidden", message}`. Never throws.
 *
 * @example
 * ```ts
 * import { admissionReviewResponse } from "./admission_review.ts";
 * import { allowed } from "./verdict.ts";
 * const out = admissionReviewResponse(
 *   { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview",
 *     request: { uid: "42", operation: "CREATE", object: {} } },
 *   () => allowed(["careful"]),
 * );
 * console.assert(out.status === 200);
 * console.assert(admissionReviewResponse("{", () => allowed()).status === 400);
 * ```
 */
export function admissionReviewResponse(
  body: unknown,
  validate: ReviewValidator,
): ReviewOutcome {
  try {
    return handle(body, validate);
  } catch {
    // unreachable by construction; a guarantee rather than a hope
    return badRequest("the body could not be read as an AdmissionReview");
  }
}

/**
 * Adapts an object validator (`validateEvictionPolicy`,
 * `validateEviction`) to a {@linkcode ReviewValidator}: CREATE passes no
 * old object, UPDATE passes `oldObject`, DELETE and CONNECT are allowed
 * without calling it. `context` is called once per CREATE or UPDATE
 * request (read it from the informer caches there).
 *
 * @example
 * ```ts
 * import { admissionReviewResponse, objectValidator } from "./admission_review.ts";
 * import { validateEvictionPolicy } from "./eviction_policy.ts";
 * const validate = objectValidator(validateEvictionPolicy, () => ({ runningEvictions: [] }));
 * const out = admissionReviewResponse(
 *   { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview",
 *     request: { uid: "1", operation: "CREATE",
 *       object: { metadata: { name: "default" }, spec: { maxConcurrentMigrations: 2 } } } },
 *   validate,
 * );
 * console.assert(out.status === 200);
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
