/**
 * The Keystone v3 part of the simulator: password, application-credential
 * and token authentication (a token it issued, re-scoped), project or
 * system scope, users and projects found in their domain by domain id or
 * name (the id wins when both are given, as in Keystone), tokens in
 * `X-Subject-Token` with a catalog, and token validation for the other
 * services.
 *
 * @module
 */

import { z } from "zod";
import { json } from "./http_util.ts";
import { type RequestContext, type Route, route } from "./route.ts";
import type { Scenario } from "./scenario.ts";
import { NovaFault } from "./world.ts";

/** Ids of the simulated identities. */
export const ADMIN_USER_ID = "9a0c2b3e6f1d4c5ab1e2d3c4b5a69788";
/** Project id of the admin project. */
export const ADMIN_PROJECT_ID = "7c1e4b2a9d3f4e5c8b6a0d1f2e3c4b5a";

const ref = z.object({
  id: z.string().optional(),
  name: z.string().optional(),
  domain: z.object({ id: z.string().optional(), name: z.string().optional() })
    .optional(),
});

const authRequest = z.object({
  auth: z.object({
    identity: z.object({
      methods: z.array(z.string()).min(1),
      password: z.object({
        user: ref.extend({ password: z.string() }),
      }).optional(),
      application_credential: z.object({
        id: z.string().optional(),
        name: z.string().optional(),
        secret: z.string(),
        user: ref.optional(),
      }).optional(),
      token: z.object({ id: z.string() }).optional(),
    }),
    scope: z.union([
      z.object({ project: ref }),
      z.literal("unscoped"),
      z.object({ system: z.object({ all: z.boolean().optional() }) }),
      z.object({ domain: z.unknown() }),
    ]).optional(),
  }),
});

interface TokenRecord {
  expiresAt: number;
  /** The project of a project-scoped token. */
  projectId: string | undefined;
  /** True for a system-scoped token. */
  system: boolean;
}

/** What a new token is scoped to. */
type Scope = { project: true } | { system: true };

const UNAUTHORIZED = "The request you have made requires authentication.";

/** Keystone finds a domain by id when the reference has one, else by name. */
function domainMatches(
  d: { id?: string | undefined; name?: string | undefined } | undefined,
  domain: { id: string; name: string },
): boolean {
  if (d === undefined) return false;
  if (d.id !== undefined) return d.id === domain.id;
  return d.name === domain.name;
}

/** Another region of the catalog, served by another simulator. */
export interface CatalogRegion {
  /** Its name. */
  readonly region: string;
  /** Its Nova base URL. */
  readonly computeUrl: string;
  /** Its Placement base URL. */
  readonly placementUrl: string;
}

/**
 * Keystone state: issued tokens.
 *
 * @example
 * ```ts
 * import { Keystone } from "./keystone_api.ts";
 * import { parseScenario } from "./scenario.ts";
 * const ks = new Keystone(parseScenario({ hosts: [{ name: "a" }] }));
 * console.log(ks.validate("nope")); // undefined
 * ```
 */
export class Keystone {
  readonly #scenario: Scenario;
  readonly #tokens = new Map<string, TokenRecord>();
  /** Other regions of the catalog: their Nova and Placement. */
  readonly #regions: CatalogRegion[] = [];
  /** Identity services whose tokens this cloud accepts too. */
  readonly #trusted: Keystone[] = [];
  /** Added latency of the token endpoint (real ms). */
  tokenLatencyMs: number;
  /** Token lifetime in real ms. */
  tokenTtlMs: number;

  /** Creates the identity service of a scenario. */
  constructor(scenario: Scenario) {
    this.#scenario = scenario;
    this.tokenLatencyMs = scenario.faults.tokenLatencyMs;
    this.tokenTtlMs = scenario.tokenTtlSeconds * 1000;
  }

  /** The scope of a valid token (a project, or the system), or undefined. */
  validate(
    token: string | null,
  ): { projectId: string | undefined; system: boolean } | undefined {
    const t = this.#live(token);
    if (t === undefined) {
      for (const other of this.#trusted) {
        const v = other.validate(token);
        if (v !== undefined) return v;
      }
      return undefined;
    }
    return { projectId: t.projectId, system: t.system };
  }

