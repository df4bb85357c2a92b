/**
 * Limit resolution: how many migrations one drain may have in flight, and
 * how many more may start across all drains (the cluster budget).
 *
 * Resolution for one host: start from the default
 * (`spec.maxConcurrentMigrations` of the EvictionPolicy `default`, or the
 * `--eviction-concurrency` flag without a policy); every trait limit whose
 * trait the host has lowers it (the lowest wins; traits never raise it);
 * the Eviction's own `spec.maxConcurrentMigrations` lowers it further.
 *
 * Trait matching is exact and case-sensitive: placement trait names are
 * upper-case by syntax, the validator refuses any other spelling in a
 * policy or a flag, and host traits come from placement as they are.
 *
 * Everything here is pure.
 *
 * @module
 */

import type { EvictionPolicySpec } from "../models/mod.ts";
import {
  type ConvergencePolicy,
  type ConvergenceSpec,
  resolveConvergence,
} from "./convergence.ts";

/** Where the effective limit settings come from. */
export type SettingsSource = "policy" | "flags";

/** What decided the effective limit of one drain (Eviction status.limitSource). */
export type LimitSource = "policy" | "flags" | "eviction";

/**
 * The effective limit settings: the spec of the EvictionPolicy `default`,
 * or, without one, the same settings built from the start-up flags
 * (see `flags.ts`). Frozen.
 */
export interface LimitSettings {
  /** Where the settings come from. */
  readonly source: SettingsSource;
  /** The settings, in the shape of the EvictionPolicy spec (defaults applied). */
  readonly spec: Readonly<EvictionPolicySpec>;
}

/** The outcome of {@linkcode resolveLimit} for one host. */
export interface LimitResolution {
  /** The effective per-host limit: migrations in flight at most. Always >= 1. */
  readonly limit: number;
  /** What decided `limit`: the settings' source, or `eviction` when the Eviction's own value is lower. */
  readonly source: LimitSource;
  /** The traits that the host has and the settings list, in the settings' order. */
  readonly matchedTraits: readonly string[];
  /** The trait whose limit gives `hostLimit` (the first of the lowest), or undefined when the default does. */
  readonly decidingTrait: string | undefined;
  /** The default per-host limit of the settings. */
  readonly defaultLimit: number;
  /** The limit the settings give this host: the default lowered by its matching traits. */
  readonly hostLimit: number;
  /** The Eviction's spec.maxConcurrentMigrations, if any. */
  readonly requested: number | undefined;
  /** Whether `requested` is above `hostLimit` (and so clamped to it). */
  readonly clamped: boolean;
}

/**
 * The name of the one EvictionPolicy a cluster has (its settings apply to
 * every drain; the webhook refuses any other name).
 */
export const POLICY_NAME = "default";

/** The default per-host limit when the settings omit it (the CRD default). */
export const DEFAULT_MAX_CONCURRENT_MIGRATIONS = 1;

function assertLimit(value: number, what: string): void {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(
      `${what} must be an integer >= 1, got ${String(value)}`,
    );
  }
}

/**
 * Settings from an EvictionPolicy spec (parsed with
 * `EvictionPolicySpecSchema`, so defaults are applied). The result is
 * frozen, including its trait limits.
 *
 * @example
 * ```ts
 * import { policySettings } from "./resolve.ts";
 * const s = policySettings({ maxConcurrentMigrations: 4, abortStuckMigrations: false });
 * console.assert(s.source === "policy" && Object.isFrozen(s));
 * ```
 */
export function policySettings(spec: EvictionPolicySpec): LimitSettings {
  return freezeSettings("policy", spec);
}

