import assert from "node:assert/strict";
import fc from "fast-check";
import type { EvictionStatus } from "../../models/mod.ts";
import type { CopyProgress } from "../../openstack/informer/progress_types.ts";
import { at, entry } from "../../tests/harness/plan_fixtures.ts";
import {
  type ConvergenceParts,
  MAX_ACTIONS,
  type Refusal,
  withConvergence,
} from "./next_status.ts";
import type { NotConvergingReport, RequestOutcome } from "./plan_types.ts";

const GIB = 1024 ** 3;

function parts(over: Partial<ConvergenceParts> = {}): ConvergenceParts {
  return {
    progress: undefined,
    notConverging: [],
    forceComplete: [],
    abort: [],
    requestOutcomes: [],
    refusals: [],
    now: at(600),
    generation: 3,
    ...over,
  };
}

function read(
  serverId: string,
  migrationId: string,
  over: Partial<CopyProgress> = {},
): CopyProgress {
  return {
    serverId,
    migrationId,
    totalBytes: 64 * GIB,
    remainingBytes: 10 * GIB,
    readAtMs: at(590).getTime(),
    lowestRemainingBytes: 10 * GIB,
    lowestAtMs: at(590).getTime(),
    bytesPerSecond: 100_000_000.4,
    etaSeconds: 107.37,
    ...over,
  };
}

function report(
  id: string,
  over: Partial<NotConvergingReport> = {},
): NotConvergingReport {
  return {
    id,
    migrationId: "7",
    why: "progress",
    remainingBytes: 10 * GIB,
    totalBytes: 64 * GIB,
    sinceSeconds: 30,
    onTimeout: "ForceComplete",
    actAt: at(900).toISOString(),
    ...over,
  };
}

function withoutRate(p: CopyProgress): CopyProgress {
  const { bytesPerSecond: _b, etaSeconds: _e, ...rest } = p;
  return rest;
}

const live = (id: string, migrationId = "7") =>
  entry(id, 0, { migrationId, memoryProcessedPercent: 80 });

Deno.test("withConvergence: a copy's progress: the read, kept between reads, dropped for a new copy", () => {
  const rows: Array<{
    name: string;
    prev: EvictionStatus;
    nextMigration: string;
    progress: ReadonlyMap<string, CopyProgress> | undefined;
    want: Record<string, number | undefined>;
  }> = [
    {
      name: "a read, rounded",
      prev: {},
      nextMigration: "7",
      progress: new Map([["vm", read("vm", "7")]]),
      want: {
        memoryTotalBytes: 64 * GIB,
        memoryRemainingBytes: 10 * GIB,
        bytesPerSecond: 100_000_000,
        etaSeconds: 107,
      },
    },
    {
      name: "no read this pass: the last one kept",
      prev: {
        inFlight: [{
          ...live("vm"),
          memoryTotalBytes: 5,
          memoryRemainingBytes: 3,
        }],
      },
      nextMigration: "7",
      progress: new Map(),
      want: {
        memoryTotalBytes: 5,
        memoryRemainingBytes: 3,
        bytesPerSecond: undefined,
        etaSeconds: undefined,
      },
    },
    {
      name: "a new copy of the VM: the old copy's figures dropped",
      prev: {
        inFlight: [{
          ...live("vm"),
          memoryTotalBytes: 5,
          memoryRemainingBytes: 3,
        }],
      },
      nextMigration: "8",
      progress: new Map([["vm", read("vm", "7")]]),
      want: {
        memoryTotalBytes: undefined,
        memoryRemainingBytes: undefined,
        bytesPerSecond: undefined,
        etaSeconds: undefined,
      },
    },
    {
      name: "a read without a rate yet",
      prev: {},
      nextMigration: "7",
      progress: new Map([["vm", withoutRate(read("vm", "7"))]]),
      want: {
        memoryTotalBytes: 64 * GIB,
        memoryRemainingBytes: 10 * GIB,
        bytesPerSecond: undefined,
        etaSeconds: undefined,
      },
    },
  ];
  for (const r of rows) {
    const out = withConvergence(r.prev, {
      inFlight: [live("vm", r.nextMigration)],
    }, parts({ progress: r.progress }));
    const e = out.inFlight?.[0];
    assert.equal(e?.memoryProcessedPercent, 80, r.name);
    for (const [k, v] of Object.entries(r.want)) {
      assert.equal(e?.[k as keyof typeof e], v, `${r.name}: ${k}`);
    }
  }
});

