/**
 * `deno task demo`: evictor end to end on one machine, in about a minute.
 *
 * Starts a real kube-apiserver and etcd (building them first if needed), the
 * Nova simulator with 8 hypervisors and 150 VMs, and evictor itself as a
 * separate process with the compiled binary's permissions; then drains four
 * hosts the way operators do: node001 alone by putting its Hypervisor into
 * maintenance with kubectl patch (no drain has ended yet: its makespan is
 * predicted at --default-migration-rate), then a plan preview of a wave of
 * three and that wave with one `kubectl evictor drain` (its predictions are
 * calibrated on the first drain and share the cluster budget). Shows live
 * progress and ends with a summary: makespans against their lower bounds,
 * the wave's figures, and each drain's predicted makespan beside the actual
 * one. `--keep` leaves everything running to play with; `--report FILE`
 * writes the summary's figures as JSON (bench/reports/demo.json is the run
 * docs/measurements.md quotes).
 *
 * @module
 */
import { parseArgs } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { parse as parseYaml } from "yaml";
import { PERMISSION_FLAGS } from "../app/permissions.ts";
import { renderProgressLine } from "../cli/progress.ts";
import { countsOf, stateOf } from "../cli/kubectl_plugin.ts";
import {
  type Eviction,
  EvictionResource,
  EvictionSchema,
  HypervisorResource,
  HypervisorSchema,
} from "../models/mod.ts";
import { type Envtest, startEnvtest } from "../tests/harness/envtest.ts";
import {
  loadScenarioFile,
  startNovaSim,
} from "../tests/harness/nova_sim/mod.ts";
import {
  operatorLogTail,
  type OperatorProcess,
  STAGING_ROOT,
  startOperatorProcess,
} from "../tests/harness/operator_process.ts";
import { freePort, makeOwnedTempDir } from "../tests/harness/processes.ts";
import { sampleInFlight } from "../tests/harness/eviction_env.ts";
import {
  comparePredictions,
  drainCalls,
  renderPredictions,
  renderSummary,
  renderWave,
  summariseDrain,
  summariseWave,
} from "./summary.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    keep: { type: "boolean", default: false },
    timeout: { type: "string", default: "300" },
    // where the summary's figures go as JSON (docs/measurements.md quotes them)
    report: { type: "string" },
  },
});

const ROOT = new URL("../", import.meta.url);
const BUDGET = 5;
const POLICY = {
  apiVersion: "kvm.cloud.sap/v1alpha1",
  kind: "EvictionPolicy",
  metadata: { name: "default" },
  spec: {
    maxConcurrentMigrations: 4,
    traitLimits: [{
      trait: "CUSTOM_HANA_EXCLUSIVE_HOST",
      maxConcurrentMigrations: 1,
    }],
    clusterMaxConcurrentMigrations: BUDGET,
  },
};
// One command drains the wave: 4 + 1 + 1 slots wanted, the budget gives 5.
const WAVE = ["node002", "node003", "node004"] as const;
const DRAINS = [
  { host: "node001", how: "maintenance" },
  ...WAVE.map((host) => ({ host, how: "wave (plugin)" })),
] as const;

const interactive = Deno.stdout.isTerminal();
const say = (text: string) => console.log(text);
const step = (text: string) => say(`\n==> ${text}`);

let env: Envtest | undefined;
let sim: Awaited<ReturnType<typeof startNovaSim>> | undefined;
let operator: OperatorProcess | undefined;
let stageDir: string | undefined;

async function cleanUp() {
  await operator?.stop().catch(() => {});
  if (operator) {
    await Deno.remove(operator.dir, { recursive: true }).catch(() => {});
  }
  await sim?.close().catch(() => {});
  await env?.stop().catch(() => {});
  if (stageDir) {
    await Deno.remove(stageDir, { recursive: true }).catch(() => {});
  }
}
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.addSignalListener(signal, () => {
    void cleanUp().then(() => Deno.exit(130));
  });
}

async function kubectl(args: string[], stdin?: string, show = true) {
  if (!env) throw new Error("no API server");
  if (show) say(`$ kubectl ${args.join(" ")}`);
  const out = await env.kubectl(args, stdin === undefined ? {} : { stdin });
  const text = (out.stdout + out.stderr).trimEnd();
  if (show && text) say(text.replace(/^/gm, "  "));
  return out;
}

