/**
 * The kubectl plugin as kubectl runs it (bin/kubectl-evictor on PATH, the
 * real kubectl, the real API server): `--context` picks a context of a
 * kubeconfig merged from two files, `--kubeconfig` names one file,
 * `status -o json|yaml` (a List) and `-o summary-yaml`, and every failure (a refused user, an unreachable
 * API server, an unknown context, a microversion Nova does not support, an unusable
 * `compute_api_version`) is one line on stderr and a non-zero exit code.
 */
import assert from "node:assert/strict";
import { parse as parseYaml } from "yaml";
import { PLUGIN_USER_AGENT } from "../app/version.ts";
import { type Envtest, sharedEnvtest } from "./harness/envtest.ts";
import { waitFor } from "./harness/eviction_env.ts";
import { startNovaSim } from "./harness/nova_sim/mod.ts";
import { assertOneLine, kubectlEvictor } from "./_plugin_cli.ts";

type Doc = {
  clusters: { name: string; cluster: Record<string, unknown> }[];
  users: { name: string; user: Record<string, unknown> }[];
};

/**
 * Two files: the first's current-context is a user the API server does not
 * authorize, it also has a context whose cluster is nowhere; the second
 * holds the admin context and redefines "nowhere" (the first file wins, so
 * it stays nowhere).
 */
async function mergedKubeconfig(api: Envtest, dir: string) {
  // a port nobody listens on (fetch refuses port 1 outright)
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const closedPort = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const admin = JSON.parse(await Deno.readTextFile(api.kubeconfigPath)) as Doc;
  const nobody = parseYaml(
    await Deno.readTextFile(await api.kubeconfigFor("plugin-nobody")),
  ) as Doc;
  const real = admin.clusters[0]!.cluster;
  const first = `${dir}/first`;
  const second = `${dir}/second`;
  await Deno.writeTextFile(
    first,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      "current-context": "limited",
      clusters: [
        { name: "envtest", cluster: real },
        {
          name: "nowhere",
          cluster: { ...real, server: `https://127.0.0.1:${closedPort}` },
        },
      ],
      users: [{ name: "nobody", user: nobody.users[0]!.user }],
      contexts: [
        { name: "limited", context: { cluster: "envtest", user: "nobody" } },
        { name: "offline", context: { cluster: "nowhere", user: "nobody" } },
      ],
    }),
  );
  await Deno.writeTextFile(
    second,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      "current-context": "admin",
      clusters: [
        { name: "envtest", cluster: real },
        { name: "nowhere", cluster: real },
      ],
      users: [{ name: "admin", user: admin.users[0]!.user }],
      contexts: [
        { name: "admin", context: { cluster: "envtest", user: "admin" } },
        {
          name: "admin-offline",
          context: { cluster: "nowhere", user: "admin" },
        },
      ],
    }),
  );
  return {
    first,
    second,
    closedPort,
    KUBECONFIG: `${first}:${dir}/missing:${second}`,
  };
}

