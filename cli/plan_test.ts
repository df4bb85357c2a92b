import { strict as assert } from "node:assert";
import fc from "fast-check";
import type { Server } from "../openstack/mod.ts";
import { type DrainLesson, learnedCost } from "../capacity/history.ts";
import { limitUnderNova, runPlan } from "./plan_command.ts";
import { planCost } from "./plan_cost.ts";
import { formatSeconds } from "./duration.ts";
import {
  classOf,
  type HostPlan,
  type PlanCost,
  planHost,
  renderPlan,
  shareBudget,
} from "./plan.ts";

function server(
  id: string,
  ramMb: number,
  status = "ACTIVE",
  taskState: string | null = null,
): Server {
  return {
    id,
    name: `vm-${id}`,
    status,
    host: "n1",
    hypervisorHostname: "n1",
    taskState,
    vmState: null,
    powerState: null,
    flavor: { ramMb, vcpus: 1 },
  };
}

const LIMIT = {
  value: 2,
  source: "policy",
  text: "2 (EvictionPolicy default)",
};
const COST: PlanCost = {
  mbPerSecond: 1000,
  overheadSeconds: 0,
  fixedSeconds: 0,
  source: "test",
  spread: [],
};
const FITS = { status: "True", message: "all fit" };

Deno.test("classOf: table", () => {
  const cases: [string, string | null, string][] = [
    ["ACTIVE", null, "live"],
    ["PAUSED", null, "live"],
    ["SHUTOFF", null, "cold"],
    ["SUSPENDED", null, "needs a person"],
    ["RESCUE", null, "needs a person"],
    ["SHELVED", null, "needs a person"],
    ["ACTIVE", "deleting", "being deleted"],
    ["MIGRATING", "migrating", "in flight"],
    ["RESIZE", "resize_prep", "in flight"],
    ["ERROR", null, "waits"],
    ["BUILD", "spawning", "waits"],
  ];
  for (const [status, task, want] of cases) {
    assert.equal(classOf({ status, taskState: task }).class, want, status);
  }
});

Deno.test("planHost: largest RAM first, others after without an order", () => {
  const p = planHost({
    host: "n1",
    servers: [
      server("a", 2048),
      server("b", 8192, "SHUTOFF"),
      server("c", 4096),
      server("d", 16384, "SUSPENDED"),
    ],
    limit: LIMIT,
    capacity: FITS,
    cost: COST,
  });
  assert.deepEqual(p.vms.map((v) => [v.id, v.order, v.class]), [
    ["b", 1, "cold"],
    ["c", 2, "live"],
    ["a", 3, "live"],
    ["d", null, "needs a person"],
  ]);
  // 8.192 | 4.096 + 2.048 on two slots; the suspended VM does not count.
  assert.equal(p.makespan.predictedSeconds, 9);
  assert.equal(p.makespan.lowerBoundSeconds, 9);
});

Deno.test("property: the order is 1..n over movable VMs, RAM never increasing", () => {
  const statuses = ["ACTIVE", "SHUTOFF", "PAUSED", "SUSPENDED", "ERROR"];
  fc.assert(fc.property(
    fc.array(
      fc.record({
        ram: fc.integer({ min: 1, max: 1 << 20 }),
        status: fc.constantFrom(...statuses),
      }),
      { maxLength: 30 },
    ),
    (vms) => {
      const p = planHost({
        host: "n1",
        servers: vms.map((v, i) => server(`s${i}`, v.ram, v.status)),
        limit: LIMIT,
        capacity: FITS,
        cost: COST,
      });
      const ordered = p.vms.filter((v) => v.order !== null);
      assert.deepEqual(
        ordered.map((v) => v.order),
        ordered.map((_, i) => i + 1),
      );
      for (let i = 1; i < ordered.length; i++) {
        assert.ok((ordered[i - 1]?.ramMb ?? 0) >= (ordered[i]?.ramMb ?? 0));
      }
      assert.equal(
        ordered.length,
        vms.filter((v) => ["ACTIVE", "SHUTOFF", "PAUSED"].includes(v.status))
          .length,
      );
      assert.ok(p.makespan.lowerBoundSeconds <= p.makespan.predictedSeconds);
    },
  ));
});

Deno.test("formatSeconds", () => {
  const cases: [number, string][] = [[0, "0s"], [7, "7s"], [245, "4m05s"], [
    3723,
    "1h02m03s",
  ]];
  for (const [n, want] of cases) assert.equal(formatSeconds(n), want);
});

Deno.test("renderPlan: header lines and one row per VM", () => {
  const p = planHost({
    host: "n1",
    servers: [server("a", 2048), server("b", 1024, "SUSPENDED")],
    limit: LIMIT,
    capacity: FITS,
    cost: COST,
  });
  const text = renderPlan([p]);
  assert.match(text, /^HOST n1\n {2}limit: {5}2 \(EvictionPolicy default\)/);
  assert.match(text, /capacity: {2}True: all fit/);
  assert.match(text, /makespan: {2}3s predicted, lower bound 3s/);
  assert.match(text, /\n {2}1 +vm-a +a +ACTIVE +2048 +live/);
  assert.match(text, /\n {2}- +vm-b +b +SUSPENDED +1024 +needs a person/);
});

