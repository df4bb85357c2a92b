import assert from "node:assert/strict";
import fc from "fast-check";
import type { EvictionStatus } from "../../models/mod.ts";
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
    notConverging: [],
    requestOutcomes: [],
    refusals: [],
    now: at(600),
    generation: 3,
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

const live = (id: string, migrationId = "7") =>
  entry(id, 0, { migrationId, memoryProcessedPercent: 80 });

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
  const sent = withConvergence({}, {
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
    const out = withConvergence(sent, parts({ refusals: [r] }));
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
        status = withConvergence(status, {
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
  const quiet = withConvergence({ inFlight: [live("a")] }, parts());
  assert.equal(
    quiet.conditions?.some((c) => c.type === "NotConverging"),
    undefined,
  );
  const stalled = withConvergence({ inFlight: [live("a")] }, {
    ...parts(),
    notConverging: [report("a")],
  });
  const c = stalled.conditions?.find((x) => x.type === "NotConverging");
  assert.equal(c?.status, "True");
  assert.equal(c?.reason, "ProgressStalled");
  assert.equal(c?.observedGeneration, 3);
  const converged = withConvergence(stalled, parts());
  const d = converged.conditions?.find((x) => x.type === "NotConverging");
  assert.equal(d?.status, "False");
  assert.equal(d?.reason, "Converging");
});
