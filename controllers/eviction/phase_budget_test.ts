import assert from "node:assert/strict";
import fc from "fast-check";
import { TemporaryError } from "../../framework/errors.ts";
import type { KubeClient } from "../../framework/client.ts";
import { freezeSettings, type LimitSettings } from "../../limits/resolve.ts";
import type {
  Eviction,
  EvictionPolicy,
  EvictionStatus,
} from "../../models/mod.ts";
import {
  CONDITION_EVICTING,
  REASON_WAITING_FOR_BUDGET,
  REASON_WAITING_FOR_PERSON,
} from "../conditions.ts";
import {
  eviction,
  passFixture,
  type PassWorld,
} from "../../tests/harness/pass_fixture.ts";
import { input } from "../../tests/harness/plan_fixtures.ts";
import {
  budgetLeftFor,
  claimBeforeLooking,
  confirmAcrossProcesses,
  planAndReserve,
  waitForBudget,
  wakeForBudgetLeft,
  writeIntent,
} from "./phase_budget.ts";
import { apply, type MutablePass, type Pass } from "./pass.ts";
import { planPass } from "./plan.ts";
import type { Plan, PlanInput, Planner } from "./plan_types.ts";

const ME = "mine";
const T = "2026-01-01T00:30:00Z";

/** Flag settings with a per-host limit of `max` and, if given, a cluster budget. */
function settings(clusterMax?: number, max = 2): LimitSettings {
  return freezeSettings("flags", {
    maxConcurrentMigrations: max,
    abortStuckMigrations: false,
    ...(clusterMax === undefined
      ? {}
      : { clusterMaxConcurrentMigrations: clusterMax }),
  });
}

/** Another drain (its own host) with `inFlight` migrations and `status`. */
function other(
  name: string,
  inFlight: number,
  status: EvictionStatus = {},
): Eviction {
  return eviction(name, `host-${name}`, { inFlightCount: inFlight, ...status });
}

/** A drain of this process waiting in line with `outstanding` VMs left. */
function waiter(name: string, outstanding?: number): Eviction {
  return eviction(name, `host-${name}`, {
    inFlightCount: 0,
    ...(outstanding === undefined ? {} : { outstandingCount: outstanding }),
  });
}

/** An Evicting condition. */
function evicting(status: "True" | "False", reason: string) {
  return {
    type: CONDITION_EVICTING,
    status,
    reason,
    message: "",
    lastTransitionTime: T,
  };
}

/** A pass of ME under `s` (also the flags, which the wake-up reads). */
function fixture(
  s: LimitSettings,
  status: EvictionStatus,
  world: PassWorld = {},
) {
  return passFixture(eviction(ME, "host-mine", status), {
    ...world,
    deps: { flagSettings: s, ...world.deps },
  });
}

const BASE = planPass(input());

/** A plan that starts `starts` VMs with `mine` in flight before them. */
function planOf(starts: number, mine = 0): Plan {
  const start = Array.from({ length: starts }, (_, i) => ({
    id: `vm${i}`,
    kind: "live" as const,
    ramMb: 1024,
    attempt: 1,
  }));
  const inFlightCount = mine + starts;
  return {
    ...BASE,
    start,
    inFlightCount,
    next: { ...BASE.next, inFlightCount },
  };
}

/** A planner that starts up to `want` within the budget it is given. */
function budgetPlanner(want: number, mine: number, seen: PlanInput[]): Planner {
  return (i) => {
    seen.push(i);
    return planOf(Math.min(want, i.clusterBudgetLeft), mine);
  };
}

/** The pass with another API client (the fixture's has none). */
function withClient(pass: Pass, client: Partial<KubeClient>): Pass {
  return { ...pass, ctx: { ...pass.ctx, client: client as KubeClient } };
}

