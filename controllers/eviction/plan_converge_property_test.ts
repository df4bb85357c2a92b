// Property tests of the planner's convergence decisions: random hosts of
// VMs that converge or not (dirty memory), random policies (every flag
// that touches the rule), random answer delays, drains deleted midway;
// a small Nova model between the passes, the planner's invariants checked
// after every pass.
import assert from "node:assert/strict";
import fc from "fast-check";
import type { EvictionStatus } from "../../models/mod.ts";
import {
  type ConvergencePolicy,
  copyTimeoutSeconds,
  resolveConvergence,
} from "../../limits/convergence.ts";
import type { CopyProgress } from "../../openstack/informer/progress_types.ts";
import type {
  DepartedServer,
  ObservedMigration,
  ObservedServer,
} from "../../openstack/informer/snapshot.ts";
import type { ActionNote } from "./once.ts";
import { planPass } from "./plan.ts";
import type { PlanOptions } from "./plan_options.ts";
import { abortedOf } from "./plan_converge.ts";
import {
  at,
  HOST,
  novaTime,
  OPTIONS,
} from "../../tests/harness/plan_fixtures.ts";

const STEP_S = 10;
const PASSES = 150;

interface SimVm {
  id: string;
  ramMb: number;
  /** Dirties memory as fast as the link copies: never converges alone. */
  dirty: boolean;
  /** Seconds per GiB its copy takes when it converges. */
  perGiB: number;
  /** force_complete ends its copy (post-copy), else it stays unconverged. */
  fcWorks: boolean;
  /** The pass it appears on the host (an arrival: work, not a failure). */
  joinAt: number;
  host: string;
  copy?: {
    mid: number;
    startS: number;
    total: number;
    remaining: number;
    status: string;
    /** An abort Nova answered but did not carry out (the race). */
    forced: boolean;
    cancelAtS?: number;
  };
  records: ObservedMigration[];
}

const vmArb = (i: number) =>
  fc.record({
    ramGiB: fc.integer({ min: 1, max: 16 }),
    dirty: fc.integer({ min: 0, max: 2 }).map((n) => n === 0),
    perGiB: fc.integer({ min: 3, max: 40 }),
    fcWorks: fc.boolean(),
    joinAt: fc.oneof(
      fc.constant(0),
      fc.constant(0),
      fc.integer({ min: 1, max: 60 }),
    ),
  }).map((v): SimVm => ({
    id: `vm${i}`,
    ramMb: v.ramGiB * 1024,
    dirty: v.dirty,
    perGiB: v.perGiB,
    fcWorks: v.fcWorks,
    joinAt: v.joinAt,
    host: HOST,
    records: [],
  }));

const optionsArb: fc.Arbitrary<PlanOptions> = fc.record({
  flat: fc.option(fc.integer({ min: 30, max: 900 }), { nil: undefined }),
  abortStuck: fc.boolean(),
  convergence: fc.boolean(),
  perGiB: fc.option(fc.integer({ min: 5, max: 60 }), { nil: undefined }),
  progress: fc.option(fc.integer({ min: 20, max: 300 }), { nil: undefined }),
  onTimeout: fc.option(
    fc.constantFrom(
      "Report" as const,
      "Abort" as const,
      "ForceComplete" as const,
    ),
    { nil: undefined },
  ),
  tries: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
  fcTimeout: fc.option(fc.integer({ min: 10, max: 300 }), { nil: undefined }),
}).map((o): PlanOptions => {
  const base = {
    ...OPTIONS,
    abortStuckMigrations: o.abortStuck,
    ...(o.flat === undefined ? {} : { migrationTimeoutSeconds: o.flat }),
  };
  if (!o.convergence) return base;
  const defaults = {
    ...(o.perGiB === undefined ? {} : { completionTimeoutPerGiB: o.perGiB }),
    ...(o.progress === undefined ? {} : { progressTimeoutSeconds: o.progress }),
    ...(o.onTimeout === undefined ? {} : { onTimeout: o.onTimeout }),
    ...(o.tries === undefined ? {} : { maxAbortedTries: o.tries }),
    ...(o.fcTimeout === undefined
      ? {}
      : { forceCompleteTimeoutSeconds: o.fcTimeout }),
  };
  return {
    ...base,
    convergence: resolveConvergence({
      defaults,
      abortStuckMigrations: o.abortStuck,
      ...(o.flat === undefined ? {} : { migrationTimeoutSeconds: o.flat }),
    }),
  };
});

