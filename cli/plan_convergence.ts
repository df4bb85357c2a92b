/**
 * `kubectl evictor plan`'s convergence prediction (pure): which VMs the
 * host's convergence policy (limits/convergence.ts) will act on, and what
 * it will do. The plan knows no VM's dirty rate: a copy is predicted from
 * the VM's memory size at the drain's learned (or default) rate against
 * its bound, `copyTimeoutSeconds`; copies in flight are named from what
 * the running drain's status says of them.
 *
 * @module
 */
import {
  type ConvergenceInputs,
  type ConvergencePolicy,
  type ConvergenceSpec,
  copyTimeoutSeconds,
  type OnTimeout,
} from "../limits/convergence.ts";
import type { DrainCost } from "../capacity/history.ts";
import { formatSeconds } from "./duration.ts";

/** A VM the policy is predicted to act on. */
export interface NotConvergingVm {
  id: string;
  name: string;
  ramMb: number;
  /** Predicted copy time at the plan's cost, seconds (absent for one in flight). */
  predictedSeconds?: number;
  /** Its bound under the policy, seconds (absent: no bound). */
  boundSeconds?: number;
  /** Why it is named: predicted from its size, or the drain's status says so now. */
  basis: "size" | "status";
  /** What the policy does, one line. */
  action: string;
}