Deno.test({
  name:
    "kubectl evictor: --context selects a context of a merged KUBECONFIG, --kubeconfig one file, status -o json|yaml",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const api = await sharedEnvtest();
    await waitFor(
      "the Eviction API",
      async () =>
        (await api.kubectl(["get", "evictions"])).code === 0 ? true : undefined,
    );
    const dir = await Deno.makeTempDir({ prefix: "evictor-plugin-kc-" });
    const name = `plugin-kc-${crypto.randomUUID().slice(0, 8)}`;
    const created = await api.kubectl(["create", "-f", "-"], {
      stdin: JSON.stringify({
        apiVersion: "kvm.cloud.sap/v1",
        kind: "Eviction",
        metadata: { name },
        spec: { hypervisor: name, reason: "kernel 6.12" },
      }),
    });
    assert.equal(created.code, 0, created.stderr);
    try {
      const kc = await mergedKubeconfig(api, dir);
      const env = { KUBECONFIG: kc.KUBECONFIG };

      const json = await kubectlEvictor(
        api,
        ["status", "--context", "admin", "-o", "json"],
        env,
      );
      assert.equal(json.code, 0, json.stderr);
      // a List of the Eviction objects, as kubectl prints them
      const parsed = JSON.parse(json.stdout) as {
        apiVersion: string;
        kind: string;
        items: { metadata: { name: string }; spec: { reason: string } }[];
      };
      assert.deepEqual([parsed.apiVersion, parsed.kind], ["v1", "List"]);
      const mine = parsed.items.find((e) => e.metadata.name === name);
      assert.equal(mine?.spec.reason, "kernel 6.12");

      // the cluster flags may come before the command, as kubectl's do;
      // one name: the object itself, as kubectl get NAME -o json
      const before = await kubectlEvictor(
        api,
        ["--context", "admin", "status", name, "-o", "json"],
        env,
      );
      assert.equal(before.code, 0, before.stderr);
      assert.equal(JSON.parse(before.stdout).metadata?.name, name);

      const yaml = await kubectlEvictor(
        api,
        ["status", "--kubeconfig", kc.second, "-o", "yaml"],
        {},
      );
      assert.equal(yaml.code, 0, yaml.stderr);
      const fromYaml = parseYaml(yaml.stdout) as typeof parsed;
      assert.ok(fromYaml.items.some((e) => e.metadata.name === name));

      // the summary shape of earlier releases, by its own name
      const summary = await kubectlEvictor(
        api,
        ["status", name, "--kubeconfig", kc.second, "-o", "summary-yaml"],
        {},
      );
      assert.equal(summary.code, 0, summary.stderr);
      assert.deepEqual(
        (parseYaml(summary.stdout) as {
          evictions: { name: string; state: string; reason: string }[];
        }).evictions.map((e) => [e.name, e.state, e.reason]),
        [[name, "Pending", "kernel 6.12"]],
      );

      // the first file's current-context: a user the API server refuses
      assertOneLine(
        await kubectlEvictor(api, ["status"], env),
        1,
        /plugin-nobody.*cannot list resource "evictions"/,
      );
      // "nowhere" is the first file's (an unreachable server), though the
      // second file defines it too
      assertOneLine(
        await kubectlEvictor(
          api,
          ["status", "--context", "admin-offline"],
          env,
        ),
        1,
        new RegExp(
          `^error: cannot reach the API server https://127\\.0\\.0\\.1:${kc.closedPort} \\(context "admin-offline"\\): .*ECONNREFUSED`,
        ),
      );
      assertOneLine(
        await kubectlEvictor(api, ["status", "--context", "nope"], env),
        1,
        /context "nope" is not in kubeconfig .*first:.*second; expected one of: limited, offline, admin, admin-offline/,
      );
      assertOneLine(
        await kubectlEvictor(
          api,
          ["status", "--kubeconfig", `${dir}/absent`],
          env,
        ),
        1,
        /--kubeconfig ".*absent": no such file/,
      );
      assertOneLine(
        await kubectlEvictor(api, ["status", "-o", "xml"], env),
        1,
        /--output "xml" is not valid: expected table, wide, name, json, yaml, jsonpath=TEMPLATE, custom-columns=SPEC, summary-json or summary-yaml/,
      );

      const help = await kubectlEvictor(api, ["drain", "--help"], env);
      assert.equal(help.code, 0, help.stderr);
      assert.match(help.stdout, /kubectl evictor drain HYPERVISOR/);
      assert.equal(help.stderr, "");
    } finally {
      await api.kubectl(["delete", "eviction", name]);
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "kubectl evictor plan: a compute_api_version Nova does not support and one evictor cannot use are one line each; its calls carry the plugin's User-Agent; --os-cloud picks the cloud",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const api = await sharedEnvtest();
    const host = `plan-ua-${crypto.randomUUID().slice(0, 8)}`;
    const sim = await startNovaSim({
      hosts: [{ name: host }, { name: `${host}-b` }],
      servers: [{ name: "vm", host, ramMb: 2048 }],
    });
    const agents = new Map<string, Set<string>>();
    const stop = sim.onCall((call) => {
      const service = call.key.split(" ")[1]?.split("/")[1] ?? "";
      const seen = agents.get(service) ?? new Set();
      seen.add(call.userAgent ?? "(none)");
      agents.set(service, seen);
    });
    try {
      const env = { ...sim.env(), KUBECONFIG: api.kubeconfigPath };
      const ok = await kubectlEvictor(api, ["plan", host, "-o", "yaml"], env);
      assert.equal(ok.code, 0, ok.stderr);
      assert.equal(
        (parseYaml(ok.stdout) as { hosts: { host: string }[] }).hosts[0]?.host,
        host,
      );
      assert.deepEqual(
        Object.fromEntries([...agents].map(([s, a]) => [s, [...a]])),
        {
          identity: [PLUGIN_USER_AGENT],
          compute: [PLUGIN_USER_AGENT],
          placement: [PLUGIN_USER_AGENT],
        },
      );

      assertOneLine(
        await kubectlEvictor(api, ["plan", host], {
          ...env,
          OS_COMPUTE_API_VERSION: "2.99",
        }),
        1,
        /^error: OpenStack: compute_api_version 2\.99 is not supported by Nova at http:\/\/127\.0\.0\.1:\d+\/compute\/v2\.1\/, which supports compute microversions 2\.1 to 2\.\d+; set one in that range/,
      );
      assertOneLine(
        await kubectlEvictor(api, ["plan", host], {
          ...env,
          OS_COMPUTE_API_VERSION: "2.1",
        }),
        1,
        /^error: OS_COMPUTE_API_VERSION: "2\.1" is not usable; expected a Nova microversion 2\.N >= 2\.59/,
      );
      assertOneLine(
        await kubectlEvictor(api, ["plan", host], {
          KUBECONFIG: api.kubeconfigPath,
        }),
        1,
        /^error: OS_AUTH_URL: not set/,
      );

      // --os-cloud picks a cloud of clouds.yaml, as the operator's flag does
      const dir = await Deno.makeTempDir({ prefix: "evictor-plan-cloud-" });
      try {
        const clouds = `${dir}/clouds.yaml`;
        await Deno.writeTextFile(clouds, sim.cloudsYaml({ cloud: "eu-de-2" }));
        const files = {
          KUBECONFIG: api.kubeconfigPath,
          OS_CLIENT_CONFIG_FILE: clouds,
        };
        const byName = await kubectlEvictor(
          api,
          ["plan", host, "--os-cloud", "eu-de-2", "-o", "json"],
          files,
        );
        assert.equal(byName.code, 0, byName.stderr);
        assert.equal(JSON.parse(byName.stdout).hosts[0]?.host, host);
        // and wins over OS_CLOUD
        assertOneLine(
          await kubectlEvictor(api, ["plan", host, "--os-cloud", "eu-de-3"], {
            ...files,
            OS_CLOUD: "eu-de-2",
          }),
          1,
          /^error: --os-cloud: cloud "eu-de-3" is not in .*clouds\.yaml; expected one of: eu-de-2$/,
        );
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    } finally {
      stop();
      await sim.close();
    }
  },
});
