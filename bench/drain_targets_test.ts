import assert from "node:assert/strict";
import {
  baselineOf,
  configName,
  drainTargets,
  type RunFigures,
} from "./drain_targets.ts";

const run = (over: Partial<RunFigures>): RunFigures => ({
  mode: "polling",
  host: "uniform",
  limit: 4,
  novaLimit: 8,
  delayS: 0,
  vms: 200,
  ratio: 1.1,
  callsPerVm: 2.7,
  twice: 0,
  meanIdleS: 0.2,
  ...over,
});

const verdict = (rows: RunFigures[], prefix: string, base = new Map()) =>
  drainTargets(rows, base).find((v) => v.target.startsWith(prefix));

Deno.test("configName: as --configs spells it, with the mode", () => {
  const table: [Partial<RunFigures>, string][] = [
    [{}, "polling 4x8"],
    [{ mode: "notifications", delayS: 30 }, "notifications 4x8+delay30"],
    [{ host: "mixed", novaLimit: 1 }, "polling 4x1:mixed"],
  ];
  for (const [over, want] of table) assert.equal(configName(run(over)), want);
});

Deno.test("drainTargets: each ceiling met at its value and missed above it, naming the worst run", () => {
  const table: {
    name: string;
    rows: RunFigures[];
    prefix: string;
    met: boolean;
    result: RegExp;
  }[] = [
    {
      name: "polling ratio at the ceiling",
      rows: [run({ ratio: 1.15 }), run({ limit: 8, ratio: 1.0 })],
      prefix: "polling: ratio",
      met: true,
      result: /^1\.150 \(polling 4x8\)$/,
    },
    {
      name: "polling ratio above it",
      rows: [run({ ratio: 1.0 }), run({ limit: 8, ratio: 1.151 })],
      prefix: "polling: ratio",
      met: false,
      result: /^1\.151 \(polling 8x8\)$/,
    },
    {
      name: "a delayed run's ratio is judged by its own target",
      rows: [run({ ratio: 1.0 }), run({ delayS: 30, ratio: 1.3 })],
      prefix: "polling: ratio",
      met: true,
      result: /^1\.000 /,
    },
    {
      name: "polling calls: the mixed host counts",
      rows: [run({}), run({ host: "mixed", novaLimit: 1, callsPerVm: 9.35 })],
      prefix: "polling: <= 4.5",
      met: false,
      result: /^9\.35 \(polling 4x1:mixed\)$/,
    },
    {
      name: "notification ratio",
      rows: [run({ mode: "notifications", ratio: 1.033, limit: 1 })],
      prefix: "notifications: ratio <= 1.03",
      met: false,
      result: /^1\.033 \(notifications 1x8\)$/,
    },
    {
      name: "notification calls",
      rows: [run({ mode: "notifications", callsPerVm: 1.5 })],
      prefix: "notifications: <= 1.5",
      met: true,
      result: /^1\.50 /,
    },
    {
      name: "idle slot",
      rows: [run({ mode: "notifications", meanIdleS: 0.83 })],
      prefix: "notifications: mean idle slot",
      met: false,
      result: /^0\.83 s /,
    },
    {
      name: "mixed host ratio, either mode",
      rows: [
        run({ host: "mixed", ratio: 1.002 }),
        run({ host: "mixed", mode: "notifications", ratio: 1.049 }),
      ],
      prefix: "mixed host",
      met: false,
      result: /^1\.049 \(notifications 4x8:mixed\)$/,
    },
    {
      name: "moved twice",
      rows: [run({ twice: 1 }), run({ mode: "notifications", twice: 1 })],
      prefix: "VMs migrated twice",
      met: false,
      result: /^2$/,
    },
  ];
  for (const row of table) {
    const v = verdict(row.rows, row.prefix);
    assert.ok(v !== undefined, `${row.name}: a verdict`);
    assert.equal(v.met, row.met, `${row.name}: met`);
    assert.match(v.result, row.result, row.name);
  }
});

