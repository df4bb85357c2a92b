/**
 * Placement client: the traits of a resource provider (a hypervisor's UUID
 * is its resource provider UUID), at microversion 1.39 by default.
 *
 * @module
 */

import { z } from "zod";
import {
  DEFAULT_PLACEMENT_API_VERSION,
  type EndpointInterface,
} from "./config.ts";
import { ConflictError } from "./errors.ts";
import type { HttpRequest, HttpResponse } from "./http.ts";
import type { KeystoneSession } from "./keystone.ts";
import { parseBody } from "./parse.ts";
import {
  aggregatesSchema,
  type AllocationCandidates,
  allocationCandidatesSchema,
  type CandidateQuery,
  candidateQueryString,
  inventoriesSchema,
  type Inventory,
  usagesSchema,
} from "./placement_capacity.ts";

/** A resource provider's traits with its generation. */
export interface ProviderTraits {
  /** Trait names, sorted. */
  traits: string[];
  /** Resource provider generation (for the next update). */
  generation: number;
}

const traitsSchema = z.object({
  traits: z.array(z.string()),
  resource_provider_generation: z.number().int().nonnegative(),
}).transform((b): ProviderTraits => ({
  traits: [...b.traits].sort(),
  generation: b.resource_provider_generation,
}));

const providersSchema = z.object({
  resource_providers: z.array(z.object({
    uuid: z.string(),
    name: z.string(),
    generation: z.number().int(),
  })),
});

/** Options of {@linkcode PlacementClient}. */
export interface PlacementClientOptions {
  /** Microversion sent as `OpenStack-API-Version: placement X` (default 1.39). */
  microversion?: string;
  /** Catalog interface (default: the session's). */
  interface?: EndpointInterface;
  /** Catalog region (default: the session's). */
  region?: string;
  /** Use this base URL instead of the catalog's. */
  endpointOverride?: string;
  /** Attempts of {@linkcode PlacementClient.updateTraits} on generation conflicts (default 5). */
  maxConflictRetries?: number;
  /** Timeout of one call, in milliseconds. */
  timeoutMs?: number;
}

const TRAIT_NAME = /^[A-Z0-9_]{1,255}$/;

/**
 * A Placement client on a Keystone session.
 *
 * @example
 * ```ts
 * import { KeystoneSession } from "./keystone.ts";
 * import { PlacementClient } from "./placement.ts";
 * const session = new KeystoneSession({
 *   authUrl: "http://127.0.0.1:5000/v3",
 *   auth: { type: "v3applicationcredential", applicationCredentialId: "id", applicationCredentialSecret: "s" },
 * });
 * const placement = new PlacementClient(session);
 * // await placement.setTraits(rpUuid, (t) => [...t, "CUSTOM_DRAINING"]);
 * ```
 */
export class PlacementClient {
  readonly #session: KeystoneSession;
  readonly #microversion: string;
  readonly #options: PlacementClientOptions;

  /** Creates a client; no call is made until a method is used. */
  constructor(session: KeystoneSession, options: PlacementClientOptions = {}) {
    const mv = options.microversion ?? DEFAULT_PLACEMENT_API_VERSION;
    if (!/^1\.\d+$/.test(mv)) {
      throw new RangeError(`microversion must look like "1.N", got "${mv}"`);
    }
    const retries = options.maxConflictRetries ?? 5;
    if (!Number.isInteger(retries) || retries < 1) {
      throw new RangeError(
        `maxConflictRetries must be an integer >= 1, got ${options.maxConflictRetries}`,
      );
    }
    this.#session = session;
    this.#microversion = mv;
    this.#options = options;
  }

