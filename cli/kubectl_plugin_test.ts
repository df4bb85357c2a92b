/**
 * The kubectl plugin: pure parts, the wrapper's permissions, and a drain with
 * `--wait` through the real kubectl against the real API server.
 */
import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import fc from "fast-check";
import { PLUGIN_PERMISSION_FLAGS } from "../app/permissions.ts";
import { RETRY_ANNOTATION } from "../controllers/eviction/retry.ts";
import type { Eviction } from "../models/mod.ts";
import { sharedEnvtest } from "../tests/harness/envtest.ts";
import {
  commandFirst,
  countsOf,
  drainOutcome,
  type PluginIo,
  retryValue,
  runPlugin,
  stateOf,
  stateText,
} from "./kubectl_plugin.ts";
import { evictingCondition } from "../controllers/eviction/conditions.ts";
import { COMMAND_USAGE } from "./usage.ts";

const ROOT = new URL("../", import.meta.url);
const ALL_COMMANDS = [
  "drain",
  "status",
  "wait",
  "plan",
  "retry",
  "version",
  "completion",
];

/** Hypervisor objects named `names` (drain refuses names that match none). */
async function hypervisors(api: k8s.CustomObjectsApi, names: string[]) {
  const ref = { group: "kvm.cloud.sap", version: "v1", plural: "hypervisors" };
  for (const name of names) {
    await api.createClusterCustomObject({
      ...ref,
      body: {
        apiVersion: "kvm.cloud.sap/v1",
        kind: "Hypervisor",
        metadata: { name },
        spec: {},
      },
    });
  }
  return async () => {
    for (const name of names) {
      await api.deleteClusterCustomObject({ ...ref, name }).catch(() => {});
    }
  };
}

function captureIo(kubeConfig: k8s.KubeConfig) {
  const out: string[] = [];
  const err: string[] = [];
  const io: PluginIo = {
    kubeConfig: () => Promise.resolve(kubeConfig),
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    interactive: false,
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
      ["drain", "n1", "Node_2", "--reason", "x"],
      'HYPERVISOR "Node_2" is not valid: expected a Kubernetes object name',
    ],
    [
      ["drain", "n1", "--reason", "x", "--max-concurrent", "0"],
      '--max-concurrent "0" is not valid: expected an integer from 1 to 64',
    ],
    [
      ["evict"],
      // every command, from the help's list
      `unknown command "evict": expected ${
        Object.keys(COMMAND_USAGE).slice(0, -1).join(", ")
      } or ${Object.keys(COMMAND_USAGE).at(-1)}`,
    ],
    [["wait"], "wait needs the HYPERVISOR of an Eviction"],
    [
      ["wait", "n1", "--timeout", "soon"],
      '--timeout "soon" is not valid: expected a duration such as 90s, 5m or 1h30m',
    ],
    [
      ["drain", "n1", "--reason", "x", "--wait=maybe"],
      '--wait "maybe" is not valid: expected true or false',
    ],
    [
      ["completion", "fish"],
      "completion fish is not valid: expected bash or zsh",
    ],
    [["retry"], "retry needs the NAME of an Eviction"],
    [
      ["retry", "n1", "a,b"],
      'VM "a,b" is not valid: expected a Nova server id',
    ],
  ];
  for (const [args, message] of rows) {
    err.length = 0;
    // kubectl's exit code for a usage mistake
    assert.equal(await runPlugin(args, io), 1, args.join(" "));
    assert.ok(err.join("\n").includes(message), `${args}: ${err.join("\n")}`);
    assert.equal(err.length, 1, `${args}: one line, got ${err.join("\n")}`);
    assert.doesNotMatch(err[0] ?? "", /\n/);
  }
});

