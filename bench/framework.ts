/**
 * Framework benchmark (task `bench:framework`); prints a report and writes
 * it to bench/reports/framework.md and framework.json. Not a test.
 *
 * 1. No-op reconciles per second through the work queue and controller
 *    (distinct keys, then the same keys re-added while processing), at 1
 *    and 4 workers. Target: >= 2,000/s.
 * 2. Resident memory of a whole operator process (informer cache, queue,
 *    metrics, a no-op reconcile handler) holding 5,000 custom objects from
 *    a real API server. Target: < 150 MB RSS.
 *
 * Usage: deno run -A bench/framework.ts [--objects N] [--keys N]
 *
 * @module
 */

import { parseArgs } from "node:util";
import { Controller } from "../framework/controller.ts";
import type { EventRecorder } from "../framework/events.ts";
import type { CacheReader } from "../framework/informer.ts";
import { defineKind, type KubeObject } from "../framework/kind.ts";
import { silentLogger } from "../framework/logger.ts";
import { FrameworkMetrics } from "../framework/metrics.ts";
import { Operator } from "../framework/operator.ts";
import type { KubeClient } from "../framework/client.ts";

const Items = defineKind<KubeObject & { spec?: Record<string, unknown> }>({
  group: "fwbench.example.com",
  version: "v1",
  plural: "items",
  kind: "Item",
  namespaced: false,
});

const { values } = parseArgs({
  args: Deno.args,
  options: {
    objects: { type: "string", default: "5000" },
    keys: { type: "string", default: "50000" },
    "child-rss": { type: "boolean", default: false },
    kubeconfig: { type: "string" },
  },
});

const mb = (bytes: number) => Math.round(bytes / 1024 / 1024 * 10) / 10;

if (values["child-rss"]) {
  // the measured process: a whole operator caching every Item
  const expected = Number(values.objects);
  let reconciled = 0;
  const seen = new Set<string>();
  const before = Deno.memoryUsage().rss;
  const op = new Operator({
    name: "fwbench",
    kubeconfigPath: values.kubeconfig ?? "",
    healthAddress: false,
    handleSignals: false,
    logger: silentLogger(),
  });
  op.reconcile(Items, ({ key }) => {
    if (!seen.has(key)) {
      seen.add(key);
      reconciled++;
    }
  }, { maxConcurrent: 4 });
  await op.start();
  while (reconciled < expected) await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, 1000));
  const mem = Deno.memoryUsage();
  console.log(JSON.stringify({
    rssBeforeStart: before,
    rss: mem.rss,
    heapUsed: mem.heapUsed,
    cached: op.cache(Items).list().length,
  }));
  await op.stop();
  Deno.exit(0);
}

async function queueThroughput(
  keys: number,
  workers: number,
): Promise<{ perSecond: number; ms: number }> {
  const metrics = new FrameworkMetrics({ processMetrics: false });
  const cache: CacheReader<KubeObject> = {
    get: (key) => ({ metadata: { name: key } }),
    list: () => [],
    hasSynced: true,
  };
  const ctl = new Controller<KubeObject>({
    kind: Items,
    cache,
    client: () => {
      throw new Error("the no-op bench makes no API call");
    },
    logger: silentLogger(),
    metrics,
    events: (): EventRecorder => {
      throw new Error("the no-op bench records no event");
    },
    cacheOf: () => {
      throw new Error("the no-op bench reads no other cache");
    },
    enqueue: () => {},
    finalizer: "bench/finalizer",
  });
  ctl.configure({ maxConcurrent: workers });
  let done = 0;
  let finish: () => void = () => {};
  const finished = new Promise<void>((r) => finish = r);
  const total = keys * 2;
  ctl.reconcileHandler = () => {
    done++;
    if (done === total) finish();
  };
  const started = performance.now();
  ctl.start();
  // every key twice: once fresh, once re-added (dirty while queued or processing)
  for (let i = 0; i < keys; i++) ctl.enqueue(`k${i}`);
  for (let i = 0; i < keys; i++) {
    ctl.enqueue(`k${i}`);
    if (i % 1000 === 0) await new Promise((r) => setTimeout(r, 0));
  }
  // de-duplication may collapse some re-adds; count what actually ran
  const deadline = Date.now() + 60_000;
  while (done < total && Date.now() < deadline) {
    if (ctl.queue.length === 0 && ctl.queue.processing.size === 0) break;
    await Promise.race([finished, new Promise((r) => setTimeout(r, 10))]);
  }
  const ms = performance.now() - started;
  await ctl.stop(1000);
  ctl.shutdown();
  return { perSecond: Math.round(done / (ms / 1000)), ms: Math.round(ms) };
}

