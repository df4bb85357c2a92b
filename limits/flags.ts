/**
 * The start-up flags `--eviction-concurrency N`,
 * `--eviction-trait-concurrency TRAIT=N[,TRAIT=N]` (repeatable) and
 * `--eviction-convergence KEY=VALUE[,KEY=VALUE]` (repeatable; the keys of
 * the policy's `spec.convergence`): the limit settings in force while there
 * is no EvictionPolicy `default`.
 *
 * The CLI (app/config.ts) parses its arguments and hands the raw strings
 * to {@linkcode parseConcurrencyFlags}. The values are checked with
 * zod and then turned into the settings in the shape of an EvictionPolicy
 * spec (`--eviction-concurrency` is `spec.maxConcurrentMigrations`, the
 * trait entries are `spec.traitLimits[i]` in the order given, over all
 * occurrences of the flag) and checked by `checkLimitSpec`, the function
 * the webhook uses: the same mistake gets the same message.
 *
 * An error's message is one line and never contains a raw flag entry; the
 * entry is a structured field of the error ({@linkcode ConcurrencyFlagError}),
 * so the CLI can log it as a field (the upstream reviewers' finding).
 *
 * @module
 */

import { z } from "zod";
import { freezeSettings, type LimitSettings } from "./resolve.ts";
import {
  checkLimitSpec,
  type LimitRule,
  type LimitViolation,
  type LimitWarningRule,
  MAX_PER_HOST_LIMIT,
  violationsMessage,
} from "./validation.ts";

/** The flag that sets the default per-host limit. */
export const CONCURRENCY_FLAG = "--eviction-concurrency";
/** The flag that sets per-trait limits. */
export const TRAIT_CONCURRENCY_FLAG = "--eviction-trait-concurrency";

/** The flag that sets the default convergence policy (`spec.convergence`). */
export const CONVERGENCE_FLAG = "--eviction-convergence";

/** Any of the limit flags. */
export type ConcurrencyFlag =
  | typeof CONCURRENCY_FLAG
  | typeof TRAIT_CONCURRENCY_FLAG
  | typeof CONVERGENCE_FLAG;

/** The keys `--eviction-convergence` takes: the fields of `spec.convergence`. */
export const CONVERGENCE_KEYS: readonly string[] = Object.freeze([
  "completionTimeoutPerGiB",
  "progressTimeoutSeconds",
  "onTimeout",
  "maxAbortedTries",
  "forceCompleteTimeoutSeconds",
]);

/** The expectation of a `--eviction-convergence` entry. */
export const CONVERGENCE_ENTRY_EXPECTED =
  `KEY=VALUE[,KEY=VALUE] with each KEY at most once, one of ${
    CONVERGENCE_KEYS.join(", ")
  }`;

/** The message of a `--eviction-convergence` entry that is not `KEY=VALUE` with a known, new key (constant). */
export const CONVERGENCE_ENTRY_MESSAGE =
  `${CONVERGENCE_FLAG}: an entry is not KEY=VALUE with a known key given once; expected ${CONVERGENCE_ENTRY_EXPECTED}`;

/** The expectation of a `--eviction-trait-concurrency` entry. */
export const TRAIT_ENTRY_EXPECTED =
  `TRAIT=N[,TRAIT=N] with N an integer from 1 to ${MAX_PER_HOST_LIMIT}`;

/** The message of an entry that is not `TRAIT=N` (constant). */
export const TRAIT_ENTRY_MESSAGE =
  `${TRAIT_CONCURRENCY_FLAG}: an entry is not TRAIT=N; expected ${TRAIT_ENTRY_EXPECTED}`;

/** The rules a flag problem can break: the policy's, plus the entry format. */
export type FlagRule = LimitRule | "flag-entry-format";

/** One bad flag entry. */
export interface FlagProblem {
  /** The flag. */
  readonly flag: ConcurrencyFlag;
  /** The raw entry as given (one comma-separated part of the flag's value). */
  readonly entry: string;
  /** The rule broken. */
  readonly rule: FlagRule;
  /** The field of the equivalent EvictionPolicy, or the flag for a format error. */
  readonly field: string;
  /** The bad value (after splitting `TRAIT=N`). */
  readonly value: unknown;
  /** What is expected. */
  readonly expected: string;
  /** The one-line message, the same as the webhook's for the same mistake. */
  readonly message: string;
}

/** A flag entry that is allowed but probably a mistake. */
export interface FlagWarning {
  /** The flag. */
  readonly flag: ConcurrencyFlag;
  /** The raw entry. */
  readonly entry: string;
  /** The rule. */
  readonly rule: LimitWarningRule;
  /** The field of the equivalent EvictionPolicy. */
  readonly field: string;
  /** The one-line message, the same as the webhook's warning. */
  readonly message: string;
}