Deno.test("waitForBudget: waits only under a cluster budget others spend, with nothing of its own and work left", () => {
  const spent = [other("a", 1), other("b", 1)];
  const rows: Array<{
    name: string;
    s: LimitSettings;
    status: EvictionStatus;
    others: Eviction[];
    retry?: string;
    ledger?: number;
    pendingStart?: boolean;
    want: "waits" | "goes on";
  }> = [
    {
      name: "budget spent by others, work left: waits",
      s: settings(2),
      status: { inFlightCount: 0, outstandingCount: 3 },
      others: spent,
      want: "waits",
    },
    {
      name: "budget spent, work not yet known (never looked): waits",
      s: settings(2),
      status: {},
      others: spent,
      want: "waits",
    },
    {
      name: "no cluster budget: goes on",
      s: settings(undefined),
      status: { inFlightCount: 0, outstandingCount: 3 },
      others: spent,
      want: "goes on",
    },
    {
      name: "a slot is free: goes on",
      s: settings(3),
      status: { inFlightCount: 0, outstandingCount: 3 },
      others: spent,
      want: "goes on",
    },
    {
      name: "its own migration in flight (status): goes on, paced by it",
      s: settings(2),
      status: { inFlightCount: 1, outstandingCount: 3 },
      others: spent,
      want: "goes on",
    },
    {
      name: "its own migration in flight (ledger): goes on",
      s: settings(2),
      status: { inFlightCount: 0, outstandingCount: 3 },
      others: spent,
      ledger: 1,
      want: "goes on",
    },
    {
      name: "a start of its own without an answer: goes on",
      s: settings(2),
      status: { inFlightCount: 0, outstandingCount: 3 },
      others: spent,
      pendingStart: true,
      want: "goes on",
    },
    {
      name: "no work outstanding: goes on",
      s: settings(2),
      status: { inFlightCount: 0, outstandingCount: 0 },
      others: spent,
      want: "goes on",
    },
    {
      name: "stopped for a person: never waits for budget",
      s: settings(2),
      status: {
        inFlightCount: 0,
        outstandingCount: 3,
        conditions: [evicting("False", REASON_WAITING_FOR_PERSON)],
      },
      others: spent,
      want: "goes on",
    },
    {
      name: "a retry request: goes on",
      s: settings(2),
      status: { inFlightCount: 0, outstandingCount: 3 },
      others: spent,
      retry: "all",
      want: "goes on",
    },
  ];
  for (const row of rows) {
    const fx = fixture(row.s, row.status, {
      evictions: row.others,
      ...(row.retry === undefined ? {} : { pass: { retryValue: row.retry } }),
    });
    const { pass } = fx;
    const due = { atMs: 1, fingerprint: "f" };
    pass.state.due = due;
    if (row.ledger !== undefined) pass.deps.memory.ledger.set(ME, row.ledger);
    if (row.pendingStart === true) {
      pass.state.starts.set("vm", {
        id: "vm",
        state: "pending",
        kind: "live",
        issuedAtMs: 0,
      });
    }
    const step = waitForBudget(pass, row.s);
    apply({ ...pass } as MutablePass, step);
    const standing = pass.deps.memory.budgetWaiters.standing(ME);
    if (row.want === "goes on") {
      assert.deepEqual(step, {}, row.name);
      assert.equal(standing, undefined, row.name);
      assert.equal(pass.state.due, due, row.name);
      continue;
    }
    assert.deepEqual(step.end, { inMs: 10_000 }, row.name);
    const c = step.status?.conditions?.find((x) =>
      x.type === CONDITION_EVICTING
    );
    assert.equal(c?.status, "True", row.name);
    assert.equal(c?.reason, REASON_WAITING_FOR_BUDGET, row.name);
    assert.match(
      c?.message ?? "",
      /clusterMaxConcurrentMigrations 2/,
      row.name,
    );
    assert.equal(step.status?.outstandingCount, row.status.outstandingCount);
    assert.equal(standing, "waiting", row.name);
    assert.equal(pass.state.due, undefined, row.name);
    assert.equal(fx.writes.length, 0, `${row.name}: no write of its own`);
  }
});

