/**
 * `kubectl evictor plan`, the pure part: per host, each VM with the class
 * the drain gives it (live, cold, needs a person, ...) and why, the order
 * the drain would take (largest RAM first), the limit in force and where
 * it comes from, the capacity verdict, and the predicted makespan with its
 * lower bound.
 *
 * @module
 */

import type { Server } from "../openstack/mod.ts";
import {
  inFlightKindOfServer,
  isBeingDeleted,
  needsPerson,
  startKindOfStatus,
} from "../openstack/informer/nova_states.ts";
import type { DrainCost } from "../capacity/history.ts";
import { predictDrains } from "../capacity/prediction.ts";
import { alignColumns } from "./columns.ts";
import { formatSeconds } from "./duration.ts";
import type { PlanConvergence } from "./plan_convergence.ts";

/** The class of a VM in a drain. */
export type PlanClass =
  | "live"
  | "cold"
  | "needs a person"
  | "in flight"
  | "being deleted"
  | "waits";

/** One VM of a host's plan. */
export interface PlanVm {
  /** Position in the drain's order (1 first), null when it does not start. */
  order: number | null;
  /** Server UUID. */
  id: string;
  /** Display name. */
  name: string;
  /** Nova status. */
  status: string;
  /** Flavor RAM, MB. */
  ramMb: number;
  /** Its class. */
  class: PlanClass;
  /** Why that class. */
  why: string;
}

/** The limit in force and where it comes from. */
export interface PlanLimit {
  /** Migrations in flight at most. */
  value: number;
  /** `policy`, `flags` or `eviction`. */
  source: string;
  /** The trait that lowered it, if any. */
  trait?: string;
  /** One line. */
  text: string;
}

/** A host's plan. */
export interface HostPlan {
  /** The host. */
  host: string;
  /** The limit. */
  limit: PlanLimit;
  /** Capacity verdict (Placement's view). */
  capacity: { status: string; message: string };
  /** Prediction. */
  makespan: {
    /** At the cost below, the time per drain included, whole seconds. */
    predictedSeconds: number;
    /** No schedule beats it: time per drain + max(longest, sum / limit). */
    lowerBoundSeconds: number;
    /** The range the cost's uncertainty gives (equal to the prediction when there is none). */
    rangeSeconds: { low: number; high: number };
    /** Copy rate, MB/s. */
    mbPerSecond: number;
    /** Time per migration, seconds. */
    overheadSeconds: number;
    /** Time per drain (capacity check, disable, wave, confirms, settle), seconds. */
    fixedSeconds: number;
    /** Where the cost comes from. */
    rateSource: string;
    /** What the range spans, when there is one. */
    uncertainty?: string;
    /** The cluster budget the prediction shares with the other hosts planned, if it does. */
    sharedBudget?: number;
  };
  /**
   * With `--with-wave`: the hosts of unfinished Evictions (not planned
   * here) whose drains share this host's wave and its capacity check.
   */
  wave?: string[];
  /** VMs, in the drain's order (those that do not start last). */
  vms: PlanVm[];
  /** The VMs its convergence policy is predicted to act on (cli/plan_convergence.ts). */
  convergence?: PlanConvergence;
}

/**
 * The class of a VM, as the drain treats it.
 *
 * @example
 * ```ts
 * import { classOf } from "./plan.ts";
 * console.log(classOf({ status: "SHUTOFF", taskState: null }).class); // cold
 * ```
 */
export function classOf(
  s: Pick<Server, "status" | "taskState">,
): { class: PlanClass; why: string } {
  if (isBeingDeleted(s.status, s.taskState)) {
    return { class: "being deleted", why: "task_state deleting: skipped" };
  }
  const moving = inFlightKindOfServer(s.status, s.taskState);
  if (moving !== undefined) {
    return {
      class: "in flight",
      why: `already moving (${moving}, task_state ${s.taskState ?? "-"})`,
    };
  }
  if (needsPerson(s.status)) {
    return {
      class: "needs a person",
      why: `${s.status}: only a person can make it movable`,
    };
  }
  const kind = startKindOfStatus(s.status);
  if (kind === "live") {
    return { class: "live", why: `${s.status}: live migration` };
  }
  if (kind === "cold") {
    return { class: "cold", why: `${s.status}: cold migration (resize)` };
  }
  return {
    class: "waits",
    why: s.status === "ERROR"
      ? "ERROR: retried only after a person resets it"
      : `${s.status}: not movable until it settles`,
  };
}

