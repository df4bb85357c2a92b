import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { sharedEnvtest, startEnvtest } from "./envtest.ts";

/** Pids of the processes whose command line mentions `needle`. */
async function processesMentioning(needle: string): Promise<number[]> {
  const pids: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const cmdline = await Deno.readTextFile(`/proc/${entry.name}/cmdline`);
      const args = cmdline.split("\0");
      // The servers themselves, not the bash watchdogs around them.
      if (
        args.some((a) => a.includes(needle)) &&
        /\/(etcd|kube-apiserver)$/.test(args[0] ?? "")
      ) pids.push(Number(entry.name));
    } catch { /* gone meanwhile */ }
  }
  return pids;
}

async function waitUntil(what: string, ok: () => Promise<boolean>) {
  const deadline = Date.now() + 15_000;
  while (!(await ok())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

Deno.test("a test process killed with SIGKILL leaves no server behind", async () => {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("testdata/start_and_hang.ts", import.meta.url).pathname,
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  const { dir } = JSON.parse(text) as { dir: string };
  assert.equal(
    (await processesMentioning(dir)).length,
    2,
    "etcd and kube-apiserver run",
  );
  child.kill("SIGKILL");
  await child.status;
  await reader.cancel();
  await waitUntil(
    "etcd and kube-apiserver end with their test process",
    async () => (await processesMentioning(dir)).length === 0,
  );
  await Deno.remove(dir, { recursive: true }).catch(() => {});
});

Deno.test("stop() ends both servers and removes their files", async () => {
  const env = await startEnvtest({ installCrds: false });
  const dir = env.kubeconfigPath.replace(/\/[^/]+$/, "");
  assert.equal((await processesMentioning(dir)).length, 2);
  await env.stop();
  assert.deepEqual(await processesMentioning(dir), []);
  await assert.rejects(Deno.stat(dir), Deno.errors.NotFound);
});

Deno.test("RBAC is enforced for client-certificate users", async () => {
  const env = await sharedEnvtest();
  const nobody = new k8s.KubeConfig();
  nobody.loadFromFile(await env.kubeconfigFor("envtest-nobody", ["testers"]));
  const core = nobody.makeApiClient(k8s.CoreV1Api);
  await assert.rejects(
    core.listSecretForAllNamespaces(),
    (e: unknown) => e instanceof k8s.ApiException && e.code === 403,
  );
  const admin = env.kubeConfig().makeApiClient(k8s.CoreV1Api);
  const secrets = await admin.listSecretForAllNamespaces();
  assert.ok(Array.isArray(secrets.items));
  const who = await env.kubectl([
    "auth",
    "whoami",
    "-o",
    "jsonpath={.status.userInfo.username}",
  ]);
  assert.equal(who.stdout, "envtest-admin");
});
