import assert from "node:assert/strict";
import fc from "fast-check";
import {
  decideLease,
  LeaderElector,
  nextAttemptDelay,
  validateTiming,
} from "./leader.ts";
import { createLogger } from "./logger.ts";
import { Operator } from "./operator.ts";
import {
  adminClient,
  ConfigMaps,
  createNamespace,
  deleteNamespace,
  hostPort,
  INTEGRATION,
  sharedEnvtest,
  TcpProxy,
  uniq,
  waitFor,
} from "../tests/harness/framework_util.ts";
import type { KubeObject } from "./kind.ts";

Deno.test("leader: lease decisions by the candidate's own observation time", () => {
  assert.deepEqual(decideLease(undefined, "a", 0, 0), { action: "create" });
  assert.deepEqual(
    decideLease(
      { holderIdentity: "a", leaseDurationSeconds: 15 },
      "a",
      0,
      99_999,
    ),
    { action: "renew" },
  );
  assert.deepEqual(
    decideLease({ holderIdentity: "", leaseTransitions: 4 }, "a", 0, 0),
    { action: "take", transitions: 5 },
  );
  const held = {
    holderIdentity: "b",
    leaseDurationSeconds: 15,
    leaseTransitions: 1,
  };
  assert.deepEqual(decideLease(held, "a", 1_000, 16_000), {
    action: "wait",
    holder: "b",
  });
  assert.deepEqual(decideLease(held, "a", 1_000, 16_001), {
    action: "take",
    transitions: 2,
  });
  // the renew deadline of the holder always ends before anyone may take over
  const t = validateTiming({
    leaseDurationMs: 15_000,
    renewDeadlineMs: 10_000,
    retryPeriodMs: 2_000,
  });
  assert.ok(t.renewDeadlineMs < t.leaseDurationMs);
  assert.throws(
    () =>
      validateTiming({
        leaseDurationMs: 5_000,
        renewDeadlineMs: 5_000,
        retryPeriodMs: 1_000,
      }),
    /leaseDurationMs \(5000\) must exceed renewDeadlineMs \(5000\)/,
  );
  assert.throws(
    () =>
      validateTiming({
        leaseDurationMs: 5_000,
        renewDeadlineMs: 1_000,
        retryPeriodMs: 1_000,
      }),
    /renewDeadlineMs \(1000\) must exceed retryPeriodMs \(1000\)/,
  );
});

interface Child {
  identity: string;
  proc: Deno.ChildProcess;
  out: string[];
}

function spawn(
  kubeconfig: string,
  lease: string,
  ns: string,
  identity: string,
): Child {
  const proc = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("./testdata/leader_main.ts", import.meta.url).pathname,
    ],
    env: {
      KUBECONFIG_PATH: kubeconfig,
      LEASE_NAME: lease,
      LEASE_NAMESPACE: ns,
      IDENTITY: identity,
      NO_COLOR: "1",
    },
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const out: string[] = [];
  void (async () => {
    const reader = proc.stdout.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      out.push(...value.split("\n").filter((l) => l !== ""));
    }
  })();
  return { identity, proc, out };
}