Deno.test("budgetLeftFor: the free slots of the cluster budget, less those left to waiting drains", () => {
  const rows: Array<{
    name: string;
    clusterMax: number;
    status: EvictionStatus;
    evictions?: Eviction[];
    allEvictions?: Eviction[];
    ledger?: Record<string, number>;
    waiting?: string[];
    /** The drains whose hosts the informer vouches for (start without a look). */
    cached?: string[];
    want: number;
    wantLeft: number;
  }> = [
    {
      name: "nothing in flight anywhere",
      clusterMax: 4,
      status: { outstandingCount: 5 },
      want: 2,
      wantLeft: 2,
    },
    {
      name: "others' cached statuses take slots",
      clusterMax: 4,
      status: { outstandingCount: 5 },
      evictions: [other("a", 3)],
      want: 2,
      wantLeft: 1,
    },
    {
      name: "the ledger counts another drain's starts not yet cached",
      clusterMax: 4,
      status: { outstandingCount: 5 },
      ledger: { a: 3 },
      want: 2,
      wantLeft: 1,
    },
    {
      name: "ledger and cache of one drain: the larger, not the sum",
      clusterMax: 4,
      status: { outstandingCount: 5 },
      evictions: [other("a", 2)],
      ledger: { a: 3 },
      want: 2,
      wantLeft: 1,
    },
    {
      name: "a finished drain holds no slot",
      clusterMax: 4,
      status: { outstandingCount: 5 },
      evictions: [other("a", 3, { finishedAt: T })],
      want: 2,
      wantLeft: 2,
    },
    {
      name: "its own migrations (status) take slots",
      clusterMax: 4,
      status: { inFlightCount: 2, outstandingCount: 5 },
      evictions: [other("a", 1)],
      want: 2,
      wantLeft: 1,
    },
    {
      name: "its own ledger count when above its status",
      clusterMax: 4,
      status: { inFlightCount: 1, outstandingCount: 5 },
      ledger: { [ME]: 3 },
      want: 2,
      wantLeft: 1,
    },
    {
      name: "budget spent",
      clusterMax: 3,
      status: { outstandingCount: 5 },
      evictions: [other("a", 3)],
      want: 1,
      wantLeft: 0,
    },
    {
      name:
        "the last slot is left to a waiting drain with more work left that starts without a look",
      clusterMax: 4,
      status: { outstandingCount: 2 },
      evictions: [other("a", 3), waiter("w", 10)],
      waiting: ["w"],
      cached: ["w"],
      want: 1,
      wantLeft: 0,
    },
    {
      name:
        "a waiting drain with more work left that would look at Nova first does not get it",
      clusterMax: 4,
      status: { outstandingCount: 2 },
      evictions: [other("a", 3), waiter("w", 10)],
      waiting: ["w"],
      want: 1,
      wantLeft: 1,
    },
    {
      name: "a waiting drain with less work left does not get it",
      clusterMax: 4,
      status: { outstandingCount: 12 },
      evictions: [other("a", 3), waiter("w", 3)],
      waiting: ["w"],
      cached: ["w"],
      want: 1,
      wantLeft: 1,
    },
    {
      name: "a drain not in line is no waiter",
      clusterMax: 4,
      status: { outstandingCount: 2 },
      evictions: [other("a", 3), waiter("w", 10)],
      cached: ["w"],
      want: 1,
      wantLeft: 1,
    },
    {
      name:
        "another partition's drain saying WaitingForBudget, with more work left, is taken to look first",
      clusterMax: 4,
      status: { outstandingCount: 2 },
      allEvictions: [other("a", 3), {
        ...waiter("p", 10),
        status: {
          inFlightCount: 0,
          outstandingCount: 10,
          conditions: [evicting("True", REASON_WAITING_FOR_BUDGET)],
        },
      }],
      want: 1,
      wantLeft: 1,
    },
    {
      name:
        "a drain about to start its first migrations (work unknown) gets it",
      clusterMax: 4,
      status: { outstandingCount: 2 },
      evictions: [
        other("a", 3),
        eviction("fresh", "host-fresh", { hypervisorServiceId: "svc" }),
      ],
      want: 1,
      wantLeft: 0,
    },
  ];
  for (const row of rows) {
    const s = settings(row.clusterMax, 4);
    const all = row.allEvictions;
    const cached = row.cached ?? [];
    const { pass } = fixture(s, row.status, {
      evictions: row.evictions ?? [],
      informer: { cached: (k) => cached.includes(k) },
      ...(all === undefined ? {} : {
        deps: {
          flagSettings: s,
          allEvictions: {
            list: () => [...all, eviction(ME, "host-mine", row.status)],
          },
        },
      }),
    });
    for (const [k, n] of Object.entries(row.ledger ?? {})) {
      pass.deps.memory.ledger.set(k, n);
    }
    for (const k of row.waiting ?? []) pass.deps.memory.budgetWaiters.add(k);
    assert.equal(budgetLeftFor(pass, s, row.want), row.wantLeft, row.name);
  }
});

