/**
 * The one validation of concurrency limit settings, used by the
 * EvictionPolicy webhook (on `spec`) and by the start-up flags (on the same
 * settings built from `--eviction-concurrency` and
 * `--eviction-trait-concurrency`), so that the same mistake gives the same
 * message in both places.
 *
 * Every message is one line: `<field>: got <value>[ detail]; expected
 * <what>`, with the bad value rendered by {@linkcode quoteValue} (escaped,
 * shortened). The field, value and expectation are also structured fields
 * of each {@linkcode LimitViolation}.
 *
 * @module
 */

import {
  type EvictionPolicySpec,
  EvictionPolicySpecSchema,
} from "../models/mod.ts";
import { DEFAULT_MAX_CONCURRENT_MIGRATIONS } from "./resolve.ts";
import {
  checkConvergence,
  convergencePolicyWarnings,
  type ConvergenceRule,
  type ConvergenceWarningRule,
} from "./convergence_validation.ts";
import { quoteValue } from "./quote.ts";
import {
  isKnownTraitNamespace,
  isTraitName,
  MAX_TRAIT_NAME_LENGTH,
  STANDARD_TRAIT_NAMESPACES,
  traitKey,
} from "./traits.ts";

/** The upper bound of every per-host limit (CRD schema). */
export const MAX_PER_HOST_LIMIT = 64;
/** The upper bound of the cluster budget (CRD schema). */
export const MAX_CLUSTER_LIMIT = 4096;
/** The most trait limits one policy may list (CRD schema). */
export const MAX_TRAIT_LIMITS = 256;

/** Which rule a {@linkcode LimitViolation} broke. */
export type LimitRule =
  | "spec-type"
  | "default-range"
  | "trait-limits-type"
  | "trait-limits-length"
  | "trait-limit-type"
  | "trait-syntax"
  | "trait-duplicate"
  | "trait-limit-range"
  | "trait-above-default"
  | "cluster-budget-range"
  | "timeout-range"
  | "abort-type"
  | "no-pause-type"
  | "no-pause-syntax"
  | "no-pause-duplicate"
  | ConvergenceRule
  | "schema";

/** Which rule a {@linkcode LimitWarning} is about. */
export type LimitWarningRule =
  | "trait-namespace"
  | "trait-equals-default"
  | "cluster-budget-below-default"
  | "abort-without-timeout"
  | ConvergenceWarningRule;

/** A setting that is refused. */
export interface LimitViolation {
  /** The rule broken. */
  readonly rule: LimitRule;
  /** The field, as a path in the EvictionPolicy (`spec.traitLimits[1].trait`). */
  readonly field: string;
  /** The bad value, as given. */
  readonly value: unknown;
  /** What is expected instead. */
  readonly expected: string;
  /** The one-line message: field, rendered value, expectation. */
  readonly message: string;
  /** The index in `spec.traitLimits` when the field is inside it. */
  readonly traitIndex: number | undefined;
}

/** A setting that is allowed but probably a mistake. */
export interface LimitWarning {
  /** The rule. */
  readonly rule: LimitWarningRule;
  /** The field, as a path in the EvictionPolicy. */
  readonly field: string;
  /** The one-line message. */
  readonly message: string;
  /** The index in `spec.traitLimits` when the field is inside it. */
  readonly traitIndex: number | undefined;
}

/**
 * The outcome of {@linkcode checkLimitSpec}: valid settings with the spec
 * parsed by the generated zod schema (defaults applied), or at least one
 * violation (in field order). Warnings in both cases.
 */
export type LimitSpecCheck =
  | {
    readonly ok: true;
    readonly spec: EvictionPolicySpec;
    readonly violations: readonly [];
    readonly warnings: readonly LimitWarning[];
  }
  | {
    readonly ok: false;
    readonly violations: readonly [LimitViolation, ...LimitViolation[]];
    readonly warnings: readonly LimitWarning[];
  };

/** The expectation of the trait name rule, shared with the flags. */
export const TRAIT_NAME_EXPECTED =
  `a placement trait name: upper-case letters, digits and underscore (^[A-Z0-9_]+$), 1 to ${MAX_TRAIT_NAME_LENGTH} characters`;

const PER_HOST_EXPECTED = `an integer from 1 to ${MAX_PER_HOST_LIMIT}`;

