/**
 * The drain benchmark on the real cloud (task `bench:openstack`): Debian's
 * Zed on loopback (tests/harness/openstack.ts, fake virt driver, Nova's
 * per-host limit raised to our limit), the operator as a separate process
 * against a real API server, a drain of one host. Nova's calls are counted
 * by a counting proxy that Keystone's catalog names as the compute endpoint
 * of a region of its own (`Bench`), so the operator finds it as it finds
 * any Nova. Writes bench/reports/openstack.json: `ratio` (makespan against
 * its lower bound max(max t_i, sum t_i / L)), `novaCallsPerVm`,
 * `vmsMigratedTwice`, `refillSeconds` (mean time from a migration's end to
 * the start that refilled its slot). Not a test: nothing fails on a number.
 *
 * Usage: deno run -A bench/openstack.ts [--vms N] [--limit L] [--out PATH]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { KubeClient } from "../framework/client.ts";
import { EvictionKind, HypervisorKind } from "../controllers/kinds.ts";
import type { Eviction, Hypervisor } from "../models/mod.ts";
import { parseNovaTime } from "../openstack/nova_time.ts";
import { startEnvtest } from "../tests/harness/envtest.ts";
import { startOpenStack } from "../tests/harness/openstack.ts";
import { startNovaRegionProxy } from "../tests/harness/nova_region_proxy.ts";
import {
  operatorLogTail,
  startOperatorProcess,
} from "../tests/harness/operator_process.ts";
import {
  bootServers,
  deleteServers,
  type ServerSpec,
} from "../tests/openstack/contract_backends.ts";
import { slotGaps } from "./slot_gaps.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    vms: { type: "string", default: "12" },
    limit: { type: "string", default: "4" },
    out: { type: "string", default: "bench/reports/openstack.json" },
  },
});
const VMS = Number(values.vms);
const LIMIT = Number(values.limit);
if (!(VMS > 0) || !(LIMIT > 0)) {
  throw new RangeError(`--vms and --limit must be > 0, got ${VMS}, ${LIMIT}`);
}
const HOST = "node001";

const env = await startEnvtest();
const cloud = await startOpenStack({
  computes: 3,
  maxConcurrentLiveMigrations: LIMIT,
});
// Nova's calls are counted by a proxy that a region of its own names as
// the compute endpoint.
const proxy = await startNovaRegionProxy(cloud, { region: "Bench" });
const calls = proxy.calls;

try {
  const sizes = ["large", "medium", "small"] as const;
  const specs: ServerSpec[] = Array.from({ length: VMS }, (_, i) => ({
    name: `bench-${i}`,
    host: HOST,
    size: sizes[i % sizes.length] ?? "small",
  }));
  const servers = new Map<string, string>();
  console.error(`bench: booting ${VMS} servers on ${HOST}`);
  await bootServers(cloud, specs, servers);

  const client = await KubeClient.fromKubeConfig(env.kubeConfig());
  const hv = await cloud.call(
    "compute",
    "GET",
    `/os-hypervisors/detail?hypervisor_hostname_pattern=${HOST}`,
    { microversion: "2.53" },
  );
  const h = (hv.body as {
    hypervisors: { id: string; service: { id: string } }[];
  }).hypervisors[0];
  await client.create<Hypervisor>(HypervisorKind, {
    metadata: { name: HOST },
    spec: {},
  });
  await client.patch(
    HypervisorKind,
    HOST,
    {
      status: {
        hypervisorId: h?.id,
        serviceId: h?.service.id,
        traits: [],
        conditions: [{
          type: "TraitsUpdated",
          status: "True",
          reason: "Updated",
          message: "",
          lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
        }],
      },
    },
    "merge",
    "status",
  );
  const yaml = proxy.cloudsYaml();
  const op = await startOperatorProcess({
    kubeconfigPath: env.kubeconfigPath,
    cloudsYaml: yaml,
    cloud: "lane",
    args: [
      "--controllers=eviction",
      `--eviction-concurrency=${LIMIT}`,
      "--webhook-bind-address=0",
      "--metrics-bind-address=0",
    ],
  });
  try {
    // Calls before the drain (start-up) are not the drain's.
    await new Promise((r) => setTimeout(r, 5_000));
    calls.length = 0;
    const t0 = Date.now();
    await client.create<Eviction>(EvictionKind, {
      metadata: { name: HOST },
      spec: { hypervisor: HOST, reason: "bench" },
    });
    const deadline = Date.now() + 1_800_000;
    for (;;) {
      const ev = await client.get<Eviction>(EvictionKind, HOST);
      const c = ev.status?.conditions?.find((x) => x.type === "Evicting");
      if (c?.reason === "Succeeded") break;
      if (Date.now() > deadline) {
        throw new Error(
          `no Succeeded after 30 minutes\n${await operatorLogTail(op)}`,
        );
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    const succeededAfter = (Date.now() - t0) / 1000;
    const computeCalls = calls.length;
    const looks = calls.filter((c) =>
      c.method === "GET" && c.path.split("?")[0]?.endsWith("/servers/detail")
    ).map((c) => c.at);
    const r = await cloud.call(
      "compute",
      "GET",
      `/os-migrations?host=${HOST}`,
      { microversion: "2.59" },
    );
    const records = (r.body as {
      migrations: {
        instance_uuid: string;
        source_compute: string;
        status: string;
        created_at: string;
        updated_at: string | null;
      }[];
    }).migrations.filter((m) => m.source_compute === HOST);
    const novaMs = (t: string) => {
      const ms = parseNovaTime(t);
      if (ms === undefined) throw new Error(`not a Nova time: "${t}"`);
      return ms;
    };
    const spans = records.map((m) => ({
      createdAt: novaMs(m.created_at),
      updatedAt: novaMs(m.updated_at ?? m.created_at),
    }));
    const durations = spans.map((s) => (s.updatedAt - s.createdAt) / 1000);
    const makespan = (Math.max(...spans.map((s) => s.updatedAt)) -
      Math.min(...spans.map((s) => s.createdAt))) / 1000;
    const sum = durations.reduce((a, b) => a + b, 0);
    const lowerBound = Math.max(Math.max(...durations), sum / LIMIT);
    const perVm = new Map<string, number>();
    for (const m of records) {
      perVm.set(m.instance_uuid, (perVm.get(m.instance_uuid) ?? 0) + 1);
    }
    const gaps = slotGaps(spans, looks);
    // where the calls go: method and path, ids as {id}, most first
    const byRoute = new Map<string, number>();
    for (const c of calls) {
      const path = (c.path.split("?")[0] ?? "").replace(
        /\/([0-9a-f]{8}-[0-9a-f-]{27}|\d+)(?=\/|$)/g,
        "/{id}",
      );
      const route = `${c.method} ${path}`;
      byRoute.set(route, (byRoute.get(route) ?? 0) + 1);
    }
    const report = {
      generatedAt: new Date().toISOString(),
      cloud: "Debian bookworm OpenStack Zed, fake.FakeLiveMigrateDriver",
      vms: VMS,
      limit: LIMIT,
      novaMaxConcurrentLiveMigrations: LIMIT,
      migrated: perVm.size,
      makespanSeconds: makespan,
      lowerBoundSeconds: lowerBound,
      ratio: Number((makespan / lowerBound).toFixed(2)),
      succeededAfterSeconds: Number(succeededAfter.toFixed(1)),
      novaCalls: computeCalls,
      novaCallsPerVm: Number((computeCalls / Math.max(1, perVm.size))
        .toFixed(2)),
      novaCallsByRoute: Object.fromEntries(
        [...byRoute].sort(([, a], [, b]) => b - a),
      ),
      vmsMigratedTwice: [...perVm.values()].filter((n) => n > 1).length,
      refillSeconds: Number((gaps.meanIdleMs / 1000).toFixed(2)),
      refills: gaps.refills,
      migrationSeconds: durations,
      note:
        "record times are whole seconds (Nova's); makespan from the first record's creation to the last one's end",
    };
    await Deno.writeTextFile(
      values.out,
      JSON.stringify(report, null, 2) + "\n",
    );
    console.log(JSON.stringify(report, null, 2));
    await deleteServers(cloud, [...servers.values()]);
  } finally {
    await op.stop();
  }
} finally {
  await proxy.close();
  await cloud.stop();
  await env.stop();
}