Deno.test("claimBeforeLooking: claims the free slots up to its limit in the ledger, returns the count before", () => {
  const rows: Array<{
    name: string;
    clusterMax?: number;
    limit: number;
    status: EvictionStatus;
    others?: Eviction[];
    want: number | undefined;
    wantLedger: number;
  }> = [
    {
      name: "no cluster budget: no claim",
      limit: 2,
      status: { outstandingCount: 5 },
      want: undefined,
      wantLedger: 0,
    },
    {
      name: "free budget: claims up to the limit",
      clusterMax: 4,
      limit: 2,
      status: { outstandingCount: 5 },
      want: 0,
      wantLedger: 2,
    },
    {
      name: "one slot free: claims one",
      clusterMax: 4,
      limit: 2,
      status: { outstandingCount: 5 },
      others: [other("a", 3)],
      want: 0,
      wantLedger: 1,
    },
    {
      name: "budget spent: claims nothing",
      clusterMax: 3,
      limit: 2,
      status: { outstandingCount: 5 },
      others: [other("a", 3)],
      want: 0,
      wantLedger: 0,
    },
    {
      name: "one in flight: claims the rest of its limit",
      clusterMax: 4,
      limit: 3,
      status: { inFlightCount: 1, outstandingCount: 5 },
      want: 1,
      wantLedger: 3,
    },
    {
      name: "at its limit: claims nothing more",
      clusterMax: 4,
      limit: 2,
      status: { inFlightCount: 2, outstandingCount: 5 },
      want: 2,
      wantLedger: 2,
    },
    {
      name: "above its limit (a lowered limit): keeps what it holds",
      clusterMax: 8,
      limit: 1,
      status: { inFlightCount: 3, outstandingCount: 5 },
      want: 3,
      wantLedger: 3,
    },
  ];
  for (const row of rows) {
    const s = settings(row.clusterMax, 4);
    const { pass } = fixture(s, row.status, { evictions: row.others ?? [] });
    assert.equal(claimBeforeLooking(pass, s, row.limit), row.want, row.name);
    assert.equal(pass.deps.memory.ledger.get(ME), row.wantLedger, row.name);
  }
});

Deno.test("claimBeforeLooking: the ledger holds mine + claimed <= limit, within the budget left (property)", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 8 }),
      fc.integer({ min: 1, max: 6 }),
      fc.integer({ min: 0, max: 6 }),
      fc.integer({ min: 0, max: 10 }),
      (clusterMax, limit, mineRaw, others) => {
        const mine = Math.min(mineRaw, limit);
        const s = settings(clusterMax, 8);
        const { pass } = fixture(s, {
          inFlightCount: mine,
          outstandingCount: 10,
        }, { evictions: others === 0 ? [] : [other("a", others)] });
        const before = claimBeforeLooking(pass, s, limit);
        const held = pass.deps.memory.ledger.get(ME);
        assert.equal(before, mine);
        assert.ok(held >= mine, "never below what it holds");
        assert.ok(held <= limit, "mine + claimed <= limit");
        assert.ok(
          held - mine <= Math.max(0, clusterMax - others - mine),
          "claimed <= the budget left",
        );
      },
    ),
  );
});

Deno.test("planAndReserve: a plan over the budget is re-made with the slots left, and the drain waits for budget", () => {
  const rows: Array<{
    name: string;
    clusterMax?: number;
    others?: Eviction[];
    starts: number;
    mine: number;
    wantStarts: number;
    wantReplannedWith?: number;
    wantWaiting: boolean;
  }> = [
    {
      name: "no cluster budget: the plan as it is",
      starts: 3,
      mine: 0,
      wantStarts: 3,
      wantWaiting: false,
    },
    {
      name: "within the budget: the plan as it is",
      clusterMax: 5,
      others: [other("a", 2)],
      starts: 3,
      mine: 0,
      wantStarts: 3,
      wantWaiting: false,
    },
    {
      name: "over the budget: re-made with the slot left",
      clusterMax: 3,
      others: [other("a", 2)],
      starts: 3,
      mine: 0,
      wantStarts: 1,
      wantReplannedWith: 1,
      wantWaiting: true,
    },
    {
      name: "budget spent: re-made with none",
      clusterMax: 3,
      others: [other("a", 3)],
      starts: 2,
      mine: 0,
      wantStarts: 0,
      wantReplannedWith: 0,
      wantWaiting: true,
    },
    {
      name: "its own in flight count against the budget",
      clusterMax: 3,
      others: [other("a", 1)],
      starts: 1,
      mine: 2,
      wantStarts: 0,
      wantReplannedWith: 0,
      wantWaiting: true,
    },
  ];
  for (const row of rows) {
    const s = settings(row.clusterMax, 4);
    const { pass } = fixture(s, { outstandingCount: 10 }, {
      evictions: row.others ?? [],
    });
    const seen: PlanInput[] = [];
    const planner = budgetPlanner(row.starts, row.mine, seen);
    const planned = { plan: planOf(row.starts, row.mine), input: input() };
    const got = planAndReserve(pass, planned, s, planner);
    assert.equal(got.plan.start.length, row.wantStarts, row.name);
    assert.equal(got.input, planned.input, `${row.name}: the input kept`);
    assert.deepEqual(
      seen.map((i) => i.clusterBudgetLeft),
      row.wantReplannedWith === undefined ? [] : [row.wantReplannedWith],
      row.name,
    );
    assert.equal(
      pass.deps.memory.ledger.get(ME),
      row.mine + row.wantStarts,
      `${row.name}: the ledger holds the plan's count`,
    );
    assert.equal(
      pass.deps.memory.budgetWaiters.standing(ME),
      row.wantWaiting ? "waiting" : undefined,
      row.name,
    );
  }
});