Deno.test("withConvergence: notConverging and deadlineAt follow the plan's reports; cleared when it converges", () => {
  const marked = withConvergence(
    {},
    { inFlight: [live("a"), live("b", "8")] },
    {
      ...parts(),
      notConverging: [report("a")],
    },
  );
  assert.equal(marked.inFlight?.[0]?.notConverging, true);
  assert.equal(marked.inFlight?.[0]?.deadlineAt, at(900).toISOString());
  assert.equal(marked.inFlight?.[1]?.notConverging, undefined);
  // the planner builds its entries afresh each pass
  const cleared = withConvergence(marked, {
    inFlight: [live("a"), live("b", "8")],
  }, parts());
  assert.equal(cleared.inFlight?.[0]?.notConverging, undefined);
  assert.equal(cleared.inFlight?.[0]?.deadlineAt, undefined);
  // a report with its action already sent has no deadline
  const sent = withConvergence({}, { inFlight: [live("a")] }, {
    ...parts(),
    notConverging: [(({ actAt: _, ...r }) => r)(report("a"))],
  });
  assert.equal(sent.inFlight?.[0]?.deadlineAt, undefined);
  assert.equal(sent.inFlight?.[0]?.notConverging, true);
});

Deno.test("withConvergence: what the planner set on an entry wins over the reads and reports", () => {
  const planned = {
    ...live("a"),
    memoryRemainingBytes: 5,
    notConverging: true,
    deadlineAt: at(700).toISOString(),
    forceCompleteSentAt: at(1).toISOString(),
  };
  const out = withConvergence({}, { inFlight: [planned] }, {
    ...parts({ progress: new Map([["a", read("a", "7")]]) }),
    notConverging: [report("a")],
    forceComplete: [{ id: "a", migrationId: "7", reason: "timeout" }],
  });
  const e = out.inFlight?.[0];
  assert.equal(e?.memoryRemainingBytes, 5);
  assert.equal(e?.memoryTotalBytes, 64 * GIB, "filled in where unset");
  assert.equal(e?.deadlineAt, at(700).toISOString());
  assert.equal(e?.forceCompleteSentAt, at(1).toISOString());
});

Deno.test("withConvergence: forceCompleteSentAt is set when sent and never moves after", () => {
  const first = withConvergence({}, { inFlight: [live("a")] }, {
    ...parts({ now: at(600) }),
    forceComplete: [{ id: "a", migrationId: "7", reason: "timeout" }],
  });
  const sentAt = at(600).toISOString();
  assert.equal(first.inFlight?.[0]?.forceCompleteSentAt, sentAt);
  // the planner's next entry lacks it: kept from the status
  const later = withConvergence(first, { inFlight: [live("a")] }, {
    ...parts({ now: at(700) }),
    forceComplete: [{ id: "a", migrationId: "7", reason: "timeout" }],
  });
  assert.equal(later.inFlight?.[0]?.forceCompleteSentAt, sentAt);
  // a new copy of the VM starts without one
  const again = withConvergence(later, { inFlight: [live("a", "9")] }, parts());
  assert.equal(again.inFlight?.[0]?.forceCompleteSentAt, undefined);
});

Deno.test("withConvergence: each abort counts one try of its VM", () => {
  const one = withConvergence({}, { inFlight: [] }, {
    ...parts({ now: at(100) }),
    abort: [
      { id: "b", migrationId: "7", reason: "timeout" },
      { id: "a", migrationId: "3", reason: "requested", requestedBy: "alice" },
    ],
  });
  assert.deepEqual(one.aborted, [
    {
      id: "a",
      tries: 1,
      lastAbortedAt: at(100).toISOString(),
      reason: "aborted as alice asked",
    },
    {
      id: "b",
      tries: 1,
      lastAbortedAt: at(100).toISOString(),
      reason: "did not converge within its policy's bound",
    },
  ]);
  const two = withConvergence(one, one, {
    ...parts({ now: at(200) }),
    abort: [{ id: "b", migrationId: "8", reason: "timeout" }],
  });
  assert.equal(two.aborted?.find((a) => a.id === "b")?.tries, 2);
  assert.equal(
    two.aborted?.find((a) => a.id === "b")?.lastAbortedAt,
    at(200).toISOString(),
  );
  assert.equal(two.aborted?.find((a) => a.id === "a")?.tries, 1);
  // one try per copy: an abort sent again for the copy it aborted, a
  // count the planner made already, and a stuck abort count nothing more
  const copyOfB = { inFlight: [entry("b", 150, { migrationId: "8" })] };
  for (
    const [name, abort] of [
      ["sent again", { id: "b", migrationId: "8", reason: "timeout" }],
      ["stuck", { id: "a", migrationId: "3", reason: "stuck" }],
    ] as const
  ) {
    const same = withConvergence({ ...two, ...copyOfB }, {
      ...two,
      ...copyOfB,
    }, { ...parts({ now: at(300) }), abort: [abort] });
    assert.deepEqual(same.aborted, two.aborted, name);
  }
  assert.equal(withConvergence({}, {}, parts()).aborted, undefined);
});

