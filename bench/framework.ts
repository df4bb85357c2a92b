/**
 * Framework benchmark (task `bench:framework`); prints a report and writes
 * it to bench/reports/framework.md and framework.json. Not a test.
 *
 * 1. No-op reconciles per second through the work queue and controller
 *    (distinct keys, then the same keys re-added while processing), at 1
 *    and 4 workers. Target: >= 2,000/s.
 * 2. Resident memory of the whole operator as deployed (bench/operator_rss.ts:
 *    main.ts with the compile task's permissions, every controller and the
 *    webhook) with 5,000 Hypervisors and 100 Evictions, against a real API
 *    server and the Nova simulator, through the first Hypervisor sync and a
 *    full resync: `peakRssMb` and `settledRssMb`, from which
 *    manifests/manager/deployment.yaml sets its memory request and limit.
 *
 * Usage: deno run -A bench/framework.ts [--hypervisors N] [--evictions N] [--keys N]
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
import { V8_FLAGS } from "../app/permissions.ts";
import { measureOperatorRss } from "./operator_rss.ts";

const Items = defineKind<KubeObject>({
  group: "fwbench.example.com",
  version: "v1",
  plural: "items",
  kind: "Item",
  namespaced: false,
});

const { values } = parseArgs({
  args: Deno.args,
  options: {
    hypervisors: { type: "string", default: "5000" },
    evictions: { type: "string", default: "100" },
    "resync-seconds": { type: "string", default: "120" },
    // comma-separated, instead of the binary's (experiments)
    "v8-flags": { type: "string" },
    // report file names under bench/reports/ (experiments write elsewhere)
    report: { type: "string", default: "framework" },
    keys: { type: "string", default: "50000" },
  },
});

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

const keys = Number(values.keys);
const hypervisors = Number(values.hypervisors);
const evictions = Number(values.evictions);
const resyncSeconds = Number(values["resync-seconds"]);
for (const [name, n] of Object.entries({ keys, hypervisors, resyncSeconds })) {
  if (!(Number.isInteger(n) && n > 0)) {
    throw new RangeError(`--${name} must be an integer > 0, got ${n}`);
  }
}
if (
  !(Number.isInteger(evictions) && evictions >= 0 && evictions <= hypervisors)
) {
  throw new RangeError(
    `--evictions must be an integer from 0 to --hypervisors, got ${evictions}`,
  );
}
console.error(`queue throughput: ${keys} keys x2 ...`);
const q1 = await queueThroughput(keys, 1);
const q4 = await queueThroughput(keys, 4);
console.error(
  `operator RSS with ${hypervisors} Hypervisors and ${evictions} Evictions (starts an API server and the Nova simulator) ...`,
);
const rss = await measureOperatorRss({
  hypervisors,
  evictions,
  vmsPerDrain: 2,
  resyncSeconds,
  settleSeconds: 30,
  ...(values["v8-flags"] === undefined ? {} : {
    v8Flags: values["v8-flags"].split(",").filter((f) => f !== ""),
  }),
});

const report = {
  date: new Date().toISOString(),
  deno: Deno.version.deno,
  cpus: navigator.hardwareConcurrency,
  queue: { keys: keys * 2, workers1: q1, workers4: q4, target: ">= 2000/s" },
  // what manifests/manager/deployment.yaml's memory request and limit
  // come from (tests/deploy_manifest_test.ts checks them against these)
  peakRssMb: rss.peakRssMb,
  settledRssMb: rss.settledRssMb,
  operator: {
    hypervisors,
    evictions,
    resyncSeconds,
    v8Flags: values["v8-flags"] ?? V8_FLAGS.join(","),
    ...rss,
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
| operator peak RSS (${hypervisors} Hypervisors, ${evictions} Evictions) | ${rss.peakRssMb} MB at ${rss.peakAtS} s | | |
| operator settled RSS (after the full resync) | ${rss.settledRssMb} MB | | |
| operator RSS once the caches synced | ${rss.syncedCachesRssMb} MB | | |
| first Hypervisor sync / full resync done | ${rss.firstSyncS} s / ${rss.resyncS} s | | |

Reconciles go through the real WorkQueue and Controller (metrics, per-key
backoff bookkeeping) with a no-op handler and an in-memory cache; each key is
added twice, and re-adds of a queued key collapse, so the count is of
reconciles actually run.

The memory figures are the whole operator (bench/operator_rss.ts): main.ts
run with exactly the compile task's permissions, every controller and the
webhook on, against a real kube-apiserver and the Nova simulator, sampled
(VmRSS) every 250 ms from start through the first sync of ${hypervisors}
Hypervisors, the ${evictions} drains (${rss.drainsDone} done at the end) and a
full resync (${resyncSeconds} s interval), then ${30} s more: the settled
figure is the median of those last 30 s. ${rss.hypervisorsSynced} Hypervisors
had a synced status at the end. A compiled binary (no TypeScript
transpiler loaded) should use somewhat less than \`deno run\`.
`;
console.log(md);
await Deno.mkdir(new URL("./reports/", import.meta.url), { recursive: true });
await Deno.writeTextFile(
  new URL(`./reports/${values.report}.md`, import.meta.url),
  md,
);
await Deno.writeTextFile(
  new URL(`./reports/${values.report}.json`, import.meta.url),
  JSON.stringify(report, null, 2) + "\n",
);
// the report is committed: keep it as `deno fmt --check` wants it
await new Deno.Command(Deno.execPath(), {
  args: [
    "fmt",
    "--quiet",
    new URL(`./reports/${values.report}.md`, import.meta.url).pathname,
  ],
}).output();
