/**
 * The demo on the real cloud (`--cloud openstack`): the real-OpenStack
 * lane's Debian Zed on loopback (tests/harness/openstack.ts) with four
 * computes on the lane's compute driver, a dozen small servers booted on
 * chosen hosts, node003 marked HANA in Placement, and Nova's calls counted
 * by a proxy that a Keystone region of its own names as compute endpoint.
 *
 * @module
 */
import {
  openStackAvailable,
  type OpenStackCloud,
  startOpenStack,
} from "../tests/harness/openstack.ts";
import { startNovaRegionProxy } from "../tests/harness/nova_region_proxy.ts";
import {
  listMigrationsOf,
  sampleNovaMigrations,
} from "../tests/harness/nova_migrations.ts";
import {
  type Backend,
  openNova,
  type ServerSpec,
  SIZES,
} from "../tests/openstack/contract_backends.ts";
import type { DemoCloud, Say } from "./cloud.ts";
import { inFlightPeak, summaryRecords } from "./nova_records.ts";
import { drainCalls } from "./summary.ts";

/** The trait of the HANA host, as in the simulator's scenario. */
const HANA = "CUSTOM_HANA_EXCLUSIVE_HOST";
/** Nova's `max_concurrent_live_migrations` on every compute. */
const NOVA_LIMIT = 4;
/** The lane driver's copies: 2 s plus RAM at this rate (MB/s). */
const COPY_MB_PER_SECOND = 512;
const COPY_BASE_SECONDS = 2;
/** Nova's steps of a live migration besides the copy, as measured here. */
const NOVA_STEPS_SECONDS = 5;

/**
 * Twelve servers: node001 (drained alone) with PAUSED and SHUTOFF ones,
 * node002 with one whose first live migration fails (rolled back, ACTIVE on
 * its source), node003 the HANA host, node004 nearly empty (the fake
 * driver's hosts have 800 GB: room is never the question here).
 */
const SERVERS: readonly Omit<ServerSpec, "migration">[] = [
  { name: "web-1", host: "node001", size: "medium" },
  { name: "web-2", host: "node001", size: "small" },
  { name: "web-3", host: "node001", size: "small" },
  { name: "build-3", host: "node001", size: "small", status: "PAUSED" },
  { name: "batch-7", host: "node001", size: "small", status: "SHUTOFF" },
  { name: "app-1", host: "node002", size: "small" },
  { name: "app-2", host: "node002", size: "small" },
  { name: "app-3", host: "node002", size: "small" },
  { name: "cache-2", host: "node002", size: "medium" },
  { name: "hana-a", host: "node003", size: "medium" },
  { name: "hana-app", host: "node003", size: "small" },
  { name: "svc-1", host: "node004", size: "small" },
];

/** The servers with their copy times (and cache-2's one failure). */
function serverSpecs(): ServerSpec[] {
  return SERVERS.map((s) => ({
    ...s,
    migration: {
      lane_copy_seconds: String(
        COPY_BASE_SECONDS + SIZES[s.size] / COPY_MB_PER_SECOND,
      ),
      ...(s.name === "cache-2"
        ? { lane_fail: "error" as const, lane_fail_times: "1" }
        : {}),
    },
  }));
}

/**
 * Why the real cloud cannot start here, in one line with how to fix it, or
 * undefined when it can (installed, or root with apt-get to install it).
 */
export async function openStackMissing(): Promise<string | undefined> {
  if (await openStackAvailable()) return undefined;
  return "demo: --cloud openstack needs the real-OpenStack lane's packages (Debian bookworm's OpenStack Zed), and installing them needs root and apt-get: install them once as root with `bash hack/openstack/install.sh` (or use the default --cloud simulator)";
}

