/**
 * The Placement endpoints of the capacity check, as Placement's API
 * reference defines them: `GET /allocation_candidates` (1.10+; `required`
 * 1.17+, `member_of` 1.21+, forbidden `!TRAIT` 1.22+, all inventory classes
 * in provider summaries 1.27+, parent/root UUIDs 1.29+, `mappings` 1.34+),
 * and per resource provider `inventories`, `usages` and `aggregates`
 * (PUT 1.19+ with the generation).
 *
 * Each host is one resource provider with VCPU, MEMORY_MB and DISK_GB
 * inventories at allocation ratio 1.0, the same room the simulator's
 * scheduler uses; usages count servers on the host and migration claims.
 *
 * @module
 */

import { z } from "zod";
import { json } from "./http_util.ts";
import { type RequestContext, type Route, route } from "./route.ts";
import { NovaFault, type SimHost, type World } from "./world.ts";

/** DISK_GB of every simulated host. */
export const SIM_HOST_DISK_GB = 10_240;

const aggregatesOfHost = new WeakMap<SimHost, string[]>();

/**
 * Puts a simulated host's resource provider into aggregates (what
 * `PUT /resource_providers/{uuid}/aggregates` does), bumping its generation.
 *
 * @example
 * ```ts ignore
 * setAggregates(sim.world.hosts.get("node002")!, ["b0f3..."]);
 * ```
 */
export function setAggregates(host: SimHost, aggregates: string[]): void {
  aggregatesOfHost.set(host, [...new Set(aggregates)].sort());
  host.rpGeneration++;
}

/** The aggregates of a simulated host's resource provider. */
export function aggregatesOf(host: SimHost): string[] {
  return aggregatesOfHost.get(host) ?? [];
}

interface SimInventory {
  total: number;
  reserved: number;
  allocation_ratio: number;
  min_unit: number;
  max_unit: number;
  step_size: number;
}

function inventoriesOf(h: SimHost): Record<string, SimInventory> {
  const inv = (total: number): SimInventory => ({
    total,
    reserved: 0,
    allocation_ratio: 1.0,
    min_unit: 1,
    max_unit: total,
    step_size: 1,
  });
  return {
    VCPU: inv(h.vcpus),
    MEMORY_MB: inv(h.ramMb),
    DISK_GB: inv(SIM_HOST_DISK_GB),
  };
}

function usagesOf(world: World, h: SimHost): Record<string, number> {
  const u = world.usage(h.name);
  return { VCPU: u.vcpus, MEMORY_MB: u.ramMb, DISK_GB: u.diskGb };
}

function capacity(i: SimInventory): number {
  return Math.floor((i.total - i.reserved) * i.allocation_ratio);
}

function provider(ctx: RequestContext): SimHost {
  const uuid = ctx.params["uuid"] ?? "";
  const h = [...ctx.world.hosts.values()].find((x) => x.hypervisorId === uuid);
  if (h === undefined) {
    throw new NovaFault(
      404,
      `No resource provider with uuid ${uuid} found`,
      "placement.undefined_code",
    );
  }
  return h;
}

function badRequest(message: string): NovaFault {
  return new NovaFault(400, message, "placement.undefined_code");
}

const STANDARD_CLASSES = new Set([
  "VCPU",
  "PCPU",
  "MEMORY_MB",
  "DISK_GB",
  "VGPU",
  "SRIOV_NET_VF",
  "IPV4_ADDRESS",
]);

function parseResources(raw: string | null): Map<string, number> {
  if (raw === null || raw === "") {
    throw badRequest(
      "Invalid query string parameters: 'resources' is a required property",
    );
  }
  const out = new Map<string, number>();
  for (const part of raw.split(",")) {
    const m = /^([A-Z0-9_]+):(\d+)$/.exec(part);
    if (m === null) {
      throw badRequest(
        `Badly formed resources parameter. Expected resources query string parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: ${raw}.`,
      );
    }
    const rc = m[1] ?? "";
    if (!STANDARD_CLASSES.has(rc) && !rc.startsWith("CUSTOM_")) {
      throw badRequest(
        `Invalid resource class in resources parameter: No such resource class ${rc}.`,
      );
    }
    if (out.has(rc)) {
      throw badRequest(
        `Badly formed resources parameter. Resource class ${rc} appears more than once.`,
      );
    }
    out.set(rc, Number(m[2]));
  }
  return out;
}

