/**
 * AdmissionReview v1: parse the request at the boundary (zod), run a pure
 * validate function, build the response (echoing `uid` and `apiVersion`).
 * No HTTP here; see `webhook_server.ts`.
 *
 * @module
 */

import { z, type ZodType } from "zod";
import type { KubeObject } from "./kind.ts";

/** Who sent the request. */
export interface AdmissionUser {
  /** User name. */
  username?: string | undefined;
  /** Groups. */
  groups?: string[] | undefined;
}

/** An admission request with its objects parsed. */
export interface AdmissionRequest<T> {
  /** Request id, echoed in the response. */
  uid: string;
  /** CREATE, UPDATE, DELETE or CONNECT. */
  operation: "CREATE" | "UPDATE" | "DELETE" | "CONNECT";
  /** Object name (may be empty on CREATE with generateName). */
  name: string;
  /** Namespace ("" for cluster-scoped). */
  namespace: string;
  /** The new object (absent on DELETE). */
  object: T | undefined;
  /** The old object (UPDATE, DELETE). */
  oldObject: T | undefined;
  /** The requesting user. */
  userInfo: AdmissionUser;
  /** Whether this is a dry run. */
  dryRun: boolean;
}

/** The verdict of a validate function. */
export type AdmissionResult =
  | { allowed: true; warnings?: string[] | undefined }
  | {
    allowed: false;
    message: string;
    code?: number | undefined;
    warnings?: string[] | undefined;
  };

/** A validate function: pure, given the parsed request. */
export type Validator<T> = (
  request: AdmissionRequest<T>,
) => AdmissionResult | Promise<AdmissionResult>;

/**
 * Allows, with optional warnings.
 *
 * @example
 * ```ts
 * import { allow } from "./admission.ts";
 * console.assert(allow(["deprecated field"]).allowed);
 * ```
 */
export function allow(warnings?: string[]): AdmissionResult {
  return warnings === undefined || warnings.length === 0
    ? { allowed: true }
    : { allowed: true, warnings };
}

/**
 * Denies with a message that says what is wrong; `code` is the HTTP-like
 * status shown to the client (default 403).
 *
 * @example
 * ```ts
 * import { deny } from "./admission.ts";
 * const r = deny("spec.maxConcurrentMigrations must be >= 1, got 0");
 * console.assert(!r.allowed);
 * ```
 */
export function deny(
  message: string,
  options: { code?: number; warnings?: string[] } = {},
): AdmissionResult {
  return {
    allowed: false,
    message,
    ...(options.code === undefined ? {} : { code: options.code }),
    ...(options.warnings === undefined || options.warnings.length === 0
      ? {}
      : { warnings: options.warnings }),
  };
}

const reviewSchema = z.object({
  apiVersion: z.literal("admission.k8s.io/v1"),
  kind: z.literal("AdmissionReview"),
  request: z.object({
    uid: z.string().min(1),
    operation: z.enum(["CREATE", "UPDATE", "DELETE", "CONNECT"]),
    name: z.string().optional(),
    namespace: z.string().optional(),
    object: z.unknown().optional(),
    oldObject: z.unknown().optional(),
    userInfo: z.object({
      username: z.string().optional(),
      groups: z.array(z.string()).optional(),
    }).loose().optional(),
    dryRun: z.boolean().optional(),
  }).loose(),
});

/** The HTTP-level outcome of handling one review body. */
export interface AdmissionOutcome {
  /** HTTP status: 200, or 400 for a malformed review. */
  status: number;
  /** JSON body to send. */
  body: unknown;
}

function badRequest(message: string): AdmissionOutcome {
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

function issuesText(error: z.ZodError): string {
  return error.issues.slice(0, 5).map((i) => {
    const path = i.path.map(String).join(".");
    return path === "" ? i.message : `${path}: ${i.message}`;
  }).join("; ");
}

/** The response for a review, echoing `uid` and apiVersion. */
export function admissionResponse(
  uid: string,
  result: AdmissionResult,
): unknown {
  const response: Record<string, unknown> = { uid, allowed: result.allowed };
  if (!result.allowed) {
    response.status = { code: result.code ?? 403, message: result.message };
  }
  if (result.warnings !== undefined && result.warnings.length > 0) {
    response.warnings = result.warnings;
  }
  return {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    response,
  };
}

/**
 * Handles a parsed JSON body: 400 for something that is not an
 * AdmissionReview v1 with a `request.uid`; else runs `validate` on the
 * objects parsed with `schema` (objects that fail it are denied with the
 * schema's issues). A throwing validator denies with a short message; the
 * exception is given to `onError`, not to the client.
 *
 * @example
 * ```ts
 * import { allow, handleAdmission } from "./admission.ts";
 * const out = await handleAdmission(
 *   { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview",
 *     request: { uid: "1", operation: "CREATE", object: { metadata: { name: "a" } } } },
 *   () => allow(),
 * );
 * console.assert(out.status === 200);
 * ```
 */
export async function handleAdmission<T extends KubeObject>(
  json: unknown,
  validate: Validator<T>,
  schema?: ZodType<T>,
  onError: (err: unknown) => void = () => {},
): Promise<AdmissionOutcome> {
  if (typeof json !== "object" || json === null) {
    return badRequest("body must be a JSON AdmissionReview object");
  }
  const uidCandidate = (json as { request?: { uid?: unknown } }).request?.uid;
  if (typeof uidCandidate !== "string" || uidCandidate === "") {
    return badRequest("request.uid is missing");
  }
  const parsed = reviewSchema.safeParse(json);
  if (!parsed.success) {
    return badRequest(
      `not an admission.k8s.io/v1 AdmissionReview: ${issuesText(parsed.error)}`,
    );
  }
  const r = parsed.data.request;
  const parseObj = (
    raw: unknown,
    which: string,
  ): { ok: true; value: T | undefined } | { ok: false; message: string } => {
    if (raw === undefined || raw === null) {
      return { ok: true, value: undefined };
    }
    if (schema === undefined) return { ok: true, value: raw as T };
    const res = schema.safeParse(raw);
    return res.success
      ? { ok: true, value: res.data }
      : { ok: false, message: `${which} is invalid: ${issuesText(res.error)}` };
  };
  const object = parseObj(r.object, "object");
  if (!object.ok) {
    return {
      status: 200,
      body: admissionResponse(r.uid, deny(object.message, { code: 422 })),
    };
  }
  const oldObject = parseObj(r.oldObject, "oldObject");
  // an old object that no longer fits the schema must not block its own fix or deletion
  const request: AdmissionRequest<T> = {
    uid: r.uid,
    operation: r.operation,
    name: r.name ?? "",
    namespace: r.namespace ?? "",
    object: object.value,
    oldObject: oldObject.ok ? oldObject.value : undefined,
    userInfo: {
      ...(r.userInfo?.username === undefined
        ? {}
        : { username: r.userInfo.username }),
      ...(r.userInfo?.groups === undefined
        ? {}
        : { groups: r.userInfo.groups }),
    },
    dryRun: r.dryRun ?? false,
  };
  let result: AdmissionResult;
  try {
    result = await validate(request);
  } catch (err) {
    onError(err);
    result = deny(
      "the validating webhook failed internally; see the operator logs",
      { code: 500 },
    );
  }
  return { status: 200, body: admissionResponse(r.uid, result) };
}
