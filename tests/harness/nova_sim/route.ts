/**
 * The route and request-context types shared by the simulator's APIs.
 *
 * @module
 */

import type { Counters } from "./counters.ts";
import { type Service, type Template, template } from "./http_util.ts";
import type { World } from "./world.ts";

/** What a handler gets. */
export interface RequestContext {
  /** The request. */
  req: Request;
  /** Its URL. */
  url: URL;
  /** Path inside the service (e.g. `/servers/detail`). */
  path: string;
  /** Path parameters. */
  params: Record<string, string>;
  /** The simulated cloud. */
  world: World;
  /** Counters. */
  counters: Counters;
  /** Request id of this call. */
  requestId: string;
  /** Negotiated microversion minor number (compute 2.N / placement 1.N). */
  mv: number;
  /** Base URL of the service (e.g. http://127.0.0.1:PORT/compute/v2.1). */
  serviceBase: string;
  /** Project of the token (Nova/Placement), if any. */
  projectId: string | undefined;
  /** The JSON body; a malformed body is a 400. */
  body(): Promise<unknown>;
}

/** A request handler. */
export type Handler = (ctx: RequestContext) => Response | Promise<Response>;

/** A route. */
export interface Route {
  /** Service. */
  service: Service;
  /** Method. */
  method: "GET" | "POST" | "PUT" | "DELETE";
  /** Path template inside the service (e.g. `/servers/{id}`). */
  template: Template;
  /** Handler. */
  handler: Handler;
  /** Needs a valid token (everything but Keystone's token call). */
  auth: boolean;
}

/**
 * Declares a route.
 *
 * @example
 * ```ts
 * import { route } from "./route.ts";
 * import { json } from "./http_util.ts";
 * const r = route("compute", "GET", "/servers/{id}", () => json(200, {}));
 * console.log(r.template.text); // /servers/{id}
 * ```
 */
export function route(
  service: Service,
  method: Route["method"],
  path: string,
  handler: Handler,
  auth = true,
): Route {
  return { service, method, template: template(path), handler, auth };
}
