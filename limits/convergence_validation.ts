/**
 * Validation of the convergence settings (`convergence` objects of the
 * EvictionPolicy, its trait entries and an Eviction, and
 * `spec.noPauseTraits`): the refusals of one object, whatever its shape,
 * and the warnings for risky choices across the policy.
 *
 * The checks report into a {@linkcode ConvergenceSink}, so that the
 * policy's validator (`validation.ts`) and the Eviction's webhook give the
 * same one-line messages for the same mistake.
 *
 * @module
 */

import {
  type ConvergenceSpec,
  ON_TIMEOUT_BY_RISK,
  type OnTimeout,
  resolveConvergence,
} from "./convergence.ts";

/** The longest bound in seconds a convergence field takes (CRD schema): a day. */
export const MAX_CONVERGENCE_SECONDS = 86_400;
/** The most aborted tries (CRD schema). */
export const MAX_ABORTED_TRIES = 100;
/** Nova's default `[libvirt] live_migration_completion_timeout`, seconds per GiB. */
export const NOVA_COMPLETION_TIMEOUT_PER_GIB = 800;

/** The refusal rules of a convergence object. */
export type ConvergenceRule =
  | "convergence-type"
  | "convergence-range"
  | "on-timeout";

/** The warning rules of convergence settings. */
export type ConvergenceWarningRule =
  | "force-complete"
  | "force-complete-no-pause"
  | "completion-above-nova"
  | "legacy-with-convergence";

/** Where the checks report (the validator's collector). */
export interface ConvergenceSink {
  /** A refusal: field, bad value, what is expected. */
  deny(
    rule: ConvergenceRule,
    field: string,
    value: unknown,
    expected: string,
    detail?: string,
    traitIndex?: number,
  ): void;
  /** A warning: its one-line message. */
  warn(
    rule: ConvergenceWarningRule,
    field: string,
    message: string,
    traitIndex?: number,
  ): void;
}

const INTEGER_FIELDS = {
  completionTimeoutPerGiB: MAX_CONVERGENCE_SECONDS,
  progressTimeoutSeconds: MAX_CONVERGENCE_SECONDS,
  maxAbortedTries: MAX_ABORTED_TRIES,
  forceCompleteTimeoutSeconds: MAX_CONVERGENCE_SECONDS,
} as const;

const UNITS: Record<keyof typeof INTEGER_FIELDS, string> = {
  completionTimeoutPerGiB: "seconds per GiB",
  progressTimeoutSeconds: "seconds",
  maxAbortedTries: "tries",
  forceCompleteTimeoutSeconds: "seconds",
};

/** What Nova does with a force-completed copy, for warnings and docs. */
export const FORCE_COMPLETE_EFFECT =
  "Nova pauses the VM until the copy ends unless live_migration_permit_post_copy is set on the hosts, in which case it switches to post-copy";

/**
 * Checks one `convergence` object (any value) at `field`: refuses a
 * non-object, unknown `onTimeout`, and bounds that are not integers from 1
 * to their maximum; warns about `ForceComplete` and a
 * `completionTimeoutPerGiB` above Nova's own default (Nova acts first).
 *
 * @example
 * ```ts
 * import { checkConvergence } from "./convergence_validation.ts";
 * const denied: string[] = [];
 * checkConvergence({ onTimeout: "Pause" }, "spec.convergence", {
 *   deny: (_rule, field) => denied.push(field),
 *   warn: () => {},
 * });
 * console.assert(denied[0] === "spec.convergence.onTimeout");
 * ```
 */