/**
 * Bad concurrency flags. `message` is one line and constant for a given
 * mistake (no raw entry in it); `flag`, `entry`, `field`, `value`,
 * `expected` and `rule` describe the first problem, `problems` all of them.
 *
 * @example
 * ```ts
 * import { parseConcurrencyFlags } from "./flags.ts";
 * const r = parseConcurrencyFlags(undefined, ["CUSTOM_A"]);
 * if (!r.ok) console.assert(r.error.entry === "CUSTOM_A" && !r.error.message.includes("CUSTOM_A"));
 * ```
 */
export class ConcurrencyFlagError extends Error {
  /** The flag of the first problem. */
  readonly flag: ConcurrencyFlag;
  /** The raw entry of the first problem. */
  readonly entry: string;
  /** The field of the first problem. */
  readonly field: string;
  /** The bad value of the first problem. */
  readonly value: unknown;
  /** What the first problem expected. */
  readonly expected: string;
  /** The rule of the first problem. */
  readonly rule: FlagRule;
  /** Every problem found. */
  readonly problems: readonly FlagProblem[];

  /**
   * @param message One line, without raw entries.
   * @param problems At least one problem.
   */
  constructor(
    message: string,
    problems: readonly [FlagProblem, ...FlagProblem[]],
  ) {
    super(message);
    this.name = "ConcurrencyFlagError";
    const first = problems[0];
    this.flag = first.flag;
    this.entry = first.entry;
    this.field = first.field;
    this.value = first.value;
    this.expected = first.expected;
    this.rule = first.rule;
    this.problems = Object.freeze([...problems]);
  }
}

/** The outcome of {@linkcode parseConcurrencyFlags}. */
export type ConcurrencyFlagsResult =
  | {
    readonly ok: true;
    readonly settings: LimitSettings;
    readonly warnings: readonly FlagWarning[];
  }
  | { readonly ok: false; readonly error: ConcurrencyFlagError };

const FlagValuesSchema = z.object({
  concurrency: z.string().optional(),
  traitConcurrency: z.array(z.string()).readonly().optional(),
  convergence: z.array(z.string()).readonly().optional(),
});

/** `-?digits` becomes a number, anything else stays the string it is. */
const NumberTextSchema = z.string().transform((text): number | string =>
  /^-?[0-9]+$/.test(text) ? Number(text) : text
);

/** `TRAIT=N`, split at the last `=`. */
const TraitEntrySchema = z.string().check(
  z.refine((s) => s.includes("=")),
).transform((s) => {
  const at = s.lastIndexOf("=");
  return {
    trait: s.slice(0, at),
    maxConcurrentMigrations: NumberTextSchema.parse(s.slice(at + 1)),
  };
});

interface Entry {
  raw: string;
  trait: string;
  maxConcurrentMigrations: number | string;
}

function typeError(flag: ConcurrencyFlag): ConcurrencyFlagsResult {
  const message = `${flag}: the value is not a string; expected ${
    flag === CONCURRENCY_FLAG
      ? `an integer from 1 to ${MAX_PER_HOST_LIMIT}`
      : flag === CONVERGENCE_FLAG
      ? CONVERGENCE_ENTRY_EXPECTED
      : TRAIT_ENTRY_EXPECTED
  }`;
  return {
    ok: false,
    error: new ConcurrencyFlagError(message, [{
      flag,
      entry: "",
      rule: "flag-entry-format",
      field: flag,
      value: undefined,
      expected: "a string",
      message,
    }]),
  };
}

/**
 * Turns the raw values of the flags (as parseArgs returns them:
 * `string | undefined` and `string[] | undefined`) into frozen settings
 * with source `flags`, or a {@linkcode ConcurrencyFlagError}. Without
 * flags the settings are the CRD defaults (limit 1, no trait limits, no
 * convergence). `TRAIT=N` is split at the last `=`, `KEY=VALUE` at the
 * first; numbers must be written in decimal digits; empty entries
 * (`A=1,,B=2`, a trailing comma) are errors; nothing is trimmed.
 *
 * @example
 * ```ts
 * import { parseConcurrencyFlags } from "./flags.ts";
 * const r = parseConcurrencyFlags("4", ["CUSTOM_HANA_EXCLUSIVE_HOST=1,HW_GPU_API_CUDA=2"]);
 * console.assert(r.ok && r.settings.spec.traitLimits?.length === 2);
 * const bad = parseConcurrencyFlags("4", ["CUSTOM_A=8"]);
 * console.assert(!bad.ok && bad.error.entry === "CUSTOM_A=8");
 * const c = parseConcurrencyFlags(undefined, [], ["onTimeout=Abort,completionTimeoutPerGiB=600"]);
 * console.assert(c.ok && c.settings.spec.convergence?.onTimeout === "Abort");
 * ```
 */
