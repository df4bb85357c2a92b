import assert from "node:assert/strict";
import type {
  Eviction,
  EvictionStatus,
  EvictionStatusInFlightItem,
  Hypervisor,
} from "../../models/mod.ts";
import { CONDITION_TRAITS_UPDATED } from "../conditions.ts";
import { eviction, passFixture } from "../../tests/harness/pass_fixture.ts";
import {
  input,
  mig,
  novaTime,
  OPTIONS,
} from "../../tests/harness/plan_fixtures.ts";
import type { ObservedMigration } from "../../openstack/informer/snapshot.ts";
import {
  byProgressRead,
  changesSince,
  fingerprintOf,
  glance,
  learn,
  nextLook,
  requeue,
  skipEarly,
} from "./phase_pace.ts";
import type { NovaClient } from "../../openstack/mod.ts";
import type { PaceView } from "../../openstack/informer/pacing.ts";
import type { Pass } from "./pass.ts";
import { planPass } from "./plan.ts";
import type { Plan } from "./plan_types.ts";

const ME = "mine";
const HOST = "node042";
const NOW = Date.parse("2026-01-01T01:00:00Z");

/** A Hypervisor of HOST with `traits`, its traits fresh unless `stale`. */
function hypervisor(traits: string[], stale = false): Hypervisor {
  return {
    metadata: { name: HOST },
    status: {
      traits,
      numInstances: 3,
      conditions: [{
        type: CONDITION_TRAITS_UPDATED,
        status: stale ? "False" : "True",
        reason: stale ? "Failed" : "Updated",
        message: "",
        lastTransitionTime: "2026-01-01T00:00:00Z",
      }],
    },
  };
}

/** A pass of ME on HOST at NOW. */
function fixture(
  status: EvictionStatus = {},
  more: { ev?: Eviction; hv?: Hypervisor; pass?: Partial<Pass> } = {},
) {
  return passFixture(more.ev ?? eviction(ME, HOST, status), {
    nowMs: NOW,
    hypervisors: [more.hv ?? hypervisor(["A"])],
    ...(more.pass === undefined ? {} : { pass: more.pass }),
  });
}

/** An in-flight entry of `id`, started at `atMs`. */
function inFlight(id: string, atMs = NOW): EvictionStatusInFlightItem {
  return { id, kind: "live", startedAt: new Date(atMs).toISOString() };
}

const BASE = planPass(input());

/** A plan with `fields` over an empty one, its next status `next`. */
function planWith(fields: Partial<Plan>, next: EvictionStatus = {}): Plan {
  return {
    ...BASE,
    finished: false,
    settleAtMs: undefined,
    ...fields,
    next: { ...BASE.next, ...next },
    summary: { ...BASE.summary, ...fields.summary },
  };
}

