/**
 * Migration limits, shared by the start-up flags (app/), the admission
 * webhooks (webhooks/) and the drain (controllers/eviction): resolution of
 * one host's limit and the cluster budget (`resolve.ts`), validation of a
 * policy spec with one message per mistake (`validation.ts`, `traits.ts`,
 * `quote.ts`), and the flags that stand in for a missing policy
 * (`flags.ts`). Pure; no I/O.
 *
 * @example
 * ```ts
 * import { policySettings, resolveLimit } from "./mod.ts";
 * const settings = policySettings({
 *   maxConcurrentMigrations: 4,
 *   abortStuckMigrations: false,
 * });
 * console.assert(resolveLimit(settings, [], undefined).limit === 4);
 * ```
 *
 * @module
 */

export * from "./resolve.ts";
export * from "./validation.ts";
export * from "./traits.ts";
export { MAX_QUOTED_CHARS, quoteValue } from "./quote.ts";
export * from "./flags.ts";
export * from "./convergence.ts";
export * from "./convergence_validation.ts";