Deno.test({
  name:
    "leader: two processes, exactly one leads; killing it hands over within lease duration + retry; SIGTERM releases and exits 0",
  ...INTEGRATION,
  fn: async () => {
    const env = await sharedEnvtest();
    const client = await adminClient(env);
    const ns = await createNamespace(client, "fw-le");
    const lease = uniq("lease");
    const a = spawn(env.kubeconfigPath, lease, ns, "proc-a");
    const b = spawn(env.kubeconfigPath, lease, ns, "proc-b");
    try {
      await waitFor(
        "both started",
        () =>
          a.out.includes("STARTED proc-a") && b.out.includes("STARTED proc-b"),
        60_000,
      );
      const leading = () =>
        [a, b].filter((c) => c.out.some((l) => l.startsWith("LEADING")));
      const [first] = await waitFor(
        "a leader",
        () => leading().length > 0 ? leading() : undefined,
        20_000,
      );
      assert.ok(first !== undefined);
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(leading().length, 1, "exactly one leads");
      const holder = await client.request<{ spec: { holderIdentity: string } }>(
        "GET",
        `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/${lease}`,
      );
      assert.equal(holder.spec.holderIdentity, first.identity);
      const second = first === a ? b : a;
      first.proc.kill("SIGKILL");
      const killedAt = Date.now();
      await first.proc.status;
      await waitFor(
        "the other to lead",
        () => second.out.some((l) => l.startsWith("LEADING")),
        20_000,
        20,
      );
      const took = Date.now() - killedAt;
      // lease 3 s + retry 0.5 s, plus the last renewal interval and scheduling slack
      assert.ok(took <= 3000 + 500 + 500 + 1000, `takeover took ${took} ms`);
      // graceful shutdown: SIGTERM releases the Lease and exits 0
      second.proc.kill("SIGTERM");
      const status = await second.proc.status;
      assert.equal(status.code, 0);
      const released = await client.request<
        { spec: { holderIdentity?: string } }
      >(
        "GET",
        `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/${lease}`,
      );
      assert.equal(released.spec.holderIdentity ?? "", "");
    } finally {
      for (const c of [a, b]) {
        try {
          c.proc.kill("SIGKILL");
        } catch {
          // already gone
        }
        await c.proc.status;
      }
      await deleteNamespace(client, ns);
      client.close();
    }
  },
});

Deno.test({
  name:
    "leader: a leader cut off from the API server stops reconciling before its lease can be taken",
  ...INTEGRATION,
  fn: async () => {
    const env = await sharedEnvtest();
    const client = await adminClient(env);
    const ns = await createNamespace(client, "fw-cut");
    const label = uniq("t");
    const lease = uniq("lease");
    const proxy = new TcpProxy(hostPort(env.server));
    const handled: Array<{ who: string; at: number }> = [];
    const leaderSince = new Map<string, number>();
    const make = (who: string, server?: string) => {
      const op = new Operator({
        name: "fwtest-cut",
        kubeConfig: env.kubeConfig(),
        ...(server === undefined ? {} : { server }),
        watchNamespace: ns,
        labelSelector: `t=${label}`,
        healthAddress: false,
        handleSignals: false,
        exitOnLeaderLoss: false,
        processMetrics: false,
        watchInactivityMs: 1000,
        logger: createLogger({ level: "silent" }),
        leaderElection: {
          leaseName: lease,
          leaseNamespace: ns,
          identity: who,
          leaseDurationMs: 3000,
          renewDeadlineMs: 2000,
          retryPeriodMs: 400,
        },
      });
      op.reconcile(ConfigMaps, ({ object }) => {
        if (object === undefined) return;
        if (!leaderSince.has(who)) leaderSince.set(who, Date.now());
        handled.push({ who, at: Date.now() });
        return { requeueAfterMs: 20 };
      });
      return op;
    };
    try {
      await client.create(
        ConfigMaps,
        {
          metadata: { name: "tick", namespace: ns, labels: { t: label } },
        } as KubeObject,
      );
      const a = make("a", `https://127.0.0.1:${proxy.port}`);
      await a.start();
      await waitFor(
        "a leads and reconciles",
        () => handled.some((h) => h.who === "a"),
      );
      const b = make("b");
      await b.start();
      await new Promise((r) => setTimeout(r, 800));
      assert.ok(a.isLeader && !b.isLeader);
      assert.ok(
        !handled.some((h) => h.who === "b"),
        "the follower runs no handler",
      );
      proxy.cut();
      const cutAt = Date.now();
      assert.equal(await a.done, "leadership-lost");
      const aStopped = Date.now();
      await waitFor(
        "b leads and reconciles",
        () => handled.some((h) => h.who === "b"),
        15_000,
        10,
      );
      const lastA = Math.max(
        ...handled.filter((h) => h.who === "a").map((h) => h.at),
      );
      const firstB = Math.min(
        ...handled.filter((h) => h.who === "b").map((h) => h.at),
      );
      assert.ok(
        lastA < firstB,
        `a reconciled at ${lastA}, after b started at ${firstB}`,
      );
      assert.ok(
        aStopped - cutAt <= 2000 + 400 + 1000,
        `a stopped ${aStopped - cutAt} ms after the cut`,
      );
      await b.stop();
      // b released the Lease on a graceful stop
      const released = await client.request<
        { spec: { holderIdentity?: string } }
      >(
        "GET",
        `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/${lease}`,
      );
      assert.equal(released.spec.holderIdentity ?? "", "");
    } finally {
      await proxy.close();
      await deleteNamespace(client, ns);
      client.close();
    }
  },
});

