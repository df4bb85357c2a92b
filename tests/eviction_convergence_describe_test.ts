/**
 * What a person sees of copies that do not converge, on the real API
 * server: the status the drain computes (withConvergence) and the Events it
 * records (reportPass) for two passes are kept by the CRD's schema (nothing
 * pruned, the generated zod schema agrees) and `kubectl describe eviction`
 * shows the NotConverging condition, the copy's progress, the request's
 * outcome and the Events with who asked.
 */
import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { KubeClient } from "../framework/client.ts";
import { EventRecorder } from "../framework/events.ts";
import { silentLogger } from "../framework/logger.ts";
import type { Eviction, EvictionStatus } from "../models/mod.ts";
import { EvictionSchema } from "../models/mod.ts";
import { EvictionKind } from "../controllers/kinds.ts";
import { EvictionMetrics } from "../controllers/eviction/metrics.ts";
import { withConvergence } from "../controllers/eviction/next_status.ts";
import type { Plan } from "../controllers/eviction/plan_types.ts";
import { reportPass } from "../controllers/eviction/report.ts";
import { sharedEnvtest } from "./harness/envtest.ts";
import { emptyPlan } from "./harness/plan_fixtures.ts";

const GIB = 1024 ** 3;

Deno.test({
  name:
    "kubectl describe eviction shows NotConverging, each copy's progress, the requests' outcomes and the Events with who asked",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const api = await sharedEnvtest();
    const client = await KubeClient.fromKubeConfig(api.kubeConfig());
    const events = new EventRecorder(client, "evictor");
    const name = `conv-${crypto.randomUUID().slice(0, 8)}`;
    try {
      let ev = await client.create<Eviction>(EvictionKind, {
        metadata: { name },
        spec: { hypervisor: name, reason: "kernel 6.12" },
      } as Eviction);
      const now = Date.parse("2026-12-07T12:00:00Z");
      const inFlight = [
        {
          id: "vm-a",
          kind: "live" as const,
          startedAt: "2026-12-07T11:00:00Z",
          migrationId: "7",
        },
        {
          id: "vm-b",
          kind: "live" as const,
          startedAt: "2026-12-07T11:30:00Z",
          migrationId: "8",
        },
      ];
      const first = emptyPlan({
        notConverging: [{
          id: "vm-a",
          migrationId: "7",
          why: "progress",
          remainingBytes: 10 * GIB,
          totalBytes: 512 * GIB,
          sinceSeconds: 60,
          onTimeout: "ForceComplete",
          actAt: "2026-12-07T12:05:00Z",
        }],
        forceComplete: [{
          id: "vm-b",
          migrationId: "8",
          reason: "requested",
          requestedBy: "alice",
        }],
        requestOutcomes: [{
          server: "vm-b",
          action: "ForceComplete",
          requestedBy: "alice",
          requestedAt: "2026-12-07T11:59:00Z",
          outcome: "Sent",
          message: "",
        }],
      });
      // what the planner writes of the copies (plan_converge.ts)
      const planned = [
        {
          ...inFlight[0]!,
          memoryTotalBytes: 512 * GIB,
          memoryRemainingBytes: 10 * GIB,
          bytesPerSecond: 0,
          notConverging: true,
          deadlineAt: "2026-12-07T12:05:00Z",
        },
        { ...inFlight[1]!, forceCompleteSentAt: "2026-12-07T12:00:00.000Z" },
      ];
      const pass = async (
        p: Plan,
        nowMs: number,
        planner: EvictionStatus = { inFlight },
      ) => {
        const before: EvictionStatus = ev.status ?? {};
        const next = withConvergence({ ...before, ...planner }, {
          notConverging: p.notConverging,
          requestOutcomes: p.requestOutcomes,
          refusals: [],
          now: new Date(nowMs),
          generation: 1,
        });
        EvictionSchema.parse({ ...ev, status: next });
        ev = await client.replace<Eviction>(
          EvictionKind,
          { ...ev, status: next },
          "status",
        );
        const reported = reportPass(
          {
            host: name,
            plan: { ...p, next },
            before,
            next,
            now: new Date(nowMs),
          },
          new EvictionMetrics(new Registry()),
          silentLogger(),
        );
        for (const e of reported.events) {
          await events.record(EvictionKind, ev, e);
        }
        return next;
      };
      const written = await pass(first, now, { inFlight: planned });
      // nothing pruned: the API server keeps what the drain wrote
      const read = await client.get<Eviction>(EvictionKind, name);
      assert.deepEqual(read.status?.inFlight, written.inFlight);
      assert.deepEqual(read.status?.actions, written.actions);
      const a = read.status?.inFlight?.find((e) => e.id === "vm-a");
      assert.equal(a?.memoryRemainingBytes, 10 * GIB);
      assert.equal(a?.notConverging, true);
      assert.equal(a?.deadlineAt, "2026-12-07T12:05:00Z");
      const b = read.status?.inFlight?.find((e) => e.id === "vm-b");
      assert.equal(b?.forceCompleteSentAt, "2026-12-07T12:00:00.000Z");

      const shown = await api.kubectl(["describe", "eviction", name]);
      assert.equal(shown.code, 0, shown.stderr);
      const out = shown.stdout;
      for (
        const want of [
          /Type:\s+NotConverging/,
          /Reason:\s+ProgressStalled/,
          /vm-a \(migration 7\): remaining memory not falling/,
          /force-completes it at 2026-12-07T12:05:00Z/,
          /Memory Remaining Bytes:\s+10737418240/,
          /Memory Total Bytes:\s+549755813888/,
          /Not Converging:\s+true/,
          /Force Complete Sent At:\s+2026-12-07T12:00:00/,
          /Outcome:\s+Sent/,
          /Requested By:\s+alice/,
          /Warning\s+NotConverging\s+.*vm-a \(migration 7\)/,
          /Normal\s+ForceCompleteRequested\s+.*alice asked to force-complete the live migration of vm-b/,
        ]
      ) assert.match(out, want);

      // the next pass: vm-a still stalled, the request done: no new Event
      await pass(
        emptyPlan({ notConverging: first.notConverging }),
        now + 60_000,
      );
      // the one after: vm-a's copy aborted once, nothing stalled any more
      await pass(
        emptyPlan({
          abort: [{ id: "vm-a", migrationId: "7", reason: "timeout" }],
        }),
        now + 120_000,
        {
          inFlight,
          aborted: [{
            id: "vm-a",
            tries: 1,
            lastAbortedAt: "2026-12-07T12:02:00.000Z",
            reason: "did not converge within its policy's bound",
          }],
        },
      );
      const again = await api.kubectl(["describe", "eviction", name]);
      assert.equal(again.code, 0, again.stderr);
      for (
        const want of [
          /Reason:\s+Converging/,
          /every live copy in flight converges/,
          /Aborted:\s+Id:\s+vm-a\s+Last Aborted At:\s+2026-12-07T12:02:00/,
          /Tries:\s+1/,
        ]
      ) assert.match(again.stdout, want);
      // one NotConverging Event for the copy, not one per pass
      assert.equal(
        [...again.stdout.matchAll(/Warning\s+NotConverging/g)].length,
        1,
      );
    } finally {
      await client.delete(EvictionKind, name).catch(() => {});
      client.close();
    }
  },
});