Deno.test("--help on every command prints its usage and exits 0", async () => {
  const { io, out, err } = captureIo(new k8s.KubeConfig());
  for (const command of ALL_COMMANDS) {
    for (const flag of ["--help", "-h"]) {
      out.length = 0;
      assert.equal(await runPlugin([command, flag], io), 0, command);
      const text = out.join("\n");
      assert.match(text, new RegExp(`kubectl evictor ${command} `));
      assert.match(text, /--kubeconfig FILE/);
      assert.match(text, /--context NAME/);
      // what each exit code means, on every command's help
      assert.match(text, /Exit codes \(kubectl's\):\n {2}0 {2}done/);
      assert.match(
        text,
        /\n {2}1 {2}anything else: a usage mistake .*\n.*--timeout\n.*passed/s,
      );
      assert.doesNotMatch(text, /\n {2}2 /);
    }
  }
  out.length = 0;
  assert.equal(await runPlugin(["--help"], io), 0);
  for (const command of ALL_COMMANDS) {
    assert.match(out.join("\n"), new RegExp(`kubectl evictor ${command}\\b`));
  }
  assert.deepEqual(err, []);
});

Deno.test("flag mistakes are one line naming the flag, exit 1 as kubectl's", async () => {
  const { io, err } = captureIo(new k8s.KubeConfig());
  const rows: [string[], RegExp][] = [
    [
      ["drain", "n1", "--bogus"],
      /^error: drain: Unknown option '--bogus' \(see "kubectl evictor drain --help"\)$/,
    ],
    [["status", "-x"], /^error: status: Unknown option '-x'/],
    [
      ["plan", "h1", "--output"],
      /^error: plan: Option '-o, --output <value>' argument missing/,
    ],
    [
      ["retry", "n1", "--context"],
      /^error: retry: Option '--context <value>' argument missing/,
    ],
    [
      ["status", "-o", "xml"],
      /^error: --output "xml" is not valid: expected table, wide, name, json, yaml, jsonpath=TEMPLATE, custom-columns=SPEC, summary-json or summary-yaml \(see "kubectl evictor status --help"\)$/,
    ],
    [
      ["plan", "h1", "-o", "wide"],
      /^error: --output "wide" is not valid: expected table, json or yaml/,
    ],
    [
      [],
      /^error: no command: expected drain, status, wait, plan, retry, cancel/,
    ],
    [
      ["drain", "n1", "--reason", "x", "--timeout=-1"],
      /^error: --timeout "-1" is not valid: expected a duration such as 90s, 5m or 1h30m \(a bare number is seconds; 0 waits forever\)/,
    ],
    [
      ["status", "-o", "jsonpath={.items[0,1]}"],
      /^error: --output "jsonpath=\{\.items\[0,1\]\}" is not valid: "\[0,1\]" is not supported/,
    ],
    [
      ["status", "--watch=sometimes"],
      /^error: --watch "sometimes" is not valid: expected true or false/,
    ],
    [
      ["plan", "h1", "--os-cloud", " "],
      /^error: --os-cloud " " is not valid: expected the name of a cloud in clouds.yaml/,
    ],
  ];
  for (const [args, line] of rows) {
    err.length = 0;
    assert.equal(await runPlugin(args, io), 1, args.join(" "));
    assert.equal(err.length, 1, err.join("\n"));
    assert.match(err[0] ?? "", line);
  }
});

Deno.test("commandFirst: cluster flags before the command go after it", () => {
  const rows: [string[], string[]][] = [
    [["--context", "eu", "status"], ["status", "--context", "eu"]],
    [["--kubeconfig=/k", "--context", "eu", "drain", "n1"], [
      "drain",
      "--kubeconfig=/k",
      "--context",
      "eu",
      "n1",
    ]],
    [["status", "--context", "eu"], ["status", "--context", "eu"]],
    [["--context", "eu"], ["--context", "eu"]],
    [["--help"], ["--help"]],
  ];
  for (const [args, want] of rows) assert.deepEqual(commandFirst(args), want);
});

function evictionWith(
  o: {
    status?: "True" | "False" | "Unknown";
    reason?: string;
    message?: string;
    generation?: number | undefined;
    observed?: number | undefined;
    outstanding?: number | undefined;
    inFlight?: number | undefined;
    finishedAt?: string | undefined;
  },
): Eviction {
  return {
    metadata: {
      name: "n",
      ...(o.generation === undefined ? {} : { generation: o.generation }),
    },
    spec: { hypervisor: "n", reason: "r" },
    status: {
      ...(o.observed === undefined ? {} : { observedGeneration: o.observed }),
      ...(o.outstanding === undefined
        ? {}
        : { outstandingCount: o.outstanding }),
      ...(o.inFlight === undefined ? {} : { inFlightCount: o.inFlight }),
      ...(o.finishedAt === undefined ? {} : { finishedAt: o.finishedAt }),
      conditions: o.status === undefined ? [] : [{
        type: "Evicting",
        status: o.status,
        reason: o.reason ?? "",
        message: o.message ?? "",
        lastTransitionTime: "2026-12-01T00:00:00Z",
      }],
    },
  };
}

Deno.test("drainOutcome: Succeeded only for the current generation with nothing left, settled", () => {
  const done = {
    status: "False" as const,
    reason: "Succeeded",
    generation: 2,
    observed: 2,
    outstanding: 0,
    inFlight: 0,
    finishedAt: "2026-12-01T00:00:06Z",
  };
  const rows: [Parameters<typeof evictionWith>[0], string | undefined][] = [
    [done, "Succeeded"],
    [{ ...done, observed: 1 }, undefined],
    [{ ...done, observed: undefined }, undefined],
    [{ ...done, outstanding: 1 }, undefined],
    [{ ...done, outstanding: undefined }, undefined],
    [{ ...done, inFlight: 1 }, undefined],
    [{ ...done, finishedAt: undefined }, undefined],
    [{ ...done, status: "True", reason: "Settling" }, undefined],
    [{ ...done, status: "True", reason: "Running" }, undefined],
    [{ ...done, reason: "Failed" }, "Failed"],
    // Nova has no such host: its own outcome, never a drained host
    [{ ...done, reason: "NotInNova" }, "NotInNova"],
    [{ status: "False", reason: "NotInNova" }, "NotInNova"],
    [{ status: "True", reason: "NotInNova" }, undefined],
    [{}, undefined],
  ];
  for (const [input, want] of rows) {
    assert.equal(
      drainOutcome(evictionWith(input)),
      want,
      JSON.stringify(input),
    );
  }
});

Deno.test("drainOutcome: a Succeeded always has the strict fields (property)", () => {
  fc.assert(fc.property(
    fc.record({
      status: fc.constantFrom("True", "False", "Unknown"),
      reason: fc.constantFrom(
        "Running",
        "Succeeded",
        "Failed",
        "Pending",
        "NotInNova",
      ),
      generation: fc.option(fc.nat(3), { nil: undefined }),
      observed: fc.option(fc.nat(3), { nil: undefined }),
      outstanding: fc.option(fc.nat(2), { nil: undefined }),
      inFlight: fc.option(fc.nat(2), { nil: undefined }),
      finishedAt: fc.option(fc.constant("2026-12-01T00:00:06Z"), {
        nil: undefined,
      }),
    }),
    (o) => {
      const out = drainOutcome(evictionWith(o));
      if (out === "Succeeded") {
        assert.equal(o.status, "False");
        assert.equal(o.reason, "Succeeded");
        assert.equal(o.observed, o.generation);
        assert.notEqual(o.generation, undefined);
        assert.equal(o.outstanding, 0);
        assert.equal(o.inFlight, 0);
        assert.notEqual(o.finishedAt, undefined);
      }
      if (o.status !== "False") assert.equal(out, undefined);
      assert.equal(
        out === "NotInNova",
        o.status === "False" && o.reason === "NotInNova",
      );
    },
  ));
});

Deno.test("retryValue: * for none, the ids joined once each otherwise", () => {
  assert.equal(retryValue([]), "*");
  assert.equal(retryValue(["a1", "b2", "a1"]), "a1,b2");
  for (const bad of ["", "*", "a b", "x,y", "-x"]) {
    assert.throws(
      () => retryValue([bad]),
      new RegExp(`VM "${bad.replace("*", "\\*")}" is not valid`),
    );
  }
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
  const removeHypervisors = await hypervisors(api, [name]);
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
      observedGeneration: 1,
      migratedCount: 1,
      inFlightCount: 2,
      outstandingCount: 2,
      effectiveLimit: 2,
      conditions: [condition("True", "Running")],
    });
    await new Promise((r) => setTimeout(r, 1500));
    // Not a settled Succeeded: one VM still outstanding (longer than a poll).
    await patch({
      migratedCount: 2,
      inFlightCount: 0,
      outstandingCount: 1,
      conditions: [condition("False", "Succeeded")],
    });
    await new Promise((r) => setTimeout(r, 1500));
    // Succeeded for less than a poll, then a VM arrives: reopened.
    await patch({
      outstandingCount: 0,
      conditions: [condition("False", "Succeeded")],
    });
    await new Promise((r) => setTimeout(r, 800));
    await patch({
      outstandingCount: 1,
      conditions: [condition("True", "Running")],
    });
    await new Promise((r) => setTimeout(r, 1500));
    // Seen empty, settling (no finishedAt) for longer than two polls.
    const emptySince = new Date().toISOString();
    await patch({
      migratedCount: 3,
      inFlightCount: 0,
      outstandingCount: 0,
      emptySince,
      conditions: [condition("True", "Settling")],
    });
    await new Promise((r) => setTimeout(r, 2500));
    await patch({
      finishedAt: new Date().toISOString(),
      conditions: [condition("False", "Succeeded")],
    });
    return performance.now();
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
  const exitedAt = performance.now();
  const finalWrittenAt = await controller;
  const stdout = new TextDecoder().decode(run.stdout);
  const stderr = new TextDecoder().decode(run.stderr);
  try {
    assert.equal(run.code, 0, stderr);
    assert.ok(
      exitedAt >= finalWrittenAt,
      "--wait returned only after the settled Succeeded",
    );
    assert.match(stdout, new RegExp(`eviction.kvm.cloud.sap/${name} created`));
    assert.match(
      stdout,
      new RegExp(
        `${name}: drained, 3 VMs migrated; the host has been seen empty for [2-9] s`,
      ),
    );
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
    await removeHypervisors();
  }
});