Deno.test("fingerprintOf: what the pass depends on besides Nova changes it, nothing else does", () => {
  const base = () => fixture({ inFlightCount: 1 });
  const fp = fingerprintOf(base().pass, "5");
  const rows: Array<{ name: string; fp: () => string; changed: boolean }> = [
    {
      name: "the same pass again",
      fp: () => fingerprintOf(base().pass, "5"),
      changed: false,
    },
    {
      name: "a new generation of the Eviction",
      fp: () => {
        const ev = eviction(ME, HOST, { inFlightCount: 1 });
        ev.metadata = { ...ev.metadata, generation: 2 };
        return fingerprintOf(fixture({}, { ev }).pass, "5");
      },
      changed: true,
    },
    {
      name: "the Hypervisor's traits",
      fp: () =>
        fingerprintOf(
          fixture({ inFlightCount: 1 }, { hv: hypervisor(["A", "B"]) }).pass,
          "5",
        ),
      changed: true,
    },
    {
      name: "the traits turn stale (starts held)",
      fp: () =>
        fingerprintOf(
          fixture({ inFlightCount: 1 }, { hv: hypervisor(["A"], true) }).pass,
          "5",
        ),
      changed: true,
    },
    {
      name: "the Hypervisor is gone",
      fp: () =>
        fingerprintOf(
          fixture({ inFlightCount: 1 }, { pass: { hypervisor: undefined } })
            .pass,
          "5",
        ),
      changed: true,
    },
    {
      name: "a new policy version",
      fp: () => fingerprintOf(base().pass, "6"),
      changed: true,
    },
    {
      name: "the policy deleted",
      fp: () => fingerprintOf(base().pass, undefined),
      changed: true,
    },
    {
      name: "the drain finishes",
      fp: () =>
        fingerprintOf(
          fixture({ inFlightCount: 1, finishedAt: "2026-01-01T00:59:00Z" })
            .pass,
          "5",
        ),
      changed: true,
    },
    {
      name: "the count in flight (Nova's side, looked at)",
      fp: () => fingerprintOf(fixture({ inFlightCount: 3 }).pass, "5"),
      changed: false,
    },
    {
      name: "the Hypervisor's instance count (its status sync)",
      fp: () => {
        const hv = hypervisor(["A"]);
        hv.status = { ...hv.status, numInstances: 9 };
        return fingerprintOf(fixture({ inFlightCount: 1 }, { hv }).pass, "5");
      },
      changed: false,
    },
    {
      name: "the clock",
      fp: () => {
        const fx = base();
        fx.clock.set(NOW + 60_000);
        return fingerprintOf(fx.pass, "5");
      },
      changed: false,
    },
  ];
  for (const row of rows) {
    assert.equal(row.fp() !== fp, row.changed, row.name);
  }
});

Deno.test("skipEarly: returns at once only when woken before due with nothing changed", () => {
  const FP = "fp";
  const rows: Array<{
    name: string;
    due?: { atMs: number; fingerprint: string };
    fingerprint?: string;
    woken?: boolean;
    retry?: string;
    informerWoken?: boolean;
    finished?: boolean;
    rate?: number;
    want: number | undefined;
  }> = [
    {
      name: "woken before due, nothing changed: the time left",
      due: { atMs: NOW + 5_000, fingerprint: FP },
      want: 5_000,
    },
    {
      name: "a scaled clock: the time left in real ms",
      due: { atMs: NOW + 5_000, fingerprint: FP },
      rate: 4,
      want: 1_250,
    },
    {
      name: "less than a ms left: at least 1",
      due: { atMs: NOW + 0.2, fingerprint: FP },
      want: 1,
    },
    { name: "nothing due yet (first pass): a full pass", want: undefined },
    {
      name: "due now: a full pass",
      due: { atMs: NOW, fingerprint: FP },
      want: undefined,
    },
    {
      name: "something it depends on changed: a full pass",
      due: { atMs: NOW + 5_000, fingerprint: FP },
      fingerprint: "other",
      want: undefined,
    },
    {
      name: "a start answer came in: a full pass",
      due: { atMs: NOW + 5_000, fingerprint: FP },
      woken: true,
      want: undefined,
    },
    {
      name: "a retry request: a full pass",
      due: { atMs: NOW + 5_000, fingerprint: FP },
      retry: "all",
      want: undefined,
    },
    {
      name: "the informer saw a change on the host: a full pass",
      due: { atMs: NOW + 5_000, fingerprint: FP },
      informerWoken: true,
      want: undefined,
    },
    {
      name: "finished: the finished watch decides, not this",
      due: { atMs: NOW + 5_000, fingerprint: FP },
      finished: true,
      want: undefined,
    },
  ];
  for (const row of rows) {
    const { pass } = passFixture(
      eviction(
        ME,
        HOST,
        row.finished === true ? { finishedAt: "2026-01-01T00:59:00Z" } : {},
      ),
      {
        nowMs: NOW,
        deps: { clock: { now: () => NOW, rate: row.rate ?? 1 } },
        ...(row.retry === undefined ? {} : { pass: { retryValue: row.retry } }),
        ...(row.informerWoken === true
          ? { informer: { woken: () => true } }
          : {}),
      },
    );
    pass.state.due = row.due;
    pass.state.woken = row.woken ?? false;
    let asked = 0;
    const wait = skipEarly(pass, row.fingerprint ?? FP, () => {
      asked++;
      return true;
    });
    const got = wait && requeue(pass, wait);
    assert.deepEqual(
      got,
      row.want === undefined ? undefined : { requeueAfterMs: row.want },
      row.name,
    );
    assert.equal(asked, 0, `${row.name}: no budget asked outside the line`);
  }
});