async function waitFor(what: string, ok: () => Promise<boolean>, ms = 60_000) {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * Shows progress until the drains of `hosts` have ended; returns every
 * Eviction. One API client for the whole demo: Deno 2.9.6 can abort when
 * the API server's shutdown GOAWAY reaches a long-idle HTTP/2 session
 * (denoland/deno#36788), so none is left idle.
 */
async function watchDrains(
  api: k8s.CustomObjectsApi,
  hosts: readonly string[],
  since: number,
): Promise<Eviction[]> {
  const timeoutMs = Number(flags.timeout) * 1000;
  let lines = 0;
  let lastPrint = 0;
  for (;;) {
    const list = await api.listClusterCustomObject({ ...EvictionResource }) as {
      items: unknown[];
    };
    const evictions = list.items.map((i) => EvictionSchema.safeParse(i))
      .flatMap((p) => (p.success ? [p.data] : []))
      .sort((a, b) => a.spec.hypervisor.localeCompare(b.spec.hypervisor));
    const rows = hosts.map((host) => {
      const e = evictions.find((x) => x.spec.hypervisor === host);
      return e?.status?.conditions === undefined
        ? `${host.padEnd(14)} (starting)`
        : `${renderProgressLine(host, countsOf(e))}  ${stateOf(e)}`;
    });
    const done = hosts.every((host) => {
      const c = evictions.find((x) => x.spec.hypervisor === host)?.status
        ?.conditions?.find((c) => c.type === "Evicting");
      return c?.status === "False";
    });
    if (interactive) {
      if (lines > 0) {
        await Deno.stdout.write(new TextEncoder().encode(`\x1b[${lines}A`));
      }
      for (const row of rows) say(`\x1b[2K${row}`);
      lines = rows.length;
    } else if (done || Date.now() - lastPrint > 5000) {
      for (const row of rows) say(row);
      say("");
      lastPrint = Date.now();
    }
    if (done) return evictions;
    if (Date.now() - since > timeoutMs) {
      throw new Error(`the drains did not end within ${flags.timeout} s`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

try {
  const started = Date.now();
  step("Starting kube-apiserver and etcd (built from Go modules on first use)");
  env = await startEnvtest();
  say(`API server at ${env.server}`);

  step("Starting the Nova simulator: 8 hypervisors, 150 VMs");
  const scenario = await loadScenarioFile(
    new URL("demo/scenario.yaml", ROOT).pathname,
  );
  sim = await startNovaSim(scenario);
  say(`Keystone at ${sim.authUrl} (time runs ${scenario.timeScale}x faster)`);

  step(
    "Starting evictor (operator + webhook) with the compiled binary's permissions",
  );
  stageDir = await makeOwnedTempDir(STAGING_ROOT, "demo-");
  // For the plugin's plan and for people playing with --keep.
  const cloudsPath = `${stageDir}/clouds.yaml`;
  await Deno.writeTextFile(cloudsPath, sim.cloudsYaml({ cloud: "demo" }));
  const cert = await env.servingCert(["127.0.0.1", "localhost"]);
  await Deno.mkdir(`${stageDir}/certs`);
  await Deno.writeTextFile(`${stageDir}/certs/tls.crt`, cert.certPem);
  await Deno.writeTextFile(`${stageDir}/certs/tls.key`, cert.keyPem);
  const webhookPort = freePort();
  const metricsPort = freePort();
  const probePort = freePort();
  operator = await startOperatorProcess({
    kubeconfigPath: env.kubeconfigPath,
    cloudsYaml: sim.cloudsYaml({
      cloud: "demo",
      auth: "application_credential",
    }),
    cloud: "demo",
    args: [
      "--poll-interval=250ms",
      "--discover-hypervisors",
      "--hypervisor-resync-interval=2s",
      `--webhook-bind-address=127.0.0.1:${webhookPort}`,
      `--webhook-cert-dir=${stageDir}/certs`,
      `--metrics-bind-address=127.0.0.1:${metricsPort}`,
      "--insecure-metrics", // the demo prints a /metrics URL to open
      `--health-probe-bind-address=127.0.0.1:${probePort}`,
      // the default 30 s retry wait on the simulator's clock (20x faster)
      `--migration-retry-backoff=${Math.round(30_000 / scenario.timeScale)}ms`,
      // The simulator's nominal live-migration rate on evictor's clock, as
      // an operator sets their network's: what predictions assume until a
      // drain has ended and observed the real one.
      `--default-migration-rate=${
        scenario.timing.liveMbPerSecond * scenario.timeScale
      }`,
      `--default-migration-overhead=${
        Math.round(
          (scenario.timing.scheduleSeconds + scenario.timing.prepareSeconds +
            scenario.timing.postSeconds) * 1000 / scenario.timeScale,
        )
      }ms`,
    ],
  });
  say(
    `evictor runs as its own process with the binary's permissions (${
      PERMISSION_FLAGS.join(" ")
    }); log: ${operator.logPath}`,
  );

  // The webhook configuration from manifests/, pointed at this process.
  const manifest = parseYaml(
    await Deno.readTextFile(
      new URL("manifests/webhook/validating_webhook_configuration.yaml", ROOT),
    ),
  ) as {
    metadata: Record<string, unknown>;
    webhooks: Record<string, unknown>[];
  };
  delete manifest.metadata["annotations"];
  for (const hook of manifest.webhooks) {
    const service =
      (hook["clientConfig"] as { service: { path: string } }).service;
    hook["clientConfig"] = {
      url: `https://127.0.0.1:${webhookPort}${service.path}`,
      caBundle: btoa(env.caCertPem),
    };
  }
  await waitFor("the webhook to serve", async () => {
    try {
      const res = await fetch(`http://127.0.0.1:${probePort}/readyz`);
      await res.body?.cancel();
      return res.ok;
    } catch {
      return false;
    }
  });
  await kubectl(["apply", "-f", "-"], JSON.stringify(manifest), false);

  step("Hypervisors discovered from Nova, traits synced from Placement");
  const kc = env.kubeConfig();
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  await waitFor("8 Hypervisors with traits", async () => {
    const list = await api.listClusterCustomObject({
      ...HypervisorResource,
    }) as { items: unknown[] };
    const hvs = list.items.map((i) => HypervisorSchema.safeParse(i)).filter((
      p,
    ) => p.success);
    return hvs.length === 8 &&
      hvs.every((p) =>
        p.data.status?.conditions?.some((c) =>
          c.type === "TraitsUpdated" && c.status === "True"
        )
      );
  });
  await kubectl(["get", "hypervisors"]);

  step("The webhook refuses a policy whose trait limit would raise the limit");
  const bad = structuredClone(POLICY);
  bad.spec.traitLimits = [{
    trait: "CUSTOM_HANA_EXCLUSIVE_HOST",
    maxConcurrentMigrations: 8,
  }];
  await kubectl(["apply", "-f", "-"], JSON.stringify(bad));
  step(
    "The EvictionPolicy: 4 per host, 1 on HANA hosts, 10 in the whole cluster",
  );
  await kubectl(["apply", "-f", "-"], JSON.stringify(POLICY));

  // Every migration the drains have in flight, sampled from the simulator:
  // the cluster budget's peak.
  const inFlight = sampleInFlight(sim, DRAINS.map((d) => d.host), 20);
  step(
    "Draining node001 first, alone: kubectl patch puts its Hypervisor into maintenance, which creates its Eviction (no drain has ended yet: the prediction uses --default-migration-rate)",
  );
  const drainStarted = Date.now();
  await kubectl([
    "patch",
    "hypervisor",
    "node001",
    "--type",
    "merge",
    "-p",
    '{"spec":{"maintenance":"manual","maintenanceReason":"kernel 6.12"}}',
  ]);
  step("Progress (# migrated, > in flight, ! failed, . waiting)");
  await watchDrains(api, ["node001"], drainStarted);

  // The plugin as people use it: kubectl finds kubectl-evictor on PATH.
  const plugin = async (args: string[], show = true) => {
    if (!env) throw new Error("no API server");
    if (show) {
      const shown = args.map((a) => (a.includes(" ") ? `'${a}'` : a));
      say(`$ kubectl evictor ${shown.join(" ")}`);
    }
    const out = await new Deno.Command(`${env.binDir}/kubectl`, {
      args: ["evictor", ...args],
      env: {
        PATH: `${new URL("bin", ROOT).pathname}:${Deno.env.get("PATH") ?? ""}`,
        KUBECONFIG: env.kubeconfigPath,
        OS_CLIENT_CONFIG_FILE: cloudsPath,
        OS_CLOUD: "demo",
        NO_COLOR: "1",
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout);
    const err = new TextDecoder().decode(out.stderr);
    if (show) say((text + err).trimEnd().replace(/^/gm, "  "));
    if (!out.success) {
      throw new Error(`kubectl evictor ${args[0]} failed: ${err.trim()}`);
    }
    return text;
  };

  step(
    `A plan preview of the wave: nothing changes; the predictions are calibrated on node001's drain and share the cluster budget of ${BUDGET}`,
  );
  await plugin(["plan", ...WAVE]);
  const planJson = await plugin(["plan", ...WAVE, "--output", "json"], false);
  try {
    JSON.parse(planJson);
  } catch (e) {
    throw new Error(`kubectl evictor plan --output json is not JSON: ${e}`);
  }
  say("  (--output json parses)");

  step(
    `A maintenance wave: one kubectl evictor drain of ${
      WAVE.join(", ")
    } (a rack's hosts, two of them HANA) creates their Evictions together, so every host is disabled before any of them migrates`,
  );
  const callsBeforeWave = drainCalls(sim.counters().calls);
  await plugin(["drain", ...WAVE, "--reason", "rack R12 firmware"]);

  step("Progress");
  const evictions = await watchDrains(
    api,
    DRAINS.map((d) => d.host),
    drainStarted,
  );
  const budgetPeak = inFlight.stop().max;

  step("kubectl get evictions");
  await kubectl(["get", "evictions"]);

  step("Summary");
  const state = sim.state();
  const timing = scenario.timing;
  const overheadMs = (timing.prepareSeconds + timing.postSeconds) * 1000;
  const rows = DRAINS.map(({ host, how }) => {
    const e = evictions.find((x) => x.spec.hypervisor === host);
    const novaLimit = state.hosts.find((h) =>
      h.name === host
    )?.maxConcurrentLiveMigrations ?? 1;
    const limit = Math.min(e?.status?.effectiveLimit ?? 1, novaLimit);
    return summariseDrain(
      host,
      how,
      Math.max(1, limit),
      overheadMs,
      state.migrations,
    );
  });
  const migrated = evictions.reduce(
    (n, e) => n + (e.status?.migratedCount ?? 0),
    0,
  );
  const counters = sim.counters();
  say(renderSummary(
    rows,
    { total: counters.total, drain: drainCalls(counters.calls) },
    migrated,
  ));
  const waveEvictions = evictions.filter((e) =>
    (WAVE as readonly string[]).includes(e.spec.hypervisor)
  );
  say("");
  const wave = summariseWave({
    hosts: WAVE,
    migrations: state.migrations,
    migrated: waveEvictions.reduce(
      (n, e) => n + (e.status?.migratedCount ?? 0),
      0,
    ),
    novaCalls: drainCalls(counters.calls) - callsBeforeWave,
    budget: BUDGET,
    budgetPeak,
  });
  say(renderWave(wave));
  step(
    "Predicted makespan (status.predictedMakespanSeconds, set before the host was disabled) against the actual one (startedAt to the drain's end), on evictor's clock",
  );
  const predictions = comparePredictions(evictions);
  say(renderPredictions(predictions));
  for (const r of predictions) {
    if (r.predictedSeconds === undefined || r.actualSeconds === undefined) {
      throw new Error(`${r.host}: no prediction or no finished drain`);
    }
  }
  for (const r of rows.filter((r) => r.failures > 0)) {
    say(
      `${r.host}: its makespan includes the backoff before a failed migration was retried (30 s of the simulator's time: --migration-retry-backoff).`,
    );
  }
  const left = evictions.flatMap((e) => [
    ...(e.status?.failed ?? []).map((f) =>
      `${e.spec.hypervisor}/${f.id}: ${f.reason}`
    ),
    ...(e.status?.skipped ?? []).map((s) =>
      `${e.spec.hypervisor}/${s.id}: ${s.reason}`
    ),
  ]);
  if (left.length > 0) {
    say(`\nLeft for a person (reported on the Evictions, never looped on):`);
    for (const l of left) say(`  ${l}`);
  }
  const tookSeconds = Math.round((Date.now() - started) / 1000);
  say(`\nDemo took ${tookSeconds} s.`);
  if (flags.report !== undefined) {
    await Deno.writeTextFile(
      flags.report,
      JSON.stringify(
        {
          date: new Date().toISOString(),
          deno: Deno.version.deno,
          drains: rows,
          novaCallsPerMigratedVm: migrated === 0
            ? null
            : drainCalls(counters.calls) / migrated,
          wave,
          predictions,
          tookSeconds,
        },
        null,
        2,
      ) + "\n",
    );
    say(`The summary's figures: ${flags.report}`);
  }

  if (flags.keep) {
    step("Everything keeps running (Ctrl-C ends it):");
    say(`export KUBECONFIG=${env.kubeconfigPath}`);
    say(`export OS_CLIENT_CONFIG_FILE=${cloudsPath} OS_CLOUD=demo`);
    say(`kubectl get evictions,hypervisors; kubectl describe eviction node001`);
    say(`metrics: http://127.0.0.1:${metricsPort}/metrics`);
    await new Promise(() => {});
  }
} catch (e) {
  console.error(`\ndemo failed: ${e instanceof Error ? e.message : e}`);
  if (operator) {
    console.error(
      `evictor's log, last lines:\n${await operatorLogTail(operator)}`,
    );
  }
  await cleanUp();
  Deno.exit(1);
}
await cleanUp();
Deno.exit(0);
