/**
 * Large update reviews, through a real API server (a dedicated one: the
 * ValidatingWebhookConfiguration affects the whole server). A review
 * carries the object and the old object: for the largest Eviction the API
 * server stores (~1.9 MiB) a user's update and an operator's finalizer
 * patch go through instead of failing closed (and, for the finalizer,
 * being retried for ever), and the update review of a 2.5 MiB Eviction is
 * served (a dry run: the API server's etcd client sends at most 2 MiB).
 */
import assert from "node:assert/strict";
import { parseConcurrencyFlags } from "../limits/flags.ts";
import { EvictionKind } from "../controllers/kinds.ts";
import { silentLogger } from "../framework/logger.ts";
import { Operator } from "../framework/operator.ts";
import { startEnvtest } from "./harness/envtest.ts";
import {
  eviction,
  hypervisor,
  manifest,
  policy,
  startWebhookOperator,
  webhookConfigurationYaml,
} from "./_webhook_fixture.ts";

const FINALIZER = "large-review-test.operator/finalizer";

async function until(
  what: string,
  done: () => Promise<boolean>,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

Deno.test({
  name:
    "the update review of a 2.5 MiB Eviction is served; a finalizer patch on it goes through",
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const flags = parseConcurrencyFlags("2", []);
  if (!flags.ok) throw new Error(flags.error.message);
  const env = await startEnvtest();
  const hook = await startWebhookOperator(env, flags.settings);
  const dir = await Deno.makeTempDir({ prefix: "evictor-large-review-" });
  let finalizing: Operator | undefined;
  try {
    const kubectl = (args: string[], stdin?: string) =>
      env.kubectl(args, stdin === undefined ? {} : { stdin });
    // patches too large for a command line go through a file
    const patchFromFile = async (extra: string[], patch: unknown) => {
      const file = `${dir}/patch.json`;
      await Deno.writeTextFile(file, JSON.stringify(patch));
      return kubectl([
        "patch",
        "eviction",
        "node001",
        "--type=merge",
        `--patch-file=${file}`,
        ...extra,
      ]);
    };
    let r = await kubectl(
      ["apply", "-f", "-"],
      manifest(hypervisor("node001")),
    );
    assert.equal(r.code, 0, r.stderr);
    r = await kubectl(
      ["apply", "-f", "-"],
      await webhookConfigurationYaml(hook.baseUrl, env.caCertPem),
    );
    assert.equal(r.code, 0, r.stderr);
    const probe = manifest(policy({
      maxConcurrentMigrations: 4,
      traitLimits: [{ trait: "custom_probe", maxConcurrentMigrations: 1 }],
    }));
    let last = "";
    await until("the API server calls the webhook", async () => {
      const p = await kubectl(["apply", "--dry-run=server", "-f", "-"], probe);
      last = p.stderr;
      return p.code !== 0 && p.stderr.includes("denied the request");
    }).catch((err) => {
      throw new Error(`${err.message}; kubectl said: ${last}`);
    });

    r = await kubectl(
      ["create", "-f", "-"],
      manifest(eviction("node001", { hypervisor: "node001", reason: "big" })),
    );
    assert.equal(r.code, 0, r.stderr);
    // the largest Eviction the API server stores: its etcd client sends at
    // most 2 MiB, whatever etcd accepts; ~1.9 MiB of status here (50,000
    // instance ids), which an update review carries twice
    const ids = Array.from(
      { length: 50_000 },
      (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
    );
    r = await patchFromFile([
      "--subresource=status",
    ], { status: { outstandingInstances: ids } });
    assert.equal(r.code, 0, r.stderr);
    const stored = (await kubectl(["get", "eviction", "node001", "-o", "json"]))
      .stdout.length;
    assert.ok(stored > 1.8 * 1024 * 1024, `only ${stored} bytes`);

    // a user's update: the review holds the object and the old object
    r = await kubectl(["label", "eviction", "node001", "team=compute"]);
    assert.equal(r.code, 0, r.stderr);

    // an update that makes it a 2.5 MiB Eviction (2,800 finalizers of ~270
    // bytes): admission runs before storage, so a server-side dry run
    // shows the webhook serving a review of over 4 MiB
    const finalizers = Array.from(
      { length: 2_800 },
      (_, i) =>
        `${"a".repeat(60)}.${"b".repeat(60)}.${
          "c".repeat(60)
        }.x${i}.example.com/${"n".repeat(60)}`,
    );
    r = await patchFromFile(["--dry-run=server", "-o", "json"], {
      metadata: { finalizers },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(
      r.stdout.length > 2.5 * 1024 * 1024,
      `the updated Eviction has only ${r.stdout.length} bytes`,
    );

    // an operator's finalizer patch (the framework's own, as evictor sends it)
    finalizing = new Operator({
      name: "large-review-test",
      kubeconfigPath: env.kubeconfigPath,
      healthAddress: false,
      handleSignals: false,
      processMetrics: false,
      logger: silentLogger(),
      finalizer: FINALIZER,
    });
    finalizing.reconcile(EvictionKind, () => {});
    finalizing.finalize(EvictionKind, () => {});
    await finalizing.start();
    await until("the finalizer is on the Eviction", async () => {
      const got = await kubectl([
        "get",
        "eviction",
        "node001",
        "-o",
        "jsonpath={.metadata.finalizers}",
      ]);
      return got.stdout.includes(FINALIZER);
    });
    const text = await hook.operator.metrics.registry.metrics();
    const refused = text.split("\n").filter((l) =>
      l.includes("webhook_requests_total") && l.includes("evictions") &&
      !l.includes('code="200"') && !l.startsWith("#")
    );
    assert.deepEqual(refused, [], "every review was answered 200");
  } finally {
    await finalizing?.stop();
    await hook.stop();
    await env.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