Deno.test("skipEarly: a drain woken for budget runs only with a slot free, else stays in line in its place", () => {
  const rows: Array<{
    name: string;
    standing: "waiting" | "woken";
    slotFree: boolean;
    want: number | undefined;
    wantStanding: "waiting" | "woken";
    wantAsked: number;
  }> = [
    {
      name: "woken, a slot free: a full pass",
      standing: "woken",
      slotFree: true,
      want: undefined,
      wantStanding: "woken",
      wantAsked: 1,
    },
    {
      name: "woken, no slot free: back to waiting, returns at once",
      standing: "woken",
      slotFree: false,
      want: 5_000,
      wantStanding: "waiting",
      wantAsked: 1,
    },
    {
      name: "waiting (not woken): returns at once without asking",
      standing: "waiting",
      slotFree: true,
      want: 5_000,
      wantStanding: "waiting",
      wantAsked: 0,
    },
  ];
  for (const row of rows) {
    const { pass } = fixture();
    const line = pass.deps.memory.budgetWaiters;
    line.add(ME);
    line.add("later");
    if (row.standing === "woken") line.wake(() => {}, 1);
    pass.state.due = { atMs: NOW + 5_000, fingerprint: "fp" };
    let asked = 0;
    const wait = skipEarly(pass, "fp", () => {
      asked++;
      return row.slotFree;
    });
    const got = wait && requeue(pass, wait);
    assert.deepEqual(
      got,
      row.want === undefined ? undefined : { requeueAfterMs: row.want },
      row.name,
    );
    assert.equal(line.standing(ME), row.wantStanding, row.name);
    assert.equal(asked, row.wantAsked, row.name);
    // in its place: the next slot still goes to it before the later one
    const woken: string[] = [];
    line.wake((k) => woken.push(k), 1);
    assert.deepEqual(
      woken,
      row.wantStanding === "waiting" ? [ME] : ["later"],
      `${row.name}: its place in line`,
    );
  }
});

Deno.test("learn: returns per VM leaving the host its record in progress, else its latest", () => {
  const other = (m: ObservedMigration) => ({
    ...m,
    sourceCompute: "elsewhere",
  });
  const rows: Array<{
    name: string;
    migrations: ObservedMigration[];
    want: Array<[string, number | string | undefined]>;
  }> = [
    { name: "no records", migrations: [], want: [] },
    {
      name: "one record per VM",
      migrations: [mig(1, "a", "running"), mig(2, "b", "completed")],
      want: [["a", 1], ["b", 2]],
    },
    {
      name: "an earlier attempt ended, the newer one runs: the newer",
      migrations: [
        mig(1, "a", "error", { createdAt: novaTime(-60) }),
        mig(2, "a", "running", { createdAt: novaTime(-10) }),
      ],
      want: [["a", 2]],
    },
    {
      name: "two ended attempts: the latest",
      migrations: [
        mig(1, "a", "error", { createdAt: novaTime(-60) }),
        mig(2, "a", "completed", { createdAt: novaTime(-10) }),
      ],
      want: [["a", 2]],
    },
    {
      name: "an older record still in progress outranks a newer ended one",
      migrations: [
        mig(1, "a", "running", { createdAt: novaTime(-60) }),
        mig(2, "a", "error", { createdAt: novaTime(-10) }),
      ],
      want: [["a", 1]],
    },
    {
      name: "a VM arriving from another host is not ours",
      migrations: [other(mig(1, "c", "running")), mig(2, "a", "running")],
      want: [["a", 2]],
    },
  ];
  for (const row of rows) {
    const { pass } = passFixture(eviction(ME, "node042"), { nowMs: NOW });
    const seen = {
      servers: [],
      migrations: row.migrations,
      departed: [],
      listedAtMs: NOW,
    };
    const got = learn(pass, planWith({}), seen);
    assert.deepEqual(
      [...got].map(([id, r]) => [id, r.id]).sort(),
      row.want,
      row.name,
    );
  }
});