/** Input of {@linkcode planHost}. */
export interface PlanHostInput {
  /** The host. */
  host: string;
  /** Its servers. */
  servers: readonly Server[];
  /** The limit. */
  limit: PlanLimit;
  /** The capacity verdict. */
  capacity: { status: string; message: string };
  /** The drain's cost, where it comes from, and its uncertainty. */
  cost: PlanCost;
  /** The hosts of pending Evictions in its wave, when asked for. */
  wave?: readonly string[];
}

/** A drain's cost as the plan uses it (cli/plan_cost.ts makes it). */
export interface PlanCost extends DrainCost {
  /** Where it comes from, one line. */
  source: string;
  /** The costs the range spans (empty: no range). */
  spread: readonly DrainCost[];
  /** What the range spans, one line, when there is one. */
  uncertainty?: string;
}

/**
 * A host's plan.
 *
 * @example
 * ```ts
 * import { planHost } from "./plan.ts";
 * const p = planHost({
 *   host: "n1",
 *   servers: [],
 *   limit: { value: 2, source: "policy", text: "2 (policy default)" },
 *   capacity: { status: "True", message: "all 0 VMs fit" },
 *   cost: { mbPerSecond: 1000, overheadSeconds: 5, fixedSeconds: 10, source: "default", spread: [] },
 * });
 * console.log(p.makespan.predictedSeconds); // 10
 * ```
 */
export function planHost(input: PlanHostInput): HostPlan {
  const classified = input.servers.map((s) => ({
    s,
    c: classOf(s),
  }));
  const starts = classified.filter(({ c }) =>
    c.class === "live" || c.class === "cold"
  ).sort((a, b) =>
    b.s.flavor.ramMb - a.s.flavor.ramMb || (a.s.id < b.s.id ? -1 : 1)
  );
  const rest = classified.filter(({ c }) =>
    c.class !== "live" && c.class !== "cold"
  ).sort((a, b) => (a.s.name < b.s.name ? -1 : 1));
  const vms: PlanVm[] = [
    ...starts.map(({ s, c }, i) => ({ s, c, order: i + 1 })),
    ...rest.map(({ s, c }) => ({ s, c, order: null })),
  ].map(({ s, c, order }) => ({
    order,
    id: s.id,
    name: s.name,
    status: s.status,
    ramMb: s.flavor.ramMb,
    class: c.class,
    why: c.why,
  }));
  const [plan] = predicted(
    [{
      host: input.host,
      limit: input.limit,
      capacity: input.capacity,
      makespan: makespanFields(input.cost),
      ...(input.wave === undefined ? {} : { wave: [...input.wave] }),
      vms,
    }],
    input.cost,
    undefined,
  );
  if (plan === undefined) throw new Error("unreachable: one plan in, one out");
  return plan;
}

function makespanFields(cost: PlanCost): HostPlan["makespan"] {
  return {
    predictedSeconds: 0,
    lowerBoundSeconds: 0,
    rangeSeconds: { low: 0, high: 0 },
    mbPerSecond: cost.mbPerSecond,
    overheadSeconds: cost.overheadSeconds,
    fixedSeconds: cost.fixedSeconds,
    rateSource: cost.source,
    ...(cost.uncertainty === undefined
      ? {}
      : { uncertainty: cost.uncertainty }),
  };
}

/**
 * The plans with their predictions at `cost`, the hosts sharing `budget`
 * when there is one (capacity/prediction.ts predictDrains).
 */
function predicted(
  plans: readonly HostPlan[],
  cost: PlanCost,
  budget: number | undefined,
): HostPlan[] {
  const p = predictDrains(
    plans.map((plan) => ({
      host: plan.host,
      ramMb: plan.vms.filter((v) => v.order !== null).map((v) => v.ramMb),
      limit: plan.limit.value,
    })),
    budget,
    cost,
    cost.spread,
  );
  return plans.map((plan) => {
    const m = p.get(plan.host);
    return {
      ...plan,
      makespan: {
        ...plan.makespan,
        predictedSeconds: Math.ceil(m?.predictedSeconds ?? 0),
        lowerBoundSeconds: Math.ceil(m?.lowerBoundSeconds ?? 0),
        rangeSeconds: {
          low: Math.ceil(m?.lowSeconds ?? 0),
          high: Math.ceil(m?.highSeconds ?? 0),
        },
        ...(budget === undefined ? {} : { sharedBudget: budget }),
      },
    };
  });
}