export function checkConvergence(
  value: unknown,
  field: string,
  sink: ConvergenceSink,
  traitIndex?: number,
): void {
  if (value === undefined) return;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    sink.deny(
      "convergence-type",
      field,
      value,
      `an object with any of ${
        [...Object.keys(INTEGER_FIELDS), "onTimeout"].join(", ")
      }`,
      "",
      traitIndex,
    );
    return;
  }
  const spec = value as Record<string, unknown>;
  for (const [key, max] of Object.entries(INTEGER_FIELDS)) {
    const v = spec[key];
    if (v === undefined) continue;
    if (
      typeof v !== "number" || !Number.isSafeInteger(v) || v < 1 || v > max
    ) {
      sink.deny(
        "convergence-range",
        `${field}.${key}`,
        v,
        `an integer from 1 to ${max} (${
          UNITS[key as keyof typeof INTEGER_FIELDS]
        })`,
        "",
        traitIndex,
      );
    }
  }
  const action = spec["onTimeout"];
  if (
    action !== undefined &&
    !(ON_TIMEOUT_BY_RISK as readonly unknown[]).includes(action)
  ) {
    sink.deny(
      "on-timeout",
      `${field}.onTimeout`,
      action,
      `one of ${ON_TIMEOUT_BY_RISK.join(", ")}`,
      "",
      traitIndex,
    );
  } else if (action === "ForceComplete") {
    sink.warn(
      "force-complete",
      `${field}.onTimeout`,
      `${field}.onTimeout: ForceComplete: ${FORCE_COMPLETE_EFFECT}; a force-completed copy still running after forceCompleteTimeoutSeconds is aborted`,
      traitIndex,
    );
  }
  const perGiB = spec["completionTimeoutPerGiB"];
  if (
    typeof perGiB === "number" && Number.isSafeInteger(perGiB) &&
    perGiB > NOVA_COMPLETION_TIMEOUT_PER_GIB &&
    perGiB <= MAX_CONVERGENCE_SECONDS
  ) {
    sink.warn(
      "completion-above-nova",
      `${field}.completionTimeoutPerGiB`,
      `${field}.completionTimeoutPerGiB: ${perGiB} is above Nova's default live_migration_completion_timeout (${NOVA_COMPLETION_TIMEOUT_PER_GIB} s per GiB): unless the hosts' nova.conf raises it, Nova acts first (its live_migration_timeout_action, abort by default)`,
      traitIndex,
    );
  }
}

/** The parts of a valid policy spec the cross-field warnings read. */
export interface ConvergencePolicyView {
  convergence?: ConvergenceSpec | undefined;
  traitLimits?:
    | readonly { trait: string; convergence?: ConvergenceSpec | undefined }[]
    | undefined;
  noPauseTraits?: readonly string[] | undefined;
  migrationTimeoutSeconds?: number | undefined;
  abortStuckMigrations?: boolean | undefined;
}

function resolvedAction(
  spec: ConvergencePolicyView,
  hostTraits: readonly string[],
): { onTimeout: OnTimeout; source: string } {
  const p = resolveConvergence({
    defaults: spec.convergence,
    abortStuckMigrations: spec.abortStuckMigrations === true,
    traits: (spec.traitLimits ?? []).filter((t) =>
      hostTraits.includes(t.trait)
    ),
  });
  return { onTimeout: p.onTimeout, source: p.source };
}

function sourceField(spec: ConvergencePolicyView, source: string): string {
  if (!source.startsWith("trait ")) return "spec.convergence.onTimeout";
  const trait = source.slice("trait ".length);
  const i = (spec.traitLimits ?? []).findIndex((t) => t.trait === trait);
  return `spec.traitLimits[${i}].convergence.onTimeout`;
}

/**
 * The warnings across a valid policy spec: a trait of `noPauseTraits`
 * whose hosts can resolve to `ForceComplete` (alone, or beside another
 * trait that sets it), and the legacy `migrationTimeoutSeconds` /
 * `abortStuckMigrations: true` beside `convergence` (which wins).
 *
 * @example
 * ```ts
 * import { convergencePolicyWarnings } from "./convergence_validation.ts";
 * const warned: string[] = [];
 * convergencePolicyWarnings({
 *   convergence: { onTimeout: "ForceComplete" },
 *   noPauseTraits: ["CUSTOM_HANA"],
 * }, { deny: () => {}, warn: (rule) => warned.push(rule) });
 * console.assert(warned[0] === "force-complete-no-pause");
 * ```
 */