/** A host's convergence prediction. */
export interface PlanConvergence {
  /** The policy, one line. */
  policy: string;
  /** What the prediction rests on, one line. */
  basis: string;
  /** The VMs predicted not to converge under it. */
  notConverging: NotConvergingVm[];
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

function specOf(v: unknown): ConvergenceSpec | undefined {
  if (!isRecord(v)) return undefined;
  const out: Record<string, unknown> = {};
  for (
    const k of [
      "completionTimeoutPerGiB",
      "progressTimeoutSeconds",
      "maxAbortedTries",
      "forceCompleteTimeoutSeconds",
    ]
  ) {
    if (typeof v[k] === "number") out[k] = v[k];
  }
  if (
    v["onTimeout"] === "Report" || v["onTimeout"] === "Abort" ||
    v["onTimeout"] === "ForceComplete"
  ) out["onTimeout"] = v["onTimeout"];
  return out as ConvergenceSpec;
}

/**
 * The inputs of `resolveConvergence` from the objects as the API server
 * sent them: the EvictionPolicy's spec (undefined: none), the host's
 * traits, the host's Eviction's spec (undefined: none).
 *
 * @example
 * ```ts
 * import { convergenceInputs } from "./plan_convergence.ts";
 * const i = convergenceInputs({ migrationTimeoutSeconds: 3600 }, [], undefined);
 * console.log(i.migrationTimeoutSeconds); // 3600
 * ```
 */
export function convergenceInputs(
  policySpec: unknown,
  traits: readonly string[],
  evictionSpec: unknown,
): ConvergenceInputs {
  const p = isRecord(policySpec) ? policySpec : {};
  const have = new Set(traits);
  const entries = Array.isArray(p["traitLimits"]) ? p["traitLimits"] : [];
  const matching = entries.flatMap((t) => {
    if (!isRecord(t) || typeof t["trait"] !== "string") return [];
    if (!have.has(t["trait"])) return [];
    const c = specOf(t["convergence"]);
    return [{
      trait: t["trait"],
      ...(c === undefined ? {} : { convergence: c }),
    }];
  });
  const defaults = specOf(p["convergence"]);
  const own = isRecord(evictionSpec)
    ? specOf(evictionSpec["convergence"])
    : undefined;
  const flat = p["migrationTimeoutSeconds"];
  return {
    abortStuckMigrations: p["abortStuckMigrations"] === true,
    ...(defaults === undefined ? {} : { defaults }),
    ...(typeof flat === "number" ? { migrationTimeoutSeconds: flat } : {}),
    traits: matching,
    ...(own === undefined ? {} : { eviction: own }),
  };
}

/**
 * What the policy does past a copy's bound, one line.
 *
 * @example
 * ```ts
 * import { actionText } from "./plan_convergence.ts";
 * import { resolveConvergence } from "../limits/convergence.ts";
 * console.log(actionText(resolveConvergence({ abortStuckMigrations: false })));
 * // reported (NotConverging) and left copying: a person decides (kubectl evictor force-complete|abort)
 * ```
 */
export function actionText(p: ConvergencePolicy): string {
  const actions: Record<OnTimeout, string> = {
    Report:
      "reported (NotConverging) and left copying: a person decides (kubectl evictor force-complete|abort)",
    Abort:
      `aborted and retried alone after the others; left for a person after ${p.maxAbortedTries} aborted tries`,
    ForceComplete:
      `force-completed (post-copy where Nova permits it, else paused until it completes); aborted if still copying ${
        formatSeconds(p.forceCompleteTimeoutSeconds)
      } later`,
  };
  return actions[p.onTimeout];
}

/** The policy as one line. */
function policyText(p: ConvergencePolicy): string {
  const bound = p.completionTimeoutPerGiB !== undefined
    ? `${p.completionTimeoutPerGiB} s per GiB`
    : p.flatTimeoutSeconds !== undefined
    ? `${
      formatSeconds(p.flatTimeoutSeconds)
    } per copy (migrationTimeoutSeconds)`
    : "no completion bound";
  return `${bound}, progress timeout ${
    formatSeconds(p.progressTimeoutSeconds)
  }, onTimeout ${p.onTimeout} (${p.source})`;
}

/** What `predictConvergence` looks at of one VM. */
export interface ConvergenceVm {
  id: string;
  name: string;
  ramMb: number;
  /** Only live copies are bound (a cold migration is a resize). */
  live: boolean;
}

/** A copy in flight as the running drain's status.inFlight says (raw). */
export interface InFlightReport {
  id: string;
  notConverging?: unknown;
  deadlineAt?: unknown;
}

/**
 * The VMs `policy` is predicted to act on: each live VM whose predicted
 * copy (its memory at `cost`'s rate, plus the time per migration) takes
 * longer than its bound, and each copy the running drain reports not
 * converging now; with the basis said once.
 *
 * @example
 * ```ts
 * import { predictConvergence } from "./plan_convergence.ts";
 * import { resolveConvergence } from "../limits/convergence.ts";
 * const p = resolveConvergence({ abortStuckMigrations: true, migrationTimeoutSeconds: 3600 });
 * const c = predictConvergence(
 *   [{ id: "a", name: "hana", ramMb: 1024 * 1024, live: true }],
 *   p,
 *   { mbPerSecond: 100, overheadSeconds: 5, fixedSeconds: 0 },
 *   [],
 * );
 * console.log(c.notConverging[0]?.predictedSeconds); // 10491
 * ```
 */
export function predictConvergence(
  vms: readonly ConvergenceVm[],
  policy: ConvergencePolicy,
  cost: DrainCost,
  inFlight: readonly InFlightReport[],
): PlanConvergence {
  const action = actionText(policy);
  const notConverging: NotConvergingVm[] = [];
  const reported = new Map(
    inFlight.filter((f) => f.notConverging === true).map((f) => [f.id, f]),
  );
  for (const vm of vms) {
    const bound = copyTimeoutSeconds(policy, vm.ramMb);
    if (reported.has(vm.id)) {
      const at = reported.get(vm.id)?.deadlineAt;
      notConverging.push({
        id: vm.id,
        name: vm.name,
        ramMb: vm.ramMb,
        ...(bound === undefined ? {} : { boundSeconds: Math.ceil(bound) }),
        basis: "status",
        action: typeof at === "string" ? `${action} (due ${at})` : action,
      });
      continue;
    }
    if (!vm.live || bound === undefined) continue;
    const predicted = cost.overheadSeconds + vm.ramMb / cost.mbPerSecond;
    if (predicted <= bound) continue;
    notConverging.push({
      id: vm.id,
      name: vm.name,
      ramMb: vm.ramMb,
      predictedSeconds: Math.ceil(predicted),
      boundSeconds: Math.ceil(bound),
      basis: "size",
      action,
    });
  }
  return {
    policy: policyText(policy),
    basis: `each VM's memory at ${
      cost.mbPerSecond.toFixed(0)
    } MB/s against its bound; the plan knows no VM's dirty rate, so a VM that dirties memory about as fast as the link copies is not foreseen${
      inFlight.length > 0
        ? "; copies in flight as the drain's status reports them"
        : ""
    }`,
    notConverging,
  };
}