Deno.test("shareBudget: hosts planned together share the cluster budget", () => {
  const plan = (host: string) =>
    planHost({
      host,
      servers: [server(`${host}-a`, 4000), server(`${host}-b`, 4000)],
      limit: LIMIT,
      capacity: FITS,
      cost: COST,
    });
  const alone = [plan("n1"), plan("n2")];
  assert.deepEqual(alone.map((p) => p.makespan.predictedSeconds), [4, 4]);
  // a budget of 2 for 2 x 2 slots: one each, so both take twice as long
  const shared = shareBudget(alone, 2, COST);
  assert.deepEqual(shared.map((p) => p.makespan.predictedSeconds), [8, 8]);
  assert.ok(shared.every((p) => p.makespan.sharedBudget === 2));
  assert.match(renderPlan(shared), /sharing the cluster budget of 2/);
  // a budget that never binds, no budget, or one host: unchanged
  assert.deepEqual(
    shareBudget(alone, 4, COST).map((p) => p.makespan.predictedSeconds),
    [4, 4],
  );
  assert.deepEqual(shareBudget(alone, undefined, COST), alone);
  assert.deepEqual(shareBudget([alone[0] as HostPlan], 1, COST), [alone[0]]);
});

Deno.test("plan: a running drain's learned Nova limit lowers the host's limit, with why", () => {
  const own = {
    value: 4,
    source: "policy" as const,
    text: "4 (EvictionPolicy default)",
  };
  assert.deepEqual(limitUnderNova(own, undefined), own);
  assert.deepEqual(limitUnderNova(own, 4), own);
  assert.deepEqual(limitUnderNova(own, 1), {
    value: 1,
    source: "policy",
    text:
      "1 (Nova runs 1 live migration(s) at a time from this host: its max_concurrent_live_migrations; evictor's limit 4 (EvictionPolicy default))",
  });
});

Deno.test("planHost and renderPlan: with and without history, the time per drain included", () => {
  const T0 = Date.parse("2026-01-01T00:00:00Z");
  const servers = [server("a", 1024), server("b", 1024), server("c", 1024)];
  const one = { ...LIMIT, value: 1, text: "1 (EvictionPolicy default)" };
  const plan = (lessons: DrainLesson[]) =>
    planHost({
      host: "n1",
      servers,
      limit: one,
      capacity: FITS,
      cost: planCost(learnedCost(lessons), {}),
    });
  // no history: from the defaults (3 x (1.024 s + 5 s) + 10 s) to the
  // slow end, the headline: 3 x (20.48 s + 15 s) + 30 s
  const fresh = plan([]);
  assert.equal(fresh.makespan.predictedSeconds, 137);
  assert.equal(fresh.makespan.lowerBoundSeconds, 137);
  assert.deepEqual(fresh.makespan.rangeSeconds, { low: 29, high: 137 });
  assert.equal(fresh.makespan.fixedSeconds, 30);
  const text = renderPlan([fresh]);
  assert.match(
    text,
    /\n {2}makespan: {2}2m17s predicted \(range 29s to 2m17s\), lower bound 2m17s\n/,
  );
  assert.match(
    text,
    /\n {2}cost: {6}50 MB\/s \+ 15\.0 s per migration \+ 30 s per drain: documented defaults assumed: no ended drain to learn from\n/,
  );
  assert.match(
    text,
    /\n {2}range: {5}without history the defaults are the fast end/,
  );
  // a drain ended on 63 MB/s + 11 s, 14 s per drain: 3 x (16.25 s + 11 s) + 14 s
  const learned = plan([{
    host: "n0",
    startedMs: T0,
    endedMs: T0 + 89_000,
    rate: { mbPerSecond: 63, overheadSeconds: 11 },
    fixedSeconds: 14,
  }]);
  assert.equal(learned.makespan.predictedSeconds, 96);
  assert.deepEqual(learned.makespan.rangeSeconds, { low: 96, high: 96 });
  const again = renderPlan([learned]);
  assert.match(again, /makespan: {2}1m36s predicted, lower bound 1m36s\n/);
  assert.match(
    again,
    /cost: {6}63 MB\/s \+ 11\.0 s per migration \+ 14 s per drain: observed by the latest 1 ended drain \(n0\); time per drain measured\n/,
  );
  assert.doesNotMatch(again, /range:/);
});

Deno.test("plan: a bad cost flag is named with what is expected, before any call", async () => {
  const io = {
    kubeConfig: () => Promise.reject(new Error("no cluster call expected")),
    out: () => {},
    warn: () => {},
  };
  for (
    const [flag, value, want] of [
      ["--fixed-seconds", "-1", "expected seconds >= 0"],
      ["--overhead-seconds", "soon", "expected seconds >= 0"],
      ["--mb-per-second", "0", "expected a number > 0"],
    ]
  ) {
    await assert.rejects(
      runPlan(["n1", `${flag}=${value}`], io),
      (e: Error) => e.message === `${flag} "${value}" is not valid: ${want}`,
    );
  }
});

Deno.test("renderPlan: the wave line only when asked (--with-wave), naming the pending Evictions", () => {
  const base = {
    host: "n1",
    servers: [server("a", 1024)],
    limit: LIMIT,
    capacity: FITS,
    cost: COST,
  };
  const rows: [string, readonly string[] | undefined, string | undefined][] = [
    ["not asked", undefined, undefined],
    ["asked, none pending", [], "  wave:      no pending Eviction shares it"],
    [
      "asked, two pending",
      ["n7", "n9"],
      "  wave:      shared with the pending Evictions of n7, n9",
    ],
  ];
  for (const [name, wave, line] of rows) {
    const plan = planHost(wave === undefined ? base : { ...base, wave });
    assert.deepEqual(plan.wave, wave === undefined ? undefined : [...wave]);
    const lines = renderPlan([plan]).split("\n");
    const waveLines = lines.filter((l) => l.startsWith("  wave:"));
    assert.deepEqual(waveLines, line === undefined ? [] : [line], name);
  }
});
