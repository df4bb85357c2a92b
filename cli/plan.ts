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
} from "../controllers/eviction/nova_states.ts";
import { predictMakespan, predictWave } from "../capacity/makespan.ts";
import { alignColumns } from "./columns.ts";

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
    predictedSeconds: number;
    lowerBoundSeconds: number;
    mbPerSecond: number;
    overheadSeconds: number;
    rateSource: string;
    /** The cluster budget the prediction shares with the other hosts planned, if it does. */
    sharedBudget?: number;
  };
  /** VMs, in the drain's order (those that do not start last). */
  vms: PlanVm[];
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
  /** Copy rate and where it comes from. */
  rate: { mbPerSecond: number; overheadSeconds: number; source: string };
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
 *   rate: { mbPerSecond: 1000, overheadSeconds: 5, source: "default" },
 * });
 * console.log(p.makespan.predictedSeconds); // 0
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
  const m = predictMakespan({
    ramMb: starts.map(({ s }) => s.flavor.ramMb),
    limit: input.limit.value,
    mbPerSecond: input.rate.mbPerSecond,
    overheadSeconds: input.rate.overheadSeconds,
  });
  return {
    host: input.host,
    limit: input.limit,
    capacity: input.capacity,
    makespan: {
      predictedSeconds: Math.ceil(m.predictedSeconds),
      lowerBoundSeconds: Math.ceil(m.lowerBoundSeconds),
      mbPerSecond: input.rate.mbPerSecond,
      overheadSeconds: input.rate.overheadSeconds,
      rateSource: input.rate.source,
    },
    vms,
  };
}

/**
 * Seconds as `1h02m03s`, `4m05s` or `7s`.
 *
 * @example
 * ```ts
 * import { formatSeconds } from "./plan.ts";
 * console.log(formatSeconds(3723)); // 1h02m03s
 * ```
 */
export function formatSeconds(total: number): string {
  const s = Math.max(0, Math.round(total));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  const two = (n: number) => String(n).padStart(2, "0");
  if (h > 0) return `${h}h${two(m)}m${two(sec)}s`;
  if (m > 0) return `${m}m${two(sec)}s`;
  return `${sec}s`;
}

/**
 * Plans of hosts drained together (one wave): their predictions made
 * again with the cluster budget shared among them, as the controller
 * predicts each drain of a wave (capacity/makespan.ts predictWave). Plans
 * are returned unchanged without a budget or with a single host.
 *
 * @example
 * ```ts ignore
 * const plans = hosts.map((host) => planHost({ host, servers, limit, capacity, rate }));
 * console.log(renderPlan(shareBudget(plans, 10)));
 * ```
 */
export function shareBudget(
  plans: readonly HostPlan[],
  budget: number | undefined,
): HostPlan[] {
  const first = plans[0];
  if (budget === undefined || first === undefined || plans.length < 2) {
    return [...plans];
  }
  const wave = predictWave({
    hosts: plans.map((p) => ({
      host: p.host,
      ramMb: p.vms.filter((v) => v.order !== null).map((v) => v.ramMb),
      limit: p.limit.value,
    })),
    budget,
    mbPerSecond: first.makespan.mbPerSecond,
    overheadSeconds: first.makespan.overheadSeconds,
  });
  return plans.map((p) => ({
    ...p,
    makespan: {
      ...p.makespan,
      predictedSeconds: Math.ceil(
        wave.get(p.host)?.predictedSeconds ?? p.makespan.predictedSeconds,
      ),
      sharedBudget: budget,
    },
  }));
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
      `  capacity:  ${p.capacity.status}: ${p.capacity.message}`,
      `  makespan:  ${
        formatSeconds(m.predictedSeconds)
      } predicted, lower bound ${formatSeconds(m.lowerBoundSeconds)} (${
        m.mbPerSecond.toFixed(0)
      } MB/s + ${
        m.overheadSeconds.toFixed(1)
      } s per migration, ${m.rateSource}${
        m.sharedBudget === undefined
          ? ""
          : `; sharing the cluster budget of ${m.sharedBudget} with the other hosts planned`
      })`,
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
