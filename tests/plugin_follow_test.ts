/**
 * The kubectl plugin following drains and printing as kubectl does,
 * through the real kubectl (bin/ on PATH) against the real API server; the
 * test writes the Evictions' status as the controller would:
 * `drain --wait` follows an Eviction that exists already; `wait` over two
 * hosts has one deadline; `--timeout 5m`; `--wait=false`; `status -w`;
 * `-o jsonpath`, `-o custom-columns`, `-o json` (a List); `kubectl get
 * evictions` and `status` print the same columns; completion finds names.
 */
import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { type Envtest, sharedEnvtest } from "./harness/envtest.ts";
import { waitFor } from "./harness/eviction_env.ts";
import { kubectlEvictor } from "./_plugin_cli.ts";
import { completionScript } from "../cli/completion_command.ts";

const ROOT = new URL("../", import.meta.url);
const REF = { group: "kvm.cloud.sap", version: "v1", plural: "evictions" };

function api(env: Envtest) {
  return env.kubeConfig().makeApiClient(k8s.CustomObjectsApi);
}

async function createEviction(env: Envtest, name: string, reason: string) {
  await api(env).createClusterCustomObject({
    ...REF,
    body: {
      apiVersion: "kvm.cloud.sap/v1",
      kind: "Eviction",
      metadata: { name },
      spec: { hypervisor: name, reason },
    },
  });
}

const condition = (
  type: string,
  status: string,
  reason: string,
  message = reason,
) => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
});

/** Writes status as the controller does (a merge patch of the subresource). */
async function writeStatus(
  env: Envtest,
  name: string,
  status: Record<string, unknown>,
) {
  await api(env).patchClusterCustomObjectStatus(
    { ...REF, name, body: { status } },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
  );
}

const running = (failed = 0) => ({
  observedGeneration: 1,
  migratedCount: 1,
  inFlightCount: 1,
  outstandingCount: 2 + failed,
  effectiveLimit: 2,
  limitSource: "policy",
  startedAt: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
  failed: Array.from({ length: failed }, (_, i) => ({
    id: `vm-${i}`,
    reason: "ERROR: boom",
    attempts: 3,
    lastAttemptAt: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
  })),
  conditions: [
    condition("Evicting", "True", "Running", "1 in flight"),
    ...(failed > 0
      ? [
        condition(
          "MigratingInstance",
          "False",
          "Failed",
          `${failed} VMs failed: vm-0`,
        ),
      ]
      : []),
  ],
});

/** A settled Succeeded, as the controller writes it. */
function succeeded() {
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  return {
    observedGeneration: 1,
    migratedCount: 3,
    inFlightCount: 0,
    outstandingCount: 0,
    emptySince: now,
    finishedAt: now,
    conditions: [condition("Evicting", "False", "Succeeded")],
  };
}

