/**
 * Webhook benchmark (task `bench:webhook`): writes bench/reports/webhook.json
 * and bench/reports/webhook.md. Not a test.
 *
 * A dedicated kube-apiserver holds a seeded cluster (Hypervisors,
 * unfinished Evictions, the EvictionPolicy); an operator process with only
 * `registerWebhooks` serves our routes over TLS on loopback, its caches
 * filled from that server. Four measurements:
 *
 * - direct: a fixed rate of realistic AdmissionReview bodies for both
 *   kinds, open-loop (on schedule, latency from the due time), over
 *   HTTP/1.1 (bench/loadgen, Go's net/http as the API server uses it),
 *   every verdict checked, beside the same load against a bare Go HTTPS
 *   server that validates nothing (the control). Target: p99 < 5 ms and
 *   no errors at 200 requests per second.
 * - apiserver: the ValidatingWebhookConfiguration installed, server-side
 *   applies of the EvictionPolicy one at a time; p50 and p99 from the API
 *   server's own `apiserver_admission_webhook_admission_duration_seconds`,
 *   beside the webhook's own histogram over the same reviews, then the
 *   same against the bare Go control. Target: p99 no more than 2x the
 *   control's of the same run, no errors.
 * - hostile: the webhook process's RSS idle and at its peak while 200
 *   clients send ~1 MiB bodies at once.
 * - slow clients: 200 connections that send their headers a line a second;
 *   how long until the server has closed them all.
 *
 * Usage: deno run -A bench/webhook.ts [--rate 200] [--seconds 30]
 *   [--applies 600] [--hostile 200] [--slow 200]
 *
 * @module
 */

import { parseArgs } from "node:util";
import { KubeClient } from "../framework/client.ts";
import { DEFAULT_WEBHOOK_LIMITS } from "../framework/webhook_server.ts";
import {
  EVICTION_WEBHOOK_PATH,
  POLICY_WEBHOOK_PATH,
} from "../webhooks/register.ts";
import { type Envtest, startEnvtest } from "../tests/harness/envtest.ts";
import { webhookConfigurationYaml } from "../tests/_webhook_fixture.ts";
import { managerMemoryMib } from "../tests/harness/deployment_manifest.ts";
import { PERMISSION_FLAGS, V8_FLAGS } from "../app/permissions.ts";
import { STAGING_ROOT } from "../tests/harness/operator_process.ts";
import { makeOwnedTempDir } from "../tests/harness/processes.ts";
import { histogramBuckets } from "./process_probe.ts";
import { histogramQuantile } from "./histogram.ts";
import { benchBodies, type BenchBody, seed } from "./webhook_bodies.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    rate: { type: "string", default: "200" },
    seconds: { type: "string", default: "30" },
    "warmup-seconds": { type: "string", default: "3" },
    // the runs at the applies' pace and against the control
    "control-seconds": { type: "string", default: "10" },
    "settle-seconds": { type: "string", default: "20" },
    // a p99 of 600 reviews rests on their 6 slowest, of 200 on 2
    applies: { type: "string", default: "600" },
    hostile: { type: "string", default: "200" },
    "hostile-mib": { type: "string", default: "1" },
    slow: { type: "string", default: "200" },
    hypervisors: { type: "string", default: "200" },
    evictions: { type: "string", default: "40" },
    // the measured process's V8 flags: the binary's unless told otherwise
    "server-v8-flags": { type: "string", default: V8_FLAGS.join(",") },
  },
});

function positive(name: string, text: string): number {
  const n = Number(text);
  if (!(Number.isFinite(n) && n > 0)) {
    throw new RangeError(`--${name} must be a number > 0, got "${text}"`);
  }
  return n;
}

/**
 * Starts bench/webhook_server.ts, the measured process, as the binary runs: with the
 * permissions and V8 flags that `deno task compile` bakes in (so its files
 * must be under {@linkcode STAGING_ROOT}); resolves once it listens.
 */
async function spawnServer(
  extra: string[],
  v8Flags: string,
): Promise<{ child: Deno.ChildProcess; port: number; metricsPort: number }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--frozen",
      ...PERMISSION_FLAGS,
      ...(v8Flags === "" ? [] : [`--v8-flags=${v8Flags}`]),
      new URL("./webhook_server.ts", import.meta.url).pathname,
      ...extra,
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let line = "";
  while (!line.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the webhook process ended before listening");
    line += value;
  }
  // whatever it prints later (--trace-gc lines, say) goes to our stderr:
  // an unread pipe would fill and stall the measured process
  void (async () => {
    const enc = new TextEncoder();
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      await Deno.stderr.write(enc.encode(r.value));
    }
  })();
  const first = line.slice(0, line.indexOf("\n"));
  const { port, metricsPort } = JSON.parse(first) as {
    port: number;
    metricsPort: number;
  };
  return { child, port, metricsPort };
}

