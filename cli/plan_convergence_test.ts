import assert from "node:assert/strict";
import { resolveConvergence } from "../limits/convergence.ts";
import {
  actionText,
  convergenceInputs,
  predictConvergence,
} from "./plan_convergence.ts";
import { convergenceLines } from "./plan.ts";

const HANA = "CUSTOM_HANA_EXCLUSIVE_HOST";
const cost = { mbPerSecond: 100, overheadSeconds: 10, fixedSeconds: 30 };
const vm = (id: string, ramMb: number, live = true) => ({
  id,
  name: `name-${id}`,
  ramMb,
  live,
});

Deno.test("convergenceInputs: the policy's default, its matching traits, the Eviction's own, the legacy flat case", () => {
  const policy = {
    maxConcurrentMigrations: 4,
    migrationTimeoutSeconds: 3600,
    abortStuckMigrations: true,
    convergence: { completionTimeoutPerGiB: 800, onTimeout: "Abort" },
    traitLimits: [
      {
        trait: HANA,
        maxConcurrentMigrations: 1,
        convergence: { onTimeout: "ForceComplete", bogus: 1 },
      },
      { trait: "CUSTOM_OTHER", maxConcurrentMigrations: 2 },
    ],
  };
  assert.deepEqual(
    convergenceInputs(policy, [HANA, "HW_CPU_X86_AVX2"], {
      convergence: { maxAbortedTries: 5, onTimeout: "Explode" },
    }),
    {
      abortStuckMigrations: true,
      defaults: { completionTimeoutPerGiB: 800, onTimeout: "Abort" },
      migrationTimeoutSeconds: 3600,
      traits: [{ trait: HANA, convergence: { onTimeout: "ForceComplete" } }],
      eviction: { maxAbortedTries: 5 },
    },
  );
  // no policy, no Eviction: the flags' defaults (nothing bounds a copy)
  assert.deepEqual(convergenceInputs(undefined, [HANA], undefined), {
    abortStuckMigrations: false,
    traits: [],
  });
});

Deno.test("predictConvergence: a VM whose copy at the learned rate outlasts its bound is named with the policy's action", () => {
  const rows: {
    name: string;
    policy: Parameters<typeof resolveConvergence>[0];
    vms: ReturnType<typeof vm>[];
    inFlight?: { id: string; notConverging?: unknown; deadlineAt?: unknown }[];
    /** [id, predicted, bound, basis] of each named VM. */
    want: [string, number | undefined, number | undefined, string][];
  }[] = [
    {
      name: "no bound: nothing is predicted",
      policy: { abortStuckMigrations: false },
      vms: [vm("a", 1024 * 1024)],
      want: [],
    },
    {
      // 1 TiB at 100 MB/s: 10486 s + 10 s, against the flat hour
      name: "the flat timeout: only the large VM",
      policy: { abortStuckMigrations: true, migrationTimeoutSeconds: 3600 },
      vms: [vm("big", 1024 * 1024), vm("small", 4096)],
      want: [["big", 10496, 3600, "size"]],
    },
    {
      // per GiB the bound grows with the size: the rate decides (10.24 s per GiB here)
      name: "per GiB: a rate below the bound's names every VM",
      policy: {
        abortStuckMigrations: false,
        defaults: { completionTimeoutPerGiB: 10 },
      },
      vms: [vm("a", 8192), vm("b", 512)],
      // the time per migration counts too: half a GiB has the bound of one
      want: [["a", 92, 80, "size"], ["b", 16, 10, "size"]],
    },
    {
      name: "cold migrations have no bound",
      policy: { abortStuckMigrations: true, migrationTimeoutSeconds: 60 },
      vms: [vm("off", 1024 * 1024, false)],
      want: [],
    },
    {
      name: "a copy in flight the drain reports not converging",
      policy: { abortStuckMigrations: false, migrationTimeoutSeconds: 36000 },
      vms: [vm("run", 4096, false), vm("fine", 4096, false)],
      inFlight: [
        { id: "run", notConverging: true, deadlineAt: "2026-12-07T10:00:00Z" },
        { id: "fine", notConverging: false },
      ],
      want: [["run", undefined, 36000, "status"]],
    },
  ];
  for (const r of rows) {
    const c = predictConvergence(
      r.vms,
      resolveConvergence(r.policy),
      cost,
      r.inFlight ?? [],
    );
    assert.deepEqual(
      c.notConverging.map((v) => [
        v.id,
        v.predictedSeconds,
        v.boundSeconds,
        v.basis,
      ]),
      r.want,
      r.name,
    );
    assert.match(c.basis, /knows no VM's dirty rate/, r.name);
  }
});

Deno.test("actionText and convergenceLines: what each onTimeout does, said per VM", () => {
  const abort = resolveConvergence({
    abortStuckMigrations: true,
    migrationTimeoutSeconds: 3600,
  });
  assert.equal(
    actionText(abort),
    "aborted and retried alone after the others; left for a person after 2 aborted tries",
  );
  assert.match(
    actionText(
      resolveConvergence({
        abortStuckMigrations: false,
        defaults: { onTimeout: "ForceComplete" },
      }),
    ),
    /^force-completed \(post-copy where Nova permits it, else paused until it completes\); aborted if still copying 5m00s later$/,
  );
  const c = predictConvergence(
    [vm("big", 1024 * 1024)],
    abort,
    cost,
    [],
  );
  const lines = convergenceLines(c);
  assert.equal(
    lines[0],
    "  converge:  1h00m00s per copy (migrationTimeoutSeconds), progress timeout 2m30s, onTimeout Abort (policy)",
  );
  assert.equal(
    lines[2],
    "  not converging: name-big (big, 1048576 MB): copy predicted 2h54m56s, bound 1h00m00s: aborted and retried alone after the others; left for a person after 2 aborted tries",
  );
  assert.equal(
    convergenceLines(predictConvergence([], abort, cost, []))[2],
    "             every VM is predicted to converge within its bound",
  );
});
