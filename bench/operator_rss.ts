/**
 * The resident memory of the whole operator in the shape it is deployed:
 * main.ts with exactly the compile task's permissions and V8 flags
 * (app/permissions.ts),
 * every controller and the webhook on, against a real kube-apiserver and
 * the Nova simulator, with N Hypervisors and M Evictions, through the first
 * Hypervisor sync and one full resync. Used by bench/framework.ts.
 *
 * @module
 */

import pLimit from "p-limit";
import { PERMISSION_FLAGS, V8_FLAGS } from "../app/permissions.ts";
import { EvictionKind, HypervisorKind } from "../controllers/kinds.ts";
import { KubeClient } from "../framework/client.ts";
import type { Eviction, Hypervisor } from "../models/mod.ts";
import { startEnvtest } from "../tests/harness/envtest.ts";
import { startNovaSim } from "../tests/harness/nova_sim/mod.ts";
import {
  STAGING_ROOT,
  toolchainEnv,
} from "../tests/harness/operator_process.ts";
import { freePort, makeOwnedTempDir } from "../tests/harness/processes.ts";

/** What to measure. */
export interface OperatorRssOptions {
  /** Hypervisors (one per simulated compute host). */
  hypervisors: number;
  /** Evictions (of the first hosts, each with `vmsPerDrain` VMs). */
  evictions: number;
  /** VMs on each drained host. */
  vmsPerDrain: number;
  /** `--hypervisor-resync-interval` in seconds. */
  resyncSeconds: number;
  /** How long RSS is watched once the resync is over, seconds. */
  settleSeconds: number;
  /** V8 flags of the operator process (default: the binary's, V8_FLAGS). */
  v8Flags?: readonly string[];
}

/** RSS samples of the run and where its phases ended. */
export interface OperatorRss {
  /** Highest RSS seen, MB. */
  peakRssMb: number;
  /** Median RSS over the settle window after the full resync, MB. */
  settledRssMb: number;
  /** RSS once the caches synced (before the first sync's writes), MB. */
  syncedCachesRssMb: number;
  /** Seconds from start to the end of the first Hypervisor sync. */
  firstSyncS: number;
  /** Seconds from start to the end of the full resync. */
  resyncS: number;
  /** When the peak was seen, seconds from start. */
  peakAtS: number;
  /** Evictions whose drain had ended (Evicting=False) at the end. */
  drainsDone: number;
  /** Hypervisors with a status from the sync at the end. */
  hypervisorsSynced: number;
  /** Seconds to create the objects (not part of the measure). */
  setupS: number;
  /** Every 10 s: seconds from start, RSS in MB, Nova hypervisor reads so far. */
  timeline: [number, number, number][];
}

const mb = (kb: number) => Math.round(kb / 1024 * 10) / 10;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pad = (i: number) => `node${String(i).padStart(5, "0")}`;

/** VmRSS of `pid` in kB (Linux), or undefined once it has ended. */
async function rssKb(pid: number): Promise<number | undefined> {
  try {
    const status = await Deno.readTextFile(`/proc/${pid}/status`);
    const kb = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
    return kb === undefined ? undefined : Number(kb);
  } catch {
    return undefined;
  }
}

/** The median of a non-empty list. */
function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

/**
 * Runs the measure: starts an API server and the simulator, creates the
 * objects, runs the operator, samples its RSS every 250 ms until the full
 * resync is over and `settleSeconds` more have passed.
 */