/** Starts the real cloud, boots the servers, and describes it for the story. */
export async function startOpenStackCloud(out: Say): Promise<DemoCloud> {
  out.step(
    `Starting a real OpenStack on loopback (Debian's Zed: Keystone, Placement, Nova with 4 computes on the fake virt driver; about 2 minutes, longer on a busy machine)`,
  );
  const t0 = Date.now();
  const cloud = await startOpenStack({
    computes: 4,
    maxConcurrentLiveMigrations: NOVA_LIMIT,
  });
  let backend: Backend | undefined;
  try {
    out.say(
      `Keystone at ${cloud.authUrl}, up after ${
        secondsSince(t0)
      } s (log: ${cloud.dir}/logs)`,
    );
    const specs = serverSpecs();
    out.step(
      `Booting ${specs.length} servers on chosen hosts (PAUSED and SHUTOFF ones on node001; live-migration copies ${COPY_BASE_SECONDS} s + RAM at ${COPY_MB_PER_SECOND} MB/s)`,
    );
    const t1 = Date.now();
    backend = await openNova(cloud, specs);
    await markHana(backend, "node003");
    out.say(
      `${specs.length} servers up after ${
        secondsSince(t1)
      } s; node003 has ${HANA} in Placement`,
    );
    return await describe(cloud, backend);
  } catch (error) {
    await cloud.stop();
    throw error;
  }
}

function secondsSince(t0: number): string {
  return ((Date.now() - t0) / 1000).toFixed(0);
}

async function markHana(b: Backend, host: string): Promise<void> {
  const rp = await b.placement.findResourceProvider(host);
  if (!rp) throw new Error(`Placement has no resource provider ${host}`);
  await b.placement.ensureCustomTrait(HANA);
  await b.placement.setTraits(rp, (t) => [...t, HANA]);
}

async function describe(
  cloud: OpenStackCloud,
  backend: Backend,
): Promise<DemoCloud> {
  const proxy = await startNovaRegionProxy(cloud, { region: "Demo" });
  const ours = new Set(backend.servers.values());
  const list = listMigrationsOf(cloud);
  const calls = () => {
    const byCall: Record<string, number> = {};
    for (const c of proxy.calls) {
      const key = `${c.method} ${c.path}`;
      byCall[key] = (byCall[key] ?? 0) + 1;
    }
    return { total: proxy.calls.length, drain: drainCalls(byCall) };
  };
  return {
    hypervisors: cloud.hosts.length,
    first: "node001",
    wave: ["node002", "node003"],
    waveWhat: "the HANA host node003 among them",
    // One command drains the wave: 4 + 1 slots wanted, the budget gives 4.
    budget: 4,
    staged: [
      "cache-2: its first live migration fails (the lane's compute driver rolls it back, ACTIVE on node002): the drain retries it after --migration-retry-backoff",
    ],
    policyStep:
      "The EvictionPolicy: 4 per host, 1 on HANA hosts, 4 in the whole cluster",
    operator: { cloudsYaml: proxy.cloudsYaml(), cloud: "lane-appcred" },
    plugin: { cloudsYaml: proxy.cloudsYaml(), cloud: "lane" },
    operatorArgs: [
      "--poll-interval=1s",
      "--migration-retry-backoff=5s",
      // The lane driver's copy rate, and its 2 s with Nova's own steps
      // (accepted to completed besides the copy: about 5 s measured here).
      `--default-migration-rate=${COPY_MB_PER_SECOND}`,
      `--default-migration-overhead=${COPY_BASE_SECONDS + NOVA_STEPS_SECONDS}s`,
    ],
    timeoutSeconds: 900,
    sampleInFlight: (hosts) => {
      const sampler = sampleNovaMigrations(list, () => ours, hosts);
      return {
        stop: async () => inFlightPeak(await sampler.stop(), hosts),
      };
    },
    sampledEveryMs: 300,
    calls,
    migrations: async () => {
      const lists = await Promise.all(cloud.hosts.map(list));
      return summaryRecords(lists.flatMap((l) => l ?? []), ours);
    },
    novaLimitOf: (host) => cloud.liveMigrationLimits[host] ?? 1,
    overheadMs: 0,
    style: {
      note: (c, perVm) =>
        `Times are seconds: MAKESPAN from the Eviction's startedAt to the drain's end, as predicted; LOWER BOUND from Nova's migration records (whole seconds), each migration's own span standing for its time. RETRIED: VMs whose migration failed and a retry moved; FAILED: VMs not moved. Nova calls through a counting proxy: ${c.total} in all (with Hypervisor sync and discovery; Placement not counted); ${c.drain} by the drains (servers and migrations), ${perVm} per migrated VM.`,
    },
    retryNote:
      "its makespan includes the backoff before a failed migration was retried (--migration-retry-backoff=5s).",
    notifications: {
      url: cloud.amqpUrl,
      where: "the cloud's own RabbitMQ, published by its Nova",
    },
    close: async () => {
      await proxy.close().catch(() => {});
      await cloud.stop();
    },
  };
}
