import assert from "node:assert/strict";
import fc from "fast-check";
import {
  benchConvergence,
  convergenceTargets,
  heldSlots,
  lowerBoundMs,
  nonConvergingIndices,
  nonConvergingTime,
  parseOnTimeouts,
  policyBoundSeconds,
  type SlotRecord,
  stalled,
  type VmTime,
} from "./convergence.ts";

const O = {
  recordDelayS: 0.2,
  scheduleS: 0.5,
  prepareS: 2,
  liveCompleteS: 0.3,
};

Deno.test("bench convergence: --on-timeout takes the three actions and names a bad entry", () => {
  assert.deepEqual(parseOnTimeouts("Report"), ["Report"]);
  assert.deepEqual(parseOnTimeouts("Abort, ForceComplete,Abort"), [
    "Abort",
    "ForceComplete",
  ]);
  assert.throws(
    () => parseOnTimeouts("Abort,abort"),
    {
      message:
        '--on-timeout entries are Report, Abort, ForceComplete, got "abort"',
    },
  );
});

Deno.test("bench convergence: the share of non-converging VMs, rounded, spread over sizes", () => {
  for (
    const [n, pct, want] of [[200, 10, 20], [40, 10, 4], [5, 10, 1], [
      7,
      100,
      7,
    ], [3, 10, 0]] as const
  ) {
    const s = nonConvergingIndices(n, pct, 11);
    assert.equal(s.size, want, `${pct} % of ${n}`);
    for (const i of s) assert.ok(i >= 0 && i < n);
  }
  assert.deepEqual(
    [...nonConvergingIndices(200, 10, 11)],
    [...nonConvergingIndices(200, 10, 11)],
    "seeded",
  );
  // 5 flavor sizes cycled: the 20 are not all one size
  const sizes = new Set(
    [...nonConvergingIndices(200, 10, 11)].map((i) => i % 5),
  );
  assert.ok(sizes.size > 1);
});

Deno.test("bench convergence: a VM's bound is the sooner of completion per GiB and progress", () => {
  const p = benchConvergence("Report");
  for (
    const [ramMb, bound] of [
      [1024, 5],
      [4096, 20],
      [6144, 30],
      [16384, 30],
      [512, 5],
    ] as const
  ) assert.equal(policyBoundSeconds(p, ramMb), bound, `${ramMb} MB`);
  assert.equal(
    policyBoundSeconds({ ...p, progressTimeoutSeconds: 1000 }, 16384),
    80,
  );
});

Deno.test("bench convergence: a non-converging VM's time per onTimeout", () => {
  const table: [string, Parameters<typeof nonConvergingTime>, VmTime][] = [
    // as if it left at its bound: prepare + 30 + record completion
    ["Report", ["Report", 30, 16, 2, O], {
      slotMs: 32_300,
      fullMs: 33_000,
      aloneMs: 0,
    }],
    // aborted at its bound (no completion), twice, the second alone
    ["Abort", ["Abort", 30, 16, 2, O], {
      slotMs: 32_000,
      fullMs: 32_700,
      aloneMs: 32_700,
    }],
    ["Abort, one try", ["Abort", 30, 16, 1, O], {
      slotMs: 32_000,
      fullMs: 32_700,
      aloneMs: 0,
    }],
    // the bound, then the paused copy of its 16 GiB
    ["ForceComplete", ["ForceComplete", 30, 16, 2, O], {
      slotMs: 48_300,
      fullMs: 49_000,
      aloneMs: 0,
    }],
  ];
  for (const [name, args, want] of table) {
    const got = nonConvergingTime(...args);
    for (const k of ["slotMs", "fullMs", "aloneMs"] as const) {
      assert.ok(Math.abs(got[k] - want[k]) < 1e-6, `${name} ${k}: ${got[k]}`);
    }
  }
});

Deno.test("bench convergence: the lower bound", () => {
  const vm = (fullMs: number, slotMs: number, aloneMs = 0): VmTime => ({
    fullMs,
    slotMs,
    aloneMs,
  });
  const table: [string, VmTime[], number, number, number][] = [
    ["the longest VM", [vm(100, 90), vm(10, 9)], 4, 8, 100],
    ["our limit", [vm(10, 9), vm(10, 9), vm(10, 9), vm(10, 9)], 2, 8, 20],
    ["Nova's limit", [vm(10, 9), vm(10, 9), vm(10, 9), vm(10, 9)], 4, 1, 36],
    ["tries alone add", [vm(10, 9, 50), vm(10, 9)], 2, 2, 60],
    ["none", [], 4, 8, 0],
  ];
  for (const [name, vms, limit, nova, want] of table) {
    assert.equal(lowerBoundMs(vms, limit, nova), want, name);
  }
});