Deno.test("kubectl evictor drain with several hosts creates their Evictions as one wave", async () => {
  const env = await sharedEnvtest();
  const s = crypto.randomUUID().slice(0, 8);
  const names = [`wave-a-${s}`, `wave-b-${s}`, `wave-c-${s}`];
  const api = env.kubeConfig().makeApiClient(k8s.CustomObjectsApi);
  const ref = { group: "kvm.cloud.sap", version: "v1", plural: "evictions" };
  const removeHypervisors = await hypervisors(api, names);
  // one exists already: the others are still created, and the exit says so
  await api.createClusterCustomObject({
    ...ref,
    body: {
      apiVersion: "kvm.cloud.sap/v1",
      kind: "Eviction",
      metadata: { name: names[2] },
      spec: { hypervisor: names[2], reason: "earlier" },
    },
  });
  try {
    const { io, out, err } = captureIo(env.kubeConfig());
    const code = await runPlugin(
      [
        "drain",
        ...names,
        names[0]!,
        "--reason",
        "rack 7",
        "--max-concurrent",
        "3",
      ],
      io,
    );
    assert.equal(code, 1, err.join("\n"));
    for (const n of names.slice(0, 2)) {
      assert.ok(
        out.includes(`eviction.kvm.cloud.sap/${n} created`),
        out.join(),
      );
      const e = await api.getClusterCustomObject({
        ...ref,
        name: n,
      }) as Eviction;
      assert.deepEqual(e.spec, {
        hypervisor: n,
        reason: "rack 7",
        maxConcurrentMigrations: 3,
      });
    }
    assert.deepEqual(err, [
      `error: eviction.kvm.cloud.sap/${
        names[2]
      } not created: evictions.kvm.cloud.sap "${names[2]}" already exists`,
    ]);
  } finally {
    for (const n of names) {
      await api.deleteClusterCustomObject({ ...ref, name: n }).catch(() => {});
    }
    await removeHypervisors();
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
      // kubectl get's columns: REASON, then empty counts before the first pass
      new RegExp(`^${name}\\s+${name}\\s+x\\s+Pending\\s+\\d+s$`, "m"),
    );
  } finally {
    await api.deleteClusterCustomObject({ ...ref, name });
  }
});