// keep the elector type exported in the test graph for `deno check`
void LeaderElector;

Deno.test("leader: property: no candidate may take the Lease before the holder's renew deadline has passed", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 5_000 }), // retry period
      fc.integer({ min: 1, max: 20_000 }), // renew deadline - retry
      fc.integer({ min: 1, max: 20 }), // lease seconds above the deadline
      fc.integer({ min: 0, max: 1e9 }), // when the holder's last renewal started
      fc.integer({ min: 0, max: 60_000 }), // how late the candidate saw it
      fc.integer({ min: 0, max: 120_000 }), // when the candidate looks, after seeing it
      (retry, extra, leaseAbove, renewedAt, seenLate, lookAfter) => {
        const renewDeadlineMs = retry + extra;
        const leaseSeconds = Math.ceil(renewDeadlineMs / 1000) + leaseAbove;
        validateTiming({
          leaseDurationMs: leaseSeconds * 1000,
          renewDeadlineMs,
          retryPeriodMs: retry,
        });
        const observedAt = renewedAt + seenLate;
        const now = observedAt + lookAfter;
        const d = decideLease(
          { holderIdentity: "holder", leaseDurationSeconds: leaseSeconds },
          "candidate",
          observedAt,
          now,
        );
        if (d.action === "take") {
          // the holder stopped at renewedAt + renewDeadline at the latest
          assert.ok(now > renewedAt + renewDeadlineMs);
        }
      },
    ),
  );
});

Deno.test("leader: a waiting candidate retries at the Lease's expiry when that comes first", () => {
  const cases: [number, number | undefined, number, number][] = [
    [2000, undefined, 0, 2000],
    [2000, 10_000, 0, 2000],
    [2000, 10_000, 9_000, 1001],
    [2000, 10_000, 10_000, 1],
    [2000, 10_000, 12_000, 1],
  ];
  for (const [retry, expiresAt, now, want] of cases) {
    assert.equal(nextAttemptDelay(retry, expiresAt, now), want);
  }
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 10_000 }),
      fc.integer({ min: 0, max: 100_000 }),
      fc.integer({ min: 0, max: 100_000 }),
      (retry, expiresAt, now) => {
        const d = nextAttemptDelay(retry, expiresAt, now);
        assert.ok(d >= 1 && d <= retry);
        // the attempt after the wait is past the expiry, or a full retry period away
        assert.ok(now + d > expiresAt || d === retry);
      },
    ),
  );
});