/** Resident memory of process `pid` in MiB (Linux /proc). */
async function rssMb(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const kb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]);
  if (!Number.isFinite(kb)) throw new TypeError(`no VmRSS for pid ${pid}`);
  return kb / 1024;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Pace of the measured applies (see {@linkcode applyPolicies}). */
const APPLIES_PER_SECOND = 20;

/** What every direct load shares: the CA to trust, a work folder, the warm-up. */
interface LoadSetup {
  caPem: string;
  dir: string;
  warmupSeconds: number;
}

/** What bench/loadgen measured (see its main.go). */
interface DirectResult {
  protocol: string;
  sent: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  serviceP99Ms: number;
  maxSendLagMs: number;
  errors: Record<string, number>;
}

/** The Go toolchain: on PATH, else where a new machine has it. */
function goBinary(): string {
  const local = "/usr/local/go/bin/go";
  try {
    Deno.statSync(local);
    return local;
  } catch {
    return "go";
  }
}

/** bench/loadgen built into `dir` (once). */
async function buildLoadgen(dir: string): Promise<string> {
  const loadgen = `${dir}/loadgen`;
  try {
    await Deno.stat(loadgen);
  } catch {
    const built = await new Deno.Command(goBinary(), {
      args: ["build", "-o", loadgen, "."],
      cwd: new URL("./loadgen/", import.meta.url).pathname,
      stderr: "inherit",
    }).output();
    if (!built.success) throw new Error("building bench/loadgen failed");
  }
  return loadgen;
}

/**
 * The control: bench/loadgen's bare Go HTTPS server (`-serve`), which
 * answers every review allowed without validating. The same open loop
 * against it and against the webhook separates the machine's share of a
 * latency (scheduling, wake-ups, TLS on loopback) from the webhook's.
 */