async function rssWithObjects(objects: number) {
  const { startEnvtest } = await import("../tests/harness/envtest.ts");
  const { KubeClient } = await import("../framework/client.ts");
  const pLimit = (await import("p-limit")).default;
  const env = await startEnvtest({ installCrds: false });
  try {
    const client: KubeClient = await KubeClient.fromKubeConfig(
      env.kubeConfig(),
    );
    await client.request(
      "POST",
      "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
      {
        body: {
          apiVersion: "apiextensions.k8s.io/v1",
          kind: "CustomResourceDefinition",
          metadata: { name: "items.fwbench.example.com" },
          spec: {
            group: "fwbench.example.com",
            scope: "Cluster",
            names: {
              plural: "items",
              singular: "item",
              kind: "Item",
              listKind: "ItemList",
            },
            versions: [{
              name: "v1",
              served: true,
              storage: true,
              subresources: { status: {} },
              schema: {
                openAPIV3Schema: {
                  type: "object",
                  "x-kubernetes-preserve-unknown-fields": true,
                },
              },
            }],
          },
        },
      },
    );
    for (let i = 0; i < 100; i++) {
      try {
        await client.request(
          "GET",
          "/apis/fwbench.example.com/v1/items?limit=1",
        );
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    // objects shaped like a Hypervisor: a few spec fields, traits, conditions
    const limit = pLimit(16);
    const createStarted = performance.now();
    await Promise.all(
      Array.from(
        { length: objects },
        (_, i) =>
          limit(() =>
            client.create(Items, {
              metadata: {
                name: `node${String(i).padStart(5, "0")}`,
                labels: { "kvm.cloud.sap/az": `az${i % 3}` },
              },
              spec: {
                maintenance: "",
                customTraits: ["CUSTOM_A", "CUSTOM_B"],
                hypervisorId: crypto.randomUUID(),
                traits: [
                  "COMPUTE_STATUS_DISABLED",
                  "CUSTOM_HANA_EXCLUSIVE_HOST",
                  "HW_CPU_X86_AVX2",
                ],
                conditions: [
                  {
                    type: "TraitsUpdated",
                    status: "True",
                    reason: "Synced",
                    message: "traits synced",
                    lastTransitionTime: new Date().toISOString(),
                  },
                  {
                    type: "Onboarding",
                    status: "False",
                    reason: "Done",
                    message: "onboarded",
                    lastTransitionTime: new Date().toISOString(),
                  },
                ],
              },
            })
          ),
      ),
    );
    const createMs = performance.now() - createStarted;
    client.close();
    const child = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        new URL(import.meta.url).pathname,
        "--child-rss",
        "--objects",
        String(objects),
        "--kubeconfig",
        env.kubeconfigPath,
      ],
      stdout: "piped",
      stderr: "inherit",
    }).output();
    const text =
      new TextDecoder().decode(child.stdout).trim().split("\n").pop() ?? "{}";
    const res = JSON.parse(text) as {
      rss: number;
      rssBeforeStart: number;
      heapUsed: number;
      cached: number;
    };
    return { ...res, createMs: Math.round(createMs) };
  } finally {
    await env.stop();
  }
}

const keys = Number(values.keys);
const objects = Number(values.objects);
if (!(keys > 0) || !(objects > 0)) {
  throw new RangeError(
    `--keys and --objects must be > 0, got ${values.keys} and ${values.objects}`,
  );
}
console.error(`queue throughput: ${keys} keys x2 ...`);
const q1 = await queueThroughput(keys, 1);
const q4 = await queueThroughput(keys, 4);
console.error(`RSS with ${objects} cached objects (starts an API server) ...`);
const rss = await rssWithObjects(objects);

const report = {
  date: new Date().toISOString(),
  deno: Deno.version.deno,
  cpus: navigator.hardwareConcurrency,
  queue: { keys: keys * 2, workers1: q1, workers4: q4, target: ">= 2000/s" },
  memory: {
    objects,
    cached: rss.cached,
    rssMb: mb(rss.rss),
    rssBeforeStartMb: mb(rss.rssBeforeStart),
    heapUsedMb: mb(rss.heapUsed),
    createMs: rss.createMs,
    target: "< 150 MB",
  },
};
const md = `# Framework benchmark

${report.date}, Deno ${report.deno}, ${report.cpus} CPUs (shared machine).

| measure | result | target | verdict |
| --- | --- | --- | --- |
| no-op reconciles/s, 1 worker (${
  keys * 2
} adds) | ${q1.perSecond} (${q1.ms} ms) | >= 2,000/s | ${
  q1.perSecond >= 2000 ? "met" : "MISSED"
} |
| no-op reconciles/s, 4 workers (${
  keys * 2
} adds) | ${q4.perSecond} (${q4.ms} ms) | >= 2,000/s | ${
  q4.perSecond >= 2000 ? "met" : "MISSED"
} |
| operator RSS with ${rss.cached} cached objects | ${mb(rss.rss)} MB (heap ${
  mb(rss.heapUsed)
} MB; ${mb(rss.rssBeforeStart)} MB before start) | < 150 MB | ${
  mb(rss.rss) < 150 ? "met" : "MISSED"
} |

Reconciles go through the real WorkQueue and Controller (metrics, per-key
backoff bookkeeping) with a no-op handler and an in-memory cache; each key is
added twice, and re-adds of a queued key collapse, so the count is of
reconciles actually run. The memory figure is the whole operator process
(Deno runtime included) after its informer listed ${objects} Hypervisor-sized
custom objects from a real kube-apiserver and reconciled each once.
`;
console.log(md);
await Deno.mkdir(new URL("./reports/", import.meta.url), { recursive: true });
await Deno.writeTextFile(
  new URL("./reports/framework.md", import.meta.url),
  md,
);
await Deno.writeTextFile(
  new URL("./reports/framework.json", import.meta.url),
  JSON.stringify(report, null, 2) + "\n",
);