  #live(token: string | null | undefined): TokenRecord | undefined {
    if (token === null || token === undefined) return undefined;
    const t = this.#tokens.get(token);
    if (t === undefined) return undefined;
    if (Date.now() >= t.expiresAt) {
      this.#tokens.delete(token);
      return undefined;
    }
    return t;
  }

  /**
   * Lists another region in the catalog (its compute and placement
   * endpoints), as one Keystone serves the regions of a cloud.
   */
  addRegion(region: CatalogRegion): void {
    this.#regions.push(region);
  }

  /** Accepts the tokens of `other` too (it is this region's Keystone). */
  trust(other: Keystone): void {
    this.#trusted.push(other);
  }

  /** Invalidates every token (the next call of every client gets a 401). */
  revokeAll(): void {
    this.#tokens.clear();
  }

  /** Number of live tokens. */
  get tokenCount(): number {
    return this.#tokens.size;
  }

  /** The scope a user's token asks for: a project of the user's, or the system. */
  #userScope(scope: z.infer<typeof authRequest>["auth"]["scope"]): Scope {
    const c = this.#scenario.credentials;
    if (scope !== undefined && typeof scope === "object") {
      if ("system" in scope) {
        // the admin user holds a role on the system, as after keystone-manage bootstrap
        if (scope.system.all !== true) {
          throw new NovaFault(
            400,
            "Invalid input for field 'scope.system': only 'all' is supported.",
          );
        }
        return { system: true };
      }
      if ("project" in scope) {
        const p = scope.project;
        const projectOk = p.id !== undefined
          ? p.id === ADMIN_PROJECT_ID
          : p.name === c.projectName &&
            domainMatches(p.domain, {
              id: c.projectDomainId,
              name: c.projectDomainName,
            });
        if (!projectOk) throw new NovaFault(401, UNAUTHORIZED);
        return { project: true };
      }
    }
    throw new NovaFault(
      401,
      "The simulator only issues project- or system-scoped tokens.",
    );
  }

  #authenticate(
    body: z.infer<typeof authRequest>,
  ): { method: string; scope: Scope } {
    const c = this.#scenario.credentials;
    const id = body.auth.identity;
    if (id.methods.includes("password") && id.password !== undefined) {
      const u = id.password.user;
      const userOk = u.id !== undefined
        ? u.id === ADMIN_USER_ID
        : u.name === c.username &&
          domainMatches(u.domain, {
            id: c.userDomainId,
            name: c.userDomainName,
          });
      if (!userOk || u.password !== c.password) {
        throw new NovaFault(401, UNAUTHORIZED);
      }
      return { method: "password", scope: this.#userScope(body.auth.scope) };
    }
    if (id.methods.includes("token") && id.token !== undefined) {
      // A token this Keystone issued and that has not expired, re-scoped.
      if (this.#live(id.token.id) === undefined) {
        throw new NovaFault(401, UNAUTHORIZED);
      }
      return { method: "token", scope: this.#userScope(body.auth.scope) };
    }
    if (
      id.methods.includes("application_credential") &&
      id.application_credential !== undefined
    ) {
      const a = id.application_credential;
      if (body.auth.scope !== undefined) {
        throw new NovaFault(
          401,
          "Application credentials cannot request a scope.",
        );
      }
      const match = c.applicationCredentials.find((cred) => {
        if (a.id !== undefined) return cred.id === a.id;
        const u = a.user;
        const userOk = u !== undefined &&
          (u.id !== undefined
            ? u.id === ADMIN_USER_ID
            : u.name === c.username &&
              domainMatches(u.domain, {
                id: c.userDomainId,
                name: c.userDomainName,
              }));
        return userOk && cred.name !== undefined && cred.name === a.name;
      });
      if (match === undefined || match.secret !== a.secret) {
        throw new NovaFault(401, UNAUTHORIZED);
      }
      return { method: "application_credential", scope: { project: true } };
    }
    throw new NovaFault(
      400,
      "Expecting to find identity methods in auth. The server could not comply with the request since it is either malformed or otherwise incorrect.",
    );
  }

  #catalog(origin: string): unknown[] {
    const region = this.#scenario.region;
    const eps = (url: string, prefix: string) =>
      (["public", "internal", "admin"] as const).map((iface, i) => ({
        id: `${prefix}${i}`,
        interface: iface,
        region,
        region_id: region,
        url,
      }));
    return [
      {
        id: "c0",
        type: "identity",
        name: "keystone",
        endpoints: eps(`${origin}/identity`, "ki"),
      },
      {
        id: "c1",
        type: "compute",
        name: "nova",
        endpoints: eps(`${origin}/compute/v2.1`, "nv"),
      },
      {
        id: "c2",
        type: "placement",
        name: "placement",
        endpoints: eps(`${origin}/placement`, "pl"),
      },
      ...this.#regions.flatMap((r, i) => {
        const at = (url: string, prefix: string) =>
          (["public", "internal", "admin"] as const).map((iface, j) => ({
            id: `${prefix}${i}r${j}`,
            interface: iface,
            region: r.region,
            region_id: r.region,
            url,
          }));
        return [
          {
            id: `c1r${i}`,
            type: "compute",
            name: "nova",
            endpoints: at(r.computeUrl, "nv"),
          },
          {
            id: `c2r${i}`,
            type: "placement",
            name: "placement",
            endpoints: at(r.placementUrl, "pl"),
          },
        ];
      }),
    ];
  }

  /** The routes (paths inside `/identity/v3`). */
  routes(): Route[] {
    const issue = async (ctx: RequestContext): Promise<Response> => {
      if (this.tokenLatencyMs > 0) {
        await new Promise((r) => setTimeout(r, this.tokenLatencyMs));
      }
      const raw = await ctx.body();
      const parsed = authRequest.safeParse(raw);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new NovaFault(
          400,
          `Invalid input for field '${issue?.path.join(".") ?? "auth"}': ${
            issue?.message ?? "invalid"
          }`,
        );
      }
      const { method, scope } = this.#authenticate(parsed.data);
      const value = `gAAAAA${crypto.randomUUID().replaceAll("-", "")}${
        crypto.randomUUID().replaceAll("-", "")
      }`;
      const now = Date.now();
      const expiresAt = now + this.tokenTtlMs;
      const system = "system" in scope;
      this.#tokens.set(value, {
        expiresAt,
        projectId: system ? undefined : ADMIN_PROJECT_ID,
        system,
      });
      const fmt = (ms: number) =>
        new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
      const c = this.#scenario.credentials;
      return json(201, {
        token: {
          methods: [method],
          user: {
            id: ADMIN_USER_ID,
            name: c.username,
            domain: { id: c.userDomainId, name: c.userDomainName },
            password_expires_at: null,
          },
          audit_ids: [crypto.randomUUID().slice(0, 22)],
          expires_at: fmt(expiresAt),
          issued_at: fmt(now),
          ...(system ? { system: { all: true } } : {
            project: {
              id: ADMIN_PROJECT_ID,
              name: c.projectName,
              domain: { id: c.projectDomainId, name: c.projectDomainName },
            },
          }),
          is_domain: false,
          roles: [{ id: "r1", name: "admin" }, { id: "r2", name: "member" }, {
            id: "r3",
            name: "reader",
          }],
          catalog: this.#catalog(ctx.url.origin),
        },
      }, { "X-Subject-Token": value });
    };
    const versionDoc = (ctx: RequestContext): Response =>
      json(200, {
        version: {
          id: "v3.14",
          status: "stable",
          updated: "2020-04-07T00:00:00Z",
          links: [{ rel: "self", href: `${ctx.serviceBase}/` }],
          "media-types": [{
            base: "application/json",
            type: "application/vnd.openstack.identity-v3+json",
          }],
        },
      });
    return [
      route("identity", "GET", "/", versionDoc, false),
      route("identity", "POST", "/auth/tokens", issue, false),
    ];
  }
}