async function startControl(
  dir: string,
): Promise<{ port: number; stop: () => Promise<void> }> {
  const child = new Deno.Command(await buildLoadgen(dir), {
    args: [
      "-serve=127.0.0.1:0",
      `-cert=${dir}/tls.crt`,
      `-key=${dir}/tls.key`,
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const { value } = await reader.read();
  reader.releaseLock();
  const { port } = JSON.parse(value ?? "{}") as { port: number };
  return {
    port,
    stop: async () => {
      await child.stdin.close();
      await child.status;
      await child.stdout.cancel().catch(() => {});
    },
  };
}

/**
 * Direct load, open loop: bench/loadgen, a Go program, sends it the way
 * the API server does (Go's net/http, HTTP/1.1 as for a Service-backed
 * webhook, 25 idle connections kept). Go rather than
 * Deno's `fetch`: an open loop counts its generator's lateness as latency,
 * and Deno's timers wake a millisecond or more late on a busy machine.
 */
async function direct(
  { caPem, dir, warmupSeconds }: LoadSetup,
  base: string,
  bodies: BenchBody[],
  rate: number,
  seconds: number,
): Promise<DirectResult> {
  await Deno.writeTextFile(`${dir}/ca.pem`, caPem);
  await Deno.writeTextFile(`${dir}/bodies.json`, JSON.stringify(bodies));
  const loadgen = await buildLoadgen(dir);
  console.error(`direct: ${base}, ${rate}/s for ${seconds} s ...`);
  const out = await new Deno.Command(loadgen, {
    args: [
      `-url=${base}`,
      `-ca=${dir}/ca.pem`,
      `-bodies=${dir}/bodies.json`,
      `-rate=${rate}`,
      `-seconds=${seconds}`,
      `-warmup=${warmupSeconds}`,
    ],
    stderr: "inherit",
  }).output();
  if (!out.success) throw new Error("bench/loadgen failed");
  return JSON.parse(new TextDecoder().decode(out.stdout)) as DirectResult;
}

/** What one run of applies through the API server measured. */
interface ApiServerRun {
  applies: number;
  reviews: number;
  within5msShare: number;
  p50Ms: number;
  p99Ms: number;
  buckets: Record<string, number>;
  /** Connections the API server opened to the webhook, by ALPN protocol. */
  connectionsByProtocol: Record<string, number>;
  failures: string[];
  appliesPerSecond: number;
  /** The webhook's own histogram over the same reviews (not for the control). */
  webhookHandling?: ReturnType<typeof handlingShares>;
}

/**
 * Points the ValidatingWebhookConfiguration at `baseUrl`, waits until the
 * API server calls it (`ready` on a dry-run apply of a bad policy), warms
 * the connection, then measures {@linkcode applyPolicies} on the API
 * server's own histogram.
 */
async function throughApiServer(
  env: Envtest,
  client: KubeClient,
  baseUrl: string,
  ready: (r: { code: number; stderr: string }) => boolean,
  webhookMetrics: (() => Promise<string>) | undefined,
): Promise<ApiServerRun> {
  const connections = async () =>
    webhookMetrics === undefined
      ? {}
      : connectionsByProtocol(await webhookMetrics());
  const connectionsBefore = await connections();
  const installed = await env.kubectl(["apply", "-f", "-"], {
    stdin: await webhookConfigurationYaml(baseUrl, env.caCertPem),
  });
  if (installed.code !== 0) throw new Error(installed.stderr);
  // the API server picks the configuration up asynchronously
  for (let tries = 0;; tries++) {
    const r = await env.kubectl(["apply", "--dry-run=server", "-f", "-"], {
      stdin: JSON.stringify({
        apiVersion: "kvm.cloud.sap/v1alpha1",
        kind: "EvictionPolicy",
        metadata: { name: "default" },
        spec: {
          maxConcurrentMigrations: 4,
          traitLimits: [{ trait: "bad trait", maxConcurrentMigrations: 1 }],
        },
      }),
    });
    if (ready(r)) break;
    if (tries > 100) {
      throw new Error(`the API server never called ${baseUrl}: ${r.stderr}`);
    }
    await sleep(200);
  }
  const handling = async () =>
    webhookMetrics === undefined ? new Map<string, number>() : histogramBuckets(
      await webhookMetrics(),
      "operator_webhook_duration_seconds",
    );
  // warm the API server's connection to the webhook, then measure
  await applyPolicies(client, 10, APPLIES_PER_SECOND);
  const before = await apiserverBuckets(env);
  const handlingBefore = await handling();
  console.error(`apiserver: ${APPLIES} server-side applies via ${baseUrl} ...`);
  const applied = await applyPolicies(client, APPLIES, APPLIES_PER_SECOND, 10);
  const after = await apiserverBuckets(env);
  const handlingAfter = await handling();
  const delta = new Map(
    [...after].map(([le, n]) => [le, n - (before.get(le) ?? 0)]),
  );
  const reviews = delta.get("+Inf") ?? 0;
  const connectionsAfter = await connections();
  const round = (v: number) => Math.round(v * 100) / 100;
  return {
    applies: APPLIES,
    reviews,
    within5msShare: reviews === 0
      ? 0
      : round((delta.get("0.005") ?? 0) / reviews),
    p50Ms: round(histogramQuantile(delta, 0.5) * 1000),
    p99Ms: round(histogramQuantile(delta, 0.99) * 1000),
    buckets: Object.fromEntries(delta),
    connectionsByProtocol: Object.fromEntries(
      Object.entries(connectionsAfter).map((
        [k, n],
      ) => [k, n - (connectionsBefore[k] ?? 0)]).filter(([, n]) => n !== 0),
    ),
    failures: applied.failures.slice(0, 5),
    appliesPerSecond: round(APPLIES / applied.seconds),
    ...(webhookMetrics === undefined ? {} : {
      // how much of the API server's figure is spent in our process
      webhookHandling: handlingShares((le) =>
        (handlingAfter.get(le) ?? 0) - (handlingBefore.get(le) ?? 0)
      ),
    }),
  };
}

/** The API server's admission histogram of validating webhooks. */
async function apiserverBuckets(env: Envtest): Promise<Map<string, number>> {
  const r = await env.kubectl(["get", "--raw", "/metrics"]);
  if (r.code !== 0) throw new Error(`reading /metrics failed: ${r.stderr}`);
  const ours = r.stdout.split("\n").filter((l) =>
    l.includes('type="validating"')
  ).join("\n");
  return histogramBuckets(
    ours,
    "apiserver_admission_webhook_admission_duration_seconds",
  );
}

/**
 * `applies` server-side applies of the policy, one at a time and at most
 * `perSecond` a second, through the framework's client (as evictor's own
 * writes go): each changes the spec, so each is one UPDATE review. One at a
 * time because the histogram is the API server's, measured inside a
 * process that shares 2 CPUs with etcd and the load: kubectl processes
 * (about 100 ms of CPU each to start) or bursts would measure them.
 */
async function applyPolicies(
  client: KubeClient,
  applies: number,
  perSecond: number,
  first = 0,
): Promise<{ failures: string[]; seconds: number }> {
  const failures: string[] = [];
  const started = performance.now();
  for (let i = first; i < first + applies; i++) {
    const due = started + ((i - first) * 1000) / perSecond;
    await sleep(Math.max(0, due - performance.now()));
    const policy = {
      apiVersion: "kvm.cloud.sap/v1alpha1",
      kind: "EvictionPolicy",
      metadata: { name: "default" },
      spec: {
        // alternates, so every apply changes the spec: an UPDATE review
        maxConcurrentMigrations: 4 + i % 2,
        traitLimits: [
          { trait: "CUSTOM_HANA_EXCLUSIVE_HOST", maxConcurrentMigrations: 1 },
          { trait: "HW_GPU_API_CUDA", maxConcurrentMigrations: 2 },
        ],
        clusterMaxConcurrentMigrations: 40,
        abortStuckMigrations: false,
      },
    };
    try {
      await client.request(
        "PATCH",
        "/apis/kvm.cloud.sap/v1alpha1/evictionpolicies/default",
        {
          query: { fieldManager: "bench-webhook", force: true },
          contentType: "application/apply-patch+yaml",
          body: policy,
        },
      );
    } catch (err) {
      failures.push(err instanceof Error ? err.message : String(err));
    }
  }
  return { failures, seconds: (performance.now() - started) / 1000 };
}

/** `webhook_connections_total` by protocol from the webhook's /metrics. */
function connectionsByProtocol(metrics: string): Record<string, number> {
  return Object.fromEntries(
    [
      ...metrics.matchAll(
        /^operator_webhook_connections_total\{protocol="([^"]+)"\} (\d+)/gm,
      ),
    ].map((m) => [m[1], Number(m[2])]),
  );
}

/** A reviewable body of about `bytes` (a padded annotation). */
function bigBody(uid: string, bytes: number): string {
  return JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid,
      operation: "CREATE",
      name: "default",
      object: {
        apiVersion: "kvm.cloud.sap/v1alpha1",
        kind: "EvictionPolicy",
        metadata: { name: "default", annotations: { pad: "x".repeat(bytes) } },
        spec: { maxConcurrentMigrations: 4 },
      },
    },
  });
}

