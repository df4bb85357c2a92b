import assert from "node:assert/strict";
import fc from "fast-check";
import { Registry } from "prom-client";
import type { Eviction, EvictionPolicy } from "../../models/mod.ts";
import {
  EVICTION_STATES,
  evictionGaugeValues,
  registerEvictionGauges,
} from "./state_metrics.ts";

const T0 = Date.parse("2026-12-01T00:00:00Z");

function ev(
  name: string,
  reason: string | undefined,
  status: Partial<NonNullable<Eviction["status"]>> = {},
): Eviction {
  return {
    metadata: { name },
    spec: { hypervisor: name, reason: "r" },
    status: {
      ...status,
      ...(reason === undefined ? {} : {
        conditions: [{
          type: "Evicting",
          status: reason === "Running" || reason === "Waiting"
            ? "True"
            : "False",
          reason,
          message: "",
          lastTransitionTime: "2026-12-01T00:00:30Z",
        }],
      }),
    },
  };
}

const POLICY: EvictionPolicy = {
  metadata: { name: "default" },
  spec: {
    maxConcurrentMigrations: 4,
    abortStuckMigrations: false,
    clusterMaxConcurrentMigrations: 10,
  },
};

Deno.test("evictionGaugeValues: states, limits, predictions and elapsed times", () => {
  const v = evictionGaugeValues(
    [
      ev("a", "Running", {
        startedAt: "2026-12-01T00:00:00Z",
        effectiveLimit: 4,
        predictedMakespanSeconds: 90,
      }),
      ev("b", "Succeeded", {
        startedAt: "2026-12-01T00:00:00Z",
        finishedAt: "2026-12-01T00:01:40Z",
        effectiveLimit: 1,
      }),
      // Stopped with VMs for a person: ended at the condition's transition.
      ev("c", "Failed", { startedAt: "2026-12-01T00:00:00Z" }),
      ev("d", undefined),
      // Stopped on a SUSPENDED VM, none failed: ended alike.
      ev("e", "WaitingForPerson", { startedAt: "2026-12-01T00:00:00Z" }),
    ],
    POLICY,
    T0 + 60_000,
  );
  assert.deepEqual(Object.fromEntries(v.byState), {
    Pending: 1,
    Running: 1,
    Waiting: 0,
    WaitingForBudget: 0,
    Succeeded: 1,
    NotInNova: 0,
    Failed: 1,
    WaitingForPerson: 1,
    Duplicate: 0,
    PreflightFailed: 0,
  });
  assert.deepEqual(v.perEviction, [
    {
      eviction: "a",
      state: "Running",
      limit: 4,
      predictedSeconds: 90,
      elapsedSeconds: 60,
      remainingBytes: [],
      notConverging: 0,
    },
    {
      eviction: "b",
      state: "Succeeded",
      limit: 1,
      predictedSeconds: undefined,
      elapsedSeconds: 100,
      remainingBytes: [],
      notConverging: 0,
    },
    {
      eviction: "c",
      state: "Failed",
      limit: undefined,
      predictedSeconds: undefined,
      elapsedSeconds: 30,
      remainingBytes: [],
      notConverging: 0,
    },
    {
      eviction: "d",
      state: "Pending",
      limit: undefined,
      predictedSeconds: undefined,
      elapsedSeconds: undefined,
      remainingBytes: [],
      notConverging: 0,
    },
    {
      eviction: "e",
      state: "WaitingForPerson",
      limit: undefined,
      predictedSeconds: undefined,
      elapsedSeconds: 30,
      remainingBytes: [],
      notConverging: 0,
    },
  ]);
  assert.equal(v.clusterBudget, 10);
  assert.equal(evictionGaugeValues([], undefined, T0).clusterBudget, undefined);
});

Deno.test("property: the state counts add up to the Evictions, each in one state", () => {
  fc.assert(fc.property(
    fc.array(fc.option(fc.constantFrom(...EVICTION_STATES.slice(1)), {
      nil: undefined,
    })),
    (reasons) => {
      const v = evictionGaugeValues(
        reasons.map((r, i) => ev(`e${i}`, r)),
        undefined,
        T0,
      );
      const total = [...v.byState.values()].reduce((a, b) => a + b, 0);
      return total === reasons.length &&
        v.perEviction.every((e, i) => e.state === (reasons[i] ?? "Pending"));
    },
  ));
});

Deno.test("registerEvictionGauges: the scrape shows the cache as it is then", async () => {
  const registry = new Registry();
  let evictions: Eviction[] = [
    ev("a", "Waiting", {
      startedAt: "2026-12-01T00:00:00Z",
      effectiveLimit: 2,
      predictedMakespanSeconds: 30,
    }),
  ];
  let now = T0 + 10_000;
  registerEvictionGauges(
    registry,
    () => ({ evictions, policy: POLICY }),
    () => now,
  );
  const first = await registry.metrics();
  for (
    const line of [
      'evictor_evictions{state="Waiting"} 1',
      'evictor_eviction_state{eviction="a",state="Waiting"} 1',
      'evictor_eviction_state{eviction="a",state="Running"} 0',
      'evictor_drain_limit{eviction="a"} 2',
      "evictor_cluster_budget 10",
      'evictor_drain_predicted_makespan_seconds{eviction="a"} 30',
      'evictor_drain_elapsed_seconds{eviction="a"} 10',
    ]
  ) assert.ok(first.includes(line), `${line} in\n${first}`);
  // The Eviction is gone: so are its series.
  evictions = [];
  now += 1000;
  const second = await registry.metrics();
  assert.ok(!second.includes('eviction="a"'), second);
  assert.ok(second.includes('evictor_evictions{state="Waiting"} 0'));
});

Deno.test("registerEvictionGauges: each live copy's remaining bytes while it runs, the drain's copies not converging", async () => {
  const registry = new Registry();
  const live = (id: string, extra: Record<string, unknown>) => ({
    id,
    kind: "live" as const,
    startedAt: "2026-12-01T00:00:00Z",
    ...extra,
  });
  let evictions: Eviction[] = [
    ev("a", "Running", {
      inFlight: [
        live("vm1", { memoryRemainingBytes: 7_000_000, notConverging: true }),
        live("vm2", { memoryRemainingBytes: 0 }),
        live("vm3", {}),
      ],
    }),
    ev("b", "Running", {}),
  ];
  let now = T0;
  registerEvictionGauges(
    registry,
    () => ({ evictions, policy: undefined }),
    () => now,
  );
  const first = await registry.metrics();
  for (
    const line of [
      'evictor_migration_remaining_bytes{eviction="a",server="vm1"} 7000000',
      'evictor_migration_remaining_bytes{eviction="a",server="vm2"} 0',
      'evictor_migrations_not_converging{eviction="a"} 1',
      'evictor_migrations_not_converging{eviction="b"} 0',
    ]
  ) assert.ok(first.includes(line), `${line} in\n${first}`);
  assert.ok(!first.includes('server="vm3"'), "no read, no series");
  // vm1's copy ended: its series goes
  evictions = [ev("a", "Running", { inFlight: [live("vm2", {})] })];
  now += 1000;
  const second = await registry.metrics();
  assert.ok(!second.includes('server="vm1"'), second);
  assert.ok(
    second.includes('evictor_migrations_not_converging{eviction="a"} 0'),
  );
});