Deno.test("confirmAcrossProcesses: writes the intent, reads after the write, cuts the starts by the overshoot", async () => {
  const rows: Array<{
    name: string;
    clusterMax?: number;
    starts: number;
    mine: number;
    /** Other drains as read after the write. */
    after: Eviction[];
    caughtUp: boolean;
    wantStarts: number;
    wantReplannedWith?: number;
    wantWrites: number;
    wantRead: "none" | "cache" | "list";
  }> = [
    {
      name: "no cluster budget: no write, no read",
      starts: 2,
      mine: 0,
      after: [other("a", 9)],
      caughtUp: true,
      wantStarts: 2,
      wantWrites: 0,
      wantRead: "none",
    },
    {
      name: "no starts: no write, no read",
      clusterMax: 2,
      starts: 0,
      mine: 1,
      after: [other("a", 9)],
      caughtUp: true,
      wantStarts: 0,
      wantWrites: 0,
      wantRead: "none",
    },
    {
      name: "within the budget as read from the caught-up cache: kept",
      clusterMax: 4,
      starts: 2,
      mine: 0,
      after: [other("a", 2)],
      caughtUp: true,
      wantStarts: 2,
      wantWrites: 1,
      wantRead: "cache",
    },
    {
      name: "another process reserved meanwhile: cut by the overshoot",
      clusterMax: 3,
      starts: 2,
      mine: 0,
      after: [other("a", 2)],
      caughtUp: true,
      wantStarts: 1,
      wantReplannedWith: 1,
      wantWrites: 1,
      wantRead: "cache",
    },
    {
      name: "overshoot beyond the starts: none kept",
      clusterMax: 3,
      starts: 2,
      mine: 1,
      after: [other("a", 4)],
      caughtUp: true,
      wantStarts: 0,
      wantReplannedWith: 0,
      wantWrites: 1,
      wantRead: "cache",
    },
    {
      name: "the watch lags: read by a list, cut as well",
      clusterMax: 3,
      starts: 2,
      mine: 0,
      after: [other("a", 2)],
      caughtUp: false,
      wantStarts: 1,
      wantReplannedWith: 1,
      wantWrites: 1,
      wantRead: "list",
    },
  ];
  for (const row of rows) {
    const s = settings(row.clusterMax, 4);
    const reads: string[] = [];
    const fx = fixture(s, { outstandingCount: 10 }, {
      deps: {
        flagSettings: s,
        allEvictions: {
          list: () => {
            reads.push("cache");
            return row.after;
          },
          caughtUp: (rv) => {
            // the intent is written before the read, and the read waits for it
            assert.equal(fx.writes.length, 1, `${row.name}: written first`);
            assert.equal(rv, "2", `${row.name}: as of the intent's version`);
            return Promise.resolve(row.caughtUp);
          },
        },
      },
    });
    const pass = withClient(fx.pass, {
      list: (() => {
        reads.push("list");
        return Promise.resolve({ items: row.after });
      }) as unknown as KubeClient["list"],
    });
    const seen: PlanInput[] = [];
    const plan = planOf(row.starts, row.mine);
    pass.deps.memory.ledger.set(ME, plan.inFlightCount);
    const got = await confirmAcrossProcesses(
      pass,
      { plan, input: input() },
      s,
      budgetPlanner(row.starts, row.mine, seen),
    );
    assert.equal(got.start.length, row.wantStarts, row.name);
    assert.equal(fx.writes.length, row.wantWrites, row.name);
    if (row.wantWrites > 0) {
      assert.equal(fx.writes[0]?.inFlightCount, plan.inFlightCount, row.name);
    }
    assert.deepEqual(
      reads,
      row.wantRead === "none" ? [] : [row.wantRead],
      row.name,
    );
    assert.deepEqual(
      seen.map((i) => i.clusterBudgetLeft),
      row.wantReplannedWith === undefined ? [] : [row.wantReplannedWith],
      row.name,
    );
    assert.equal(
      pass.deps.memory.ledger.get(ME),
      got.inFlightCount,
      `${row.name}: the ledger holds what goes out`,
    );
    assert.equal(
      pass.deps.memory.budgetWaiters.standing(ME),
      row.wantReplannedWith === undefined ? undefined : "waiting",
      row.name,
    );
  }
});