Deno.test("kubectl evictor retry sets the retry annotation; an unknown Eviction is refused", async () => {
  const env = await sharedEnvtest();
  const name = `plugin-retry-${crypto.randomUUID().slice(0, 8)}`;
  const api = env.kubeConfig().makeApiClient(k8s.CustomObjectsApi);
  const ref = { group: "kvm.cloud.sap", version: "v1", plural: "evictions" };
  await api.createClusterCustomObject({
    ...ref,
    body: {
      apiVersion: "kvm.cloud.sap/v1",
      kind: "Eviction",
      metadata: { name, annotations: { keep: "me" } },
      spec: { hypervisor: name, reason: "x" },
    },
  });
  const kubectl = async (...args: string[]) => {
    const r = await new Deno.Command(`${env.binDir}/kubectl`, {
      args: ["evictor", "retry", ...args],
      env: {
        PATH: `${new URL("bin", ROOT).pathname}:${Deno.env.get("PATH") ?? ""}`,
        KUBECONFIG: env.kubeconfigPath,
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    return {
      code: r.code,
      out: new TextDecoder().decode(r.stdout),
      err: new TextDecoder().decode(r.stderr),
    };
  };
  const annotations = async () =>
    ((await api.getClusterCustomObject({ ...ref, name })) as Eviction)
      .metadata?.annotations ?? {};
  try {
    const vm = "3f1c2d4e-0b6a-4c1e-9f7a-2d5b8e9c1a0f";
    const two = await kubectl(name, vm, "other-vm");
    assert.equal(two.code, 0, two.err);
    assert.match(two.out, new RegExp(`retry requested for ${vm}, other-vm`));
    assert.match(two.err, /not failed now, the controller will ignore: 3f1c/);
    assert.deepEqual(await annotations(), {
      keep: "me",
      [RETRY_ANNOTATION]: `${vm},other-vm`,
    });
    const all = await kubectl(name);
    assert.equal(all.code, 0, all.err);
    assert.match(all.out, /retry requested for every failed VM/);
    assert.equal((await annotations())[RETRY_ANNOTATION], "*");
    const missing = await kubectl(`${name}-nosuch`);
    assert.equal(missing.code, 1);
    assert.match(missing.err, new RegExp(`no Eviction "${name}-nosuch"`));
  } finally {
    await api.deleteClusterCustomObject({ ...ref, name });
  }
});

Deno.test("stateText: table, a drain stopped on a SUSPENDED VM waits for a person and names it", () => {
  const none = {
    ready: 0,
    busy: 0,
    backoff: 0,
    needsPerson: 0,
    held: undefined,
  };
  const suspended = { id: "vm-s", reason: "SUSPENDED needs a person" };
  const failure = {
    id: "vm-e",
    reason: "ERROR: boom",
    attempts: 3,
    lastAttemptAt: "2026-12-01T00:00:00Z",
  };
  // The Evicting condition as the controller derives it from the status.
  const eviction = (
    status: NonNullable<Eviction["status"]>,
    needsPerson = 0,
  ) => {
    const c = evictingCondition(status, { ...none, needsPerson });
    const e: Eviction = {
      spec: { hypervisor: "n1", reason: "r" },
      status: {
        ...status,
        conditions: [{ ...c, lastTransitionTime: "2026-12-01T00:00:00Z" }],
      },
    };
    return e;
  };
  const rows: [string, Eviction, string, string][] = [
    [
      "no pass yet",
      { spec: { hypervisor: "n1", reason: "r" } },
      "Pending",
      "Pending",
    ],
    [
      "running beside a SUSPENDED VM: the state alone",
      eviction({
        outstandingCount: 3,
        inFlightCount: 1,
        migratedCount: 2,
        skipped: [suspended],
      }, 1),
      "Running",
      "Running",
    ],
    [
      "only a SUSPENDED VM left, none failed: WaitingForPerson, naming it",
      eviction({
        outstandingCount: 1,
        inFlightCount: 0,
        migratedCount: 3,
        skipped: [suspended],
      }, 1),
      "WaitingForPerson",
      "WaitingForPerson: waiting for a person: 1 VMs left on the host, none failed: vm-s (SUSPENDED needs a person)",
    ],
    [
      "a failed VM and a SUSPENDED one: Failed",
      eviction({
        outstandingCount: 2,
        inFlightCount: 0,
        migratedCount: 3,
        skipped: [suspended],
        failed: [failure],
      }, 2),
      "Failed",
      "Failed: 2 VMs left on the host need a person (see status.failed and status.skipped)",
    ],
  ];
  for (const [name, e, state, text] of rows) {
    assert.equal(stateOf(e), state, name);
    assert.equal(stateText(e), text, name);
    // Never "Failed" beside "0 failed".
    if (countsOf(e).failed === 0) assert.notEqual(stateOf(e), "Failed", name);
  }
});