Deno.test("requeue: a finished drain looks at the finished pace; a settle time is waited for; else pacing", () => {
  const rows: Array<{
    name: string;
    plan: Plan;
    watching?: boolean;
    rate?: number;
    samples?: boolean;
    progressDueAtMs?: number;
    issuedAtMs?: number;
    want: number;
    wantDue: boolean;
    wantGlance?: boolean;
  }> = [
    {
      name: "finished a moment ago: the poll interval",
      plan: planWith({ finished: true }, {
        finishedAt: new Date(NOW - 200).toISOString(),
      }),
      want: 1_000,
      wantDue: false,
    },
    {
      name: "finished 5s ago: looks as long after as it has been finished",
      plan: planWith({ finished: true }, {
        finishedAt: new Date(NOW - 5_000).toISOString(),
      }),
      want: 5_000,
      wantDue: false,
    },
    {
      name: "finished long ago: the finished check",
      plan: planWith({ finished: true }, {
        finishedAt: new Date(NOW - 3_600_000).toISOString(),
      }),
      want: 60_000,
      wantDue: false,
    },
    {
      name: "finished, the informer watches the host: the finished check",
      plan: planWith({ finished: true }, {
        finishedAt: new Date(NOW - 200).toISOString(),
      }),
      watching: true,
      want: 60_000,
      wantDue: false,
    },
    {
      name: "settling, polled: within the poll interval",
      plan: planWith({ settleAtMs: NOW + 2_500 }),
      want: 1_000,
      wantDue: true,
    },
    {
      name: "settling, the settle time sooner than a poll",
      plan: planWith({ settleAtMs: NOW + 400 }),
      want: 400,
      wantDue: true,
    },
    {
      name: "settling, watched by the informer: at the settle time",
      plan: planWith({ settleAtMs: NOW + 2_500 }),
      watching: true,
      want: 2_500,
      wantDue: true,
    },
    {
      name: "settling on a scaled clock: real ms",
      plan: planWith({ settleAtMs: NOW + 2_000 }),
      watching: true,
      rate: 4,
      want: 500,
      wantDue: true,
    },
    {
      name: "nothing can move: the slow poll",
      plan: planWith({ inFlightCount: 0 }),
      want: 10_000,
      wantDue: true,
    },
    {
      name: "busy VMs: the poll interval",
      plan: planWith({
        inFlightCount: 0,
        summary: { ...BASE.summary, busy: 2 },
      }),
      want: 1_000,
      wantDue: true,
    },
    {
      name: "busy VMs but starts held with nothing in flight: the slow poll",
      plan: planWith({
        inFlightCount: 0,
        summary: { ...BASE.summary, busy: 2, held: "budget" },
      }),
      want: 10_000,
      wantDue: true,
    },
    {
      name: "only a retry to come: at the retry",
      plan: planWith({ inFlightCount: 0, nextRetryAtMs: NOW + 20_000 }),
      want: 20_000,
      wantDue: true,
    },
    {
      name: "a migration the model cannot time: the poll interval",
      plan: planWith({ inFlightCount: 1 }, { inFlight: [inFlight("a")] }),
      want: 1_000,
      wantDue: true,
      wantGlance: false,
    },
    {
      name:
        "our start timed by the model, its first look due: a glance planned",
      plan: planWith({ inFlightCount: 1 }, { inFlight: [inFlight("a")] }),
      samples: true,
      issuedAtMs: NOW,
      want: 1_000,
      wantDue: true,
      wantGlance: true,
    },
    {
      name:
        "our start's first look due, a progress read due by then: a full look, no glance",
      plan: planWith({ inFlightCount: 1 }, { inFlight: [inFlight("a")] }),
      samples: true,
      issuedAtMs: NOW,
      progressDueAtMs: NOW + 400,
      want: 1_000,
      wantDue: true,
      wantGlance: false,
    },
    {
      name: "a progress read due, nothing in flight: the slow poll",
      plan: planWith({ inFlightCount: 0 }),
      progressDueAtMs: NOW + 3_000,
      want: 10_000,
      wantDue: true,
    },
    {
      name: "our start, budget holds further starts: no glance",
      plan: planWith({
        inFlightCount: 1,
        summary: { ...BASE.summary, held: "budget" },
      }, { inFlight: [inFlight("a")] }),
      samples: true,
      issuedAtMs: NOW,
      want: 1_000,
      wantDue: true,
      wantGlance: false,
    },
  ];
  for (const row of rows) {
    const { pass } = passFixture(eviction(ME, HOST), {
      nowMs: NOW,
      deps: { clock: { now: () => NOW, rate: row.rate ?? 1 } },
      ...(row.rate === undefined ? {} : { pass: { rate: row.rate } }),
      informer: {
        ...(row.watching === true ? { watching: () => true } : {}),
        progressDueAtMs: () => row.progressDueAtMs,
      },
    });
    if (row.samples === true) {
      pass.state.pace.sample("live", 1024, 60_000);
      pass.state.pace.sample("live", 2048, 120_000);
      pass.state.ram.set("a", 1024);
    }
    if (row.issuedAtMs !== undefined) {
      pass.state.starts.set("a", {
        id: "a",
        state: "accepted",
        kind: "live",
        issuedAtMs: row.issuedAtMs,
      });
    }
    pass.state.due = { atMs: 1, fingerprint: "old" };
    const got = requeue(pass, nextLook(pass, row.plan, "fp", new Map()));
    assert.deepEqual(got, { requeueAfterMs: row.want }, row.name);
    assert.deepEqual(
      pass.state.due,
      row.wantDue
        ? { atMs: NOW + row.want * (row.rate ?? 1), fingerprint: "fp" }
        : undefined,
      row.name,
    );
    if (!row.wantDue) {
      assert.equal(pass.state.lastFinishedCheckMs, NOW, row.name);
    }
    if (row.wantGlance !== undefined) {
      assert.equal(
        pass.state.pace.takeGlance() !== undefined,
        row.wantGlance,
        `${row.name}: glance`,
      );
    }
  }
});

