/**
 * A person's requests through the real API server, the real webhook and
 * the real kubectl (a dedicated API server: the ValidatingWebhookConfiguration
 * affects the whole server): `kubectl evictor force-complete|abort` records
 * who asked as the API server knows them, a forged requestedBy and a
 * rewritten earlier request are refused by the webhook, the JSON patch
 * never overwrites a request made meanwhile, --dry-run changes nothing,
 * refusals are one line, and --wait ends on the outcome the controller
 * records.
 */
import assert from "node:assert/strict";
import { parseConcurrencyFlags } from "../limits/flags.ts";
import { startEnvtest } from "./harness/envtest.ts";
import { startNovaSim } from "./harness/nova_sim/mod.ts";
import {
  eviction,
  manifest,
  policy,
  startWebhookOperator,
  webhookConfigurationYaml,
} from "./_webhook_fixture.ts";
import { assertOneLine, kubectlEvictor } from "./_plugin_cli.ts";

const VM = "3f1c2d4e-0b6a-4c1e-9f7a-2d5b8e9c1a0f";
const NOT_IN_FLIGHT = "99999999-0b6a-4c1e-9f7a-2d5b8e9c1a0f";
const DENIED = 'admission webhook "evictions.evictor.kvm.cloud.sap" denied';

async function until(
  what: string,
  done: () => Promise<boolean>,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

Deno.test({
  name:
    "kubectl evictor force-complete|abort: who asked is the API server's user, forged or rewritten requests are refused",
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const env = await startEnvtest();
  const flags = parseConcurrencyFlags("2", []);
  if (!flags.ok) throw new Error(flags.error.message);
  const hook = await startWebhookOperator(env, flags.settings);
  try {
    const kubectl = async (args: string[], stdin?: string) =>
      await env.kubectl(args, stdin === undefined ? {} : { stdin });
    for (const name of ["n1", "n2", "n3"]) {
      const r = await kubectl(
        ["create", "-f", "-"],
        manifest(eviction(name, { hypervisor: name, reason: "kernel" })),
      );
      assert.equal(r.code, 0, r.stderr);
    }
    const setStatus = async (name: string, s: Record<string, unknown>) => {
      const r = await kubectl([
        "patch",
        "eviction",
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        JSON.stringify({ status: s }),
      ]);
      assert.equal(r.code, 0, r.stderr);
    };
    const inFlight = [
      { id: VM, kind: "live", startedAt: new Date().toISOString() },
    ];
    await setStatus("n1", { inFlight });
    await setStatus("n2", { finishedAt: "2026-12-07T09:30:00Z" });
    await setStatus("n3", { inFlight });
    const actionsOf = async (name: string) =>
      JSON.parse(
        (await kubectl(["get", "eviction", name, "-o", "json"])).stdout,
      ).spec.actions as Record<string, unknown>[] | undefined;

    const alice = await env.kubeconfigFor("alice", ["system:masters"]);
    const asAlice = (args: string[]) =>
      kubectlEvictor(env, [...args, "--kubeconfig", alice], {});
    const patchAsAlice = (name: string, patch: unknown) =>
      env.kubectl([
        "patch",
        "eviction",
        name,
        "--type=json",
        "-p",
        JSON.stringify(patch),
      ], { kubeconfig: alice });
    const item = (over: Record<string, unknown> = {}) => ({
      server: VM,
      action: "Abort",
      requestedBy: "alice",
      requestedAt: new Date().toISOString(),
      ...over,
    });

    const config = await webhookConfigurationYaml(hook.baseUrl, env.caCertPem);
    const installed = await kubectl(["apply", "-f", "-"], config);
    assert.equal(installed.code, 0, installed.stderr);
    await until("the API server calls the webhook", async () => {
      const r = await env.kubectl([
        "patch",
        "eviction",
        "n3",
        "--type=json",
        "--dry-run=server",
        "-p",
        JSON.stringify([{
          op: "add",
          path: "/spec/actions",
          value: [item({ requestedBy: "bob" })],
        }]),
      ], { kubeconfig: alice });
      return r.code !== 0 && r.stderr.includes(DENIED);
    });

    await t.step("a forged requestedBy is refused", async () => {
      const r = await patchAsAlice("n3", [{
        op: "add",
        path: "/spec/actions",
        value: [item({ requestedBy: "bob" })],
      }]);
      assert.notEqual(r.code, 0);
      assert.match(
        r.stderr,
        /spec\.actions\[0\]: requestedBy "bob" is not the requesting user "alice"/,
      );
      assert.equal(await actionsOf("n3"), undefined);
    });

    await t.step("a request in alice's own name is admitted", async () => {
      const r = await patchAsAlice("n3", [{
        op: "add",
        path: "/spec/actions",
        value: [item()],
      }]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal((await actionsOf("n3"))?.[0]?.["requestedBy"], "alice");
      // and it can never be rewritten, not even by its author
      const rewrite = await patchAsAlice("n3", [{
        op: "replace",
        path: "/spec/actions/0/action",
        value: "ForceComplete",
      }]);
      assert.notEqual(rewrite.code, 0);
      assert.match(
        rewrite.stderr,
        /spec\.actions\[0\]\.action was changed from "Abort" to "ForceComplete": requests may only be appended/,
      );
      const removed = await patchAsAlice("n3", [{
        op: "remove",
        path: "/spec/actions/0",
      }]);
      assert.match(removed.stderr, /spec\.actions\[0\] was removed/);
    });

    await t.step("force-complete records the API server's user", async () => {
      const r = await asAlice(["force-complete", "n1", VM]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(
        r.stdout,
        new RegExp(
          `^eviction\\.kvm\\.cloud\\.sap/n1 patched: spec\\.actions\\[0\\] ForceComplete of ${VM} requested by alice at `,
        ),
      );
      assert.match(
        r.stderr,
        /^Warning: force-complete pauses the VM until its copy completes unless Nova permits post-copy/m,
      );
      const actions = await actionsOf("n1");
      assert.equal(actions?.length, 1);
      assert.deepEqual(
        [actions?.[0]?.["server"], actions?.[0]?.["action"]],
        [VM, "ForceComplete"],
      );
      assert.equal(actions?.[0]?.["requestedBy"], "alice");
    });

    await t.step(
      "--dry-run is checked by the server and changes nothing",
      async () => {
        const r = await asAlice(["abort", "n1", VM, "--dry-run"]);
        assert.equal(r.code, 0, r.stderr);
        assert.match(
          r.stdout,
          /patched \(server dry run\): spec\.actions\[1\] Abort of /,
        );
        assert.equal((await actionsOf("n1"))?.length, 1);
      },
    );

    await t.step(
      "a patch from a stale read never overwrites a request",
      async () => {
        const seen = await actionsOf("n1");
        const first = await patchAsAlice("n1", [
          { op: "test", path: "/spec/actions", value: seen },
          { op: "add", path: "/spec/actions/-", value: item() },
        ]);
        assert.equal(first.code, 0, first.stderr);
        // the same read again: its test fails, nothing is added
        const stale = await patchAsAlice("n1", [
          { op: "test", path: "/spec/actions", value: seen },
          { op: "add", path: "/spec/actions/-", value: item() },
        ]);
        assert.notEqual(stale.code, 0);
        // the words the plugin retries on (cli/vm_request.ts isTestFailure)
        assert.match(
          stale.stderr,
          /the server rejected our request due to an error in our request/,
        );
        assert.equal((await actionsOf("n1"))?.length, 2);
        // an absent list: the first request's test (null) passes once only
        const absent = [
          { op: "test", path: "/spec/actions", value: null },
          { op: "add", path: "/spec/actions", value: [item()] },
        ];
        const n2 = JSON.parse(
          (await kubectl(["get", "eviction", "n2", "-o", "json"])).stdout,
        );
        assert.equal(n2.spec.actions, undefined);
        await setStatus("n2", { finishedAt: null, inFlight });
        assert.equal((await patchAsAlice("n2", absent)).code, 0);
        const again = await patchAsAlice("n2", absent);
        assert.notEqual(again.code, 0);
        assert.equal((await actionsOf("n2"))?.length, 1);
        await setStatus("n2", { finishedAt: "2026-12-07T09:30:00Z" });
      },
    );

    await t.step("refusals are one line and exit 1", async () => {
      assertOneLine(
        await asAlice(["abort", "n1", NOT_IN_FLIGHT]),
        1,
        new RegExp(`VM ${NOT_IN_FLIGHT} is not in flight on n1 .*nothing sent`),
      );
      assertOneLine(
        await asAlice(["abort", "nowhere", VM]),
        1,
        /no Eviction drains nowhere/,
      );
      assertOneLine(
        await asAlice(["force-complete", "n2", VM]),
        1,
        /the drain of n2 \(eviction\.kvm\.cloud\.sap\/n2\) finished at 2026-12-07T09:30:00Z/,
      );
      // the webhook refuses it too, whoever writes it
      const r = await patchAsAlice("n2", [{
        op: "add",
        path: "/spec/actions",
        value: [...(await actionsOf("n2")) ?? [], item()],
      }]);
      assert.match(r.stderr, /the drain finished at 2026-12-07T09:30:00Z/);
      assertOneLine(
        await asAlice(["abort", "n1"]),
        1,
        /abort takes a HOST and a VM, got 1 arguments/,
      );
    });

    await t.step("status -o wide: then a row per copy in flight", async () => {
      await setStatus("n3", {
        inFlight: [{ ...inFlight[0], memoryProcessedPercent: 40 }],
      });
      const r = await asAlice(["status", "-o", "wide"]);
      assert.equal(r.code, 0, r.stderr);
      const [evictions, copies] = r.stdout.split("\n\n");
      assert.match(evictions ?? "", /^NAME\s+HYPERVISOR/);
      assert.match(
        copies ?? "",
        /^EVICTION\s+VM\s+KIND\s+AGE\s+COPIED\s+REMAINING\s+RATE\s+ETA\s+CONVERGING\s+DEADLINE$/m,
      );
      assert.match(copies ?? "", new RegExp(`^n1\\s+${VM}\\s+live\\s+`, "m"));
      assert.match(
        copies ?? "",
        new RegExp(
          `^n3\\s+${VM}\\s+live\\s+\\S+\\s+40%\\s+-\\s+-\\s+-\\s+-\\s+-$`,
          "m",
        ),
      );
    });

    await t.step("plan names the VMs its policy will act on", async () => {
      const p = await kubectl(
        ["create", "-f", "-"],
        manifest(policy({
          maxConcurrentMigrations: 2,
          migrationTimeoutSeconds: 600,
          abortStuckMigrations: true,
        })),
      );
      assert.equal(p.code, 0, p.stderr);
      const sim = await startNovaSim({
        hosts: [{ name: "src", ramMb: 262144 }, { name: "dst", ramMb: 262144 }],
        servers: [
          { name: "huge", host: "src", ramMb: 131072 },
          { name: "small", host: "src", ramMb: 2048 },
          { name: "off", host: "src", ramMb: 65536, status: "SHUTOFF" },
        ],
      });
      try {
        const args = [
          "plan",
          "src",
          "--mb-per-second",
          "100",
          "--overhead-seconds",
          "5",
          "--kubeconfig",
          alice,
        ];
        const json = await kubectlEvictor(
          env,
          [...args, "-o", "json"],
          sim.env(),
        );
        assert.equal(json.code, 0, json.stderr);
        const c = JSON.parse(json.stdout).hosts[0].convergence;
        assert.deepEqual(
          c.notConverging.map((
            v: { name: string; predictedSeconds: number; boundSeconds: number },
          ) => [v.name, v.predictedSeconds, v.boundSeconds]),
          [["huge", 1316, 600]],
        );
        const table = await kubectlEvictor(env, args, sim.env());
        assert.equal(table.code, 0, table.stderr);
        assert.match(
          table.stdout,
          /^ {2}converge: {2}10m00s per copy \(migrationTimeoutSeconds\), progress timeout 2m30s, onTimeout Abort \(policy\)$/m,
        );
        assert.match(
          table.stdout,
          /^ {2}not converging: huge \(\S+, 131072 MB\): copy predicted 21m56s, bound 10m00s: aborted and retried alone after the others; left for a person after 2 aborted tries$/m,
        );
      } finally {
        await sim.close();
      }
    });

    await t.step(
      "--wait ends on the outcome the controller records",
      async () => {
        const before = (await actionsOf("n1"))?.length ?? 0;
        const waiting = kubectlEvictor(env, [
          "abort",
          "n1",
          VM,
          "--wait",
          "--timeout",
          "60s",
          "--kubeconfig",
          alice,
        ], {});
        let request: Record<string, unknown> | undefined;
        await until("the request is recorded", async () => {
          request = (await actionsOf("n1"))?.[before];
          return request !== undefined;
        });
        // as the controller records it: earlier outcomes first, in order
        const earlier = ((await actionsOf("n1")) ?? []).slice(0, before).map((
          a,
        ) => ({
          ...a,
          outcome: "Refused",
          message: "not this test's",
          at: a["requestedAt"],
        }));
        await setStatus("n1", {
          actions: [...earlier, {
            server: request?.["server"],
            action: request?.["action"],
            requestedBy: request?.["requestedBy"],
            outcome: "Sent",
            message: "abort sent to Nova",
            at: new Date().toISOString(),
          }],
        });
        const r = await waiting;
        assert.equal(r.code, 0, r.stderr);
        assert.match(
          r.stdout,
          new RegExp(`Abort of ${VM}: Sent: abort sent to Nova`),
        );

        // NotInFlight: exit 1, the message on stderr
        const second = kubectlEvictor(env, [
          "force-complete",
          "n1",
          VM,
          "--wait",
          "--kubeconfig",
          alice,
        ], {});
        const n = before + 1;
        await until(
          "the second request is recorded",
          async () => (await actionsOf("n1"))?.[n] !== undefined,
        );
        const all = (await actionsOf("n1")) ?? [];
        await setStatus("n1", {
          actions: all.map((a, i) => ({
            server: a["server"],
            action: a["action"],
            requestedBy: a["requestedBy"],
            requestedAt: a["requestedAt"],
            outcome: i === n ? "NotInFlight" : "Sent",
            message: i === n ? "the copy had ended" : "sent",
            at: a["requestedAt"],
          })),
        });
        const r2 = await second;
        assert.equal(r2.code, 1);
        assert.match(
          r2.stderr,
          new RegExp(
            `^error: ForceComplete of ${VM}: NotInFlight: the copy had ended$`,
            "m",
          ),
        );
      },
    );
  } finally {
    await hook.stop();
    await env.stop();
  }
});
