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
 * docs/measurements.md quotes). `--cloud openstack` tells the same story on
 * the real cloud of the real-OpenStack lane (demo/openstack_cloud.ts)
 * instead of the simulator (demo/simulator_cloud.ts).
 *
 * @module
 */
import { parseArgs } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { parse as parseYaml } from "yaml";
import { PERMISSION_FLAGS } from "../app/permissions.ts";
import { renderProgressLine } from "../cli/progress.ts";
import { countsOf, stateText } from "../cli/kubectl_plugin.ts";
import {
  type Eviction,
  EvictionResource,
  EvictionSchema,
  HypervisorResource,
  HypervisorSchema,
} from "../models/mod.ts";
import { type Envtest, startEnvtest } from "../tests/harness/envtest.ts";
import {
  operatorLogTail,
  type OperatorProcess,
  STAGING_ROOT,
  startOperatorProcess,
} from "../tests/harness/operator_process.ts";
import { freePort, makeOwnedTempDir } from "../tests/harness/processes.ts";
import { plainOutputForChildren } from "../tests/harness/plain_output.ts";
import {
  comparePredictions,
  hostFigures,
  renderHosts,
  renderNotifications,
  renderWave,
  summariseDrain,
  summariseWave,
} from "./summary.ts";
import { type DemoCloud, parseCloud } from "./cloud.ts";
import { startSimulatorCloud } from "./simulator_cloud.ts";
import { openStackMissing, startOpenStackCloud } from "./openstack_cloud.ts";
import { denoPinNoteHere } from "../tests/harness/deno_pin.ts";

/** The flags, checked; a bad one ends the demo with one line naming it. */
function parseFlags() {
  try {
    const { values } = parseArgs({
      args: Deno.args,
      options: {
        keep: { type: "boolean", default: false },
        // seconds; default: the cloud's (300 simulated, 900 real)
        timeout: { type: "string" },
        // where the summary's figures go as JSON (docs/measurements.md quotes them)
        report: { type: "string" },
        // simulator (default) or openstack: the real-OpenStack lane's cloud
        cloud: { type: "string", default: "simulator" },
      },
    });
    const timeout = values.timeout === undefined
      ? undefined
      : Number(values.timeout);
    if (timeout !== undefined && !(timeout > 0)) {
      throw new RangeError(
        `--timeout: got "${values.timeout}"; expected a number of seconds > 0`,
      );
    }
    return { ...values, timeout, cloud: parseCloud(values.cloud) };
  } catch (e) {
    // parseArgs's own errors say what is wrong, not what is expected.
    const usage = e instanceof RangeError
      ? ""
      : "; expected --cloud simulator|openstack, --keep, --timeout SECONDS, --report FILE";
    console.error(`demo: ${e instanceof Error ? e.message : e}${usage}`);
    Deno.exit(2);
  }
}
const flags = parseFlags();
// Piped or logged (`| tee demo.log`), no child colours its output.
plainOutputForChildren();
if (flags.cloud === "openstack") {
  const missing = await openStackMissing();
  if (missing !== undefined) {
    console.error(missing);
    Deno.exit(1);
  }
}

const ROOT = new URL("../", import.meta.url);
/** The EvictionPolicy of the story, with the cloud's cluster budget. */
const policyOf = (budget: number) => ({
  apiVersion: "kvm.cloud.sap/v1alpha1",
  kind: "EvictionPolicy",
  metadata: { name: "default" },
  spec: {
    maxConcurrentMigrations: 4,
    traitLimits: [{
      trait: "CUSTOM_HANA_EXCLUSIVE_HOST",
      maxConcurrentMigrations: 1,
    }],
    clusterMaxConcurrentMigrations: budget,
  },
});

const interactive = Deno.stdout.isTerminal();
const say = (text: string) => console.log(text);
const step = (text: string) => say(`\n==> ${text}`);

let env: Envtest | undefined;
let cloud: DemoCloud | undefined;
let operator: OperatorProcess | undefined;
let stageDir: string | undefined;
/**
 * Where evictor's log is kept once the demo ends (its staging folder goes):
 * under {@linkcode STAGING_ROOT}/logs, a folder no clean-up removes.
 */
const keptLogPath = `${STAGING_ROOT}/logs/demo-evictor-${
  new Date().toISOString().replace(/[:.]/g, "-")
}.log`;