const worldArb = fc.record({
  vms: fc.integer({ min: 1, max: 7 }).chain((n) =>
    fc.tuple(...Array.from({ length: n }, (_, i) => vmArb(i)))
  ),
  options: optionsArb,
  limit: fc.constantFrom(1, 1, 2, 3),
  /** The pass from which the drain is deleted (limit 0), if any. */
  deletedAt: fc.option(fc.integer({ min: 0, max: PASSES }), { nil: undefined }),
  /** Passes an abort's answer takes, and whether Nova then ignores it. */
  answerDelays: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1 }),
  ignored: fc.array(fc.boolean(), { minLength: 1 }),
  /** Dirty copies' remaining bytes wander by these fractions. */
  wander: fc.array(fc.integer({ min: -3, max: 3 }), { minLength: 1 }),
});

/** The policy the planner applies, as the test reads it. */
function ruleOf(o: PlanOptions): {
  c: ConvergencePolicy | undefined;
  onTimeout: string;
  boundS: (ramMb: number) => number | undefined;
  progressS: number;
} {
  const c = o.convergence;
  if (c !== undefined) {
    return {
      c,
      onTimeout: c.onTimeout,
      boundS: (ram) => copyTimeoutSeconds(c, ram),
      progressS: c.progressTimeoutSeconds,
    };
  }
  return {
    c,
    onTimeout: o.abortStuckMigrations ? "Abort" : "Report",
    boundS: () => o.migrationTimeoutSeconds,
    progressS: o.migrationTimeoutSeconds ?? 0,
  };
}

function server(v: SimVm): ObservedServer {
  const moving = v.copy !== undefined && v.copy.status === "running";
  return {
    id: v.id,
    status: moving ? "MIGRATING" : "ACTIVE",
    host: v.host,
    taskState: moving ? "migrating" : null,
    flavor: { ramMb: v.ramMb },
  };
}