Deno.test("drainTargets: a mode or host not run has no verdict", () => {
  assert.deepEqual(drainTargets([], new Map()), []);
  const polled = drainTargets([run({})], new Map()).map((v) => v.target);
  assert.ok(!polled.some((t) => t.startsWith("notifications")));
  assert.ok(!polled.some((t) => t.startsWith("mixed")));
});

Deno.test("drainTargets: notification calls per VM against the report replaced", () => {
  const old = baselineOf({
    configurations: [
      // an old report's entries: no host; a delayed run under delayedStart
      {
        mode: "notifications",
        limit: 4,
        novaHostLimit: 8,
        vms: 200,
        novaCallsPerVm: 1.13,
      },
      {
        mode: "notifications",
        limit: 1,
        novaHostLimit: 8,
        vms: 200,
        novaCallsPerVm: 1.35,
      },
      {
        mode: "notifications",
        limit: 4,
        novaHostLimit: 8,
        vms: 200,
        novaCallsPerVm: 1.13,
        delayedStart: { delayS: 30 },
      },
      {
        mode: "polling",
        limit: 4,
        novaHostLimit: 8,
        vms: 200,
        novaCallsPerVm: 2.74,
      },
      {
        mode: "bogus",
        limit: 4,
        novaHostLimit: 8,
        vms: 200,
        novaCallsPerVm: 1,
      },
      { mode: "notifications", limit: "4" },
    ],
  });
  assert.deepEqual([...old.keys()], [
    "notifications 4x8",
    "notifications 1x8",
    "notifications 4x8+delay30",
    "polling 4x8",
  ]);
  const n = (over: Partial<RunFigures>) =>
    run({ mode: "notifications", ...over });
  const table: {
    name: string;
    rows: RunFigures[];
    met?: boolean;
    result?: RegExp;
  }[] = [
    {
      name: "as many calls (rounding aside)",
      rows: [n({ callsPerVm: 1.134 }), n({ limit: 1, callsPerVm: 1.2 })],
      met: true,
      result: /^\+0\.00 \(notifications 4x8: 1\.13 -> 1\.13\)$/,
    },
    {
      name: "more calls in one configuration",
      rows: [n({ callsPerVm: 1.1 }), n({ limit: 1, callsPerVm: 1.4 })],
      met: false,
      result: /^\+0\.05 \(notifications 1x8: 1\.35 -> 1\.40\)$/,
    },
    {
      name: "the delayed run is compared with the delayed run",
      rows: [n({ delayS: 30, callsPerVm: 1.2 })],
      met: false,
      result: /notifications 4x8\+delay30: 1\.13 -> 1\.20/,
    },
    { name: "the mixed host had no baseline", rows: [n({ host: "mixed" })] },
    { name: "other VM counts are not compared", rows: [n({ vms: 50 })] },
    { name: "polling is not held to it", rows: [run({ callsPerVm: 4 })] },
  ];
  for (const row of table) {
    const v = verdict(row.rows, "notifications: no more", old);
    if (row.met === undefined) {
      assert.equal(v, undefined, row.name);
      continue;
    }
    assert.ok(v !== undefined, `${row.name}: a verdict`);
    assert.equal(v.met, row.met, row.name);
    assert.match(v.result, row.result ?? /./, row.name);
  }
  assert.equal(baselineOf(undefined).size, 0);
  assert.equal(baselineOf({ configurations: "x" }).size, 0);
});

Deno.test("baselineOf: a run with non-converging VMs is no baseline of the plain configuration", () => {
  const entry = {
    mode: "notifications",
    limit: 4,
    novaHostLimit: 8,
    vms: 200,
    novaCallsPerVm: 1.1,
  };
  const b = baselineOf({
    configurations: [
      entry,
      {
        ...entry,
        novaCallsPerVm: 3.5,
        nonConverging: { percent: 10, onTimeout: "Abort" },
      },
    ],
  });
  assert.deepEqual([...b.entries()], [["notifications 4x8", {
    callsPerVm: 1.1,
    vms: 200,
  }]]);
});