function outcome(
  i: number,
  over: Partial<RequestOutcome> = {},
): RequestOutcome {
  return {
    server: `vm-${i}`,
    action: "ForceComplete",
    requestedBy: "alice",
    requestedAt: at(i).toISOString(),
    outcome: "Sent",
    message: "",
    ...over,
  };
}

Deno.test("withConvergence: status.actions gains the outcomes; a refusal marks only its Sent entry", () => {
  const sent = withConvergence({}, {}, {
    ...parts({ now: at(300) }),
    requestOutcomes: [
      outcome(1),
      outcome(2, { action: "Abort", outcome: "NotInFlight", message: "gone" }),
    ],
  });
  assert.equal(sent.actions?.length, 2);
  assert.equal(sent.actions?.[0]?.at, at(300).toISOString());
  assert.equal(sent.actions?.[0]?.requestedAt, at(1).toISOString());
  const refusal: Refusal = {
    server: "vm-1",
    action: "ForceComplete",
    sentAtMs: at(300).getTime(),
    message: "Migration 7 state of instance vm-1 is queued (request req-1)",
  };
  const rows: Array<[string, Refusal, string]> = [
    ["its own", refusal, "Refused"],
    ["sent at another time", {
      ...refusal,
      sentAtMs: at(301).getTime(),
    }, "Sent"],
    ["another action", { ...refusal, action: "Abort" }, "Sent"],
    ["another server", { ...refusal, server: "vm-2" }, "Sent"],
  ];
  for (const [name, r, want] of rows) {
    const out = withConvergence(sent, sent, parts({ refusals: [r] }));
    assert.equal(out.actions?.[0]?.outcome, want, name);
    assert.equal(out.actions?.[1]?.outcome, "NotInFlight", name);
    if (want === "Refused") assert.equal(out.actions?.[0]?.message, r.message);
  }
});

Deno.test("property: status.actions keeps the latest MAX_ACTIONS in order", () => {
  fc.assert(fc.property(
    fc.array(fc.integer({ min: 0, max: 30 }), { minLength: 1, maxLength: 8 }),
    (batches) => {
      let status: EvictionStatus = {};
      let n = 0;
      for (const size of batches) {
        const outs = Array.from({ length: size }, () => outcome(n++));
        status = withConvergence(status, status, {
          ...parts(),
          requestOutcomes: outs,
        });
      }
      const kept = status.actions ?? [];
      assert.equal(kept.length, Math.min(n, MAX_ACTIONS));
      assert.deepEqual(
        kept.map((a) => a.server),
        Array.from({ length: n }, (_, i) => `vm-${i}`).slice(-MAX_ACTIONS),
      );
    },
  ));
});

Deno.test("withConvergence: the NotConverging condition, set once a copy stalls, False again once it converges", () => {
  const quiet = withConvergence({}, { inFlight: [live("a")] }, parts());
  assert.equal(
    quiet.conditions?.some((c) => c.type === "NotConverging"),
    undefined,
  );
  const stalled = withConvergence({}, { inFlight: [live("a")] }, {
    ...parts(),
    notConverging: [report("a")],
  });
  const c = stalled.conditions?.find((x) => x.type === "NotConverging");
  assert.equal(c?.status, "True");
  assert.equal(c?.reason, "ProgressStalled");
  assert.equal(c?.observedGeneration, 3);
  const converged = withConvergence(stalled, stalled, parts());
  const d = converged.conditions?.find((x) => x.type === "NotConverging");
  assert.equal(d?.status, "False");
  assert.equal(d?.reason, "Converging");
});
