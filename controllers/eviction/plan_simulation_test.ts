// Multi-pass properties: the planner and recordStarts driven against a tiny
// model of Nova for many passes, with async failures, failed and ambiguous
// starts, Nova's own per-host queue, VMs deleted and arriving, the limit
// changing mid-drain, and lost status writes (an operator restart between
// acting and writing). The upstream review asked for exactly this: in-flight
// VMs counted across passes must bound new starts, and each VM must be
// started exactly once.
import assert from "node:assert/strict";
import fc from "fast-check";
import type { EvictionStatus } from "../../models/mod.ts";
import type {
  ObservedMigration,
  ObservedServer,
  PlanOptions,
} from "./observation.ts";
import { departedIds, planPass } from "./plan.ts";
import { recordStarts, type StartOutcome } from "./record_starts.ts";
import { HOST, T0 } from "./_plan_test_util.ts";

const OPTIONS: PlanOptions = {
  gracePeriodMs: 30_000,
  retryBaseMs: 20_000,
  retryCapMs: 80_000,
  maxAttempts: 3,
  abortStuckMigrations: false,
  clockSkewMs: 0,
};
const PASS_MS = 10_000;

/** Deterministic random numbers from a seed (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface SimVm {
  id: string;
  ramMb: number;
  resting: "ACTIVE" | "PAUSED" | "SHUTOFF";
  status: string;
  host: string;
  taskState: string | null;
  deleted: boolean;
  migration:
    | { record: ObservedMigration; passesLeft: number; fail: boolean }
    | undefined;
  accepted: number;
}

interface Chances {
  asyncFail: number;
  startError: number;
  ambiguousError: number;
  notAttempted: number;
  lostWrite: number;
  lookupFails: number;
  deleteVm: number;
  arrive: number;
}

const CALM: Chances = {
  asyncFail: 0,
  startError: 0,
  ambiguousError: 0,
  notAttempted: 0,
  lostWrite: 0,
  lookupFails: 0,
  deleteVm: 0,
  arrive: 0,
};

interface SimResult {
  vms: SimVm[];
  status: EvictionStatus | undefined;
  maxOverLimit: number;
  finished: boolean;
}

/** Runs a drain; throws on any violation of the promises. */
function simulate(
  seed: number,
  vmCount: number,
  limits: readonly number[],
  novaLimit: number,
  chances: Chances,
  passes: number,
  trace: (line: string) => void = () => {},
): SimResult {
  const random = rng(seed);
  const pick = <T>(items: readonly T[]): T => {
    const item = items[Math.floor(random() * items.length)];
    if (item === undefined) throw new RangeError("pick from an empty list");
    return item;
  };
  const vms: SimVm[] = [];
  const addVm = () => {
    const resting = pick(["ACTIVE", "ACTIVE", "PAUSED", "SHUTOFF"] as const);
    vms.push({
      id: `vm${String(vms.length).padStart(3, "0")}`,
      ramMb: pick([1024, 2048, 4096, 8192]),
      resting,
      status: resting,
      host: HOST,
      taskState: null,
      deleted: false,
      migration: undefined,
      accepted: 0,
    });
  };
  for (let i = 0; i < vmCount; i++) addVm();
  const records: ObservedMigration[] = [];
  let nextMigrationId = 1;
  let status: EvictionStatus | undefined;
  let maxOverLimit = 0;
  let finished = false;

  const observe = (vm: SimVm): ObservedServer => ({
    id: vm.id,
    status: vm.status,
    host: vm.host,
    taskState: vm.taskState,
    flavor: { ramMb: vm.ramMb },
  });
  const inFlightTruth = () =>
    vms.filter((vm) =>
      !vm.deleted &&
      (vm.migration !== undefined || vm.status === "VERIFY_RESIZE")
    )
      .length;

  for (let pass = 0; pass < passes; pass++) {
    const now = new Date(T0.getTime() + pass * PASS_MS);
    const nowNova = now.toISOString().replace("Z", "");
    const limit = limits[pass % limits.length] ?? 1;
    const servers = vms.filter((vm) => !vm.deleted && vm.host === HOST).map(
      observe,
    );
    const departed = departedIds(status, servers, records, HOST)
      .filter(() => random() >= chances.lookupFails)
      .map((id) => {
        const vm = vms.find((v) => v.id === id);
        return {
          id,
          server: vm === undefined || vm.deleted ? null : observe(vm),
        };
      });
    const plan = planPass({
      host: HOST,
      servers,
      migrations: records.map((r) => ({ ...r })),
      departed,
      status,
      limit,
      limitSource: "policy",
      clusterBudgetLeft: Infinity,
      now,
      options: OPTIONS,
    });

    trace(
      `pass ${pass} limit ${limit} start ${
        plan.start.map((s) => s.id)
      } inFlight ${plan.next.inFlight?.map((e) => e.id)} failed ${
        plan.failed.map((f) => `${f.id}:${f.attempts}:${f.reason}`)
      } waiting ${
        plan.waiting.map((w) => `${w.id}:${w.why}:${w.detail}`)
      } skipped ${plan.skipped.map((s) => s.id)}`,
    );
    // Act.
    for (const id of plan.confirmResize) {
      const vm = vms.find((v) => v.id === id);
      if (vm !== undefined && vm.status === "VERIFY_RESIZE") {
        vm.status = vm.resting;
        const record = records.find((r) =>
          r.instanceUuid === id && r.status === "finished"
        );
        if (record !== undefined) record.status = "confirmed";
      }
    }
    const outcomes: StartOutcome[] = [];
    for (const start of plan.start) {
      const vm = vms.find((v) => v.id === start.id);
      assert.ok(
        vm !== undefined && !vm.deleted && vm.host === HOST,
        `${start.id} not here`,
      );
      // The promise: never trigger a VM that has a migration in progress.
      assert.equal(
        vm.migration,
        undefined,
        `pass ${pass}: ${vm.id} started twice`,
      );
      assert.equal(vm.taskState, null, `pass ${pass}: ${vm.id} busy`);
      const roll = random();
      if (roll < chances.notAttempted) {
        outcomes.push({ id: vm.id, outcome: "not_attempted" });
        continue;
      }
      if (roll < chances.notAttempted + chances.startError) {
        outcomes.push({
          id: vm.id,
          outcome: "error",
          message: "503 Service Unavailable",
        });
        continue;
      }
      const live = start.kind === "live";
      const running = records.filter((r) =>
        r.migrationType === "live-migration" && r.status === "running"
      ).length;
      const record: ObservedMigration = {
        id: nextMigrationId++,
        instanceUuid: vm.id,
        migrationType: live ? "live-migration" : "migration",
        status: live
          ? (running < novaLimit ? "running" : "queued")
          : "pre-migrating",
        sourceCompute: HOST,
        createdAt: nowNova,
        updatedAt: nowNova,
      };
      records.push(record);
      vm.accepted++;
      vm.migration = {
        record,
        passesLeft: 1 + Math.floor(random() * 4),
        fail: random() < chances.asyncFail,
      };
      vm.status = live ? "MIGRATING" : "RESIZE";
      vm.taskState = live ? "migrating" : "resize_prep";
      outcomes.push(
        random() < chances.ambiguousError
          ? {
            id: vm.id,
            outcome: "error",
            message: "timeout (Nova got it anyway)",
          }
          : { id: vm.id, outcome: "started" },
      );
    }
    const recorded = recordStarts(plan, outcomes, now, OPTIONS);
    if (random() >= chances.lostWrite) status = recorded.status;
    if (plan.start.length > 0) {
      maxOverLimit = Math.max(maxOverLimit, inFlightTruth() - limit);
      trace(`truth ${inFlightTruth()} limit ${limit}`);
    }
    if (
      plan.finished && status !== undefined &&
      recorded.status.finishedAt !== undefined
    ) {
      finished = true;
    }

    // Nova moves on while the operator sleeps.
    for (const vm of vms) {
      if (vm.migration === undefined) continue;
      const r = vm.migration.record;
      if (r.status === "queued") {
        const running = records.filter((x) =>
          x.migrationType === "live-migration" && x.status === "running"
        ).length;
        if (running < novaLimit) {
          r.status = "running";
        }
        continue;
      }
      vm.migration.passesLeft--;
      if (vm.migration.passesLeft > 0) continue;
      if (vm.migration.fail) {
        // Since 2.34: the VM stays ACTIVE on the source, only the record says error.
        r.status = "error";
        vm.status = vm.resting;
      } else if (r.migrationType === "live-migration") {
        r.status = "completed";
        vm.host = "node007";
        vm.status = vm.resting;
      } else {
        r.status = "finished";
        vm.host = "node007";
        vm.status = "VERIFY_RESIZE";
      }
      vm.taskState = null;
      vm.migration = undefined;
    }
    // The host settles in the second half, so that the drain can end.
    const settling = pass >= passes / 2;
    for (const vm of vms) {
      if (settling) break;
      if (
        !vm.deleted && vm.host === HOST && vm.migration === undefined &&
        random() < chances.deleteVm
      ) {
        vm.deleted = true;
      }
    }
    if (!settling && random() < chances.arrive) addVm();
  }
  return { vms, status, maxOverLimit, finished };
}