Deno.test("byProgressRead: the next look by the next progress read of a copy with a decision pending, never sooner than a poll interval", () => {
  const rows: Array<{
    name: string;
    dueAtMs: number | undefined;
    inMs: number;
    inFlight: number;
    want: { inMs: number; due: boolean };
  }> = [
    {
      name: "no read pending",
      dueAtMs: undefined,
      inMs: 40_000,
      inFlight: 1,
      want: { inMs: 40_000, due: false },
    },
    {
      name: "a read due before the look",
      dueAtMs: NOW + 25_000,
      inMs: 40_000,
      inFlight: 1,
      want: { inMs: 25_000, due: true },
    },
    {
      name: "a read due after the look",
      dueAtMs: NOW + 50_000,
      inMs: 40_000,
      inFlight: 1,
      want: { inMs: 40_000, due: false },
    },
    {
      name: "a read overdue: a poll interval",
      dueAtMs: NOW - 5_000,
      inMs: 40_000,
      inFlight: 1,
      want: { inMs: 1_000, due: true },
    },
    {
      name: "nothing in flight",
      dueAtMs: NOW + 5_000,
      inMs: 40_000,
      inFlight: 0,
      want: { inMs: 40_000, due: false },
    },
  ];
  for (const row of rows) {
    const { pass } = passFixture(eviction(ME, HOST), {
      nowMs: NOW,
      informer: { progressDueAtMs: () => row.dueAtMs },
    });
    assert.deepEqual(
      byProgressRead(pass, NOW, row.inMs, row.inFlight),
      row.want,
      row.name,
    );
  }
});

