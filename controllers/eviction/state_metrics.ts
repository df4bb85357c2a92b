/**
 * Gauges of the Evictions from the cache at scrape time: every replica reports the same (queries take `max`).
 * @module
 */

import {
  CONDITION_EVICTING,
  drainEndMs,
  REASON_DUPLICATE,
  REASON_FAILED,
  REASON_NOT_IN_NOVA,
  REASON_PENDING,
  REASON_PREFLIGHT_FAILED,
  REASON_RUNNING,
  REASON_SUCCEEDED,
  REASON_WAITING,
  REASON_WAITING_FOR_BUDGET,
  REASON_WAITING_FOR_PERSON,
} from "../conditions.ts";
import { Gauge, type Registry } from "prom-client";
import type { Eviction, EvictionPolicy } from "../../models/mod.ts";

/** The states an Eviction can be in: its Evicting reason, Pending before one. */
export const EVICTION_STATES = [
  REASON_PENDING,
  REASON_RUNNING,
  REASON_WAITING,
  REASON_WAITING_FOR_BUDGET,
  REASON_SUCCEEDED,
  REASON_NOT_IN_NOVA,
  REASON_FAILED,
  REASON_WAITING_FOR_PERSON,
  REASON_DUPLICATE,
  REASON_PREFLIGHT_FAILED,
] as const;

/** One Eviction's series. */
export interface EvictionSeries {
  eviction: string;
  state: string;
  limit: number | undefined;
  predictedSeconds: number | undefined;
  /** From startedAt to the drain's end, or to now while it runs. */
  elapsedSeconds: number | undefined;
  remainingBytes: { server: string; bytes: number }[];
  notConverging: number;
}

/** What the gauges show. */
export interface EvictionGaugeValues {
  /** Evictions per state, every state of {@linkcode EVICTION_STATES} listed. */
  byState: Map<string, number>;
  perEviction: EvictionSeries[];
  clusterBudget: number | undefined;
}

/**
 * The gauges' values from the cached Evictions and policy (pure).
 *
 * @example
 * ```ts
 * import { evictionGaugeValues } from "./state_metrics.ts";
 * const v = evictionGaugeValues([{ metadata: { name: "n1" }, spec: { hypervisor: "n1", reason: "r" } }], undefined, 0);
 * console.log(v.byState.get("Pending"), v.perEviction[0]?.state); // 1 Pending
 * ```
 */
export function evictionGaugeValues(
  evictions: readonly Eviction[],
  policy: EvictionPolicy | undefined,
  nowMs: number,
): EvictionGaugeValues {
  const byState = new Map<string, number>(EVICTION_STATES.map((s) => [s, 0]));
  const perEviction = evictions.map((e): EvictionSeries => {
    const state = e.status?.conditions?.find((c) =>
      c.type === CONDITION_EVICTING
    )
      ?.reason ?? REASON_PENDING;
    byState.set(state, (byState.get(state) ?? 0) + 1);
    const started = Date.parse(e.status?.startedAt ?? "");
    const inFlight = e.status?.inFlight ?? [];
    const end = drainEndMs(e.status) ?? nowMs;
    return {
      eviction: e.metadata?.name ?? e.spec.hypervisor,
      state,
      limit: e.status?.effectiveLimit,
      predictedSeconds: e.status?.predictedMakespanSeconds,
      elapsedSeconds: Number.isNaN(started)
        ? undefined
        : Math.max(0, (end - started) / 1000),
      remainingBytes: inFlight.flatMap((f) =>
        f.memoryRemainingBytes === undefined
          ? []
          : [{ server: f.id, bytes: f.memoryRemainingBytes }]
      ),
      notConverging: inFlight.filter((f) => f.notConverging === true).length,
    };
  });
  return {
    byState,
    perEviction,
    clusterBudget: policy?.spec.clusterMaxConcurrentMigrations,
  };
}

/**
 * Registers the gauges; `read` gives the cache's Evictions and policy at scrape time.
 *
 * @example
 * ```ts
 * import { Registry } from "prom-client";
 * import { registerEvictionGauges } from "./state_metrics.ts";
 * const registry = new Registry();
 * registerEvictionGauges(registry, () => ({ evictions: [], policy: undefined }), () => 0);
 * console.assert((await registry.metrics()).includes('evictor_evictions{state="Waiting"} 0'));
 * ```
 */
