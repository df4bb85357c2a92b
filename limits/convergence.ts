/**
 * What a drain does with a live copy that does not converge: its bound
 * (per GiB of the VM's memory, or the legacy flat timeout), how long its
 * remaining bytes may stop falling, and the action when either is passed.
 *
 * One host may match several trait entries: the lowest-risk choice of each
 * field wins (Report before Abort before ForceComplete, the longer
 * timeout, the fewer aborted tries), as the lowest concurrency limit does.
 * The Eviction's own `spec.convergence` then overrides field by field: it is
 * a person's choice for this one drain.
 *
 * Everything here is pure.
 *
 * @module
 */

/** What happens to a copy past its bound. */
export type OnTimeout = "Report" | "Abort" | "ForceComplete";

/** The actions in order of risk to the VM, lowest first. */
export const ON_TIMEOUT_BY_RISK: readonly OnTimeout[] = Object.freeze([
  "Report",
  "Abort",
  "ForceComplete",
]);

/**
 * The convergence fields as a policy, a trait entry or an Eviction gives them
 * (the generated models' `convergence` objects are assignable to it).
 */
export interface ConvergenceSpec {
  /** Seconds a live copy may take per GiB of the VM's memory. */
  completionTimeoutPerGiB?: number | undefined;
  /** Seconds the remaining bytes may go without a new low. */
  progressTimeoutSeconds?: number | undefined;
  /** What happens past either bound. */
  onTimeout?: OnTimeout | undefined;
  /** Aborted copies of one VM before it is left for a person. */
  maxAbortedTries?: number | undefined;
  /** Seconds a force-completed copy may still run before it is aborted. */
  forceCompleteTimeoutSeconds?: number | undefined;
}

/** The resolved convergence policy of one drain. */
export interface ConvergencePolicy {
  /** Per-GiB bound; absent: the flat `flatTimeoutSeconds` applies. */
  readonly completionTimeoutPerGiB?: number;
  /** The legacy `migrationTimeoutSeconds`, used when no per-GiB bound is set. */
  readonly flatTimeoutSeconds?: number;
  readonly progressTimeoutSeconds: number;
  readonly onTimeout: OnTimeout;
  readonly maxAbortedTries: number;
  readonly forceCompleteTimeoutSeconds: number;
  /** Where `onTimeout` came from, for messages: `policy`, `trait NAME`, `eviction`. */
  readonly source: string;
}

/** Defaults where nothing sets a field (KubeVirt's and Nova's old progress timeout: 150 s). */
export const CONVERGENCE_DEFAULTS = Object.freeze({
  progressTimeoutSeconds: 150,
  maxAbortedTries: 2,
  forceCompleteTimeoutSeconds: 300,
});

/** The inputs of {@linkcode resolveConvergence}. */
export interface ConvergenceInputs {
  /** The policy's (or flags') default `convergence`. */
  defaults?: ConvergenceSpec | undefined;
  /** The legacy flat timeout (`migrationTimeoutSeconds`). */
  migrationTimeoutSeconds?: number | undefined;
  /** The legacy `abortStuckMigrations`: `onTimeout` Abort where nothing sets it. */
  abortStuckMigrations: boolean;
  /** The `convergence` of every trait entry the host matches, with its trait. */
  traits?:
    | readonly { trait: string; convergence?: ConvergenceSpec | undefined }[]
    | undefined;
  /** The Eviction's own `spec.convergence`. */
  eviction?: ConvergenceSpec | undefined;
}

const riskOf = (a: OnTimeout) => ON_TIMEOUT_BY_RISK.indexOf(a);

/**
 * The drain's convergence policy.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * const p = resolveConvergence({
 *   abortStuckMigrations: false,
 *   defaults: { completionTimeoutPerGiB: 800, onTimeout: "Abort" },
 *   traits: [
 *     { trait: "CUSTOM_A", convergence: { onTimeout: "ForceComplete" } },
 *     { trait: "CUSTOM_B", convergence: { onTimeout: "Report", completionTimeoutPerGiB: 60 } },
 *   ],
 * });
 * assert.equal(p.onTimeout, "Report"); // the lowest risk of the matching traits
 * assert.equal(p.source, "trait CUSTOM_B");
 * assert.equal(p.completionTimeoutPerGiB, 60); // a trait sets it for its hosts
 * ```
 */