Deno.test("bench convergence: the lower bound is never above a serial drain", () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.record({
          fullMs: fc.integer({ min: 1, max: 100_000 }),
          aloneMs: fc.integer({ min: 0, max: 10_000 }),
        }),
        { minLength: 1, maxLength: 50 },
      ),
      fc.integer({ min: 1, max: 16 }),
      fc.integer({ min: 1, max: 16 }),
      (xs, limit, nova) => {
        const vms = xs.map((x) => ({ ...x, slotMs: x.fullMs }));
        const serial = vms.reduce((a, v) => a + v.fullMs + v.aloneMs, 0);
        const lb = lowerBoundMs(vms, limit, nova);
        assert.ok(lb <= serial + 1e-6);
        assert.ok(lb >= Math.max(...vms.map((v) => v.fullMs)));
      },
    ),
  );
});

const rec = (
  serverId: string,
  status: string,
  slotAt: number | undefined,
  updatedAt: number,
): SlotRecord => ({ serverId, status, slotAt, updatedAt });

Deno.test("bench convergence: the slot time non-converging copies held, and the worst past its bound", () => {
  const nc = new Set(["a", "b"]);
  const bound = (id: string) => id === "a" ? 30 : 20;
  const table: [
    string,
    SlotRecord[],
    number,
    number,
    number,
    string | undefined,
  ][] = [
    [
      "aborted at its bound",
      [rec("a", "cancelled", 0, 32_000)],
      50_000,
      32,
      0,
      undefined,
    ],
    ["aborted late", [rec("a", "cancelled", 0, 40_000)], 50_000, 40, 8, "a"],
    [
      "still holding counts to now",
      [rec("b", "running", 10_000, 10_000)],
      60_000,
      50,
      28,
      "b",
    ],
    [
      "converging VMs are not counted",
      [rec("c", "completed", 0, 90_000)],
      90_000,
      0,
      0,
      undefined,
    ],
    [
      "never held a slot",
      [rec("a", "cancelled", undefined, 5_000)],
      9_000,
      0,
      0,
      undefined,
    ],
    [
      "two tries add up, the worst is named",
      [
        rec("a", "cancelled", 0, 33_000),
        rec("b", "completed", 40_000, 70_000),
      ],
      90_000,
      63,
      8,
      "b",
    ],
  ];
  for (const [name, records, now, held, past, who] of table) {
    const h = heldSlots(records, nc, bound, 2, now);
    assert.equal(h.heldS, held, `${name}: held`);
    assert.equal(h.worstPastBoundS, past, `${name}: past`);
    assert.equal(h.worstServer, who, `${name}: who`);
  }
});

Deno.test("bench convergence: a run stalls when only non-converging copies past their bound hold the slots", () => {
  const nc = new Set(["a", "b"]);
  const base = {
    nowMs: 100_000,
    nonConverging: nc,
    boundS: () => 30,
    prepareS: 2,
    graceMs: 4_000,
    slots: 2,
    convergingLeft: 10,
  };
  const table: [
    string,
    Partial<typeof base> & { holding: SlotRecord[] },
    boolean,
  ][] = [
    ["both slots held past the bound", {
      holding: [rec("a", "running", 0, 0), rec("b", "running", 50_000, 0)],
    }, true],
    ["one within its grace", {
      holding: [rec("a", "running", 0, 0), rec("b", "running", 65_000, 0)],
    }, false],
    ["a converging copy holds one", {
      holding: [rec("a", "running", 0, 0), rec("c", "running", 0, 0)],
    }, false],
    ["a free slot, converging VMs wait", {
      holding: [rec("a", "running", 0, 0)],
    }, false],
    ["a free slot, none left to converge", {
      holding: [rec("a", "running", 0, 0)],
      convergingLeft: 0,
    }, true],
    ["nothing holds a slot", { holding: [] }, false],
    ["a force-completed copy converges", {
      holding: [rec("a", "running", 0, 0), {
        ...rec("b", "running", 0, 0),
        switchedTo: "paused",
      }],
    }, false],
  ];
  for (const [name, over, want] of table) {
    assert.equal(stalled({ ...base, ...over }), want, name);
  }
});

Deno.test("bench convergence: the targets judge Abort and ForceComplete runs only", () => {
  assert.deepEqual(
    convergenceTargets([
      {
        name: "polling 4x8:nc10",
        onTimeout: "Report",
        worstPastBoundS: 900,
        stalled: true,
      },
    ], 30),
    [],
  );
  const v = convergenceTargets([
    {
      name: "polling 4x8:nc10",
      onTimeout: "Abort",
      worstPastBoundS: 3,
      stalled: false,
    },
    {
      name: "notifications 4x8:nc10",
      onTimeout: "ForceComplete",
      worstPastBoundS: 31,
      stalled: true,
    },
  ], 30);
  assert.deepEqual(v.map((x) => [x.result, x.met]), [
    ["31.0 s (notifications 4x8:nc10 ForceComplete)", false],
    ["notifications 4x8:nc10 ForceComplete", false],
  ]);
});
