import assert from "node:assert/strict";
import {
  inFlightEntry,
  latestRecords,
  recordMatchesEntry,
} from "./classify.ts";
import { at, entry, HOST, mig, novaTime } from "./_plan_test_util.ts";

Deno.test("recordMatchesEntry: by migration id, or created no earlier than the trigger minus skew", () => {
  const e = entry("a", 0);
  assert.ok(
    recordMatchesEntry(mig(1, "a", "error", { createdAt: novaTime(2) }), e, 0),
  );
  assert.ok(
    recordMatchesEntry(
      mig(1, "a", "error", { createdAt: novaTime(-3) }),
      e,
      5_000,
    ),
  );
  assert.ok(
    !recordMatchesEntry(
      mig(1, "a", "error", { createdAt: novaTime(-3) }),
      e,
      1_000,
    ),
  );
  assert.ok(
    recordMatchesEntry(
      mig(9, "a", "error", { createdAt: novaTime(-300) }),
      entry("a", 0, { migrationId: "9" }),
      0,
    ),
  );
});

Deno.test("latestRecords: latest by created_at then id; in progress tracked apart; other sources ignored", () => {
  const byVm = latestRecords([
    mig(1, "a", "running", { createdAt: novaTime(-100) }),
    mig(2, "a", "error", { createdAt: novaTime(-50) }),
    mig(4, "b", "completed", { createdAt: novaTime(-10) }),
    mig(3, "b", "error", { createdAt: novaTime(-10) }),
    mig(5, "c", "running", { sourceCompute: "node007" }),
  ], HOST);
  assert.equal(byVm.get("a")?.latest.id, 2);
  assert.equal(byVm.get("a")?.inProgress?.id, 1);
  assert.equal(byVm.get("b")?.latest.id, 4);
  assert.equal(byVm.get("b")?.inProgress, undefined);
  assert.equal(byVm.has("c"), false);
});

Deno.test("inFlightEntry: keeps startedAt and kind; adopts migration id and progress from the record", () => {
  const kept = inFlightEntry(
    "a",
    entry("a", -60, { kind: "cold" }),
    "live",
    mig(7, "a", "running", { memoryProcessedBytes: 3, memoryTotalBytes: 4 }),
    at(0).getTime(),
  );
  assert.deepEqual(kept, {
    id: "a",
    kind: "cold",
    startedAt: at(-60).toISOString(),
    migrationId: "7",
    memoryProcessedPercent: 75,
  });
  const adopted = inFlightEntry(
    "b",
    undefined,
    "live",
    mig(8, "b", "queued", { createdAt: novaTime(-30) }),
    at(0).getTime(),
  );
  assert.deepEqual(adopted, {
    id: "b",
    kind: "live",
    startedAt: at(-30).toISOString(),
    migrationId: "8",
  });
  // A Nova clock ahead of ours never puts startedAt in the future.
  const ahead = inFlightEntry(
    "c",
    undefined,
    "live",
    mig(9, "c", "queued", { createdAt: novaTime(30) }),
    at(0).getTime(),
  );
  assert.equal(ahead.startedAt, at(0).toISOString());
});