export function resolveConvergence(i: ConvergenceInputs): ConvergencePolicy {
  const d = i.defaults ?? {};
  let onTimeout: OnTimeout = d.onTimeout ??
    (i.abortStuckMigrations ? "Abort" : "Report");
  let source = "policy";
  const traitValues = (k: keyof ConvergenceSpec) =>
    (i.traits ?? []).flatMap((t) => {
      const v = t.convergence?.[k];
      return typeof v === "number" ? [v] : [];
    });
  const longest = (k: keyof ConvergenceSpec, fallback: number | undefined) => {
    const vs = traitValues(k);
    return vs.length === 0 ? fallback : Math.max(...vs);
  };
  const traitActions = (i.traits ?? []).filter((t) =>
    t.convergence?.onTimeout !== undefined
  );
  if (traitActions.length > 0) {
    const lowest = traitActions.reduce((a, b) =>
      riskOf(b.convergence!.onTimeout!) < riskOf(a.convergence!.onTimeout!)
        ? b
        : a
    );
    onTimeout = lowest.convergence!.onTimeout!;
    source = `trait ${lowest.trait}`;
  }
  const tries = traitValues("maxAbortedTries");
  const merged: Record<string, number | undefined> = {
    completionTimeoutPerGiB: longest(
      "completionTimeoutPerGiB",
      d.completionTimeoutPerGiB,
    ),
    progressTimeoutSeconds: longest(
      "progressTimeoutSeconds",
      d.progressTimeoutSeconds,
    ),
    forceCompleteTimeoutSeconds: longest(
      "forceCompleteTimeoutSeconds",
      d.forceCompleteTimeoutSeconds,
    ),
    maxAbortedTries: tries.length === 0
      ? d.maxAbortedTries
      : Math.min(...tries),
  };
  const e = i.eviction ?? {};
  if (e.onTimeout !== undefined) {
    onTimeout = e.onTimeout;
    source = "eviction";
  }
  const pick = (k: keyof ConvergenceSpec) =>
    (e[k] as number | undefined) ?? merged[k];
  const perGiB = pick("completionTimeoutPerGiB");
  return Object.freeze({
    ...(perGiB === undefined ? {} : { completionTimeoutPerGiB: perGiB }),
    ...(perGiB !== undefined || i.migrationTimeoutSeconds === undefined
      ? {}
      : { flatTimeoutSeconds: i.migrationTimeoutSeconds }),
    progressTimeoutSeconds: pick("progressTimeoutSeconds") ??
      CONVERGENCE_DEFAULTS.progressTimeoutSeconds,
    onTimeout,
    maxAbortedTries: pick("maxAbortedTries") ??
      CONVERGENCE_DEFAULTS.maxAbortedTries,
    forceCompleteTimeoutSeconds: pick("forceCompleteTimeoutSeconds") ??
      CONVERGENCE_DEFAULTS.forceCompleteTimeoutSeconds,
    source,
  });
}

/**
 * Seconds a live copy of a VM with `ramMb` of memory may take: the per-GiB
 * bound times its GiB (at least one), else the flat timeout, else none.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * const p = resolveConvergence({ abortStuckMigrations: false, defaults: { completionTimeoutPerGiB: 800 } });
 * assert.equal(copyTimeoutSeconds(p, 4096), 3200);
 * assert.equal(copyTimeoutSeconds(p, 512), 800);
 * ```
 */
export function copyTimeoutSeconds(
  p: ConvergencePolicy,
  ramMb: number,
): number | undefined {
  if (p.completionTimeoutPerGiB !== undefined) {
    return p.completionTimeoutPerGiB * Math.max(1, ramMb / 1024);
  }
  return p.flatTimeoutSeconds;
}