/** `kubectl evictor ARGS` started, its stderr readable while it runs. */
function spawnPlugin(env: Envtest, args: string[]) {
  const child = new Deno.Command(`${env.binDir}/kubectl`, {
    args: ["evictor", ...args],
    env: {
      PATH: `${new URL("bin", ROOT).pathname}:${Deno.env.get("PATH") ?? ""}`,
      KUBECONFIG: env.kubeconfigPath,
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let stderr = "";
  let stdout = "";
  const reading = Promise.all([
    (async () => {
      for await (
        const chunk of child.stderr.pipeThrough(new TextDecoderStream())
      ) stderr += chunk;
    })(),
    (async () => {
      for await (
        const chunk of child.stdout.pipeThrough(new TextDecoderStream())
      ) stdout += chunk;
    })(),
  ]);
  return {
    stderr: () => stderr,
    stdout: () => stdout,
    done: (async () => {
      const status = await child.status;
      await reading;
      return { code: status.code, stdout, stderr };
    })(),
  };
}

async function cleanup(env: Envtest, names: string[]) {
  for (const name of names) {
    await api(env).deleteClusterCustomObject({ ...REF, name }).catch(() => {});
  }
}

async function apiReady(env: Envtest) {
  await waitFor(
    "the Eviction API",
    async () =>
      (await env.kubectl(["get", "evictions"])).code === 0 ? true : undefined,
  );
}

Deno.test({
  name:
    "drain --wait follows an Eviction that exists already (--timeout 5m), saying so and how its spec differs",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const env = await sharedEnvtest();
    await apiReady(env);
    const name = `follow-${crypto.randomUUID().slice(0, 8)}`;
    await createEviction(env, name, "earlier");
    try {
      await writeStatus(env, name, running());
      const run = spawnPlugin(env, [
        "drain",
        name,
        "--reason",
        "kernel 6.12",
        "--allow-unknown",
        "--wait",
        "--timeout",
        "5m",
      ]);
      await waitFor(
        "the plugin follows the Eviction",
        () => /following it/.test(run.stderr()) ? true : undefined,
      );
      await writeStatus(env, name, succeeded());
      const done = await run.done;
      assert.equal(done.code, 0, done.stderr);
      assert.match(
        done.stderr,
        new RegExp(
          `^eviction\\.kvm\\.cloud\\.sap/${name} exists already \\(created \\d+s ago, Running\\): following it; its spec differs from this command's: reason "earlier" \\(not "kernel 6\\.12"\\)$`,
          "m",
        ),
      );
      assert.match(done.stderr, /1\/3 migrated, 1 in flight, 2 outstanding/);
      assert.match(
        done.stdout,
        new RegExp(`^${name}: drained, 3 VMs migrated`, "m"),
      );
      assert.doesNotMatch(done.stderr, /^error:/m);

      // finished: not followed, refused as before
      const again = await kubectlEvictor(
        env,
        ["drain", name, "--reason", "kernel 6.12", "--allow-unknown", "--wait"],
        { KUBECONFIG: env.kubeconfigPath },
      );
      assert.equal(again.code, 1);
      assert.match(again.stderr, /already exists/);
    } finally {
      await cleanup(env, [name]);
    }
  },
});

Deno.test({
  name:
    "wait over two hosts that never finish ends at one deadline, not one per host; an unknown name is one line",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const env = await sharedEnvtest();
    await apiReady(env);
    const s = crypto.randomUUID().slice(0, 8);
    const names = [`wait-a-${s}`, `wait-b-${s}`];
    for (const n of names) await createEviction(env, n, "rack 7");
    const kube = { KUBECONFIG: env.kubeconfigPath };
    try {
      await writeStatus(env, names[0]!, running());
      const timeoutS = 3;
      const run = spawnPlugin(env, [
        "wait",
        ...names,
        "--timeout",
        `${timeoutS}s`,
      ]);
      // the deadline runs from before the list: from the first line shown,
      // at most the one deadline is left (host after host: two)
      await waitFor(
        "wait shows the drains",
        () => run.stderr().includes(names[1]!) ? true : undefined,
      );
      const t0 = performance.now();
      const r = await run.done;
      const took = performance.now() - t0;
      assert.equal(r.code, 1, r.stderr);
      const errors = r.stderr.split("\n").filter((l) => l.startsWith("error:"));
      assert.deepEqual(errors, [
        `error: timed out waiting for eviction.kvm.cloud.sap/${
          names[0]
        } after 3s: Running (the drain goes on)`,
        `error: timed out waiting for eviction.kvm.cloud.sap/${
          names[1]
        } after 3s: Pending (the drain goes on)`,
      ]);
      // one deadline: host after host would take twice the timeout
      assert.ok(took < 2 * timeoutS * 1000, `${took} ms, host after host?`);
      // a new Pending drain draws no full bar
      assert.match(
        r.stderr,
        new RegExp(
          `^${names[1]}\\s+\\[ {30}\\] waiting for the controller`,
          "m",
        ),
      );

      const unknown = await kubectlEvictor(
        env,
        ["wait", `nope-${s}`, "--timeout", "1m"],
        kube,
      );
      assert.equal(unknown.code, 1);
      assert.equal(
        unknown.stderr,
        `error: no Eviction "nope-${s}" (see kubectl evictor status for the names)\n`,
      );
    } finally {
      await cleanup(env, names);
    }
  },
});

Deno.test({
  name:
    "drain --wait=false creates and returns; wait follows one to its end with exit 0",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const env = await sharedEnvtest();
    await apiReady(env);
    const name = `nowait-${crypto.randomUUID().slice(0, 8)}`;
    const kube = { KUBECONFIG: env.kubeconfigPath };
    try {
      const r = await kubectlEvictor(
        env,
        [
          "drain",
          name,
          "--reason",
          "r",
          "--allow-unknown=true",
          "--wait=false",
          "--timeout",
          "5m",
        ],
        kube,
      );
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, `eviction.kvm.cloud.sap/${name} created\n`);
      assert.equal(r.stderr, "");

      const run = spawnPlugin(env, ["wait", name]);
      await waitFor(
        "wait shows the drain",
        () => run.stderr().includes(name) ? true : undefined,
      );
      await writeStatus(env, name, succeeded());
      const done = await run.done;
      assert.equal(done.code, 0, done.stderr);
      assert.match(done.stdout, new RegExp(`^${name}: drained`, "m"));
    } finally {
      await cleanup(env, [name]);
    }
  },
});