export function convergencePolicyWarnings(
  spec: ConvergencePolicyView,
  sink: ConvergenceSink,
): void {
  const traits = spec.traitLimits ?? [];
  const forcing = traits.filter((t) =>
    t.convergence?.onTimeout === "ForceComplete"
  );
  (spec.noPauseTraits ?? []).forEach((trait, k) => {
    const field = `spec.noPauseTraits[${k}]`;
    const hostSets = [[trait], ...forcing.map((f) => [trait, f.trait])];
    for (const host of hostSets) {
      const r = resolvedAction(spec, host);
      if (r.onTimeout !== "ForceComplete") continue;
      const who = host.length === 1
        ? `hosts with ${trait}`
        : `hosts with ${trait} and ${host[1]}`;
      sink.warn(
        "force-complete-no-pause",
        field,
        `${field}: VMs on hosts with ${trait} must never be paused, but ${who} resolve to onTimeout ForceComplete (${
          sourceField(spec, r.source)
        }): ${FORCE_COMPLETE_EFFECT}; give ${trait} an entry in spec.traitLimits with convergence.onTimeout Abort or Report (the lowest risk wins)`,
      );
      return; // one warning per trait: the first host set that forces
    }
  });
  const anyConvergence = spec.convergence !== undefined ||
    traits.some((t) => t.convergence !== undefined);
  if (!anyConvergence) return;
  if (spec.migrationTimeoutSeconds !== undefined) {
    sink.warn(
      "legacy-with-convergence",
      "spec.migrationTimeoutSeconds",
      `spec.migrationTimeoutSeconds: deprecated beside convergence: a completionTimeoutPerGiB (spec.convergence, a trait's or the Eviction's) replaces this flat ${spec.migrationTimeoutSeconds} s timeout wherever it is set; set spec.convergence.completionTimeoutPerGiB and remove it`,
    );
  }
  if (spec.abortStuckMigrations === true) {
    sink.warn(
      "legacy-with-convergence",
      "spec.abortStuckMigrations",
      "spec.abortStuckMigrations: deprecated beside convergence: an onTimeout (spec.convergence, a trait's or the Eviction's) replaces it wherever it is set; set spec.convergence.onTimeout to Abort and remove it",
    );
  }
}

/**
 * The warning for an Eviction whose drain resolves to `ForceComplete` on
 * a host with a trait of the policy's `noPauseTraits`, or undefined.
 *
 * @example
 * ```ts
 * import { noPauseEvictionWarning } from "./convergence_validation.ts";
 * import { resolveConvergence } from "./convergence.ts";
 * const p = resolveConvergence({ abortStuckMigrations: false, eviction: { onTimeout: "ForceComplete" } });
 * console.assert(noPauseEvictionWarning(p, ["CUSTOM_HANA"], ["CUSTOM_HANA"]) !== undefined);
 * ```
 */
export function noPauseEvictionWarning(
  policy: { onTimeout: OnTimeout; source: string },
  hostTraits: readonly string[],
  noPauseTraits: readonly string[] | undefined,
): string | undefined {
  if (policy.onTimeout !== "ForceComplete") return undefined;
  const hit = (noPauseTraits ?? []).filter((t) => hostTraits.includes(t));
  if (hit.length === 0) return undefined;
  const from = policy.source === "eviction"
    ? "spec.convergence.onTimeout"
    : `the EvictionPolicy (${policy.source})`;
  return `spec.convergence: VMs on this host must never be paused (EvictionPolicy spec.noPauseTraits: ${
    hit.join(", ")
  }), but its drain resolves to onTimeout ForceComplete from ${from}: ${FORCE_COMPLETE_EFFECT}; set spec.convergence.onTimeout to Abort or Report`;
}
