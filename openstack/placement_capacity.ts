/**
 * Placement response shapes of the capacity check (microversion 1.22 and
 * later: forbidden traits; evictor sends 1.39): allocation candidates,
 * inventories, usages and aggregates, parsed into camelCase.
 *
 * @module
 */

import { z } from "zod";

/** A query of `GET /allocation_candidates`. */
export interface CandidateQuery {
  /** Amounts per resource class (classes with 0 are left out). */
  resources: Readonly<Record<string, number>>;
  /** Required traits. */
  required?: readonly string[];
  /** Forbidden traits (sent as `!TRAIT` in `required`). */
  forbidden?: readonly string[];
  /** Aggregate requirements: each entry is an any-of list (`member_of=in:a,b`). */
  memberOf?: readonly (readonly string[])[];
  /** Most candidates to return (default: all). */
  limit?: number;
}

/** One provider summary of an allocation candidates answer. */
export interface ProviderSummary {
  /** Capacity and used amount per resource class. */
  resources: Record<string, { capacity: number; used: number }>;
  /** The provider's traits (1.17+). */
  traits: string[];
}

/** The answer of `GET /allocation_candidates`. */
export interface AllocationCandidates {
  /** Per allocation request: the resources asked of each provider. */
  allocationRequests: Record<string, Record<string, number>>[];
  /** Per provider UUID. */
  providerSummaries: Record<string, ProviderSummary>;
}

/** `GET /allocation_candidates` (1.12+ shape: allocations keyed by provider). */
export const allocationCandidatesSchema = z.object({
  allocation_requests: z.array(z.object({
    allocations: z.record(
      z.string(),
      z.object({ resources: z.record(z.string(), z.number().int()) }),
    ),
  })),
  provider_summaries: z.record(
    z.string(),
    z.object({
      resources: z.record(
        z.string(),
        z.object({ capacity: z.number(), used: z.number() }),
      ),
      traits: z.array(z.string()).optional(),
    }),
  ),
}).transform((b): AllocationCandidates => ({
  allocationRequests: b.allocation_requests.map((r) =>
    Object.fromEntries(
      Object.entries(r.allocations).map(([uuid, a]) => [uuid, a.resources]),
    )
  ),
  providerSummaries: Object.fromEntries(
    Object.entries(b.provider_summaries).map(([uuid, p]) => [uuid, {
      resources: p.resources,
      traits: p.traits ?? [],
    }]),
  ),
}));

/**
 * One inventory record of a resource provider, as Placement defines it
 * (the one type of it: capacity/ computes with it too).
 */
export interface Inventory {
  /** Total amount. */
  total: number;
  /** Amount kept back from consumers. */
  reserved: number;
  /** Overcommit factor: capacity = (total - reserved) * allocationRatio. */
  allocationRatio: number;
  /** Smallest amount one allocation may take. */
  minUnit: number;
  /** Largest amount one allocation may take. */
  maxUnit: number;
  /** An allocation must be a multiple of this. */
  stepSize: number;
}

/** `GET /resource_providers/{uuid}/inventories`. */
export const inventoriesSchema = z.object({
  resource_provider_generation: z.number().int(),
  inventories: z.record(
    z.string(),
    z.object({
      total: z.number().int(),
      reserved: z.number().int(),
      allocation_ratio: z.number(),
      min_unit: z.number().int(),
      max_unit: z.number().int(),
      step_size: z.number().int(),
    }),
  ),
}).transform((b): Record<string, Inventory> =>
  Object.fromEntries(
    Object.entries(b.inventories).map(([rc, i]) => [rc, {
      total: i.total,
      reserved: i.reserved,
      allocationRatio: i.allocation_ratio,
      minUnit: i.min_unit,
      maxUnit: i.max_unit,
      stepSize: i.step_size,
    }]),
  )
);

/** `GET /resource_providers/{uuid}/usages`. */
export const usagesSchema = z.object({
  resource_provider_generation: z.number().int(),
  usages: z.record(z.string(), z.number().int()),
}).transform((b) => b.usages);

/** `GET /resource_providers/{uuid}/aggregates` (1.19+ shape). */
export const aggregatesSchema = z.object({
  aggregates: z.array(z.string()),
  resource_provider_generation: z.number().int().optional(),
}).transform((b) => [...b.aggregates].sort());

const RC = /^[A-Z0-9_]{1,255}$/;

/**
 * The query string of `GET /allocation_candidates`: `resources=A:1,B:2`,
 * `required=T1,!T2`, one `member_of=in:...` per aggregate requirement.
 *
 * @throws {TypeError} when a resource class or trait is not [A-Z0-9_]+, an
 * amount is not a positive integer, or nothing is asked for.
 *
 * @example
 * ```ts
 * import { candidateQueryString } from "./placement_capacity.ts";
 * console.log(candidateQueryString({ resources: { VCPU: 2, MEMORY_MB: 4096 }, forbidden: ["COMPUTE_STATUS_DISABLED"] }));
 * // resources=MEMORY_MB%3A4096%2CVCPU%3A2&required=%21COMPUTE_STATUS_DISABLED
 * ```
 */
export function candidateQueryString(q: CandidateQuery): string {
  const parts: string[] = [];
  for (const [rc, n] of Object.entries(q.resources)) {
    if (!RC.test(rc)) {
      throw new TypeError(`resource classes are [A-Z0-9_]+, got "${rc}"`);
    }
    if (!Number.isSafeInteger(n) || n < 0) {
      throw new TypeError(`amount of ${rc} must be an integer >= 0, got ${n}`);
    }
    if (n > 0) parts.push(`${rc}:${n}`);
  }
  if (parts.length === 0) {
    throw new TypeError("an allocation candidates query needs a resource");
  }
  const params = new URLSearchParams();
  params.set("resources", parts.sort().join(","));
  const traits = [
    ...(q.required ?? []).map((t) => [t, t] as const),
    ...(q.forbidden ?? []).map((t) => [t, `!${t}`] as const),
  ];
  for (const [t] of traits) {
    if (!RC.test(t)) {
      throw new TypeError(`trait names are [A-Z0-9_]+, got "${t}"`);
    }
  }
  if (traits.length > 0) {
    params.set("required", traits.map(([, s]) => s).sort().join(","));
  }
  for (const any of q.memberOf ?? []) {
    if (any.length > 0) params.append("member_of", `in:${[...any].join(",")}`);
  }
  if (q.limit !== undefined) {
    if (!Number.isSafeInteger(q.limit) || q.limit < 1) {
      throw new TypeError(`limit must be an integer >= 1, got ${q.limit}`);
    }
    params.set("limit", String(q.limit));
  }
  return params.toString();
}