/**
 * The settings in force: the policy's when the EvictionPolicy `default`
 * exists, else the ones from the flags.
 *
 * @example
 * ```ts
 * import { effectiveSettings, policySettings } from "./resolve.ts";
 * const flags = { ...policySettings({ maxConcurrentMigrations: 2, abortStuckMigrations: false }), source: "flags" as const };
 * console.assert(effectiveSettings(undefined, flags).source === "flags");
 * const p = { maxConcurrentMigrations: 4, abortStuckMigrations: false };
 * console.assert(effectiveSettings(p, flags).spec.maxConcurrentMigrations === 4);
 * ```
 */
export function effectiveSettings(
  policySpec: EvictionPolicySpec | undefined,
  flagSettings: LimitSettings,
): LimitSettings {
  return policySpec === undefined ? flagSettings : policySettings(policySpec);
}

/**
 * Builds frozen settings from a spec; used for both sources.
 *
 * @example
 * ```ts
 * import { freezeSettings } from "./resolve.ts";
 * const s = freezeSettings("flags", { maxConcurrentMigrations: 3, abortStuckMigrations: false });
 * console.assert(s.source === "flags" && Object.isFrozen(s.spec));
 * ```
 */
export function freezeSettings(
  source: SettingsSource,
  spec: EvictionPolicySpec,
): LimitSettings {
  const copy: EvictionPolicySpec = {
    maxConcurrentMigrations: spec.maxConcurrentMigrations,
    abortStuckMigrations: spec.abortStuckMigrations,
  };
  if (spec.traitLimits !== undefined) {
    copy.traitLimits = spec.traitLimits.map((t) =>
      Object.freeze({
        trait: t.trait,
        maxConcurrentMigrations: t.maxConcurrentMigrations,
        ...(t.convergence === undefined
          ? {}
          : { convergence: Object.freeze({ ...t.convergence }) }),
      })
    );
    Object.freeze(copy.traitLimits);
  }
  if (spec.clusterMaxConcurrentMigrations !== undefined) {
    copy.clusterMaxConcurrentMigrations = spec.clusterMaxConcurrentMigrations;
  }
  if (spec.migrationTimeoutSeconds !== undefined) {
    copy.migrationTimeoutSeconds = spec.migrationTimeoutSeconds;
  }
  if (spec.convergence !== undefined) {
    copy.convergence = Object.freeze({ ...spec.convergence });
  }
  if (spec.noPauseTraits !== undefined) {
    copy.noPauseTraits = Object.freeze([...spec.noPauseTraits]) as string[];
  }
  return Object.freeze({ source, spec: Object.freeze(copy) });
}

/**
 * Resolves the per-host limit: the default, lowered by every trait limit
 * whose trait the host has (lowest wins, traits never raise it), lowered
 * again by the Eviction's own `spec.maxConcurrentMigrations`. `source` is
 * `eviction` only when the Eviction's value is strictly lower than what the
 * settings give the host; otherwise it is the settings' source.
 *
 * Throws a RangeError when a limit in the input is not an integer >= 1
 * (impossible for objects parsed with the generated zod schemas).
 *
 * @example
 * ```ts
 * import { policySettings, resolveLimit } from "./resolve.ts";
 * const settings = policySettings({
 *   maxConcurrentMigrations: 4,
 *   traitLimits: [{ trait: "CUSTOM_HANA_EXCLUSIVE_HOST", maxConcurrentMigrations: 1 }],
 *   abortStuckMigrations: false,
 * });
 * const r = resolveLimit(settings, ["CUSTOM_HANA_EXCLUSIVE_HOST", "HW_CPU_X86_AVX2"]);
 * console.assert(r.limit === 1 && r.source === "policy");
 * console.assert(resolveLimit(settings, [], 2).source === "eviction");
 * ```
 */