export async function measureOperatorRss(
  o: OperatorRssOptions,
): Promise<OperatorRss> {
  const setupStarted = performance.now();
  const env = await startEnvtest();
  const hosts = Array.from({ length: o.hypervisors }, (_, i) => ({
    name: pad(i),
    ramMb: 1048576,
  }));
  const sim = await startNovaSim({
    timeScale: 20,
    hosts,
    serverGroups: hosts.slice(0, o.evictions).map((h) => ({
      host: h.name,
      count: o.vmsPerDrain,
      namePrefix: `vm-${h.name}`,
    })),
  });
  const client = await KubeClient.fromKubeConfig(env.kubeConfig());
  const dir = await makeOwnedTempDir(STAGING_ROOT, "rss-");
  let child: Deno.ChildProcess | undefined;
  try {
    const limit = pLimit(16);
    await Promise.all(
      hosts.map((h) =>
        limit(() =>
          client.create(HypervisorKind, {
            apiVersion: "kvm.cloud.sap/v1",
            kind: "Hypervisor",
            metadata: { name: h.name },
            spec: { customTraits: ["CUSTOM_BENCH"] },
          })
        )
      ),
    );
    await Promise.all(
      hosts.slice(0, o.evictions).map((h) =>
        limit(() =>
          client.create(EvictionKind, {
            apiVersion: "kvm.cloud.sap/v1",
            kind: "Eviction",
            metadata: { name: h.name },
            spec: { hypervisor: h.name, reason: "memory bench" },
          })
        )
      ),
    );
    const setupS = (performance.now() - setupStarted) / 1000;

    await Deno.copyFile(env.kubeconfigPath, `${dir}/kubeconfig`);
    await Deno.writeTextFile(
      `${dir}/clouds.yaml`,
      sim.cloudsYaml({ cloud: "bench", auth: "application_credential" }),
    );
    const pair = await env.servingCert(["127.0.0.1", "localhost"]);
    await Deno.writeTextFile(`${dir}/tls.crt`, pair.certPem);
    await Deno.writeTextFile(`${dir}/tls.key`, pair.keyPem);
    const log = await Deno.open(`${dir}/operator.log`, {
      write: true,
      create: true,
    });
    const sampled: { t: number; kb: number }[] = [];
    const started = performance.now();
    const at = () => (performance.now() - started) / 1000;
    child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--frozen",
        ...PERMISSION_FLAGS,
        ...((o.v8Flags ?? V8_FLAGS).length > 0
          ? [`--v8-flags=${(o.v8Flags ?? V8_FLAGS).join(",")}`]
          : []),
        new URL("../main.ts", import.meta.url).pathname,
        "run",
        `--kubeconfig=${dir}/kubeconfig`,
        "--os-cloud=bench",
        `--hypervisor-resync-interval=${o.resyncSeconds}s`,
        "--poll-interval=1s",
        `--metrics-bind-address=127.0.0.1:${freePort()}`,
        `--health-probe-bind-address=127.0.0.1:${freePort()}`,
        `--webhook-bind-address=127.0.0.1:${freePort()}`,
        `--webhook-cert-dir=${dir}`,
        "--log-level=warn",
      ],
      env: {
        ...toolchainEnv(),
        OS_CLIENT_CONFIG_FILE: `${dir}/clouds.yaml`,
        HOME: dir,
        NO_COLOR: "1",
      },
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    child.stdout.pipeTo(log.writable, { preventClose: true }).catch(() => {});
    child.stderr.pipeTo(log.writable).catch(() => {});
    const pid = child.pid;
    let ended = false;
    child.status.then(() => ended = true);
    // The sync's Nova read per Hypervisor marks its progress.
    const detailCalls = () =>
      Object.entries(sim.counters().calls)
        .filter(([k]) => k.includes("os-hypervisors/detail"))
        .reduce((n, [, v]) => n + v, 0);
    const timeline: [number, number, number][] = [];
    const sampler = (async () => {
      while (!ended) {
        const kb = await rssKb(pid);
        if (kb !== undefined) {
          const t = at();
          sampled.push({ t, kb });
          if (t >= timeline.length * 10) {
            timeline.push([Math.round(t), mb(kb), detailCalls()]);
          }
        }
        await sleep(250);
      }
    })();
    const waitCalls = async (n: number, what: string) => {
      const deadline = Date.now() + 30 * 60_000;
      while (detailCalls() < n) {
        if (ended) throw new Error(`the operator ended during ${what}`);
        if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
        await sleep(250);
      }
      return at();
    };
    const firstSyncS = await waitCalls(o.hypervisors, "the first sync");
    const resyncS = await waitCalls(2 * o.hypervisors, "the full resync");
    const settleFrom = at();
    await sleep(o.settleSeconds * 1000);
    if (ended) throw new Error("the operator ended before the measure");

    const hypervisors = (await client.list(HypervisorKind))
      .items as Hypervisor[];
    const evictions = (await client.list(EvictionKind)).items as Eviction[];
    child.kill("SIGTERM");
    await child.status;
    await sampler;
    const peak = sampled.reduce((a, b) => (b.kb > a.kb ? b : a));
    // the caches synced: the first sample after the operator's first Nova
    // call would be exact; the sample just before the first sync's writes
    // is near enough: the lowest after the first 10 % of the first sync
    const early = sampled.filter((s) => s.t <= firstSyncS * 0.1);
    return {
      peakRssMb: mb(peak.kb),
      peakAtS: Math.round(peak.t),
      settledRssMb: mb(
        median(sampled.filter((s) => s.t >= settleFrom).map((s) => s.kb)),
      ),
      syncedCachesRssMb: mb(Math.max(0, ...early.map((s) => s.kb))),
      firstSyncS: Math.round(firstSyncS),
      resyncS: Math.round(resyncS),
      drainsDone: evictions.filter((e) =>
        e.status?.conditions?.some((c) =>
          c.type === "Evicting" && c.status === "False"
        )
      ).length,
      hypervisorsSynced: hypervisors.filter((h) =>
        h.status?.hypervisorId !== undefined
      ).length,
      setupS: Math.round(setupS),
      timeline,
    };
  } finally {
    if (child !== undefined) {
      try {
        child.kill("SIGKILL");
      } catch {
        // already ended
      }
    }
    client.close();
    await sim.close();
    await env.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
