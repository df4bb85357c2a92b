import assert from "node:assert/strict";
import { createLogger } from "./logger.ts";
import { Operator } from "./operator.ts";
import { MAX_SHUTDOWN_RESERVE_MS, shutdownBudget, until } from "./shutdown.ts";
import type { KubeObject } from "./kind.ts";
import {
  adminClient,
  ConfigMaps,
  createNamespace,
  deleteNamespace,
  INTEGRATION,
  sharedEnvtest,
  uniq,
  waitFor,
} from "../tests/harness/framework_util.ts";

Deno.test("shutdownBudget: handlers get the timeout less a reserve of a fifth, at most 5 s", () => {
  const table: [number, number, number][] = [
    // timeout, handler grace, end after abort
    [30_000, 25_000, 2_500],
    [25_000, 20_000, 2_500],
    [10_000, 8_000, 1_000],
    [2_000, 1_600, 200],
    [0, 0, 0],
  ];
  for (const [timeout, grace, end] of table) {
    const b = shutdownBudget(timeout);
    assert.equal(b.handlerGraceMs, grace, `${timeout}`);
    assert.equal(b.handlerEndMs, end, `${timeout}`);
    assert.equal(b.totalMs, timeout);
    // the handlers' whole share ends before the deadline, with time left
    // to give the Lease up
    assert.ok(b.handlerGraceMs + b.handlerEndMs <= b.totalMs);
    assert.ok(
      b.totalMs - b.handlerGraceMs - b.handlerEndMs <=
        MAX_SHUTDOWN_RESERVE_MS / 2,
    );
  }
  assert.throws(() => shutdownBudget(-1), /got -1/);
  assert.throws(() => shutdownBudget(Number.NaN), /got NaN/);
});

Deno.test("until: true for work that ends (or fails) in time, false at the deadline", async () => {
  assert.equal(await until(Promise.resolve(), Date.now() + 1000), true);
  assert.equal(
    await until(Promise.reject(new Error("x")), Date.now() + 1000),
    true,
  );
  assert.equal(await until(new Promise(() => {}), Date.now() + 20), false);
});

Deno.test({
  name:
    "operator stop: a handler that ignores its abort does not hold the stop past the shutdown timeout; the Lease is given up",
  ...INTEGRATION,
  fn: async () => {
    const env = await sharedEnvtest();
    const client = await adminClient(env);
    const ns = await createNamespace(client, "fw-stop");
    const label = uniq("t");
    const lease = uniq("lease");
    let entered = false;
    let aborted = false;
    const op = new Operator({
      name: "fwtest-stop",
      kubeConfig: env.kubeConfig(),
      watchNamespace: ns,
      labelSelector: `t=${label}`,
      healthAddress: false,
      handleSignals: false,
      processMetrics: false,
      shutdownTimeoutMs: 2_000,
      logger: createLogger({ level: "silent" }),
      leaderElection: { leaseName: lease, leaseNamespace: ns, identity: "a" },
    });
    // never ends, whatever its signal says
    op.reconcile(ConfigMaps, ({ object, signal }) => {
      if (object === undefined) return;
      entered = true;
      signal.addEventListener("abort", () => aborted = true);
      return new Promise(() => {});
    });
    try {
      await client.create(ConfigMaps, {
        metadata: { name: "stuck", namespace: ns, labels: { t: label } },
      } as KubeObject);
      await op.start();
      await waitFor("the handler runs", () => entered, 30_000);
      const stopped = op.stop();
      // stop() resolves though the handler never does: the deadline holds
      assert.equal(await until(stopped, Date.now() + 30_000), true);
      assert.equal(await op.done, "stopped");
      assert.ok(aborted, "the handler's signal was aborted");
      const held = await client.request<{ spec: { holderIdentity?: string } }>(
        "GET",
        `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/${lease}`,
      );
      assert.equal(held.spec.holderIdentity ?? "", "", "the Lease given up");
    } finally {
      await deleteNamespace(client, ns);
      client.close();
    }
  },
});