/** 200 clients at once with ~1 MiB bodies; the server's RSS sampled meanwhile. */
async function hostileBodies(
  base: string,
  caPem: string,
  pid: number,
  clients: number,
  mib: number,
): Promise<
  { idleMb: number; peakMb: number; statuses: Record<string, number> }
> {
  const idleMb = await rssMb(pid);
  let peakMb = idleMb;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peakMb = Math.max(peakMb, await rssMb(pid));
      await sleep(10);
    }
  })();
  const statuses: Record<string, number> = {};
  // one connection each, as 200 separate clients would
  await Promise.all(Array.from({ length: clients }, async (_, i) => {
    const client = Deno.createHttpClient({ caCerts: [caPem], http2: false });
    try {
      const res = await fetch(`${base}${POLICY_WEBHOOK_PATH}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: bigBody(`hostile-${i}`, mib * 1024 * 1024),
        client,
        signal: AbortSignal.timeout(30_000),
      });
      await res.arrayBuffer();
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    } catch (err) {
      const key = err instanceof Error ? err.name : "error";
      statuses[key] = (statuses[key] ?? 0) + 1;
    } finally {
      client.close();
    }
  }));
  await sleep(500);
  sampling = false;
  await sampler;
  return { idleMb, peakMb, statuses };
}

/** `n` connections sending headers a line a second; seconds until the last is closed. */
async function slowClients(
  port: number,
  caPem: string,
  n: number,
): Promise<{ closedWithinS: number; stillOpen: number }> {
  const enc = new TextEncoder();
  const started = performance.now();
  const giveUpMs = 60_000;
  const times = await Promise.all(Array.from({ length: n }, async () => {
    let conn: Deno.TlsConn;
    try {
      conn = await Deno.connectTls({
        hostname: "localhost",
        port,
        caCerts: [caPem],
        alpnProtocols: ["http/1.1"],
      });
      await conn.handshake();
    } catch {
      // closed before TLS: over the connection cap
      return performance.now() - started;
    }
    await conn.write(enc.encode(`POST ${POLICY_WEBHOOK_PATH} HTTP/1.1\r\n`));
    const drip = setInterval(
      () => void conn.write(enc.encode("X-Slow: 1\r\n")).catch(() => {}),
      1000,
    );
    const giveUp = setTimeout(() => conn.close(), giveUpMs);
    const buf = new Uint8Array(1024);
    try {
      while (await conn.read(buf) !== null) { /* until closed */ }
    } catch {
      // reset by the server, or closed by giveUp
    }
    clearInterval(drip);
    clearTimeout(giveUp);
    try {
      conn.close();
    } catch {
      // already closed
    }
    return performance.now() - started;
  }));
  const latest = Math.max(...times);
  return {
    closedWithinS: latest / 1000,
    stillOpen: times.filter((t) => t >= giveUpMs).length,
  };
}

const rate = positive("rate", values.rate);
const seconds = positive("seconds", values.seconds);
const warmupSeconds = Number(values["warmup-seconds"]);
const APPLIES = positive("applies", values.applies);
const hypervisors = positive("hypervisors", values.hypervisors);
const evictionCount = Number(values.evictions);

console.error("starting a dedicated kube-apiserver ...");
const env = await startEnvtest();
// the measured process may read only there (app/permissions.ts)
const dir = await makeOwnedTempDir(STAGING_ROOT, "bench-webhook-");
let server: Deno.ChildProcess | undefined;
try {
  const world = seed(hypervisors, evictionCount);
  const created = await env.kubectl(["apply", "-f", "-"], {
    stdin: JSON.stringify({
      apiVersion: "v1",
      kind: "List",
      items: world.objects,
    }),
  });
  if (created.code !== 0) throw new Error(`seeding failed: ${created.stderr}`);
  const statuses = await env.kubectl([
    "apply",
    "--server-side",
    "--subresource=status",
    "--field-manager=bench",
    // a status-only object has no spec, which client-side validation wants
    "--validate=false",
    "-f",
    "-",
  ], {
    stdin: JSON.stringify({
      apiVersion: "v1",
      kind: "List",
      items: world.statuses,
    }),
  });
  if (statuses.code !== 0) {
    throw new Error(`seeding statuses failed: ${statuses.stderr}`);
  }

  const pair = await env.servingCert(["127.0.0.1", "localhost"]);
  await Deno.writeTextFile(`${dir}/tls.crt`, pair.certPem);
  await Deno.writeTextFile(`${dir}/tls.key`, pair.keyPem);
  await Deno.copyFile(env.kubeconfigPath, `${dir}/kubeconfig`);
  const webhook = await spawnServer([
    `${dir}/kubeconfig`,
    `${dir}/tls.crt`,
    `${dir}/tls.key`,
  ], values["server-v8-flags"]);
  server = webhook.child;
  const pid = webhook.child.pid;
  const base = `https://localhost:${webhook.port}`;
  // for a packet capture beside the run (tcpdump -i lo port N)
  console.error(
    `webhook: pid ${pid}, port ${webhook.port}; API server ${env.server}`,
  );
  const serverMetrics = async () =>
    await (await fetch(`http://127.0.0.1:${webhook.metricsPort}/metrics`))
      .text();

  // a new kube-apiserver keeps both CPUs busy for a while after start-up
  // (CRD OpenAPI publishing, bootstrap controllers) and after the seeding
  const settle = Number(values["settle-seconds"]);
  if (settle > 0) {
    console.error(`letting the API server settle for ${settle} s ...`);
    await sleep(settle * 1000);
  }

  const load: LoadSetup = { caPem: env.caCertPem, dir, warmupSeconds };
  const bodies = benchBodies(
    POLICY_WEBHOOK_PATH,
    EVICTION_WEBHOOK_PATH,
    hypervisors,
  );
  const controlSeconds = positive("control-seconds", values["control-seconds"]);
  // it answers every review allowed
  const allowedBodies = bodies.filter((b) => b.allowed);
  const handling = async () =>
    histogramBuckets(
      await serverMetrics(),
      "operator_webhook_duration_seconds",
    );
  const handlingBefore = await handling();
  const h1 = await direct(
    load,
    base,
    bodies,
    rate,
    seconds,
  );
  const handlingAfter = await handling();
  const handled = (le: string) =>
    (handlingAfter.get(le) ?? 0) - (handlingBefore.get(le) ?? 0);

  // the same load at the pace of the applies below, where the webhook
  // idles between reviews, and both paces against the bare control server
  const paced = await direct(
    load,
    base,
    bodies,
    APPLIES_PER_SECOND,
    controlSeconds,
  );
  const handlingAfterPaced = await handling();
  const handledPaced = (le: string) =>
    (handlingAfterPaced.get(le) ?? 0) - (handlingAfter.get(le) ?? 0);
  const control = await startControl(dir);
  const controlBase = `https://localhost:${control.port}`;
  let controlFast: DirectResult;
  let controlPaced: DirectResult;
  try {
    controlFast = await direct(
      load,
      controlBase,
      allowedBodies,
      rate,
      controlSeconds,
    );
    controlPaced = await direct(
      load,
      controlBase,
      allowedBodies,
      APPLIES_PER_SECOND,
      controlSeconds,
    );
  } finally {
    await control.stop();
  }
  // through the API server: the webhook (it offers only HTTP/1.1, as a
  // Service-backed webhook is called), then the bare Go control (the API
  // server's and the machine's share of the figure)
  const client = await KubeClient.fromKubeConfig(env.kubeConfig());
  const ours = (r: { code: number; stderr: string }) =>
    r.code !== 0 && r.stderr.includes("denied the request");
  const apiserverRun = await throughApiServer(
    env,
    client,
    `https://127.0.0.1:${webhook.port}`,
    ours,
    serverMetrics,
  );
  const controlServer = await startControl(dir);
  let apiserverControl: ApiServerRun;
  try {
    apiserverControl = await throughApiServer(
      env,
      client,
      `https://127.0.0.1:${controlServer.port}`,
      (r) => r.code === 0 && r.stderr.includes("bench control"),
      undefined,
    );
  } finally {
    await controlServer.stop();
  }

  console.error("hostile: large bodies ...");
  await sleep(2000);
  const hostile = await hostileBodies(
    base,
    env.caCertPem,
    pid,
    positive("hostile", values.hostile),
    positive("hostile-mib", values["hostile-mib"]),
  );
  console.error("hostile: slow clients ...");
  const slow = await slowClients(
    webhook.port,
    env.caCertPem,
    positive("slow", values.slow),
  );
  // and it still serves
  const after1 = await direct(
    { ...load, warmupSeconds: 0 },
    base,
    bodies,
    50,
    1,
  );

  const errorsOf = (r: DirectResult) =>
    Object.values(r.errors).reduce((a, b) => a + b, 0);
  const errors = errorsOf(h1) + errorsOf(paced) +
    apiserverRun.failures.length + errorsOf(after1);
  const round = (v: number) => Math.round(v * 100) / 100;
  const report = {
    date: new Date().toISOString(),
    deno: Deno.version.deno,
    cpus: navigator.hardwareConcurrency,
    loadAverage: Deno.loadavg().map(round),
    apiserver: {
      ...apiserverRun,
      control: apiserverControl,
      // the target: p99 no more than twice the bare Go control's
      p99OverControl: round(
        apiserverRun.p99Ms / Math.max(0.001, apiserverControl.p99Ms),
      ),
    },
    direct: {
      http1: {
        rate,
        seconds,
        ...h1,
      },
      http1AtAppliesPace: {
        rate: APPLIES_PER_SECOND,
        seconds: controlSeconds,
        ...paced,
        handling: handlingShares(handledPaced),
      },
      // bench/loadgen -serve: TLS and HTTP on this machine, no webhook
      control: {
        atRate: { rate, seconds: controlSeconds, ...controlFast },
        atAppliesPace: {
          rate: APPLIES_PER_SECOND,
          seconds: controlSeconds,
          ...controlPaced,
        },
      },
    },
    // the framework's histogram over the direct run: body read, parse,
    // validation and reply, without TLS and the network
    serverHandling: {
      requests: handled("+Inf"),
      within1msShare: round(handled("0.001") / Math.max(1, handled("+Inf"))),
      within5msShare: round(handled("0.005") / Math.max(1, handled("+Inf"))),
    },
    errors,
    hostile: {
      clients: Number(values.hostile),
      bodyMib: Number(values["hostile-mib"]),
      rssIdleMb: round(hostile.idleMb),
      rssPeakMb: round(hostile.peakMb),
      deploymentLimitMb: (await managerMemoryMib()).limit,
      statuses: hostile.statuses,
      slowClients: Number(values.slow),
      slowClientsClosedWithinS: round(slow.closedWithinS),
      slowClientsStillOpen: slow.stillOpen,
      headersTimeoutS: DEFAULT_WEBHOOK_LIMITS.headersTimeoutMs / 1000,
      limits: DEFAULT_WEBHOOK_LIMITS,
    },
  };
  const reports = new URL("./reports/", import.meta.url);
  await Deno.mkdir(reports, { recursive: true });
  const jsonPath = new URL("webhook.json", reports).pathname;
  await Deno.writeTextFile(jsonPath, JSON.stringify(report, null, 2) + "\n");
  const mdPath = new URL("webhook.md", reports).pathname;
  await Deno.writeTextFile(mdPath, markdown(report));
  const fmt = await new Deno.Command(Deno.execPath(), {
    args: ["fmt", jsonPath, mdPath],
    stdout: "null",
    stderr: "inherit",
  }).output();
  if (!fmt.success) throw new Error("deno fmt of the reports failed");
  console.log(await Deno.readTextFile(mdPath));
} finally {
  if (server !== undefined) {
    await server.stdin.close().catch(() => {});
    await server.status;
  }
  await env.stop();
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}

/** The report for people; the figures are the JSON's. */
function markdown(r: {
  date: string;
  deno: string;
  cpus: number;
  loadAverage: number[];
  apiserver: ApiServerRun & { control: ApiServerRun; p99OverControl: number };
  direct: {
    http1: {
      rate: number;
      seconds: number;
      p50Ms: number;
      p99Ms: number;
      maxMs: number;
    };
    http1AtAppliesPace: {
      rate: number;
      seconds: number;
      p50Ms: number;
      p99Ms: number;
      maxMs: number;
      maxSendLagMs: number;
      handling: { within1msShare: number; within5msShare: number };
    };
    control: {
      atRate: { rate: number; p50Ms: number; p99Ms: number };
      atAppliesPace: { rate: number; p50Ms: number; p99Ms: number };
    };
  };
  serverHandling: {
    requests: number;
    within1msShare: number;
    within5msShare: number;
  };
  errors: number;
  hostile: {
    clients: number;
    bodyMib: number;
    rssIdleMb: number;
    rssPeakMb: number;
    deploymentLimitMb: number;
    statuses: Record<string, number>;
    slowClients: number;
    slowClientsClosedWithinS: number;
    headersTimeoutS: number;
  };
}): string {
  const met = (ok: boolean) => ok ? "met" : "NOT met";
  const d1 = r.direct.http1;
  return `# Webhook benchmark

${r.date}, Deno ${r.deno}, ${r.cpus} CPUs (shared machine; load average ${
    r.loadAverage.join(" ")
  } at the end). Figures from \`webhook.json\` (\`deno task bench:webhook\`).

| measure | result | target | verdict |
| --- | --- | --- | --- |
${
    (
      [
        [r.apiserver, "the webhook (HTTP/1.1)", true],
        [
          r.apiserver.control,
          "control: the bare Go HTTPS server (HTTP/1.1), validating nothing",
          false,
        ],
      ] as const
    ).map(([run, what, target]) =>
      `| API server's histogram, ${run.reviews} reviews from ${run.applies} server-side applies, ${what}: p50 / p99 | ${run.p50Ms} / ${run.p99Ms} ms (${
        (run.within5msShare * 100).toFixed(1)
      } % in the 5 ms bucket; connections: ${
        Object.entries(run.connectionsByProtocol).map(([k, v]) => `${k} ${v}`)
          .join(", ") || "none new"
      }) | ${target ? "p99 <= 2 x the control's" : ""} | ${
        target
          ? `${
            met(r.apiserver.p99OverControl <= 2)
          } (${r.apiserver.p99OverControl} x)`
          : ""
      } |${
        run.webhookHandling === undefined
          ? ""
          : `\n| the webhook's own histogram over those reviews (head to reply: body read, parse, validation) | ${
            (run.webhookHandling.within1msShare * 100).toFixed(1)
          } % within 1 ms, ${
            (run.webhookHandling.within5msShare * 100).toFixed(1)
          } % within 5 ms, of ${run.webhookHandling.requests} | | |`
      }`
    ).join("\n")
  }
| direct HTTP/1.1, ${d1?.rate}/s for ${d1?.seconds} s: p50 / p99 / max | ${d1?.p50Ms} / ${d1?.p99Ms} / ${d1?.maxMs} ms | p99 < 5 ms | ${
    met((d1?.p99Ms ?? Infinity) < 5)
  } |
| direct HTTP/1.1 at the applies' pace, ${r.direct.http1AtAppliesPace.rate}/s for ${r.direct.http1AtAppliesPace.seconds} s: p50 / p99 / max (the webhook's own histogram) | ${r.direct.http1AtAppliesPace.p50Ms} / ${r.direct.http1AtAppliesPace.p99Ms} / ${r.direct.http1AtAppliesPace.maxMs} ms (${
    (r.direct.http1AtAppliesPace.handling.within1msShare * 100).toFixed(1)
  } % within 1 ms, ${
    (r.direct.http1AtAppliesPace.handling.within5msShare * 100).toFixed(1)
  } % within 5 ms) | | |
| control: a bare Go HTTPS server that validates nothing, the same load at ${r.direct.control.atRate.rate}/s and at ${r.direct.control.atAppliesPace.rate}/s: p50 / p99 | ${r.direct.control.atRate.p50Ms} / ${r.direct.control.atRate.p99Ms} ms; ${r.direct.control.atAppliesPace.p50Ms} / ${r.direct.control.atAppliesPace.p99Ms} ms | | |
| server-side handling in the direct runs (framework histogram: body read, parse, validation, reply) | ${
    (r.serverHandling.within1msShare * 100).toFixed(1)
  } % within 1 ms, ${
    (r.serverHandling.within5msShare * 100).toFixed(1)
  } % within 5 ms, of ${r.serverHandling.requests} | | |
| errors (direct, applies) | ${r.errors} | 0 | ${met(r.errors === 0)} |
| RSS idle / peak with ${r.hostile.clients} clients sending ${r.hostile.bodyMib} MiB at once | ${r.hostile.rssIdleMb} / ${r.hostile.rssPeakMb} MiB (answers: ${
    Object.entries(r.hostile.statuses).map(([k, v]) => `${v} × ${k}`).join(", ")
  }) | under the Deployment's limit (${r.hostile.deploymentLimitMb} MiB) | ${
    met(r.hostile.rssPeakMb < r.hostile.deploymentLimitMb)
  } |
| ${r.hostile.slowClients} slow-header clients all closed within | ${r.hostile.slowClientsClosedWithinS} s | the header timeout (${r.hostile.headersTimeoutS} s) + 1 s | ${
    met(r.hostile.slowClientsClosedWithinS <= r.hostile.headersTimeoutS + 1)
  } |

How it is measured: a dedicated kube-apiserver holds Hypervisors, unfinished
Evictions and the EvictionPolicy; a separate process
(\`bench/webhook_server.ts\`, with the binary's permissions and V8 flags from
\`app/permissions.ts\`) runs an operator with only \`registerWebhooks\` and its
informers, serving on 127.0.0.1; no CPU pinning or priority change. Direct: open loop (request
*i* due at start + *i* / rate, latency from the due time to the end of the
reply, so stalls are not hidden by a lower rate), realistic AdmissionReview
bodies of both kinds with every verdict checked, over HTTP/1.1 from
\`bench/loadgen\` (Go's net/http, the API server's client, with its 25 idle
connections: Deno's timers wake late enough on a busy machine that an open
loop in Deno measures its own lateness). Control: the same loads against
\`bench/loadgen -serve\`, a bare Go HTTPS server that answers every review
allowed: what TLS and HTTP on loopback cost on this machine without the
webhook. API server: the ValidatingWebhookConfiguration of
\`manifests/webhook/\` pointed in turn at the measured process (\`node:https\`,
HTTP/1.1 only, as the API server calls a Service-backed webhook) and at the
control, ${r.apiserver.applies} server-side applies of the EvictionPolicy through the framework's
client, one at a time at most ${APPLIES_PER_SECOND} a second (each changes the spec: one UPDATE
review each; kubectl processes would spend ~100 ms of CPU each on the same
2 CPUs as the API server that measures), p50 and p99
as \`histogram_quantile\` over the difference of
\`apiserver_admission_webhook_admission_duration_seconds\` (validating)
before and after; its lowest bucket is 5 ms, so a p99 below 5 ms means at
least 99 % of the reviews took under 5 ms. Hostile: one connection per
client, RSS of the webhook process from /proc every 10 ms. Slow clients:
TLS connections that send a request line and then a header line a second.
The machine's 2 CPUs are shared with the API server, etcd, the load
generator and other work, so the tails include scheduling noise.
`;
}

/**
 * How many requests the webhook's own histogram counted, and the shares
 * within 1 ms and 5 ms, from a cumulative count per bucket bound.
 */
function handlingShares(count: (le: string) => number) {
  const all = Math.max(1, count("+Inf"));
  return {
    requests: count("+Inf"),
    within1msShare: Math.round(count("0.001") / all * 100) / 100,
    within5msShare: Math.round(count("0.005") / all * 100) / 100,
  };
}
