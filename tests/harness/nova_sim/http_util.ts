/**
 * Small HTTP helpers of the simulator: JSON responses, the three error body
 * shapes (Nova, Keystone, Placement) and path templates.
 *
 * @module
 */

/** Which OpenStack service a route belongs to. */
export type Service = "identity" | "compute" | "placement";

const NOVA_FAULT_NAMES: Record<number, string> = {
  400: "badRequest",
  401: "unauthorized",
  403: "forbidden",
  404: "itemNotFound",
  405: "badMethod",
  409: "conflictingRequest",
  413: "overLimit",
  415: "badMediaType",
  429: "overLimit",
  501: "notImplemented",
  503: "serviceUnavailable",
};

const TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  406: "Not Acceptable",
  409: "Conflict",
  429: "Too Many Requests",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

/**
 * A JSON response.
 *
 * @example
 * ```ts
 * import { json } from "./http_util.ts";
 * const res = json(200, { ok: true });
 * console.log(res.status); // 200
 * ```
 */
export function json(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): Response {
  return new Response(body === undefined ? null : JSON.stringify(body), {
    status,
    headers: body === undefined
      ? headers
      : { "Content-Type": "application/json", ...headers },
  });
}

/**
 * The error body of a service, in that service's own shape:
 * Nova `{"itemNotFound": {"code": 404, "message": "..."}}`, Keystone
 * `{"error": {"code", "message", "title"}}`, Placement
 * `{"errors": [{"status", "title", "detail", "code", "request_id"}]}`.
 *
 * @example
 * ```ts
 * import { errorBody } from "./http_util.ts";
 * console.log(JSON.stringify(errorBody("compute", 409, "busy", "req-1")));
 * ```
 */
export function errorBody(
  service: Service,
  status: number,
  message: string,
  requestId: string,
  code?: string,
): unknown {
  const title = TITLES[status] ?? "Error";
  switch (service) {
    case "compute":
      return {
        [NOVA_FAULT_NAMES[status] ?? "computeFault"]: { code: status, message },
      };
    case "identity":
      return { error: { code: status, message, title } };
    case "placement":
      return {
        errors: [{
          status,
          title,
          detail: `${message}`,
          code: code ?? "placement.undefined_code",
          request_id: requestId,
        }],
      };
  }
}

/** A parsed path template like `/servers/{id}/action`. */
export interface Template {
  /** The template text. */
  text: string;
  /** Its segments. */
  segments: string[];
}

/**
 * Parses a path template.
 *
 * @example
 * ```ts
 * import { matchTemplate, template } from "./http_util.ts";
 * console.log(matchTemplate(template("/servers/{id}"), "/servers/abc")); // { id: "abc" }
 * ```
 */
export function template(text: string): Template {
  return { text, segments: text.split("/").filter((s) => s !== "") };
}

/** Matches a path against a template; returns its parameters or undefined. */
export function matchTemplate(
  t: Template,
  path: string,
): Record<string, string> | undefined {
  const parts = path.split("/").filter((s) => s !== "");
  if (parts.length !== t.segments.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < parts.length; i++) {
    const seg = t.segments[i] ?? "";
    const part = parts[i] ?? "";
    if (seg.startsWith("{") && seg.endsWith("}")) {
      params[seg.slice(1, -1)] = decodeURIComponent(part);
    } else if (seg !== part) {
      return undefined;
    }
  }
  return params;
}