Deno.test({
  name:
    "leader: with keepCampaigning, a leader cut off from the API server stops its handlers and leads again as soon as it is back",
  ...INTEGRATION,
  fn: async () => {
    const env = await sharedEnvtest();
    const client = await adminClient(env);
    const ns = await createNamespace(client, "fw-back");
    const label = uniq("t");
    const lease = uniq("lease");
    const proxy = new TcpProxy(hostPort(env.server));
    const handled: number[] = [];
    const op = new Operator({
      name: "fwtest-back",
      kubeConfig: env.kubeConfig(),
      server: `https://127.0.0.1:${proxy.port}`,
      watchNamespace: ns,
      labelSelector: `t=${label}`,
      healthAddress: false,
      handleSignals: false,
      exitOnLeaderLoss: false,
      processMetrics: false,
      watchInactivityMs: 1000,
      logger: createLogger({ level: "silent" }),
      leaderElection: {
        leaseName: lease,
        leaseNamespace: ns,
        identity: "a",
        leaseDurationMs: 3000,
        renewDeadlineMs: 2000,
        retryPeriodMs: 400,
        keepCampaigning: true,
      },
    });
    // handlers that need no API call: they go on while leading, cut off or not
    op.reconcile(ConfigMaps, ({ object }) => {
      if (object === undefined) return;
      handled.push(Date.now());
      return { requeueAfterMs: 20 };
    });
    try {
      await client.create(
        ConfigMaps,
        {
          metadata: { name: "tick", namespace: ns, labels: { t: label } },
        } as KubeObject,
      );
      await op.start();
      await waitFor("a leads and reconciles", () => handled.length > 0);
      proxy.cut();
      const cutAt = Date.now();
      await waitFor("a to stop leading", () => !op.isLeader, 5_000, 10);
      const stoppedAt = Date.now();
      await new Promise((r) => setTimeout(r, 3_000));
      const during = handled.filter((t) => t > stoppedAt + 100).length;
      proxy.restore();
      const backAt = Date.now();
      await waitFor("a leads again", () => op.isLeader, 10_000, 10);
      const ledAgain = Date.now() - backAt;
      const n = handled.length;
      await waitFor("a reconciles again", () => handled.length > n, 5_000, 10);
      assert.equal(during, 0, "a handler ran while not leading");
      assert.ok(
        stoppedAt - cutAt <= 2000 + 400 + 1000,
        `stopped ${stoppedAt - cutAt} ms after the cut`,
      );
      assert.ok(ledAgain <= 400 + 1000, `led again after ${ledAgain} ms`);
      const race = await Promise.race([
        op.done,
        new Promise((r) => setTimeout(() => r("running"), 10)),
      ]);
      assert.equal(race, "running", "the operator did not shut down");
      await op.stop();
      assert.equal(await op.done, "stopped");
    } finally {
      await proxy.close();
      await deleteNamespace(client, ns);
      client.close();
    }
  },
});

Deno.test({
  name:
    "leader: a candidate waiting for another's Lease keeps its retry period when the API server stops answering",
  ...INTEGRATION,
  fn: async () => {
    const env = await sharedEnvtest();
    const admin = await adminClient(env);
    const ns = await createNamespace(admin, "fw-wait");
    const lease = uniq("lease");
    const proxy = new TcpProxy(hostPort(env.server));
    const client = await adminClient(env, `https://127.0.0.1:${proxy.port}`);
    const lines: string[] = [];
    let elector: LeaderElector | undefined;
    try {
      // held by someone else, for 1 s, never renewed
      await admin.request(
        "POST",
        `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`,
        {
          body: {
            apiVersion: "coordination.k8s.io/v1",
            kind: "Lease",
            metadata: { name: lease, namespace: ns },
            spec: { holderIdentity: "gone", leaseDurationSeconds: 1 },
          },
        },
      );
      elector = new LeaderElector({
        client,
        name: lease,
        namespace: ns,
        identity: "b",
        timing: {
          leaseDurationMs: 3000,
          renewDeadlineMs: 2000,
          retryPeriodMs: 400,
        },
        logger: createLogger({
          level: "debug",
          destination: { write: (l) => lines.push(l) },
        }),
        onStartedLeading: () => {},
        onStoppedLeading: () => {},
      });
      const run = elector.run();
      // one attempt sees the Lease held and sets its expiry, then the server
      // goes away before that expiry
      await new Promise((r) => setTimeout(r, 200));
      proxy.cut();
      await new Promise((r) => setTimeout(r, 2_500));
      const failed = lines.filter((l) => l.includes("lease request failed"));
      assert.equal(elector.isLeader, false);
      // 2.5 s at one attempt per 400 ms; a spinning loop would log thousands
      assert.ok(
        failed.length >= 3 && failed.length <= 8,
        `${failed.length} failed attempts in 2.5 s`,
      );
      await elector.release();
      await run;
    } finally {
      await elector?.release();
      await proxy.close();
      client.close();
      await deleteNamespace(admin, ns);
      admin.close();
    }
  },
});
