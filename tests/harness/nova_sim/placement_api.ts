/**
 * The Placement part of the simulator: resource providers (one per
 * hypervisor, same UUID) and their traits with generations.
 *
 * @module
 */

import { z } from "zod";
import { json } from "./http_util.ts";
import { placementCapacityRoutes } from "./placement_capacity.ts";
import { type RequestContext, type Route, route } from "./route.ts";
import { NovaFault, type SimHost } from "./world.ts";

function requireTraitsVersion(ctx: RequestContext): void {
  if (ctx.mv < 6) throw new NovaFault(404, "The resource could not be found.");
}

function provider(ctx: RequestContext): SimHost {
  const uuid = ctx.params["uuid"] ?? "";
  const h = [...ctx.world.hosts.values()].find((x) => x.hypervisorId === uuid);
  if (h === undefined) {
    throw new NovaFault(
      404,
      `The resource could not be found.\n\n No resource provider with uuid ${uuid} found`,
      "placement.undefined_code",
    );
  }
  return h;
}

function listProviders(ctx: RequestContext): Response {
  const name = ctx.url.searchParams.get("name");
  const hosts = [...ctx.world.hosts.values()].filter((h) =>
    name === null || h.name === name
  );
  return json(200, {
    resource_providers: hosts.map((h) => ({
      uuid: h.hypervisorId,
      name: h.name,
      generation: h.rpGeneration,
      parent_provider_uuid: null,
      root_provider_uuid: h.hypervisorId,
      links: [{
        rel: "self",
        href: `${ctx.serviceBase}/resource_providers/${h.hypervisorId}`,
      }],
    })),
  });
}

function getTraits(ctx: RequestContext): Response {
  requireTraitsVersion(ctx);
  const h = provider(ctx);
  return json(200, {
    traits: h.traits,
    resource_provider_generation: h.rpGeneration,
  });
}

const putTraitsSchema = z.object({
  traits: z.array(z.string()),
  resource_provider_generation: z.number().int(),
}).strict();

async function putTraits(ctx: RequestContext): Promise<Response> {
  requireTraitsVersion(ctx);
  const h = provider(ctx);
  const body = await ctx.body();
  const parsed = putTraitsSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new NovaFault(
      400,
      `JSON does not validate: ${issue?.path.join(".") ?? ""}: ${
        issue?.message ?? "invalid"
      }`,
      "placement.undefined_code",
    );
  }
  const unknown = parsed.data.traits.filter((t) => !ctx.world.traits.has(t));
  if (unknown.length > 0) {
    throw new NovaFault(
      400,
      `No such trait(s): ${unknown.join(", ")}`,
      "placement.undefined_code",
    );
  }
  if (parsed.data.resource_provider_generation !== h.rpGeneration) {
    throw new NovaFault(
      409,
      "resource provider generation conflict",
      "placement.concurrent_update",
    );
  }
  h.traits = [...new Set(parsed.data.traits)].sort();
  h.rpGeneration++;
  return json(200, {
    traits: h.traits,
    resource_provider_generation: h.rpGeneration,
  });
}

function listTraits(ctx: RequestContext): Response {
  requireTraitsVersion(ctx);
  const name = ctx.url.searchParams.get("name");
  let traits = [...ctx.world.traits].sort();
  if (name?.startsWith("startswith:")) {
    const p = name.slice("startswith:".length);
    traits = traits.filter((t) => t.startsWith(p));
  } else if (name?.startsWith("in:")) {
    const set = new Set(name.slice(3).split(","));
    traits = traits.filter((t) => set.has(t));
  }
  return json(200, { traits });
}

function putTrait(ctx: RequestContext): Response {
  requireTraitsVersion(ctx);
  const name = ctx.params["name"] ?? "";
  if (!/^CUSTOM_[A-Z0-9_]+$/.test(name)) {
    throw new NovaFault(
      400,
      `The trait is invalid. A valid trait must be no longer than 255 characters, start with the prefix "CUSTOM_" and use following characters: "A"-"Z", "0"-"9" and "_"`,
      "placement.undefined_code",
    );
  }
  if (ctx.world.traits.has(name)) return json(204, undefined);
  ctx.world.traits.add(name);
  return json(201, undefined, {
    Location: `${ctx.serviceBase}/traits/${name}`,
  });
}

function root(ctx: RequestContext): Response {
  return json(200, {
    versions: [{
      id: "v1.0",
      max_version: ctx.world.scenario.maxPlacementMicroversion,
      min_version: "1.0",
      status: "CURRENT",
      links: [{ rel: "self", href: "" }],
    }],
  });
}

/** The Placement routes (paths inside `/placement`). */
export const placementRoutes: Route[] = [
  route("placement", "GET", "/", root, false),
  route("placement", "GET", "/resource_providers", listProviders),
  route("placement", "GET", "/resource_providers/{uuid}/traits", getTraits),
  route("placement", "PUT", "/resource_providers/{uuid}/traits", putTraits),
  route("placement", "GET", "/traits", listTraits),
  route("placement", "PUT", "/traits/{name}", putTrait),
  ...placementCapacityRoutes,
];