Deno.test("changesSince: the drain's start less the clock skew, on Nova's clock", () => {
  const rows: Array<{
    name: string;
    startedAt?: string;
    offsetMs?: number;
    want: string;
  }> = [
    {
      name: "started: its start less the skew",
      startedAt: "2026-01-01T00:30:00Z",
      want: "2026-01-01T00:29:55.000Z",
    },
    {
      name: "Nova's clock 2s ahead",
      startedAt: "2026-01-01T00:30:00Z",
      offsetMs: 2_000,
      want: "2026-01-01T00:29:57.000Z",
    },
    {
      name: "Nova's clock 2s behind",
      startedAt: "2026-01-01T00:30:00Z",
      offsetMs: -2_000,
      want: "2026-01-01T00:29:53.000Z",
    },
    {
      name: "not started: now less the skew",
      want: "2026-01-01T00:59:55.000Z",
    },
    {
      name: "an unreadable start: now less the skew",
      startedAt: "yesterday",
      want: "2026-01-01T00:59:55.000Z",
    },
  ];
  for (const row of rows) {
    const { pass } = passFixture(
      eviction(
        ME,
        HOST,
        row.startedAt === undefined ? {} : { startedAt: row.startedAt },
      ),
      { nowMs: NOW },
    );
    const options = {
      ...OPTIONS,
      ...(row.offsetMs === undefined
        ? {}
        : { novaClockOffsetMs: row.offsetMs }),
    };
    assert.equal(changesSince(pass, options).toISOString(), row.want, row.name);
  }
});