/**
 * A plain object (not null, not an array): what a JSON object decodes to.
 *
 * @example
 * ```ts
 * import { isRecord } from "./validation.ts";
 * console.assert(isRecord({}) && !isRecord([]) && !isRecord(null));
 * ```
 */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function isIntIn(v: unknown, min: number, max: number): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= min &&
    v <= max;
}

function traitLabel(trait: unknown): string {
  return isTraitName(trait) ? trait : quoteValue(trait);
}

/**
 * Formats a violation message: `<field>: got <value><detail>; expected
 * <expected>`.
 *
 * @example
 * ```ts
 * import { violationMessage } from "./validation.ts";
 * console.assert(
 *   violationMessage("spec.maxConcurrentMigrations", 0, "", "an integer from 1 to 64") ===
 *     "spec.maxConcurrentMigrations: got 0; expected an integer from 1 to 64",
 * );
 * ```
 */
export function violationMessage(
  field: string,
  value: unknown,
  detail: string,
  expected: string,
): string {
  return `${field}: got ${quoteValue(value)}${detail}; expected ${expected}`;
}

class Collector {
  readonly violations: LimitViolation[] = [];
  readonly warnings: LimitWarning[] = [];

  deny(
    rule: LimitRule,
    field: string,
    value: unknown,
    expected: string,
    detail = "",
    traitIndex?: number,
  ): void {
    this.violations.push({
      rule,
      field,
      value,
      expected,
      message: violationMessage(field, value, detail, expected),
      traitIndex,
    });
  }

  refused(): LimitSpecCheck {
    const [first, ...rest] = this.violations;
    if (first === undefined) {
      throw new TypeError("refused() called without a violation");
    }
    return { ok: false, violations: [first, ...rest], warnings: this.warnings };
  }