Deno.test("simulation: a calm drain starts every VM exactly once, within the limit, and ends", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 2 ** 31 }),
      fc.integer({ min: 1, max: 12 }),
      fc.integer({ min: 1, max: 4 }),
      fc.integer({ min: 1, max: 3 }),
      (seed, vmCount, limit, novaLimit) => {
        const result = simulate(seed, vmCount, [limit], novaLimit, CALM, 80);
        assert.equal(result.maxOverLimit <= 0, true, "over the limit");
        for (const vm of result.vms) {
          assert.equal(
            vm.accepted,
            1,
            `${vm.id} accepted ${vm.accepted} times`,
          );
          assert.equal(vm.host, "node007");
        }
        assert.ok(result.finished);
        assert.equal(result.status?.migratedCount, vmCount);
        assert.equal(result.status?.outstandingCount, 0);
        assert.equal(result.status?.inFlightCount, 0);
        const evicting = result.status?.conditions?.find((c) =>
          c.type === "Evicting"
        );
        assert.equal(evicting?.reason, "Succeeded");
      },
    ),
    { numRuns: 150 },
  );
});

Deno.test("simulation: 5 VMs with limit 3 start exactly 3 in the first pass", () => {
  const plan = planPass({
    host: HOST,
    servers: ["a", "b", "c", "d", "e"].map((id) => ({
      id,
      status: "ACTIVE",
      host: HOST,
      taskState: null,
      flavor: { ramMb: 1024 },
    })),
    migrations: [],
    departed: [],
    status: undefined,
    limit: 3,
    limitSource: "policy",
    clusterBudgetLeft: Infinity,
    now: T0,
    options: OPTIONS,
  });
  assert.equal(plan.start.length, 3);
});