  async #call(
    req: Omit<HttpRequest, "url" | "headers"> & { path: string },
  ): Promise<HttpResponse> {
    const base = this.#options.endpointOverride?.replace(/\/+$/, "") ??
      await this.#session.endpoint("placement", {
        ...(this.#options.interface === undefined
          ? {}
          : { interface: this.#options.interface }),
        ...(this.#options.region === undefined
          ? {}
          : { region: this.#options.region }),
      });
    const { path, ...rest } = req;
    return await this.#session.request({
      ...rest,
      url: `${base}${path}`,
      headers: { "OpenStack-API-Version": `placement ${this.#microversion}` },
      ...(this.#options.timeoutMs === undefined
        ? {}
        : { timeoutMs: this.#options.timeoutMs }),
    });
  }

  /** The UUID of the resource provider with this exact name, or undefined. */
  async findResourceProvider(
    name: string,
    signal?: AbortSignal,
  ): Promise<string | undefined> {
    const path = `/resource_providers?name=${encodeURIComponent(name)}`;
    const res = await this.#call({
      method: "GET",
      path,
      idempotent: true,
      action: "placement.findResourceProvider",
      ...(signal === undefined ? {} : { signal }),
    });
    return parseBody(providersSchema, res, "GET /resource_providers")
      .resource_providers.find((p) => p.name === name)?.uuid;
  }

  /** A resource provider's traits and generation. */
  async getTraits(
    rpUuid: string,
    signal?: AbortSignal,
  ): Promise<ProviderTraits> {
    const path = `/resource_providers/${encodeURIComponent(rpUuid)}/traits`;
    const res = await this.#call({
      method: "GET",
      path,
      idempotent: true,
      action: "placement.getTraits",
      ...(signal === undefined ? {} : { signal }),
    });
    return parseBody(traitsSchema, res, `GET ${path}`);
  }

  /**
   * Replaces a resource provider's traits if its generation is still
   * `generation`.
   *
   * @throws {ConflictError} on a generation conflict (code `placement.concurrent_update`).
   */
  async putTraits(
    rpUuid: string,
    traits: readonly string[],
    generation: number,
    signal?: AbortSignal,
  ): Promise<ProviderTraits> {
    for (const t of traits) {
      if (!TRAIT_NAME.test(t)) {
        throw new TypeError(`trait names are [A-Z0-9_]{1,255}, got "${t}"`);
      }
    }
    if (!Number.isInteger(generation) || generation < 0) {
      throw new RangeError(
        `generation must be a non-negative integer, got ${generation}`,
      );
    }
    const path = `/resource_providers/${encodeURIComponent(rpUuid)}/traits`;
    const res = await this.#call({
      method: "PUT",
      path,
      body: {
        traits: [...new Set(traits)].sort(),
        resource_provider_generation: generation,
      },
      // The generation makes a repeat harmless: a stale one gets a 409.
      idempotent: true,
      action: "placement.putTraits",
      ...(signal === undefined ? {} : { signal }),
    });
    this.#session.logger.info(
      { action: "placement.putTraits", rpUuid, requestId: res.requestId },
      "Placement traits updated",
    );
    return parseBody(traitsSchema, res, `PUT ${path}`);
  }

  /**
   * Creates a custom trait (`PUT /traits/CUSTOM_...`) if it does not exist.
   */
  async ensureCustomTrait(name: string, signal?: AbortSignal): Promise<void> {
    if (!/^CUSTOM_[A-Z0-9_]{1,248}$/.test(name)) {
      throw new TypeError(
        `custom trait names are CUSTOM_[A-Z0-9_]+, got "${name}"`,
      );
    }
    await this.#call({
      method: "PUT",
      path: `/traits/${name}`,
      idempotent: true,
      action: "placement.ensureCustomTrait",
      ...(signal === undefined ? {} : { signal }),
    });
  }

  async #getProvider<S extends z.ZodType>(
    rpUuid: string,
    what: string,
    schema: S,
    signal: AbortSignal | undefined,
  ): Promise<z.output<S>> {
    const path = `/resource_providers/${encodeURIComponent(rpUuid)}/${what}`;
    const res = await this.#call({
      method: "GET",
      path,
      idempotent: true,
      action: `placement.get_${what}`,
      ...(signal === undefined ? {} : { signal }),
    });
    return parseBody(schema, res, `GET ${path}`);
  }

  /**
   * `GET /allocation_candidates`: the providers that could take one
   * consumer asking for `query` (needs microversion 1.22+ for forbidden
   * traits, 1.21+ for `member_of`).
   */
  async allocationCandidates(
    query: CandidateQuery,
    signal?: AbortSignal,
  ): Promise<AllocationCandidates> {
    const path = `/allocation_candidates?${candidateQueryString(query)}`;
    const res = await this.#call({
      method: "GET",
      path,
      idempotent: true,
      action: "placement.allocationCandidates",
      ...(signal === undefined ? {} : { signal }),
    });
    return parseBody(
      allocationCandidatesSchema,
      res,
      "GET /allocation_candidates",
    );
  }

  /** A resource provider's inventories per resource class. */
  getInventories(
    rpUuid: string,
    signal?: AbortSignal,
  ): Promise<Record<string, Inventory>> {
    return this.#getProvider(rpUuid, "inventories", inventoriesSchema, signal);
  }

  /** A resource provider's usages per resource class. */
  getUsages(
    rpUuid: string,
    signal?: AbortSignal,
  ): Promise<Record<string, number>> {
    return this.#getProvider(rpUuid, "usages", usagesSchema, signal);
  }

  /** The aggregates a resource provider is in, sorted. */
  getAggregates(rpUuid: string, signal?: AbortSignal): Promise<string[]> {
    return this.#getProvider(rpUuid, "aggregates", aggregatesSchema, signal);
  }

  /**
   * Sets a resource provider's traits: reads them with the generation,
   * applies `traits` (a list, or a function of the current list), writes
   * them back, and starts over on a generation conflict.
   *
   * @throws {ConflictError} when every attempt conflicted.
   */
  async setTraits(
    rpUuid: string,
    traits:
      | readonly string[]
      | ((current: readonly string[]) => readonly string[]),
    signal?: AbortSignal,
  ): Promise<ProviderTraits> {
    const attempts = this.#options.maxConflictRetries ?? 5;
    for (let attempt = 1;; attempt++) {
      const current = await this.getTraits(rpUuid, signal);
      const wanted = typeof traits === "function"
        ? traits(current.traits)
        : traits;
      const sorted = [...new Set(wanted)].sort();
      if (sorted.join(",") === current.traits.join(",")) return current;
      try {
        return await this.putTraits(rpUuid, sorted, current.generation, signal);
      } catch (e) {
        if (!(e instanceof ConflictError) || attempt >= attempts) throw e;
        this.#session.logger.warn(
          {
            action: "placement.setTraits",
            rpUuid,
            attempt,
            requestId: e.requestId,
          },
          "resource provider generation conflict; retrying",
        );
      }
    }
  }
}