Deno.test("glance: only a pass due for first looks alone lists the migrations; a quiet list times the next look without a write", async () => {
  const FP = "fp";
  const running = [mig(1, "a", "running")];
  const rows: Array<{
    name: string;
    planned?: boolean;
    fingerprint?: string;
    woken?: boolean;
    retry?: string;
    finished?: boolean;
    cached?: boolean;
    budgetWoken?: boolean;
    list: () => Promise<ObservedMigration[]>;
    wantCalls: number;
    want: "full pass" | "quiet";
    /** Nova's limit the drain knows after the glance. */
    wantNovaLimit?: number;
  }> = [
    {
      name: "quiet: our start runs",
      list: () => Promise.resolve(running),
      wantCalls: 1,
      want: "quiet",
    },
    {
      name:
        "quiet, Nova queues a second while ours copies: its limit is learned",
      list: () => Promise.resolve([...running, mig(2, "b", "queued")]),
      wantCalls: 1,
      want: "quiet",
      wantNovaLimit: 1,
    },
    {
      name: "no glance planned",
      planned: false,
      list: () => Promise.resolve(running),
      wantCalls: 0,
      want: "full pass",
    },
    {
      name: "something it depends on changed",
      fingerprint: "other",
      list: () => Promise.resolve(running),
      wantCalls: 0,
      want: "full pass",
    },
    {
      name: "a start answer came in",
      woken: true,
      list: () => Promise.resolve(running),
      wantCalls: 0,
      want: "full pass",
    },
    {
      name: "a retry request",
      retry: "all",
      list: () => Promise.resolve(running),
      wantCalls: 0,
      want: "full pass",
    },
    {
      name: "finished",
      finished: true,
      list: () => Promise.resolve(running),
      wantCalls: 0,
      want: "full pass",
    },
    {
      name: "the informer holds the records",
      cached: true,
      list: () => Promise.resolve(running),
      wantCalls: 0,
      want: "full pass",
    },
    {
      name: "woken for budget: a full pass may start",
      budgetWoken: true,
      list: () => Promise.resolve(running),
      wantCalls: 0,
      want: "full pass",
    },
    {
      name: "the list fails",
      list: () => Promise.reject(new Error("nova down")),
      wantCalls: 1,
      want: "full pass",
    },
    {
      name: "our start failed",
      list: () => Promise.resolve([mig(1, "a", "error")]),
      wantCalls: 1,
      want: "full pass",
    },
    {
      name: "our start not listed yet",
      list: () => Promise.resolve([]),
      wantCalls: 1,
      want: "full pass",
    },
    {
      name: "our start completed (a slot to refill)",
      list: () => Promise.resolve([mig(1, "a", "completed")]),
      wantCalls: 1,
      want: "full pass",
    },
  ];
  for (const row of rows) {
    let calls = 0;
    const issuedAtMs = NOW - 1_000;
    const fx = passFixture(
      eviction(ME, HOST, {
        startedAt: "2026-01-01T00:30:00Z",
        inFlight: [inFlight("a", issuedAtMs)],
        inFlightCount: 1,
        ...(row.finished === true
          ? { finishedAt: "2026-01-01T00:59:00Z" }
          : {}),
      }),
      {
        nowMs: NOW,
        nova: {
          listMigrations: (filter) => {
            calls++;
            assert.equal(filter?.host, HOST, row.name);
            assert.equal(
              new Date(filter?.changesSince ?? 0).toISOString(),
              "2026-01-01T00:29:55.000Z",
              row.name,
            );
            // the glance reads only what a record observed says
            return row.list() as unknown as ReturnType<
              NovaClient["listMigrations"]
            >;
          },
        },
        ...(row.retry === undefined ? {} : { pass: { retryValue: row.retry } }),
        ...(row.cached === true ? { informer: { cached: () => true } } : {}),
      },
    );
    const { pass } = fx;
    const view: PaceView = {
      nowMs: issuedAtMs,
      inFlight: [inFlight("a", issuedAtMs)],
      records: new Map(),
      ramOf: () => 1024,
      issuedAt: (id) => id === "a" ? issuedAtMs : undefined,
      pending: () => false,
      pollMs: 1_000,
      limit: 2,
    };
    if (row.planned !== false) pass.state.pace.planGlance(view);
    pass.state.due = { atMs: NOW, fingerprint: FP };
    pass.state.woken = row.woken ?? false;
    if (row.budgetWoken === true) {
      pass.deps.memory.budgetWaiters.add(ME);
      pass.deps.memory.budgetWaiters.wake(() => {});
    }
    const wait = await glance(pass, row.fingerprint ?? FP, OPTIONS);
    const got = wait && requeue(pass, wait);
    assert.equal(calls, row.wantCalls, `${row.name}: list calls`);
    assert.equal(fx.writes.length, 0, `${row.name}: no write`);
    assert.equal(
      fx.lister.novaLimit(HOST),
      row.wantNovaLimit,
      `${row.name}: Nova's limit`,
    );
    assert.equal(
      pass.state.pace.takeGlance(),
      undefined,
      `${row.name}: the planned glance is taken once`,
    );
    if (row.want === "full pass") {
      assert.equal(got, undefined, row.name);
      assert.deepEqual(
        pass.state.due,
        { atMs: NOW, fingerprint: FP },
        `${row.name}: due untouched`,
      );
      continue;
    }
    assert.deepEqual(got, { requeueAfterMs: 1_000 }, row.name);
    assert.deepEqual(
      pass.state.due,
      { atMs: NOW + 1_000, fingerprint: FP },
      `${row.name}: the next look timed`,
    );
  }
});