Deno.test("simulation: a rough drain never triggers a migrating VM and never exceeds the limit", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 2 ** 31 }),
      fc.integer({ min: 1, max: 14 }),
      fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 6 }),
      fc.integer({ min: 1, max: 3 }),
      (seed, vmCount, limits, novaLimit) => {
        const result = simulate(seed, vmCount, limits, novaLimit, {
          asyncFail: 0.25,
          startError: 0.1,
          ambiguousError: 0.05,
          notAttempted: 0.05,
          lostWrite: 0.2,
          lookupFails: 0.1,
          deleteVm: 0.02,
          arrive: 0.05,
        }, 120);
        assert.ok(
          result.maxOverLimit <= 0,
          `over the limit by ${result.maxOverLimit}`,
        );
      },
    ),
    { numRuns: 150 },
  );
});

Deno.test("simulation: with failures and restarts, nothing is left behind but exhausted VMs", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 2 ** 31 }),
      fc.integer({ min: 1, max: 10 }),
      fc.integer({ min: 1, max: 4 }),
      (seed, vmCount, limit) => {
        const result = simulate(seed, vmCount, [limit], 2, {
          ...CALM,
          asyncFail: 0.3,
          startError: 0.1,
          ambiguousError: 0.05,
          lostWrite: 0.2,
          lookupFails: 0.1,
          deleteVm: 0.01,
          arrive: 0.03,
        }, 200);
        const failed = new Map(
          (result.status?.failed ?? []).map((f) => [f.id, f]),
        );
        for (const vm of result.vms) {
          if (vm.deleted) continue;
          assert.notEqual(
            vm.status,
            "VERIFY_RESIZE",
            `${vm.id} never confirmed`,
          );
          if (vm.host !== HOST) continue;
          const f = failed.get(vm.id);
          assert.ok(
            f !== undefined && f.attempts >= OPTIONS.maxAttempts,
            `${vm.id} left behind with ${f?.attempts ?? 0} attempts`,
          );
        }
        assert.equal(result.status?.inFlightCount, 0);
      },
    ),
    { numRuns: 100 },
  );
});