export function parseConcurrencyFlags(
  concurrency: string | undefined,
  traitConcurrency: readonly string[] | undefined,
  convergence?: readonly string[] | undefined,
): ConcurrencyFlagsResult {
  const input = FlagValuesSchema.safeParse({
    concurrency,
    traitConcurrency,
    convergence,
  });
  if (!input.success) {
    const first = input.error.issues[0]?.path[0];
    return typeError(
      first === "concurrency"
        ? CONCURRENCY_FLAG
        : first === "convergence"
        ? CONVERGENCE_FLAG
        : TRAIT_CONCURRENCY_FLAG,
    );
  }
  const entries: Entry[] = [];
  const formatProblems: FlagProblem[] = [];
  for (const value of input.data.traitConcurrency ?? []) {
    for (const raw of value.split(",")) {
      const parsed = TraitEntrySchema.safeParse(raw);
      if (parsed.success) {
        entries.push({ raw, ...parsed.data });
      } else {
        formatProblems.push({
          flag: TRAIT_CONCURRENCY_FLAG,
          entry: raw,
          rule: "flag-entry-format",
          field: TRAIT_CONCURRENCY_FLAG,
          value: raw,
          expected: TRAIT_ENTRY_EXPECTED,
          message: TRAIT_ENTRY_MESSAGE,
        });
      }
    }
  }
  const convergenceEntries = new Map<string, string>();
  for (const value of input.data.convergence ?? []) {
    for (const raw of value.split(",")) {
      const at = raw.indexOf("=");
      const key = raw.slice(0, at);
      if (
        at < 0 || !CONVERGENCE_KEYS.includes(key) ||
        convergenceEntries.has(key)
      ) {
        formatProblems.push({
          flag: CONVERGENCE_FLAG,
          entry: raw,
          rule: "flag-entry-format",
          field: CONVERGENCE_FLAG,
          value: raw,
          expected: CONVERGENCE_ENTRY_EXPECTED,
          message: CONVERGENCE_ENTRY_MESSAGE,
        });
      } else convergenceEntries.set(key, raw);
    }
  }
  const [firstFormat, ...moreFormat] = formatProblems;
  if (firstFormat !== undefined) {
    return {
      ok: false,
      error: new ConcurrencyFlagError(firstFormat.message, [
        firstFormat,
        ...moreFormat,
      ]),
    };
  }
  const rawDefault = input.data.concurrency;
  const spec: Record<string, unknown> = { abortStuckMigrations: false };
  if (rawDefault !== undefined) {
    spec["maxConcurrentMigrations"] = NumberTextSchema.parse(rawDefault);
  }
  if (entries.length > 0) {
    spec["traitLimits"] = entries.map((e) => ({
      trait: e.trait,
      maxConcurrentMigrations: e.maxConcurrentMigrations,
    }));
  }
  if (convergenceEntries.size > 0) {
    spec["convergence"] = Object.fromEntries(
      [...convergenceEntries].map(([key, raw]) => {
        const text = raw.slice(raw.indexOf("=") + 1);
        return [key, key === "onTimeout" ? text : NumberTextSchema.parse(text)];
      }),
    );
  }
  const check = checkLimitSpec(spec);
  const origin = (
    traitIndex: number | undefined,
    field: string,
  ): { flag: ConcurrencyFlag; entry: string } =>
    field.startsWith("spec.convergence")
      ? {
        flag: CONVERGENCE_FLAG,
        entry: convergenceEntries.get(field.split(".")[2] ?? "") ?? "",
      }
      : traitIndex === undefined
      ? { flag: CONCURRENCY_FLAG, entry: rawDefault ?? "" }
      : {
        flag: TRAIT_CONCURRENCY_FLAG,
        entry: entries[traitIndex]?.raw ?? "",
      };
  const toProblem = (v: LimitViolation): FlagProblem => ({
    ...origin(v.traitIndex, v.field),
    rule: v.rule,
    field: v.field,
    value: v.value,
    expected: v.expected,
    message: v.message,
  });
  if (!check.ok) {
    const [head, ...tail] = check.violations;
    return {
      ok: false,
      error: new ConcurrencyFlagError(violationsMessage(check.violations), [
        toProblem(head),
        ...tail.map(toProblem),
      ]),
    };
  }
  const warnings = check.warnings.map((w): FlagWarning => ({
    ...origin(w.traitIndex, w.field),
    rule: w.rule,
    field: w.field,
    message: w.message,
  }));
  return {
    ok: true,
    settings: freezeSettings("flags", check.spec),
    warnings: Object.freeze(warnings),
  };
}