export function resolveLimit(
  settings: LimitSettings,
  traits: readonly string[] | undefined,
  requested?: number | undefined,
): LimitResolution {
  const defaultLimit = settings.spec.maxConcurrentMigrations ??
    DEFAULT_MAX_CONCURRENT_MIGRATIONS;
  assertLimit(defaultLimit, "spec.maxConcurrentMigrations");
  const hostTraits = new Set(traits ?? []);
  const matchedTraits: string[] = [];
  let hostLimit = defaultLimit;
  let decidingTrait: string | undefined;
  for (const [i, t] of (settings.spec.traitLimits ?? []).entries()) {
    assertLimit(
      t.maxConcurrentMigrations,
      `spec.traitLimits[${i}].maxConcurrentMigrations`,
    );
    if (!hostTraits.has(t.trait)) continue;
    matchedTraits.push(t.trait);
    if (t.maxConcurrentMigrations < hostLimit) {
      hostLimit = t.maxConcurrentMigrations;
      decidingTrait = t.trait;
    }
  }
  if (requested !== undefined) {
    assertLimit(requested, "the Eviction's spec.maxConcurrentMigrations");
  }
  const byEviction = requested !== undefined && requested < hostLimit;
  return {
    limit: byEviction ? requested : hostLimit,
    source: byEviction ? "eviction" : settings.source,
    matchedTraits,
    decidingTrait,
    defaultLimit,
    hostLimit,
    requested,
    clamped: requested !== undefined && requested > hostLimit,
  };
}

/**
 * The convergence policy of one drain: the settings' default
 * `convergence`, the `convergence` of every trait entry whose trait the
 * host has (lowest risk per field), the Eviction's own `spec.convergence`
 * over them, and the legacy `migrationTimeoutSeconds` /
 * `abortStuckMigrations` as the flat special case (limits/convergence.ts).
 *
 * @example
 * ```ts
 * import { drainConvergence, policySettings } from "./resolve.ts";
 * const settings = policySettings({
 *   maxConcurrentMigrations: 4,
 *   abortStuckMigrations: false,
 *   convergence: { completionTimeoutPerGiB: 600, onTimeout: "Abort" },
 *   traitLimits: [{ trait: "CUSTOM_HANA", maxConcurrentMigrations: 1, convergence: { onTimeout: "Report" } }],
 * });
 * const p = drainConvergence(settings, ["CUSTOM_HANA"], undefined);
 * console.assert(p.onTimeout === "Report" && p.completionTimeoutPerGiB === 600);
 * ```
 */
export function drainConvergence(
  settings: LimitSettings,
  traits: readonly string[] | undefined,
  eviction: ConvergenceSpec | undefined,
): ConvergencePolicy {
  const host = new Set(traits ?? []);
  return resolveConvergence({
    defaults: settings.spec.convergence,
    migrationTimeoutSeconds: settings.spec.migrationTimeoutSeconds,
    abortStuckMigrations: settings.spec.abortStuckMigrations,
    traits: (settings.spec.traitLimits ?? []).filter((t) => host.has(t.trait)),
    eviction,
  });
}

/**
 * How many more migrations may start across all drains, given the
 * cluster budget (`spec.clusterMaxConcurrentMigrations`; undefined means
 * no budget) and the sum of migrations in flight over all Evictions:
 * `Infinity` without a budget, else the budget left, never below 0.
 *
 * @example
 * ```ts
 * import { clusterBudgetLeft } from "./resolve.ts";
 * console.assert(clusterBudgetLeft(5, 3) === 2);
 * console.assert(clusterBudgetLeft(5, 7) === 0);
 * console.assert(clusterBudgetLeft(undefined, 7) === Infinity);
 * ```
 */
export function clusterBudgetLeft(
  clusterMax: number | undefined,
  inFlightTotal: number,
): number {
  if (!Number.isSafeInteger(inFlightTotal) || inFlightTotal < 0) {
    throw new RangeError(
      `inFlightTotal must be an integer >= 0, got ${String(inFlightTotal)}`,
    );
  }
  if (clusterMax === undefined) return Number.POSITIVE_INFINITY;
  assertLimit(clusterMax, "spec.clusterMaxConcurrentMigrations");
  return Math.max(0, clusterMax - inFlightTotal);
}