function parseTraits(
  ctx: RequestContext,
): { required: string[][]; forbidden: string[] } {
  const required: string[][] = [];
  const forbidden: string[] = [];
  const values = ctx.url.searchParams.getAll("required");
  if (values.length > 0 && ctx.mv < 17) {
    throw badRequest(
      "Invalid query string parameters: Additional properties are not allowed ('required' was unexpected)",
    );
  }
  for (const value of values) {
    const anyOf = value.startsWith("in:");
    if (anyOf && ctx.mv < 39) {
      throw badRequest(`Invalid query string parameters: ${value}`);
    }
    const names = (anyOf ? value.slice(3) : value).split(",");
    const group: string[] = [];
    for (const n of names) {
      const not = n.startsWith("!");
      if (not && (ctx.mv < 22 || anyOf)) {
        throw badRequest(
          `Invalid query string parameters: Expected 'required' parameter value of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: ${value}`,
        );
      }
      const t = not ? n.slice(1) : n;
      if (!ctx.world.traits.has(t)) {
        throw badRequest(`No such trait(s): ${t}`);
      }
      if (not) forbidden.push(t);
      else if (anyOf) group.push(t);
      else required.push([t]);
    }
    if (anyOf) required.push(group);
  }
  return { required, forbidden };
}

function parseMemberOf(ctx: RequestContext): string[][] {
  const values = ctx.url.searchParams.getAll("member_of");
  if (values.length > 0 && ctx.mv < 21) {
    throw badRequest(
      "Invalid query string parameters: Additional properties are not allowed ('member_of' was unexpected)",
    );
  }
  return values.map((v) => {
    const list = (v.startsWith("in:") ? v.slice(3) : v).split(",");
    for (const a of list) {
      if (!/^[0-9a-fA-F-]{36}$/.test(a)) {
        throw badRequest(
          `Invalid query string parameters: Expected 'member_of' parameter to contain valid UUID(s). Got: ${a}`,
        );
      }
    }
    return list;
  });
}