Deno.test("confirmAcrossProcesses: a failed read gives back the claim, wakes a waiter and throws a TemporaryError naming the failure", async () => {
  const rows: Array<{
    name: string;
    caughtUp: () => Promise<boolean>;
    list: () => Promise<{ items: Eviction[] }>;
  }> = [
    {
      name: "the list fails",
      caughtUp: () => Promise.resolve(false),
      list: () => Promise.reject(new Error("apiserver unreachable")),
    },
    {
      name: "the watch's catch-up fails",
      caughtUp: () => Promise.reject(new Error("apiserver unreachable")),
      list: () => Promise.resolve({ items: [] }),
    },
  ];
  for (const row of rows) {
    const s = settings(4);
    const fx = fixture(s, { outstandingCount: 10 }, {
      evictions: [waiter("w", 5)],
      deps: {
        flagSettings: s,
        allEvictions: { list: () => [waiter("w", 5)], caughtUp: row.caughtUp },
      },
    });
    const pass = withClient(fx.pass, {
      list: row.list as unknown as KubeClient["list"],
    });
    pass.deps.memory.budgetWaiters.add("w");
    const plan = planOf(2, 1);
    pass.deps.memory.ledger.set(ME, plan.inFlightCount);
    const planner: Planner = () => assert.fail(`${row.name}: no re-plan`);
    await assert.rejects(
      confirmAcrossProcesses(pass, { plan, input: input() }, s, planner),
      (err: unknown) => {
        assert.ok(err instanceof TemporaryError, row.name);
        assert.match(
          err.message,
          /^confirming the cluster budget failed: apiserver unreachable/,
          row.name,
        );
        assert.equal(err.delayMs, 1_000, row.name);
        return true;
      },
      row.name,
    );
    assert.equal(fx.writes.length, 1, `${row.name}: the intent was written`);
    assert.equal(pass.deps.memory.ledger.get(ME), 1, `${row.name}: given back`);
    assert.deepEqual(fx.enqueued, ["w"], `${row.name}: the waiter woken`);
  }
});