Deno.test("property: convergence in a world of copies that converge or not", () => {
  fc.assert(
    fc.property(worldArb, (w) => {
      const rule = ruleOf(w.options);
      const vms = w.vms.map((v) => ({
        ...v,
        records: [] as ObservedMigration[],
      }));
      let status: EvictionStatus | undefined;
      let mid = 100;
      let draws = 0;
      const draw = <T>(xs: readonly T[]): T => xs[draws++ % xs.length] as T;
      const aborts = new Map<string, ActionNote>();
      const abortAnswerAt = new Map<string, number>();
      const forceCompletes = new Map<string, ActionNote>();
      const progress = new Map<string, CopyProgress>();
      const fcPlanned = new Map<string, number>();
      const actedOn = new Set<string>();
      const abortedMids = new Set<string>();
      const abortedCopies = new Map<string, Set<string>>();
      /** Copies whose abort reached Nova: their VMs must be queued or left. */
      const cancelled = new Set<string>();
      for (let pass = 0; pass < PASSES; pass++) {
        const nowS = pass * STEP_S;
        const nowMs = at(nowS).getTime();
        // Nova moves on.
        for (const v of vms) {
          const c = v.copy;
          if (c === undefined || c.status !== "running") continue;
          if (c.cancelAtS !== undefined && nowS >= c.cancelAtS) {
            c.status = "cancelled";
            cancelled.add(v.id);
          } else if (
            c.forced && forceCompletes.has(String(c.mid)) && v.fcWorks
          ) {
            c.remaining = 0;
          } else if (v.dirty) {
            c.remaining = Math.max(
              c.total / 8,
              Math.min(c.total, c.remaining + c.total * draw(w.wander) / 50),
            );
          } else {
            c.remaining -= (c.total / (v.perGiB * (v.ramMb / 1024))) * STEP_S;
          }
          if (c.status === "running" && c.remaining <= 0) {
            c.status = "completed";
            v.host = "node007";
          }
          const r = v.records.find((m) => m.id === c.mid);
          if (r !== undefined) r.status = c.status;
          if (c.status === "running") {
            const old = progress.get(v.id);
            const lower = old === undefined ||
              old.migrationId !== String(c.mid) ||
              c.remaining < old.lowestRemainingBytes;
            progress.set(v.id, {
              serverId: v.id,
              migrationId: String(c.mid),
              totalBytes: c.total,
              remainingBytes: c.remaining,
              readAtMs: nowMs,
              lowestRemainingBytes: lower
                ? c.remaining
                : old!.lowestRemainingBytes,
              lowestAtMs: lower ? nowMs : old!.lowestAtMs,
            });
          } else progress.delete(v.id);
        }
        for (const [m, t] of abortAnswerAt) {
          const n = aborts.get(m);
          if (n !== undefined && n.answeredAtMs === undefined && nowS >= t) {
            aborts.set(m, { ...n, answeredAtMs: nowMs });
          }
        }
        const limit = w.deletedAt !== undefined && pass >= w.deletedAt
          ? 0
          : w.limit;
        const prevAborted = abortedOf(status);
        const present = vms.filter((v) => v.joinAt <= pass);
        const plan = planPass({
          host: HOST,
          servers: present.filter((v) => v.host === HOST).map(server),
          migrations: vms.flatMap((v) => v.records),
          departed: present.filter((v) => v.host !== HOST).map((
            v,
          ): DepartedServer => ({
            id: v.id,
            server: server(v),
          })),
          status,
          limit,
          limitSource: "policy",
          clusterBudgetLeft: Infinity,
          now: at(nowS),
          options: w.options,
          aborts,
          forceCompletes,
          progress,
        });
        const label = `pass ${pass}`;
        // Nothing at limit 0 beyond what a deleted drain did before.
        if (limit === 0) {
          assert.deepEqual(plan.start, [], label);
          assert.deepEqual(plan.abort, [], label);
          assert.deepEqual(plan.forceComplete, [], label);
        }
        for (const f of plan.forceComplete) {
          assert.ok(
            !fcPlanned.has(f.migrationId),
            `${label}: force_complete twice`,
          );
          assert.notEqual(rule.onTimeout, "Report", label);
          fcPlanned.set(f.migrationId, nowS);
          actedOn.add(f.migrationId);
        }
        for (const a of plan.abort) {
          const n = aborts.get(a.migrationId);
          assert.ok(
            n === undefined || n.answeredAtMs !== undefined,
            `${label}: abort of ${a.migrationId} while one is unanswered`,
          );
          assert.notEqual(rule.onTimeout, "Report", label);
          actedOn.add(a.migrationId);
          abortedMids.add(a.migrationId);
          if (a.reason !== "stuck" && rule.c !== undefined) {
            const copies = abortedCopies.get(a.id) ?? new Set<string>();
            abortedCopies.set(a.id, copies.add(a.migrationId));
            assert.ok(
              copies.size <= rule.c.maxAbortedTries,
              `${label}: ${a.id} aborted beyond maxAbortedTries`,
            );
          }
        }
        // A retried VM starts alone, and nothing starts beside it.
        const running = vms.filter((v) => v.copy?.status === "running");
        for (const s of plan.start) {
          if (prevAborted.has(s.id)) {
            assert.equal(
              plan.start.length,
              1,
              `${label}: retried beside a start`,
            );
            assert.equal(running.length, 0, `${label}: retried beside a copy`);
            const failedBefore = new Set(
              (status?.failed ?? []).map((f) => f.id),
            );
            for (const x of present) {
              if (
                x.id === s.id || x.host !== HOST || prevAborted.has(x.id) ||
                failedBefore.has(x.id)
              ) continue;
              assert.ok(
                x.copy?.status === "running",
                `${label}: ${s.id} retried while ${x.id} is ready`,
              );
            }
          }
        }
        const retried = running.filter((v) => {
          const a = prevAborted.get(v.id);
          return a !== undefined &&
            at(v.copy!.startS).getTime() > Date.parse(a.lastAbortedAt);
        });
        if (retried.length > 0) {
          assert.deepEqual(
            plan.start,
            [],
            `${label}: a start beside a retried copy`,
          );
        }
        // Every aborted VM is queued again or left for a person.
        const failed = new Set((plan.next.failed ?? []).map((f) => f.id));
        const queued = new Set([
          ...plan.start.map((s) => s.id),
          ...plan.waiting.map((x) => x.id),
        ]);
        for (const v of vms) {
          if (!cancelled.has(v.id) || v.host !== HOST) continue;
          if (v.copy?.status === "running") continue;
          assert.ok(
            queued.has(v.id) || failed.has(v.id),
            `${label}: aborted ${v.id} neither queued nor left for a person`,
          );
        }
        // No copy past its bound plus one progress interval without its action.
        if (limit > 0 && rule.onTimeout !== "Report") {
          for (const v of running) {
            const c = v.copy!;
            const bound = rule.boundS(v.ramMb);
            if (bound === undefined) continue;
            const fcS = fcPlanned.get(String(c.mid));
            if (
              fcS !== undefined && rule.c !== undefined &&
              nowS > fcS + rule.c.forceCompleteTimeoutSeconds + rule.progressS +
                  STEP_S
            ) {
              assert.ok(
                abortedMids.has(String(c.mid)),
                `${label}: ${v.id}'s copy ${c.mid} force-completed, no fallback`,
              );
            }
            if (nowS > c.startS + bound + rule.progressS + STEP_S) {
              assert.ok(
                actedOn.has(String(c.mid)),
                `${label}: ${v.id}'s copy ${c.mid} past its bound without action`,
              );
            }
          }
        }
        // Never Succeeded with a VM on the host.
        if (plan.finished) {
          assert.equal(
            present.filter((v) => v.host === HOST).length,
            0,
            label,
          );
        }
        // Act: starts, force-completes, aborts (answers come later).
        for (const s of plan.start) {
          const v = vms.find((x) => x.id === s.id)!;
          const total = v.ramMb * 1048576;
          v.copy = {
            mid: ++mid,
            startS: nowS,
            total,
            remaining: total,
            status: "running",
            forced: false,
          };
          v.records.push({
            id: mid,
            instanceUuid: v.id,
            migrationType: "live-migration",
            status: "running",
            sourceCompute: HOST,
            createdAt: novaTime(nowS),
            updatedAt: novaTime(nowS),
          });
        }
        for (const f of plan.forceComplete) {
          forceCompletes.set(f.migrationId, {
            sentAtMs: nowMs,
            answeredAtMs: nowMs,
          });
          const v = vms.find((x) => x.id === f.id)!;
          if (v.copy !== undefined) v.copy.forced = true;
        }
        for (const a of plan.abort) {
          aborts.set(a.migrationId, { sentAtMs: nowMs });
          const delay = draw(w.answerDelays) * STEP_S;
          abortAnswerAt.set(a.migrationId, nowS + delay);
          const v = vms.find((x) => x.id === a.id)!;
          if (
            v.copy !== undefined && String(v.copy.mid) === a.migrationId &&
            !draw(w.ignored)
          ) {
            v.copy.cancelAtS = nowS + delay;
            v.copy.forced = false;
          }
        }
        status = plan.next;
      }
    }),
    { numRuns: 150 },
  );
});
