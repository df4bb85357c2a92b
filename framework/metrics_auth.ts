/**
 * Authentication and authorization of `/metrics` scrapes, as
 * controller-runtime's secure metrics do: the scraper's bearer token is
 * authenticated by the API server (TokenReview) and the user it names must
 * be allowed `get` on the non-resource URL `/metrics` (SubjectAccessReview).
 * The operator's own identity needs `create` on both reviews.
 *
 * @module
 */

import { z } from "zod";
import type { KubeClient } from "./client.ts";
import { errText } from "./errors.ts";

/** What an authorizer says about one scrape. */
export type MetricsVerdict =
  | { allowed: true; user: string }
  | { allowed: false; status: 401 | 403 | 500; reason: string };

/** Decides whether a request with this `Authorization` header may scrape. */
export type MetricsAuthorizer = (
  authorization: string | null,
) => Promise<MetricsVerdict>;

/**
 * The token of an `Authorization: Bearer <token>` header, or undefined when
 * the header is missing, of another scheme, or empty.
 *
 * @example
 * ```ts
 * import { bearerToken } from "./metrics_auth.ts";
 * console.assert(bearerToken("Bearer abc") === "abc");
 * console.assert(bearerToken("Basic abc") === undefined);
 * ```
 */
export function bearerToken(authorization: string | null): string | undefined {
  if (authorization === null) return undefined;
  const match = /^bearer[ \t]+([^ \t]+)[ \t]*$/i.exec(authorization);
  return match?.[1];
}

const tokenReviewSchema = z.object({
  status: z.object({
    authenticated: z.boolean().optional(),
    error: z.string().optional(),
    user: z.object({
      username: z.string().optional(),
      uid: z.string().optional(),
      groups: z.array(z.string()).optional(),
      extra: z.record(z.string(), z.array(z.string())).optional(),
    }).optional(),
  }).optional(),
});

const accessReviewSchema = z.object({
  status: z.object({
    allowed: z.boolean().optional(),
    reason: z.string().optional(),
  }).optional(),
});

/**
 * An authorizer that asks the API server through `client`: a TokenReview of
 * the bearer token, then a SubjectAccessReview of `get` on `path` for the
 * user it names. No token: 401 without an API call.
 *
 * @example
 * ```ts ignore
 * const authorize = apiServerMetricsAuthorizer(client);
 * const verdict = await authorize(request.headers.get("authorization"));
 * ```
 */
export function apiServerMetricsAuthorizer(
  client: Pick<KubeClient, "request">,
  path = "/metrics",
): MetricsAuthorizer {
  return async (authorization) => {
    const token = bearerToken(authorization);
    if (token === undefined) {
      return {
        allowed: false,
        status: 401,
        reason: "a bearer token is required",
      };
    }
    try {
      const review = tokenReviewSchema.parse(
        await client.request(
          "POST",
          "/apis/authentication.k8s.io/v1/tokenreviews",
          {
            body: {
              apiVersion: "authentication.k8s.io/v1",
              kind: "TokenReview",
              spec: { token },
            },
          },
        ),
      );
      const user = review.status?.user;
      if (
        review.status?.authenticated !== true || user?.username === undefined
      ) {
        return {
          allowed: false,
          status: 401,
          reason: "the token was not authenticated",
        };
      }
      const access = accessReviewSchema.parse(
        await client.request(
          "POST",
          "/apis/authorization.k8s.io/v1/subjectaccessreviews",
          {
            body: {
              apiVersion: "authorization.k8s.io/v1",
              kind: "SubjectAccessReview",
              spec: {
                user: user.username,
                ...(user.uid === undefined ? {} : { uid: user.uid }),
                groups: user.groups ?? [],
                ...(user.extra === undefined ? {} : { extra: user.extra }),
                nonResourceAttributes: { path, verb: "get" },
              },
            },
          },
        ),
      );
      if (access.status?.allowed !== true) {
        return {
          allowed: false,
          status: 403,
          reason: `${user.username} may not get ${path}`,
        };
      }
      return { allowed: true, user: user.username };
    } catch (err) {
      return {
        allowed: false,
        status: 500,
        reason: `authorizing the scrape failed: ${errText(err)}`,
      };
    }
  };
}
