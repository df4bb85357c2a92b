/**
 * Side by side with the upstream operator: its Hypervisor CRD installed
 * (tests/testdata/upstream/, no status.lastDrain, status not open to
 * unknown fields) in a real API server, evictor's own Eviction CRDs beside
 * it. The API server prunes status.lastDrain without an error; evictor
 * (`main.ts run --controllers=eviction` as a process) says so once at
 * start-up (one log line, one Warning Event on the CRD) and keeps what a
 * drain learned in the Hypervisor's annotation, where capacity/history.ts
 * (what `kubectl evictor plan` and later drains predict from) finds it.
 */
import assert from "node:assert/strict";
import { KubeClient } from "../framework/client.ts";
import { EvictionKind, HypervisorKind } from "../controllers/kinds.ts";
import type { Eviction, Hypervisor } from "../models/mod.ts";
import { drainLessons } from "../capacity/history.ts";
import {
  LAST_DRAIN_ANNOTATION,
  lastDrainOf,
} from "../capacity/last_drain_record.ts";
import { applyCrdFiles, startEnvtest } from "./harness/envtest.ts";
import { uniqueSuffix, waitFor } from "./harness/eviction_env.ts";
import { startNovaSim } from "./harness/nova_sim/mod.ts";
import { createEviction, registerHypervisor } from "./harness/process_drain.ts";
import {
  operatorLogTail,
  startOperatorProcess,
} from "./harness/operator_process.ts";

const ROOT = new URL("../", import.meta.url);
const VMS = 3;

Deno.test({
  name:
    "with the upstream operator's Hypervisor CRD, status.lastDrain is pruned: evictor says so once and keeps the lesson in an annotation",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    // Its own API server: the shared one has evictor's Hypervisor CRD.
    const e = await startEnvtest({ installCrds: false });
    const s = uniqueSuffix();
    const src = `up-${s}`;
    const sim = await startNovaSim({
      timeScale: 50,
      hosts: [
        { name: src, ramMb: 1_000_000 },
        { name: `up-dst-${s}`, ramMb: 1_000_000 },
      ],
      serverGroups: [{
        host: src,
        count: VMS,
        namePrefix: "vm",
        ramMb: [2048],
      }],
    });
    const client = await KubeClient.fromKubeConfig(e.kubeConfig());
    let op: Awaited<ReturnType<typeof startOperatorProcess>> | undefined;
    try {
      await applyCrdFiles(e, [
        new URL("tests/testdata/upstream/kvm.cloud.sap_hypervisors.yaml", ROOT)
          .pathname,
        new URL("manifests/crds/kvm.cloud.sap_evictions.yaml", ROOT).pathname,
        new URL("manifests/crds/kvm.cloud.sap_evictionpolicies.yaml", ROOT)
          .pathname,
      ], [
        "hypervisors.kvm.cloud.sap",
        "evictions.kvm.cloud.sap",
        "evictionpolicies.kvm.cloud.sap",
      ]);
      const labels = { "evictor-test": s };
      await registerHypervisor(client, sim, src, labels);
      // The premise: a write of status.lastDrain succeeds, and is dropped.
      const probe = await client.patch<Hypervisor>(
        HypervisorKind,
        src,
        {
          status: {
            lastDrain: {
              eviction: "probe",
              startedAt: "2026-01-01T00:00:00Z",
              endedAt: "2026-01-01T00:01:00Z",
              migrated: 0,
            },
          },
        },
        "merge",
        "status",
      );
      assert.equal(probe.status?.lastDrain, undefined, "not pruned");
      assert.ok(probe.status?.hypervisorId !== undefined);

      op = await startOperatorProcess({
        kubeconfigPath: e.kubeconfigPath,
        cloudsYaml: sim.cloudsYaml(),
        args: [
          "--controllers=eviction",
          `--label-selector=evictor-test=${s}`,
          "--poll-interval=100ms",
          "--drain-settle=300ms",
          "--webhook-bind-address=0",
          "--metrics-bind-address=0",
        ],
      });
      const running = op;
      await createEviction(client, src, labels);
      const hv = await waitFor(
        "the drain's lesson on the Hypervisor",
        async () => {
          const h = await client.get<Hypervisor>(HypervisorKind, src);
          return h.metadata?.annotations?.[LAST_DRAIN_ANNOTATION] === undefined
            ? undefined
            : h;
        },
        180_000,
        200,
      ).catch(async (err) => {
        throw new Error(`${err}\n${await operatorLogTail(running)}`);
      });
      assert.equal(hv.status?.lastDrain, undefined);
      const record = lastDrainOf(hv);
      assert.equal(record?.eviction, src);
      assert.equal(record?.migrated, VMS);
      // what plan and later drains read
      const lessons = drainLessons([], [hv], () => undefined);
      assert.deepEqual(lessons.map((l) => l.host), [src]);

      // said once: one log line at start-up, one Event on the CRD
      const log = await running.log();
      const warnings = log.split("\n").filter((l) =>
        l.includes("the installed Hypervisor CRD")
      );
      assert.equal(warnings.length, 1, warnings.join("\n"));
      assert.match(warnings[0] ?? "", /"level":40|"level":"warn"/);
      assert.match(warnings[0] ?? "", /status\.lastDrain/);
      const events = await e.kubectl([
        "get",
        "events",
        "-n",
        "default",
        "--field-selector",
        "involvedObject.name=hypervisors.kvm.cloud.sap,reason=FieldsPruned",
        "-o",
        "jsonpath={.items[*].type}",
      ]);
      assert.equal(events.code, 0, events.stderr);
      assert.equal(events.stdout.trim(), "Warning");
      // kept, not rewritten: the finished drain's later passes (every
      // poll interval) find the lesson recorded
      await waitFor(
        "the drain finished",
        async () => {
          const ev = await client.get<Eviction>(EvictionKind, src);
          return ev.status?.finishedAt === undefined ? undefined : true;
        },
        60_000,
        100,
      );
      const settled = await client.get<Hypervisor>(HypervisorKind, src);
      await new Promise((r) => setTimeout(r, 2_000));
      const again = await client.get<Hypervisor>(HypervisorKind, src);
      assert.equal(
        again.metadata?.resourceVersion,
        settled.metadata?.resourceVersion,
        "the Hypervisor was written again",
      );
    } finally {
      await op?.stop();
      client.close();
      await sim.close();
      await e.stop();
    }
  },
});