/** The cells of a kubectl-style table, cut at its header's columns. */
function cells(table: string): Record<string, string>[] {
  const [header = "", ...rows] = table.split("\n").filter((l) => l !== "");
  const starts = [...header.matchAll(/\S+( \S+)*/g)].map((m) => ({
    name: m[0],
    at: m.index ?? 0,
  }));
  return rows.map((row) =>
    Object.fromEntries(
      starts.map((c, i) => [
        c.name,
        row.slice(c.at, starts[i + 1]?.at ?? row.length).trim(),
      ]),
    )
  );
}

Deno.test({
  name:
    "status prints kubectl get evictions' columns; -o json is a List; jsonpath and custom-columns as kubectl's; -w prints changes",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const env = await sharedEnvtest();
    await apiReady(env);
    const s = crypto.randomUUID().slice(0, 8);
    const names = [`cols-a-${s}`, `cols-b-${s}`];
    const kube = { KUBECONFIG: env.kubeconfigPath };
    for (const n of names) await createEviction(env, n, "kernel 6.12");
    try {
      await writeStatus(env, names[0]!, running(1));
      for (const wide of [false, true]) {
        const o = wide ? ["-o", "wide"] : [];
        const got = await env.kubectl(["get", "evictions", ...names, ...o]);
        assert.equal(got.code, 0, got.stderr);
        const mine = await kubectlEvictor(env, ["status", ...o], kube);
        assert.equal(mine.code, 0, mine.stderr);
        const header = (t: string) =>
          t.split("\n")[0]?.split(/\s{2,}/).filter((h) => h !== "");
        assert.deepEqual(header(mine.stdout), header(got.stdout), "headers");
        const theirs = cells(got.stdout);
        const ours = cells(mine.stdout).filter((r) =>
          names.includes(r["NAME"] ?? "")
        );
        assert.equal(ours.length, 2);
        for (const [i, row] of theirs.entries()) {
          for (const [column, value] of Object.entries(row)) {
            // ages tick between the two runs
            if (column === "AGE" || column === "STARTED") {
              assert.match(
                ours[i]?.[column] ?? "",
                value === "" ? /^$/ : /^(\d+[smhdy])+$/,
                `${column} of ${row["NAME"]}`,
              );
              continue;
            }
            // before the first pass kubectl leaves State empty
            const want = column === "STATE" && value === "" ? "Pending" : value;
            assert.equal(
              ours[i]?.[column],
              want,
              `${column} of ${row["NAME"]}`,
            );
          }
        }
      }
      // what the table has no room for: on stderr
      const table = await kubectlEvictor(env, ["status", names[0]!], kube);
      assert.match(
        table.stderr,
        new RegExp(`^note: ${names[0]}: 1 VMs failed: vm-0 `, "m"),
      );

      const json = await kubectlEvictor(env, ["status", "-o", "json"], kube);
      assert.equal(json.code, 0, json.stderr);
      const list = JSON.parse(json.stdout);
      assert.equal(list.apiVersion, "v1");
      assert.equal(list.kind, "List");
      const item = list.items.find((i: { metadata: { name: string } }) =>
        i.metadata.name === names[0]
      );
      assert.equal(item.kind, "Eviction");
      assert.equal(item.status.migratedCount, 1);
      assert.equal(item.metadata.managedFields, undefined);

      const path = await kubectlEvictor(
        env,
        ["status", "-o", "jsonpath={.items[*].metadata.name}"],
        kube,
      );
      assert.equal(path.code, 0, path.stderr);
      for (const n of names) {
        assert.ok(path.stdout.trim().split(" ").includes(n), path.stdout);
      }
      const ranged = await kubectlEvictor(
        env,
        [
          "status",
          names[0]!,
          `-o=jsonpath={.metadata.name}{"\\t"}{.status.conditions[?(@.type=="Evicting")].reason}{"\\n"}`,
        ],
        kube,
      );
      assert.equal(ranged.code, 0, ranged.stderr);
      assert.equal(ranged.stdout, `${names[0]}\tRunning\n`);
      const custom = await kubectlEvictor(
        env,
        [
          "status",
          "-o",
          "custom-columns=NAME:.metadata.name,FAILED:.status.failed[*].id",
        ],
        kube,
      );
      assert.match(custom.stdout, /^NAME\s+FAILED$/m);
      assert.match(custom.stdout, new RegExp(`^${names[0]}\\s+vm-0$`, "m"));
      assert.match(custom.stdout, new RegExp(`^${names[1]}\\s+<none>$`, "m"));

      // -w: the table, then a row when one changes, until --timeout
      const watch = spawnPlugin(env, [
        "status",
        names[1]!,
        "-w",
        "--timeout",
        "20s",
      ]);
      await waitFor(
        "status -w printed its table",
        () => watch.stdout().includes(names[1]!) ? true : undefined,
      );
      await writeStatus(env, names[1]!, running());
      const watched = await watch.done;
      assert.equal(watched.code, 0, watched.stderr);
      const lines = watched.stdout.split("\n").filter((l) => l !== "");
      assert.match(lines[0] ?? "", /^NAME\s+HYPERVISOR/);
      assert.match(
        lines[1] ?? "",
        new RegExp(`^${names[1]}\\s+${names[1]}\\s+kernel 6\\.12\\s+Pending`),
      );
      assert.match(
        lines.at(-1) ?? "",
        new RegExp(
          `^${names[1]}\\s+${
            names[1]
          }\\s+kernel 6\\.12\\s+Running\\s+1\\s+1\\s+2\\s+2\\s`,
        ),
      );
    } finally {
      await cleanup(env, names);
    }
  },
});

Deno.test({
  name:
    "completion bash offers the Evictions' and Hypervisors' names through kubectl get",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const env = await sharedEnvtest();
    await apiReady(env);
    const name = `compl-${crypto.randomUUID().slice(0, 8)}`;
    await createEviction(env, name, "r");
    // kubectl keeps a discovery cache under HOME: a directory of the test's
    const home = await Deno.makeTempDir({ prefix: "evictor-completion-" });
    try {
      const out = await new Deno.Command("bash", {
        args: [
          "-c",
          `${completionScript("bash")}\n_kubectl_evictor_candidates "$@"`,
          "complete",
          "wait",
          "compl-",
        ],
        env: {
          PATH: `${env.binDir}:/usr/bin:/bin`,
          KUBECONFIG: env.kubeconfigPath,
          HOME: home,
        },
        clearEnv: true,
        stdout: "piped",
        stderr: "piped",
      }).output();
      const got = new TextDecoder().decode(out.stdout).split("\n");
      assert.ok(got.includes(name), got.join(","));
    } finally {
      await cleanup(env, [name]);
      await Deno.remove(home, { recursive: true });
    }
  },
});
