/**
 * A stop within its grace period, at any size: `main.ts run` as a process
 * with both controllers and leader election, over 300 Hypervisors and 300
 * finished Evictions in the real API server (the simulator with 300 hosts).
 * SIGTERM ends the process with code 0 within `--shutdown-timeout` (plus
 * the time a loaded machine takes to start and end a process), and the
 * Lease is given up (holderIdentity empty), so that another replica leads
 * at once.
 */
import assert from "node:assert/strict";
import { KubeClient } from "../framework/client.ts";
import { EvictionKind } from "../controllers/kinds.ts";
import type { Eviction } from "../models/mod.ts";
import { sharedEnvtest } from "./harness/envtest.ts";
import { uniqueSuffix, waitFor } from "./harness/eviction_env.ts";
import { startNovaSim } from "./harness/nova_sim/mod.ts";
import { createEviction, registerHypervisor } from "./harness/process_drain.ts";
import {
  operatorLogTail,
  startOperatorProcess,
} from "./harness/operator_process.ts";

const HOSTS = 300;
const SHUTDOWN_TIMEOUT_S = 10;
/**
 * What a loaded machine may add to the bound the process keeps itself:
 * signal delivery, the last timers, the process's end. The stop this test
 * was written for took more than twice its timeout.
 */
const SLACK_MS = 10_000;

/** Runs `fn` over `items`, `width` at a time. */
async function inBatches<T>(
  items: T[],
  width: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  for (let i = 0; i < items.length; i += width) {
    await Promise.all(items.slice(i, i + width).map(fn));
  }
}

Deno.test({
  name:
    "shutdown: SIGTERM with 300 hosts and 300 finished Evictions ends within --shutdown-timeout and gives the Lease up",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const env = await sharedEnvtest();
    const s = uniqueSuffix();
    const hosts = Array.from(
      { length: HOSTS },
      (_, i) => `stop-${s}-${String(i).padStart(3, "0")}`,
    );
    const sim = await startNovaSim({
      timeScale: 50,
      hosts: hosts.map((name) => ({ name })),
    });
    const client = await KubeClient.fromKubeConfig(env.kubeConfig());
    const labels = { "evictor-test": s };
    const lease = `evictor-stop-${s}`;
    let op: Awaited<ReturnType<typeof startOperatorProcess>> | undefined;
    try {
      await inBatches(hosts, 20, async (h) => {
        await registerHypervisor(client, sim, h, labels);
        await createEviction(client, h, labels);
      });
      op = await startOperatorProcess({
        kubeconfigPath: env.kubeconfigPath,
        cloudsYaml: sim.cloudsYaml(),
        args: [
          `--label-selector=evictor-test=${s}`,
          "--leader-elect",
          "--leader-election-namespace=default",
          `--leader-election-id=${lease}`,
          `--shutdown-timeout=${SHUTDOWN_TIMEOUT_S}s`,
          "--poll-interval=200ms",
          "--drain-settle=500ms",
          "--hypervisor-resync-interval=2s",
          "--webhook-bind-address=0",
          "--metrics-bind-address=0",
        ],
      });
      const running = op;
      await waitFor(
        `all ${HOSTS} Evictions finished`,
        async () => {
          const { items } = await client.list(EvictionKind, {
            labelSelector: `evictor-test=${s}`,
          });
          const done = (items as Eviction[]).filter((e) =>
            e.status?.finishedAt !== undefined
          );
          return done.length === HOSTS ? true : undefined;
        },
        600_000,
        1_000,
      ).catch(async (err) => {
        throw new Error(`${err}\n${await operatorLogTail(running)}`);
      });
      // the finished drains keep looking at their hosts, the Hypervisors
      // resync: the operator is busy as it would be in a cluster
      await new Promise((r) => setTimeout(r, 3_000));
      const held = await client.request<{ spec: { holderIdentity?: string } }>(
        "GET",
        `/apis/coordination.k8s.io/v1/namespaces/default/leases/${lease}`,
      );
      assert.notEqual(held.spec.holderIdentity ?? "", "", "nobody leads");

      const sent = Date.now();
      // the harness's SIGKILL comes only long after the bound
      await running.stop(SHUTDOWN_TIMEOUT_S * 1000 + 60_000);
      const took = Date.now() - sent;
      const code = await running.exited;
      op = undefined;
      const log = await running.log();
      assert.equal(
        code,
        0,
        `exit code ${code}\n${await operatorLogTail(running)}`,
      );
      assert.ok(
        took <= SHUTDOWN_TIMEOUT_S * 1000 + SLACK_MS,
        `stopped ${took} ms after SIGTERM with --shutdown-timeout=${SHUTDOWN_TIMEOUT_S}s\n${await operatorLogTail(
          running,
        )}`,
      );
      const stopped = log.split("\n").filter((l) =>
        l.includes('"operator stopped"')
      ).map((l) => JSON.parse(l) as { elapsedMs?: number });
      assert.equal(stopped.length, 1, "no 'operator stopped' line");
      // everything closed in time, not cut off at the deadline: no step of
      // the stop (a watch that did not see its abort) waited it out
      assert.ok(
        !log.includes("the shutdown timeout passed before everything closed"),
        await operatorLogTail(running),
      );
      assert.ok(
        !log.includes("handlers still running after their grace"),
        await operatorLogTail(running),
      );
      assert.ok(log.includes('"released the leader lease"'));
      const after = await client.request<{ spec: { holderIdentity?: string } }>(
        "GET",
        `/apis/coordination.k8s.io/v1/namespaces/default/leases/${lease}`,
      );
      assert.equal(after.spec.holderIdentity ?? "", "", "the Lease is held");
    } finally {
      await op?.stop();
      await client.request(
        "DELETE",
        `/apis/coordination.k8s.io/v1/namespaces/default/leases/${lease}`,
      ).catch(() => {});
      await inBatches(hosts, 20, async (h) => {
        await client.request(
          "DELETE",
          `/apis/kvm.cloud.sap/v1/evictions/${h}`,
        ).catch(() => {});
      });
      client.close();
      await sim.close();
    }
  },
});
