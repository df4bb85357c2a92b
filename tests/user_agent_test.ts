/**
 * Every request carries our User-Agent: the operator (main.ts as its own
 * process, the binary's permissions) sends `evictor/<version>` to the API
 * server (read back from the API server's own audit log) and to Keystone,
 * Nova and Placement (the simulator records the header); the kubectl
 * plugin sends `kubectl-evictor/<version>` to the API server.
 */
import assert from "node:assert/strict";
import { PLUGIN_USER_AGENT, USER_AGENT, VERSION } from "../app/version.ts";
import { startEnvtest } from "./harness/envtest.ts";
import { waitFor } from "./harness/eviction_env.ts";
import { startNovaSim } from "./harness/nova_sim/mod.ts";
import {
  operatorLogTail,
  startOperatorProcess,
} from "./harness/operator_process.ts";

const ROOT = new URL("../", import.meta.url);

/** The user agents of the audit log's events, by user. */
async function auditAgents(path: string): Promise<Map<string, Set<string>>> {
  const out = new Map<string, Set<string>>();
  const text = await Deno.readTextFile(path).catch(() => "");
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const e = JSON.parse(line) as {
      userAgent?: string;
      user?: { username?: string };
    };
    const user = e.user?.username ?? "";
    const seen = out.get(user) ?? new Set();
    seen.add(e.userAgent ?? "");
    out.set(user, seen);
  }
  return out;
}

/** The User-Agents of the watches of Evictions in the audit log. */
async function auditWatchAgents(path: string): Promise<Set<string>> {
  const out = new Set<string>();
  const text = await Deno.readTextFile(path).catch(() => "");
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const e = JSON.parse(line) as {
      verb?: string;
      userAgent?: string;
      objectRef?: { resource?: string };
    };
    if (e.verb === "watch" && e.objectRef?.resource === "evictions") {
      out.add(e.userAgent ?? "");
    }
  }
  return out;
}

Deno.test("version: deno.json's", async () => {
  const config = JSON.parse(
    await Deno.readTextFile(new URL("deno.json", ROOT)),
  ) as { version: string };
  assert.equal(VERSION, config.version);
  assert.equal(USER_AGENT, `evictor/${config.version}`);
  assert.equal(PLUGIN_USER_AGENT, `kubectl-evictor/${config.version}`);
});

Deno.test({
  name:
    "User-Agent: evictor/<version> at the API server (audit log) and at Keystone, Nova and Placement; kubectl-evictor/<version> from the plugin",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "evictor-audit-" });
    await Deno.writeTextFile(
      `${dir}/policy.yaml`,
      JSON.stringify({
        apiVersion: "audit.k8s.io/v1",
        kind: "Policy",
        rules: [{ level: "Metadata" }],
      }),
    );
    const audit = `${dir}/audit.log`;
    const env = await startEnvtest({
      apiServerFlags: [
        `--audit-policy-file=${dir}/policy.yaml`,
        `--audit-log-path=${audit}`,
        "--audit-log-format=json",
        "--audit-log-mode=blocking",
      ],
    });
    const sim = await startNovaSim({
      hosts: [{ name: "ua-node" }, { name: "ua-other" }],
      servers: [{ name: "vm", host: "ua-node", ramMb: 1024 }],
    });
    const simAgents = new Map<string, Set<string>>();
    const stop = sim.onCall((call) => {
      const service = call.key.split(" ")[1]?.split("/")[1] ?? "";
      const seen = simAgents.get(service) ?? new Set();
      seen.add(call.userAgent ?? "(none)");
      simAgents.set(service, seen);
    });
    const op = await startOperatorProcess({
      kubeconfigPath: env.kubeconfigPath,
      cloudsYaml: sim.cloudsYaml(),
      args: [
        "--webhook-bind-address=0",
        "--metrics-bind-address=0",
        "--hypervisor-resync-interval=1s",
      ],
    });
    try {
      const created = await env.kubectl(["create", "-f", "-"], {
        stdin: JSON.stringify({
          apiVersion: "kvm.cloud.sap/v1",
          kind: "Hypervisor",
          metadata: { name: "ua-node" },
          spec: {},
        }),
      });
      assert.equal(created.code, 0, created.stderr);
      // the status sync reads Nova (and Placement for traits)
      await waitFor(
        "the operator's calls to Keystone, Nova and Placement",
        () =>
          ["identity", "compute", "placement"].every((s) => simAgents.has(s))
            ? true
            : undefined,
        30_000,
      ).catch(async (e) => {
        throw new Error(`${e}\n${await operatorLogTail(op)}`);
      });
      assert.deepEqual(
        Object.fromEntries([...simAgents].map(([s, a]) => [s, [...a]])),
        {
          identity: [USER_AGENT],
          compute: [USER_AGENT],
          placement: [USER_AGENT],
        },
      );

      const plugin = await new Deno.Command(
        new URL("bin/kubectl-evictor", ROOT).pathname,
        {
          args: ["status"],
          env: { KUBECONFIG: env.kubeconfigPath },
          stdout: "piped",
          stderr: "piped",
        },
      ).output();
      assert.ok(plugin.success, new TextDecoder().decode(plugin.stderr));
      // and its watch (status -w, wait, drain --wait) carries it too
      const watching = await new Deno.Command(
        new URL("bin/kubectl-evictor", ROOT).pathname,
        {
          args: ["status", "-w", "--timeout", "2s"],
          env: { KUBECONFIG: env.kubeconfigPath },
          stdout: "piped",
          stderr: "piped",
        },
      ).output();
      assert.ok(watching.success, new TextDecoder().decode(watching.stderr));

      // the test's own client certificate is envtest-admin, the operator's too:
      // tell them apart by agent; every request of the admin user is one of
      // ours, kubectl's (CRD set-up) or the test harness's
      const agents = await waitFor("the audit log", async () => {
        const a = await auditAgents(audit);
        const all = [...(a.get("envtest-admin") ?? [])];
        return all.includes(USER_AGENT) && all.includes(PLUGIN_USER_AGENT)
          ? all
          : undefined;
      }, 15_000);
      const ours = agents.filter((a) => /evictor/.test(a));
      assert.deepEqual(ours.sort(), [PLUGIN_USER_AGENT, USER_AGENT].sort());
      const watchers = await waitFor(
        "the plugin's watch in the audit log",
        async () => {
          const a = await auditWatchAgents(audit);
          return a.has(PLUGIN_USER_AGENT) ? a : undefined;
        },
        15_000,
      );
      assert.deepEqual(
        [...watchers].filter((a) => a !== USER_AGENT),
        [PLUGIN_USER_AGENT],
      );
    } finally {
      stop();
      await op.stop();
      await sim.close();
      await env.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