  warn(
    rule: LimitWarningRule,
    field: string,
    message: string,
    traitIndex?: number,
  ): void {
    this.warnings.push({ rule, field, message, traitIndex });
  }
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = root;
  for (const key of path) {
    if (typeof cur !== "object" || cur === null) return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

function fieldPath(path: readonly PropertyKey[]): string {
  let out = "spec";
  for (const key of path) {
    out += typeof key === "number" ? `[${key}]` : `.${String(key)}`;
  }
  return out;
}

function checkTraitLimits(
  list: unknown,
  defaultLimit: number | undefined,
  c: Collector,
): void {
  if (list === undefined) return;
  if (!Array.isArray(list)) {
    c.deny(
      "trait-limits-type",
      "spec.traitLimits",
      list,
      "a list of {trait, maxConcurrentMigrations}",
    );
    return;
  }
  if (list.length > MAX_TRAIT_LIMITS) {
    c.deny(
      "trait-limits-length",
      "spec.traitLimits",
      list.length,
      `at most ${MAX_TRAIT_LIMITS} entries`,
      " entries",
    );
    return;
  }
  const seen = new Map<string, { index: number; trait: string }>();
  list.forEach((item: unknown, i) => {
    const at = `spec.traitLimits[${i}]`;
    if (!isRecord(item)) {
      c.deny(
        "trait-limit-type",
        at,
        item,
        "an object with trait and maxConcurrentMigrations",
        "",
        i,
      );
      return;
    }
    const trait = item["trait"];
    const limit = item["maxConcurrentMigrations"];
    const convergence = item["convergence"];
    if (!isTraitName(trait)) {
      c.deny("trait-syntax", `${at}.trait`, trait, TRAIT_NAME_EXPECTED, "", i);
    } else if (!isKnownTraitNamespace(trait)) {
      c.warn(
        "trait-namespace",
        `${at}.trait`,
        `${at}.trait: ${trait} is neither CUSTOM_* nor in a standard placement trait namespace (${
          STANDARD_TRAIT_NAMESPACES.join(", ")
        }), so it will likely never match a host`,
        i,
      );
    }
    if (typeof trait === "string") {
      const key = traitKey(trait);
      const first = seen.get(key);
      if (first === undefined) {
        seen.set(key, { index: i, trait });
      } else {
        const caseNote = first.trait === trait
          ? ""
          : " (trait names are compared ignoring case)";
        c.deny(
          "trait-duplicate",
          `${at}.trait`,
          trait,
          "each trait at most once",
          `, the same trait as spec.traitLimits[${first.index}].trait ${
            quoteValue(first.trait)
          }${caseNote}`,
          i,
        );
      }
    }
    if (!isIntIn(limit, 1, MAX_PER_HOST_LIMIT)) {
      c.deny(
        "trait-limit-range",
        `${at}.maxConcurrentMigrations`,
        limit,
        PER_HOST_EXPECTED,
        "",
        i,
      );
    } else if (defaultLimit !== undefined && limit > defaultLimit) {
      const label = traitLabel(trait);
      c.deny(
        "trait-above-default",
        `${at}.maxConcurrentMigrations`,
        limit,
        `at most ${defaultLimit}, because traits can only lower the limit (the effective limit for hosts with ${label} would stay ${defaultLimit})`,
        ` for ${label}, above the default spec.maxConcurrentMigrations ${defaultLimit}`,
        i,
      );
    } else if (
      defaultLimit !== undefined && limit === defaultLimit &&
      isTraitName(trait) && convergence === undefined
    ) {
      c.warn(
        "trait-equals-default",
        `${at}.maxConcurrentMigrations`,
        `${at}.maxConcurrentMigrations: ${limit} for ${
          traitLabel(trait)
        } equals the default spec.maxConcurrentMigrations, so it has no effect`,
        i,
      );
    }
    checkConvergence(convergence, `${at}.convergence`, c, i);
  });
}

function hasConvergence(spec: Record<string, unknown>): boolean {
  const traits = spec["traitLimits"];
  return spec["convergence"] !== undefined ||
    (Array.isArray(traits) &&
      traits.some((t) => isRecord(t) && t["convergence"] !== undefined));
}

function checkNoPauseTraits(list: unknown, c: Collector): void {
  if (list === undefined) return;
  if (!Array.isArray(list) || list.length > MAX_TRAIT_LIMITS) {
    c.deny(
      "no-pause-type",
      "spec.noPauseTraits",
      list,
      `a list of at most ${MAX_TRAIT_LIMITS} placement trait names`,
    );
    return;
  }
  const seen = new Map<string, number>();
  list.forEach((trait: unknown, k) => {
    const at = `spec.noPauseTraits[${k}]`;
    if (!isTraitName(trait)) {
      c.deny("no-pause-syntax", at, trait, TRAIT_NAME_EXPECTED);
      return;
    }
    const first = seen.get(traitKey(trait));
    if (first === undefined) seen.set(traitKey(trait), k);
    else {
      c.deny(
        "no-pause-duplicate",
        at,
        trait,
        "each trait at most once",
        `, the same trait as spec.noPauseTraits[${first}]`,
      );
    }
  });
}

/**
 * Checks concurrency limit settings given in the shape of an
 * EvictionPolicy `spec` (any value: a policy from the API server, or the
 * settings built from the flags). Refuses what the CRD schema refuses
 * (types, bounds) and what only code can: trait names outside placement's
 * syntax, the same trait twice (also differing only in case), a trait
 * limit above the default, `convergence` bounds that are not integers in
 * range or an unknown `onTimeout` (convergence_validation.ts), bad or
 * repeated `noPauseTraits`. Warns about trait names outside CUSTOM_ and the
 * standard namespaces, a trait limit equal to the default (unless the entry
 * sets `convergence`), a cluster budget below the per-host default,
 * abortStuckMigrations without a timeout, and the risky convergence
 * choices (ForceComplete, above all for `noPauseTraits`; a per-GiB bound
 * above Nova's; the legacy fields beside `convergence`). A missing
 * `maxConcurrentMigrations` counts as the CRD default 1.
 *
 * @example
 * ```ts
 * import { checkLimitSpec } from "./validation.ts";
 * const bad = checkLimitSpec({
 *   maxConcurrentMigrations: 4,
 *   traitLimits: [{ trait: "CUSTOM_A", maxConcurrentMigrations: 8 }],
 * });
 * console.assert(bad.violations[0]?.rule === "trait-above-default");
 * const good = checkLimitSpec({ maxConcurrentMigrations: 4 });
 * console.assert(good.ok && good.spec.maxConcurrentMigrations === 4);
 * ```
 */
export function checkLimitSpec(spec: unknown): LimitSpecCheck {
  const c = new Collector();
  if (!isRecord(spec)) {
    c.deny(
      "spec-type",
      "spec",
      spec,
      "an object with the concurrency limits",
    );
    return c.refused();
  }
  const rawDefault = spec["maxConcurrentMigrations"];
  let defaultLimit: number | undefined = DEFAULT_MAX_CONCURRENT_MIGRATIONS;
  if (rawDefault !== undefined) {
    if (isIntIn(rawDefault, 1, MAX_PER_HOST_LIMIT)) {
      defaultLimit = rawDefault;
    } else {
      defaultLimit = undefined;
      c.deny(
        "default-range",
        "spec.maxConcurrentMigrations",
        rawDefault,
        PER_HOST_EXPECTED,
      );
    }
  }
  checkTraitLimits(spec["traitLimits"], defaultLimit, c);
  const cluster = spec["clusterMaxConcurrentMigrations"];
  if (cluster !== undefined) {
    if (!isIntIn(cluster, 1, MAX_CLUSTER_LIMIT)) {
      c.deny(
        "cluster-budget-range",
        "spec.clusterMaxConcurrentMigrations",
        cluster,
        `an integer from 1 to ${MAX_CLUSTER_LIMIT}`,
      );
    } else if (defaultLimit !== undefined && cluster < defaultLimit) {
      c.warn(
        "cluster-budget-below-default",
        "spec.clusterMaxConcurrentMigrations",
        `spec.clusterMaxConcurrentMigrations: ${cluster} is below the per-host default spec.maxConcurrentMigrations ${defaultLimit}, so no drain can reach its per-host limit`,
      );
    }
  }
  const timeout = spec["migrationTimeoutSeconds"];
  if (timeout !== undefined && !isIntIn(timeout, 1, Number.MAX_SAFE_INTEGER)) {
    c.deny(
      "timeout-range",
      "spec.migrationTimeoutSeconds",
      timeout,
      "an integer number of seconds >= 1",
    );
  }
  const abort = spec["abortStuckMigrations"];
  if (abort !== undefined && typeof abort !== "boolean") {
    c.deny("abort-type", "spec.abortStuckMigrations", abort, "true or false");
  } else if (
    abort === true && timeout === undefined && !hasConvergence(spec)
  ) {
    // beside convergence, the deprecation warning says what it does
    c.warn(
      "abort-without-timeout",
      "spec.abortStuckMigrations",
      "spec.abortStuckMigrations: true has no effect without spec.migrationTimeoutSeconds",
    );
  }
  checkConvergence(spec["convergence"], "spec.convergence", c);
  checkNoPauseTraits(spec["noPauseTraits"], c);
  if (c.violations.length > 0) return c.refused();
  const parsed = EvictionPolicySpecSchema.safeParse(spec);
  if (!parsed.success) {
    // a rule of the generated schema that the checks above do not know
    const issue = parsed.error.issues[0];
    const path = issue?.path ?? [];
    c.deny(
      "schema",
      fieldPath(path),
      valueAt(spec, path),
      issue?.message ?? "a valid EvictionPolicy spec",
    );
    return c.refused();
  }
  convergencePolicyWarnings(parsed.data, c);
  return { ok: true, spec: parsed.data, violations: [], warnings: c.warnings };
}

/**
 * Checks an Eviction's `spec.convergence` (any value) with the policy's
 * rules: the same refusals and warnings, with the same messages.
 *
 * @example
 * ```ts
 * import { checkEvictionConvergence } from "./validation.ts";
 * const r = checkEvictionConvergence({ progressTimeoutSeconds: 0 });
 * console.assert(r.violations[0]?.message ===
 *   "spec.convergence.progressTimeoutSeconds: got 0; expected an integer from 1 to 86400 (seconds)");
 * ```
 */
export function checkEvictionConvergence(value: unknown): {
  readonly violations: readonly LimitViolation[];
  readonly warnings: readonly LimitWarning[];
} {
  const c = new Collector();
  checkConvergence(value, "spec.convergence", c);
  return c;
}

/**
 * Joins violation messages into the one-line message of a refusal (the
 * webhook's deny message and the flags' error message): ` | `-separated,
 * in field order.
 *
 * @example
 * ```ts
 * import { checkLimitSpec, violationsMessage } from "./validation.ts";
 * const { violations } = checkLimitSpec({ maxConcurrentMigrations: 0 });
 * console.assert(violationsMessage(violations) ===
 *   "spec.maxConcurrentMigrations: got 0; expected an integer from 1 to 64");
 * ```
 */
export function violationsMessage(
  violations: readonly LimitViolation[],
): string {
  return violations.map((v) => v.message).join(" | ");
}