async function cleanUp() {
  await operator?.stop().catch(() => {});
  const op = operator;
  if (op) {
    await Deno.mkdir(`${STAGING_ROOT}/logs`, { recursive: true })
      .then(() => Deno.copyFile(op.logPath, keptLogPath))
      .catch((e) => console.error(`evictor's log not kept: ${e}`));
    await Deno.remove(op.dir, { recursive: true }).catch(() => {});
  }
  await cloud?.close().catch(() => {});
  await env?.stop().catch(() => {});
  if (stageDir) {
    await Deno.remove(stageDir, { recursive: true }).catch(() => {});
  }
}
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.addSignalListener(signal, () => {
    void cleanUp().then(() => {
      if (operator) console.error(`evictor's log: ${keptLogPath}`);
      Deno.exit(130);
    });
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
  timeoutSeconds: number,
  arrival?: DemoCloud["arrival"],
): Promise<Eviction[]> {
  const timeoutMs = timeoutSeconds * 1000;
  let lines = 0;
  let lastPrint = 0;
  let arrived = arrival === undefined;
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
        : `${renderProgressLine(host, countsOf(e))}  ${stateText(e)}`;
    });
    const done = hosts.every((host) => {
      const c = evictions.find((x) => x.spec.hypervisor === host)?.status
        ?.conditions?.find((c) => c.type === "Evicting");
      return c?.status === "False";
    });
    // The demo's own event, said when it happens, above the bars.
    const first = evictions.find((x) => x.spec.hypervisor === hosts[0]);
    if (
      !arrived && arrival !== undefined && !done &&
      (first?.status?.migratedCount ?? 0) >= arrival.afterMigrated
    ) {
      arrived = true;
      const line = await arrival.boot();
      if (interactive && lines > 0) {
        await Deno.stdout.write(new TextEncoder().encode(`\x1b[${lines}A`));
        lines = 0;
      }
      say(interactive ? `\x1b[2K${line}` : line);
    }
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
      throw new Error(`the drains did not end within ${timeoutSeconds} s`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

try {
  const started = Date.now();
  const pinNote = await denoPinNoteHere();
  if (pinNote !== undefined) say(pinNote);
  step("Starting kube-apiserver and etcd (built from Go modules on first use)");
  env = await startEnvtest();
  say(`API server at ${env.server}`);

  cloud = flags.cloud === "openstack"
    ? await startOpenStackCloud({ step, say })
    : await startSimulatorCloud({ step, say });
  const c = cloud;
  const WAVE = c.wave;
  const DRAINS = [
    { host: c.first, how: "maintenance" },
    ...WAVE.map((host) => ({ host, how: "wave (plugin)" })),
  ];
  const timeoutSeconds = flags.timeout ?? c.timeoutSeconds;

  step(
    "Starting evictor (operator + webhook) with the compiled binary's permissions",
  );
  stageDir = await makeOwnedTempDir(STAGING_ROOT, "demo-");
  // For the plugin's plan and for people playing with --keep.
  const cloudsPath = `${stageDir}/clouds.yaml`;
  await Deno.writeTextFile(cloudsPath, c.plugin.cloudsYaml);
  const cert = await env.servingCert(["127.0.0.1", "localhost"]);
  await Deno.mkdir(`${stageDir}/certs`);
  await Deno.writeTextFile(`${stageDir}/certs/tls.crt`, cert.certPem);
  await Deno.writeTextFile(`${stageDir}/certs/tls.key`, cert.keyPem);
  const webhookPort = freePort();
  const metricsPort = freePort();
  const probePort = freePort();
  operator = await startOperatorProcess({
    kubeconfigPath: env.kubeconfigPath,
    cloudsYaml: c.operator.cloudsYaml,
    cloud: c.operator.cloud,
    args: [
      ...c.operatorArgs,
      "--discover-hypervisors",
      "--hypervisor-resync-interval=2s",
      `--webhook-bind-address=127.0.0.1:${webhookPort}`,
      `--webhook-cert-dir=${stageDir}/certs`,
      `--metrics-bind-address=127.0.0.1:${metricsPort}`,
      "--insecure-metrics", // the demo prints a /metrics URL to open
      `--health-probe-bind-address=127.0.0.1:${probePort}`,
    ],
    // The broker's URL by its environment twin, as the Secret gives it.
    ...("url" in c.notifications
      ? { env: { EVICTOR_NOVA_NOTIFICATIONS_URL: c.notifications.url } }
      : {}),
  });
  say(
    "url" in c.notifications
      ? `Drains follow Nova's notifications from ${c.notifications.where}`
      : `Drains poll Nova: no notifications (${c.notifications.polling})`,
  );
  say(
    `evictor runs as its own process with the binary's permissions (${
      PERMISSION_FLAGS.join(" ")
    }); its log: ${operator.logPath} (kept as ${keptLogPath} when the demo ends)`,
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
  await waitFor(`${c.hypervisors} Hypervisors with traits`, async () => {
    const list = await api.listClusterCustomObject({
      ...HypervisorResource,
    }) as { items: unknown[] };
    const hvs = list.items.map((i) => HypervisorSchema.safeParse(i)).filter((
      p,
    ) => p.success);
    return hvs.length === c.hypervisors &&
      hvs.every((p) =>
        p.data.status?.conditions?.some((c) =>
          c.type === "TraitsUpdated" && c.status === "True"
        )
      );
  });
  await kubectl(["get", "hypervisors"]);

  step("The webhook refuses a policy whose trait limit would raise the limit");
  const bad = policyOf(c.budget);
  bad.spec.traitLimits = [{
    trait: "CUSTOM_HANA_EXCLUSIVE_HOST",
    maxConcurrentMigrations: 8,
  }];
  await kubectl(["apply", "-f", "-"], JSON.stringify(bad));
  step(c.policyStep);
  await kubectl(["apply", "-f", "-"], JSON.stringify(policyOf(c.budget)));

  if (c.staged.length > 0) {
    step(
      "What the demo makes happen in the cloud besides the drains (watch for it below):",
    );
    for (const line of c.staged) say(`  ${line}`);
  }

  // Every migration the drains have in flight, sampled from the cloud:
  // the cluster budget's peak.
  const inFlight = c.sampleInFlight(DRAINS.map((d) => d.host));
  step(
    `Draining ${c.first} first, alone: kubectl patch puts its Hypervisor into maintenance, which creates its Eviction (no drain has ended yet: the prediction uses --default-migration-rate)`,
  );
  const drainStarted = Date.now();
  await kubectl([
    "patch",
    "hypervisor",
    c.first,
    "--type",
    "merge",
    "-p",
    '{"spec":{"maintenance":"manual","maintenanceReason":"kernel 6.12"}}',
  ]);
  step("Progress (# migrated, > in flight, ! failed, ? skipped, . waiting)");
  await watchDrains(api, [c.first], drainStarted, timeoutSeconds, c.arrival);

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
        // The plugin runs on this Deno (`npx deno` puts none on PATH, and a
        // checkout without node_modules has none beside it).
        PATH: `${new URL("bin", ROOT).pathname}:${
          Deno.execPath().replace(/\/[^/]*$/, "")
        }:${Deno.env.get("PATH") ?? ""}`,
        KUBECONFIG: env.kubeconfigPath,
        OS_CLIENT_CONFIG_FILE: cloudsPath,
        OS_CLOUD: c.plugin.cloud,
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
    `A plan preview of the wave: nothing changes; the predictions are calibrated on ${c.first}'s drain and share the cluster budget of ${c.budget}`,
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
    } (${c.waveWhat}) creates their Evictions together, so every host is disabled before any of them migrates`,
  );
  const callsBeforeWave = c.calls().drain;
  await plugin(["drain", ...WAVE, "--reason", "rack R12 firmware"]);

  step("Progress");
  const evictions = await watchDrains(
    api,
    DRAINS.map((d) => d.host),
    drainStarted,
    timeoutSeconds,
  );
  const budgetPeak = await inFlight.stop();

  step(
    "kubectl get evictions -o wide (the Message column says what a drain waits for)",
  );
  await kubectl(["get", "evictions", "-o", "wide"]);

  step(
    "Summary: per host its makespan (startedAt to the drain's end, on evictor's clock) against the lower bound no schedule beats and against its prediction",
  );
  const migrations = await c.migrations();
  const rows = DRAINS.map(({ host, how }) => {
    const e = evictions.find((x) => x.spec.hypervisor === host);
    const limit = Math.min(e?.status?.effectiveLimit ?? 1, c.novaLimitOf(host));
    return summariseDrain(
      host,
      how,
      Math.max(1, limit),
      c.overheadMs,
      migrations,
    );
  });
  const migrated = evictions.reduce(
    (n, e) => n + (e.status?.migratedCount ?? 0),
    0,
  );
  const calls = c.calls();
  const predictions = comparePredictions(evictions);
  for (const r of predictions) {
    if (r.predictedSeconds === undefined || r.actualSeconds === undefined) {
      throw new Error(`${r.host}: no prediction or no finished drain`);
    }
  }
  // Each host's makespan and lower bound computed once, for one table.
  const figures = hostFigures(rows, predictions, c.style.timeScale);
  say(renderHosts(figures, calls, migrated, c.style));
  const waveEvictions = evictions.filter((e) =>
    (WAVE as readonly string[]).includes(e.spec.hypervisor)
  );
  say("");
  const wave = summariseWave({
    hosts: WAVE,
    migrations,
    migrated: waveEvictions.reduce(
      (n, e) => n + (e.status?.migratedCount ?? 0),
      0,
    ),
    novaCalls: calls.drain - callsBeforeWave,
    budget: c.budget,
    budgetPeak,
  });
  say(renderWave(wave, c.sampledEveryMs));
  for (const r of rows.filter((r) => r.retried > 0)) {
    say(`${r.host}: ${c.retryNote}`);
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
  say(
    "\n" + renderNotifications(
      c.notifications,
      await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
        .then((r) => r.text())
        .catch(() => ""),
    ),
  );
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
          hosts: figures,
          cloud: flags.cloud,
          novaCallsPerMigratedVm: migrated === 0
            ? null
            : calls.drain / migrated,
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
    say(
      `export OS_CLIENT_CONFIG_FILE=${cloudsPath} OS_CLOUD=${c.plugin.cloud}`,
    );
    say(
      `kubectl get evictions,hypervisors; kubectl describe eviction ${c.first}`,
    );
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
  if (operator) console.error(`evictor's log: ${keptLogPath}`);
  Deno.exit(1);
}
await cleanUp();
say(`evictor's log: ${keptLogPath}`);
Deno.exit(0);