function allocationCandidates(ctx: RequestContext): Response {
  if (ctx.mv < 10) throw new NovaFault(404, "The resource could not be found.");
  const q = ctx.url.searchParams;
  const resources = parseResources(q.get("resources"));
  const { required, forbidden } = parseTraits(ctx);
  const memberOf = parseMemberOf(ctx);
  const limitRaw = q.get("limit");
  if (limitRaw !== null && !/^[1-9]\d*$/.test(limitRaw)) {
    throw badRequest(
      `Invalid query string parameters: '${limitRaw}' does not match '^[1-9][0-9]*$'`,
    );
  }
  ctx.world.advance();
  const usage = ctx.world.usageByHost();
  const fits: SimHost[] = [];
  for (
    const h of [...ctx.world.hosts.values()].sort((a, b) =>
      a.hypervisorId < b.hypervisorId ? -1 : 1
    )
  ) {
    const inv = inventoriesOf(h);
    const u = usage.get(h.name) ?? { ramMb: 0, vcpus: 0, diskGb: 0 };
    const used: Record<string, number> = {
      VCPU: u.vcpus,
      MEMORY_MB: u.ramMb,
      DISK_GB: u.diskGb,
    };
    const roomy = [...resources].every(([rc, n]) => {
      const i = inv[rc];
      return i !== undefined && n >= i.min_unit && n <= i.max_unit &&
        n % i.step_size === 0 && capacity(i) - (used[rc] ?? 0) >= n;
    });
    const traits = new Set(h.traits);
    const aggs = new Set(aggregatesOf(h));
    if (
      roomy &&
      required.every((anyOf) => anyOf.some((t) => traits.has(t))) &&
      forbidden.every((t) => !traits.has(t)) &&
      memberOf.every((anyOf) => anyOf.some((a) => aggs.has(a)))
    ) fits.push(h);
  }
  const chosen = limitRaw === null ? fits : fits.slice(0, Number(limitRaw));
  const requested = Object.fromEntries(resources);
  const summaries: Record<string, unknown> = {};
  for (const h of chosen) {
    const inv = inventoriesOf(h);
    const used = usagesOf(ctx.world, h);
    // 1.27+: every class of the inventory, not only the requested ones.
    const classes = ctx.mv >= 27 ? Object.keys(inv) : [...resources.keys()];
    summaries[h.hypervisorId] = {
      resources: Object.fromEntries(classes.map((rc) => {
        const i = inv[rc];
        return [rc, {
          capacity: i === undefined ? 0 : capacity(i),
          used: used[rc] ?? 0,
        }];
      })),
      ...(ctx.mv >= 17 ? { traits: h.traits } : {}),
      ...(ctx.mv >= 29
        ? {
          parent_provider_uuid: null,
          root_provider_uuid: h.hypervisorId,
        }
        : {}),
    };
  }
  return json(200, {
    allocation_requests: chosen.map((h) => ({
      allocations: ctx.mv >= 12
        ? { [h.hypervisorId]: { resources: requested } }
        : [{
          resource_provider: { uuid: h.hypervisorId },
          resources: requested,
        }],
      ...(ctx.mv >= 34 ? { mappings: { "": [h.hypervisorId] } } : {}),
    })),
    provider_summaries: summaries,
  });
}

function getInventories(ctx: RequestContext): Response {
  const h = provider(ctx);
  return json(200, {
    resource_provider_generation: h.rpGeneration,
    inventories: inventoriesOf(h),
  });
}

function getUsages(ctx: RequestContext): Response {
  const h = provider(ctx);
  ctx.world.advance();
  return json(200, {
    resource_provider_generation: h.rpGeneration,
    usages: usagesOf(ctx.world, h),
  });
}

function getAggregates(ctx: RequestContext): Response {
  const h = provider(ctx);
  return json(200, {
    aggregates: aggregatesOf(h),
    ...(ctx.mv >= 19 ? { resource_provider_generation: h.rpGeneration } : {}),
  });
}

const putAggregatesSchema = z.strictObject({
  aggregates: z.array(z.uuid()),
  resource_provider_generation: z.number().int(),
});

async function putAggregates(ctx: RequestContext): Promise<Response> {
  if (ctx.mv < 19) {
    throw new NovaFault(
      405,
      "The method specified is not allowed for this resource.",
    );
  }
  const h = provider(ctx);
  const parsed = putAggregatesSchema.safeParse(await ctx.body());
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw badRequest(
      `JSON does not validate: ${issue?.path.join(".") ?? ""}: ${
        issue?.message ?? "invalid"
      }`,
    );
  }
  if (parsed.data.resource_provider_generation !== h.rpGeneration) {
    throw new NovaFault(
      409,
      "resource provider generation conflict",
      "placement.concurrent_update",
    );
  }
  setAggregates(h, parsed.data.aggregates);
  return json(200, {
    aggregates: aggregatesOf(h),
    resource_provider_generation: h.rpGeneration,
  });
}

/** The capacity routes (paths inside `/placement`). */
export const placementCapacityRoutes: Route[] = [
  route("placement", "GET", "/allocation_candidates", allocationCandidates),
  route(
    "placement",
    "GET",
    "/resource_providers/{uuid}/inventories",
    getInventories,
  ),
  route("placement", "GET", "/resource_providers/{uuid}/usages", getUsages),
  route(
    "placement",
    "GET",
    "/resource_providers/{uuid}/aggregates",
    getAggregates,
  ),
  route(
    "placement",
    "PUT",
    "/resource_providers/{uuid}/aggregates",
    putAggregates,
  ),
];
