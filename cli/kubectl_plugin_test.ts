/**
 * The kubectl plugin: pure parts, the wrapper's permissions, and a drain with
 * `--wait` through the real kubectl against the real API server.
 */
import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { PLUGIN_PERMISSION_FLAGS } from "../app/permissions.ts";
import type { Eviction } from "../models/mod.ts";
import { sharedEnvtest } from "../tests/harness/envtest.ts";
import { type PluginIo, runPlugin, statusTable } from "./kubectl_plugin.ts";

const ROOT = new URL("../", import.meta.url);

function captureIo(kubeConfig: k8s.KubeConfig) {
  const out: string[] = [];
  const err: string[] = [];
  const io: PluginIo = {
    kubeConfig,
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    interactive: false,
    sleep: () => new Promise((r) => setTimeout(r, 50)),
  };
  return { io, out, err };
}

Deno.test("bin/kubectl-evictor runs with PLUGIN_PERMISSION_FLAGS", async () => {
  const script = await Deno.readTextFile(new URL("bin/kubectl-evictor", ROOT));
  for (const flag of PLUGIN_PERMISSION_FLAGS) {
    assert.ok(script.includes(flag), flag);
  }
  const used = script.match(/--allow-[a-z-]+(=\S+)?/g) ?? [];
  assert.deepEqual(used.sort(), [...PLUGIN_PERMISSION_FLAGS].sort());
});

Deno.test("usage errors name the bad value and what is expected", async () => {
  const { io, err } = captureIo(new k8s.KubeConfig());
  const rows: [string[], string][] = [
    [["drain"], "drain needs a HYPERVISOR name"],
    [["drain", "n1"], "--reason is required: say why the host is drained"],
    [["drain", "n1", "--reason", "  "], "--reason is required"],
    [
      ["drain", "n1", "--reason", "x", "--max-concurrent", "0"],
      '--max-concurrent "0" is not valid: expected an integer from 1 to 64',
    ],
    [["evict"], 'unknown command "evict": expected drain, status or plan'],
  ];
  for (const [args, message] of rows) {
    err.length = 0;
    assert.equal(await runPlugin(args, io), 2, args.join(" "));
    assert.ok(err.join("\n").includes(message), `${args}: ${err.join("\n")}`);
  }
});

Deno.test("statusTable", () => {
  const e: Eviction = {
    metadata: { name: "node042" },
    spec: { hypervisor: "node042", reason: "kernel" },
    status: {
      migratedCount: 3,
      inFlightCount: 2,
      outstandingCount: 5,
      effectiveLimit: 4,
      conditions: [{
        type: "Evicting",
        status: "True",
        reason: "Running",
        message: "",
        lastTransitionTime: "2026-11-29T00:00:00Z",
      }],
    },
  };
  assert.equal(
    statusTable([e]),
    "NAME      HYPERVISOR   STATE     MIGRATED   IN FLIGHT   OUTSTANDING   FAILED   LIMIT\n" +
      "node042   node042      Running   3          2           5             0        4",
  );
  assert.equal(statusTable([]), "No evictions found.");
});

Deno.test("kubectl evictor drain --wait follows the Eviction until it is done", async () => {
  const env = await sharedEnvtest();
  const name = `plugin-${crypto.randomUUID().slice(0, 8)}`;
  const api = env.kubeConfig().makeApiClient(k8s.CustomObjectsApi);
  const ref = {
    group: "kvm.cloud.sap",
    version: "v1",
    plural: "evictions",
    name,
  };
  // Stands in for the controller: reports progress, then the end, the way
  // the eviction controller writes status.
  const controller = (async () => {
    for (let i = 0; i < 200; i++) {
      try {
        await api.getClusterCustomObject(ref);
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const condition = (status: string, reason: string) => ({
      type: "Evicting",
      status,
      reason,
      message: reason,
      lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    });
    const patch = (status: Record<string, unknown>) =>
      api.patchClusterCustomObjectStatus(
        { ...ref, body: { status } },
        k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
      );
    await patch({
      migratedCount: 1,
      inFlightCount: 2,
      outstandingCount: 2,
      effectiveLimit: 2,
      conditions: [condition("True", "Running")],
    });
    await new Promise((r) => setTimeout(r, 1500));
    await patch({
      migratedCount: 3,
      inFlightCount: 0,
      outstandingCount: 0,
      conditions: [condition("False", "Succeeded")],
    });
  })();
  const run = await new Deno.Command(`${env.binDir}/kubectl`, {
    args: [
      "evictor",
      "drain",
      name,
      "--reason",
      "kernel 6.12",
      "--max-concurrent",
      "2",
      "--wait",
    ],
    env: {
      PATH: `${new URL("bin", ROOT).pathname}:${Deno.env.get("PATH") ?? ""}`,
      KUBECONFIG: env.kubeconfigPath,
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  await controller;
  const stdout = new TextDecoder().decode(run.stdout);
  const stderr = new TextDecoder().decode(run.stderr);
  try {
    assert.equal(run.code, 0, stderr);
    assert.match(stdout, new RegExp(`eviction.kvm.cloud.sap/${name} created`));
    assert.match(stdout, new RegExp(`${name}: drained, 3 VMs migrated`));
    assert.match(
      stderr,
      /1\/3 migrated, 2 in flight, 2 outstanding, 0 failed \(Running\)/,
    );
    const created = await api.getClusterCustomObject(ref) as Eviction;
    assert.deepEqual(created.spec, {
      hypervisor: name,
      reason: "kernel 6.12",
      maxConcurrentMigrations: 2,
    });
  } finally {
    await api.deleteClusterCustomObject(ref);
  }
});

Deno.test("kubectl evictor status prints a table from the API server", async () => {
  const env = await sharedEnvtest();
  const name = `plugin-status-${crypto.randomUUID().slice(0, 8)}`;
  const api = env.kubeConfig().makeApiClient(k8s.CustomObjectsApi);
  const ref = { group: "kvm.cloud.sap", version: "v1", plural: "evictions" };
  await api.createClusterCustomObject({
    ...ref,
    body: {
      apiVersion: "kvm.cloud.sap/v1",
      kind: "Eviction",
      metadata: { name },
      spec: { hypervisor: name, reason: "x" },
    },
  });
  try {
    const { io, out } = captureIo(env.kubeConfig());
    assert.equal(await runPlugin(["status", name], io), 0);
    assert.match(
      out.join("\n"),
      new RegExp(`^${name}\\s+${name}\\s+Pending\\s+0`, "m"),
    );
  } finally {
    await api.deleteClusterCustomObject({ ...ref, name });
  }
});