export function registerEvictionGauges(
  registry: Registry,
  read: () => {
    evictions: readonly Eviction[];
    policy: EvictionPolicy | undefined;
  },
  now: () => number,
): void {
  const registers = [registry];
  // One computation per scrape, shared by the gauges' collect callbacks.
  let cached: { at: number; values: EvictionGaugeValues } | undefined;
  const values = () => {
    const at = now();
    if (cached === undefined || cached.at !== at) {
      const { evictions, policy } = read();
      cached = { at, values: evictionGaugeValues(evictions, policy, at) };
    }
    return cached.values;
  };
  stateGauges(registers, values);
  drainGauges(registers, values);
  copyGauges(registers, values);
}

/** Per live copy: memory left; per drain: copies not converging. */
function copyGauges(
  registers: Registry[],
  values: () => EvictionGaugeValues,
): void {
  // from the status at each scrape: a copy's series goes when it ends
  new Gauge({
    name: "evictor_migration_remaining_bytes",
    help:
      "Memory a live copy in flight still has to copy, as last read from Nova's migration record (status.inFlight[].memoryRemainingBytes).",
    labelNames: ["eviction", "server"],
    registers,
    collect() {
      this.reset();
      for (const e of values().perEviction) {
        for (const r of e.remainingBytes) {
          this.set({ eviction: e.eviction, server: r.server }, r.bytes);
        }
      }
    },
  });
  new Gauge({
    name: "evictor_migrations_not_converging",
    help:
      "Live copies in flight past their progress or completion timeout (status.inFlight[].notConverging).",
    labelNames: ["eviction"],
    registers,
    collect() {
      this.reset();
      for (const e of values().perEviction) {
        this.set({ eviction: e.eviction }, e.notConverging);
      }
    },
  });
}

function stateGauges(
  registers: Registry[],
  values: () => EvictionGaugeValues,
): void {
  new Gauge({
    name: "evictor_evictions",
    help:
      "Evictions by state (the Evicting condition's reason; Pending before it is set).",
    labelNames: ["state"],
    registers,
    collect() {
      this.reset();
      for (const [state, n] of values().byState) this.set({ state }, n);
    },
  });
  new Gauge({
    name: "evictor_eviction_state",
    help: "1 for each Eviction's current state, 0 for the other states.",
    labelNames: ["eviction", "state"],
    registers,
    collect() {
      this.reset();
      const v = values();
      const states = [...v.byState.keys()];
      for (const e of v.perEviction) {
        for (const state of states) {
          this.set({ eviction: e.eviction, state }, state === e.state ? 1 : 0);
        }
      }
    },
  });
}

/** Per drain: limit, predicted makespan, elapsed; the cluster budget. */
function drainGauges(
  registers: Registry[],
  values: () => EvictionGaugeValues,
): void {
  const perDrain = (
    name: string,
    help: string,
    pick: (e: EvictionSeries) => number | undefined,
  ) =>
    new Gauge({
      name,
      help,
      labelNames: ["eviction"],
      registers,
      collect() {
        this.reset();
        for (const e of values().perEviction) {
          const v = pick(e);
          if (v !== undefined) this.set({ eviction: e.eviction }, v);
        }
      },
    });
  perDrain(
    "evictor_drain_limit",
    "Migrations a drain may have in flight at once (status.effectiveLimit).",
    (e) => e.limit,
  );
  new Gauge({
    name: "evictor_cluster_budget",
    help:
      "Migrations in flight allowed in the whole cluster (the EvictionPolicy's clusterMaxConcurrentMigrations); absent when unlimited.",
    registers,
    collect() {
      this.reset();
      const budget = values().clusterBudget;
      if (budget !== undefined) this.set(budget);
    },
  });
  perDrain(
    "evictor_drain_predicted_makespan_seconds",
    "A drain's predicted makespan, made before its host was disabled (status.predictedMakespanSeconds).",
    (e) => e.predictedSeconds,
  );
  perDrain(
    "evictor_drain_elapsed_seconds",
    "Seconds from a drain's start to its end, or to now while it runs: its makespan once ended.",
    (e) => e.elapsedSeconds,
  );
}