/**
 * Plans of hosts drained together (one wave): their predictions made
 * again with the cluster budget shared among them, as the controller
 * predicts each drain of a wave (capacity/prediction.ts predictDrains).
 * Plans are returned unchanged without a budget or with a single host.
 *
 * @example
 * ```ts ignore
 * const plans = hosts.map((host) => planHost({ host, servers, limit, capacity, cost }));
 * console.log(renderPlan(shareBudget(plans, 10, cost)));
 * ```
 */
export function shareBudget(
  plans: readonly HostPlan[],
  budget: number | undefined,
  cost: PlanCost,
): HostPlan[] {
  if (budget === undefined || plans.length < 2) return [...plans];
  return predicted(plans, cost, budget);
}

/**
 * Renders plans as text: a header per host and a table of its VMs.
 *
 * @example
 * ```ts ignore
 * console.log(renderPlan([plan]));
 * ```
 */
export function renderPlan(plans: readonly HostPlan[]): string {
  const out: string[] = [];
  for (const p of plans) {
    const m = p.makespan;
    out.push(
      `HOST ${p.host}`,
      `  limit:     ${p.limit.text}`,
      ...(p.wave === undefined ? [] : [
        `  wave:      ${
          p.wave.length === 0
            ? "no pending Eviction shares it"
            : `shared with the pending Evictions of ${p.wave.join(", ")}`
        }`,
      ]),
      `  capacity:  ${p.capacity.status}: ${p.capacity.message}`,
      `  makespan:  ${formatSeconds(m.predictedSeconds)} predicted${
        m.rangeSeconds.high > m.rangeSeconds.low
          ? ` (range ${formatSeconds(m.rangeSeconds.low)} to ${
            formatSeconds(m.rangeSeconds.high)
          })`
          : ""
      }, lower bound ${formatSeconds(m.lowerBoundSeconds)}`,
      `  cost:      ${m.mbPerSecond.toFixed(0)} MB/s + ${
        m.overheadSeconds.toFixed(1)
      } s per migration + ${
        m.fixedSeconds.toFixed(0)
      } s per drain: ${m.rateSource}${
        m.sharedBudget === undefined
          ? ""
          : `; sharing the cluster budget of ${m.sharedBudget} with the other hosts planned`
      }`,
      ...(m.uncertainty === undefined ? [] : [`  range:     ${m.uncertainty}`]),
      ...(p.convergence === undefined ? [] : convergenceLines(p.convergence)),
      "",
      ...alignColumns([
        ["ORDER", "VM", "ID", "STATUS", "RAM MB", "CLASS", "WHY"],
        ...p.vms.map((v) => [
          v.order === null ? "-" : String(v.order),
          v.name,
          v.id,
          v.status,
          String(v.ramMb),
          v.class,
          v.why,
        ]),
      ]).map((l) => `  ${l}`),
      "",
    );
  }
  return out.join("\n").trimEnd();
}

/**
 * The lines of a host's convergence prediction: the policy, the basis,
 * and each VM predicted not to converge with what the policy does.
 *
 * @example
 * ```ts
 * import { convergenceLines } from "./plan.ts";
 * console.log(convergenceLines({ policy: "p", basis: "b", notConverging: [] }).length); // 3
 * ```
 */
export function convergenceLines(c: PlanConvergence): string[] {
  const head = [
    `  converge:  ${c.policy}`,
    `             predicted from ${c.basis}`,
  ];
  if (c.notConverging.length === 0) {
    return [
      ...head,
      "             every VM is predicted to converge within its bound",
    ];
  }
  return [
    ...head,
    ...c.notConverging.map((v) =>
      `  not converging: ${v.name} (${v.id}, ${v.ramMb} MB): ${
        v.basis === "status"
          ? "the drain reports it not converging now"
          : `copy predicted ${formatSeconds(v.predictedSeconds ?? 0)}, bound ${
            formatSeconds(v.boundSeconds ?? 0)
          }`
      }: ${v.action}`
    ),
  ];
}