Deno.test("writeIntent: writes the status with the starts once; a failed write gives the claim back", async () => {
  const rows: Array<{
    name: string;
    status: EvictionStatus;
    fails: boolean;
    want: "written" | "unchanged" | "throws";
  }> = [
    {
      name: "starts to record: written",
      status: { outstandingCount: 4, inFlightCount: 1 },
      fails: false,
      want: "written",
    },
    {
      name: "the status already says so: no write",
      status: { outstandingCount: 4, inFlightCount: 3 },
      fails: false,
      want: "unchanged",
    },
    {
      name: "the write fails: nothing started, the claim given back",
      status: { outstandingCount: 4, inFlightCount: 1 },
      fails: true,
      want: "throws",
    },
  ];
  for (const row of rows) {
    const s = settings(4);
    const fx = fixture(s, row.status, {
      evictions: [waiter("w", 5)],
    });
    const failing = {
      ...fx.pass,
      ctx: {
        ...fx.pass.ctx,
        updateStatus: () => Promise.reject(new Error("409 storm")),
      },
    };
    const pass: Pass = row.fails ? failing : fx.pass;
    pass.deps.memory.budgetWaiters.add("w");
    const plan = planOf(2, 1);
    pass.deps.memory.ledger.set(ME, plan.inFlightCount);
    const next = { outstandingCount: 4, inFlightCount: 3 };
    if (row.want === "throws") {
      await assert.rejects(writeIntent(pass, plan, next), (err: unknown) => {
        assert.ok(err instanceof TemporaryError, row.name);
        assert.match(
          err.message,
          /^recording the starts before issuing them failed: 409 storm/,
          row.name,
        );
        assert.equal(err.delayMs, 1_000, row.name);
        return true;
      });
      assert.equal(pass.deps.memory.ledger.get(ME), 1, row.name);
      assert.deepEqual(fx.enqueued, ["w"], row.name);
      assert.equal(pass.ev.status, row.status, `${row.name}: ev unchanged`);
      continue;
    }
    await writeIntent(pass, plan, next);
    assert.deepEqual(
      fx.writes,
      row.want === "written" ? [next] : [],
      row.name,
    );
    assert.deepEqual(pass.ev.status, next, row.name);
    assert.equal(
      pass.ev.metadata?.resourceVersion,
      row.want === "written" ? "2" : "1",
      row.name,
    );
    assert.equal(pass.deps.memory.ledger.get(ME), 3, `${row.name}: kept`);
    assert.deepEqual(fx.enqueued, [], row.name);
  }
});

Deno.test("wakeForBudgetLeft: wakes as many waiting drains as free slots, most work left first", () => {
  const policy = (clusterMax: number): EvictionPolicy =>
    ({
      apiVersion: "kvm.cloud.sap/v1",
      kind: "EvictionPolicy",
      metadata: { name: "default", resourceVersion: "7" },
      spec: {
        maxConcurrentMigrations: 2,
        abortStuckMigrations: false,
        clusterMaxConcurrentMigrations: clusterMax,
      },
    }) as EvictionPolicy;
  const line = [waiter("a", 1), waiter("b", 5), waiter("c", 3)];
  const rows: Array<{
    name: string;
    flagsClusterMax?: number;
    policy?: EvictionPolicy;
    others?: Eviction[];
    waiters: Eviction[];
    mine?: number;
    want: string[];
  }> = [
    {
      name: "nobody waits: none woken",
      flagsClusterMax: 4,
      waiters: [],
      want: [],
    },
    {
      name: "no cluster budget: none woken",
      waiters: line,
      want: [],
    },
    {
      name: "budget spent: none woken",
      flagsClusterMax: 3,
      others: [other("x", 3)],
      waiters: line,
      want: [],
    },
    {
      name: "two slots free: the two with most work left, most first",
      flagsClusterMax: 4,
      others: [other("x", 2)],
      waiters: line,
      want: ["b", "c"],
    },
    {
      name: "every slot free: all, by work left",
      flagsClusterMax: 8,
      waiters: line,
      want: ["b", "c", "a"],
    },
    {
      name: "this drain's own ledger count takes slots",
      flagsClusterMax: 3,
      mine: 2,
      waiters: line,
      want: ["b"],
    },
    {
      name: "a drain that never looked ranks first",
      flagsClusterMax: 1,
      waiters: [...line, waiter("d")],
      want: ["d"],
    },
    {
      name: "equal work: the longest-waiting first",
      flagsClusterMax: 1,
      waiters: [waiter("p", 4), waiter("q", 4)],
      want: ["p"],
    },
    {
      name: "the policy's budget, not the flags'",
      policy: policy(1),
      waiters: line,
      want: ["b"],
    },
  ];
  for (const row of rows) {
    const s = settings(row.flagsClusterMax);
    const fx = fixture(s, { outstandingCount: 10 }, {
      evictions: [...(row.others ?? []), ...row.waiters],
      ...(row.policy === undefined ? {} : { policy: row.policy }),
    });
    for (const w of row.waiters) {
      fx.pass.deps.memory.budgetWaiters.add(w.metadata?.name ?? "");
    }
    if (row.mine !== undefined) fx.pass.deps.memory.ledger.set(ME, row.mine);
    wakeForBudgetLeft(fx.pass);
    assert.deepEqual(fx.enqueued, row.want, row.name);
    for (const k of row.want) {
      assert.equal(
        fx.pass.deps.memory.budgetWaiters.standing(k),
        "woken",
        `${row.name}: ${k} keeps its place, woken`,
      );
    }
  }
});
