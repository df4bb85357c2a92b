/**
 * What the lane's end-to-end tests share: a scenario on the real cloud
 * ({@linkcode withLane}: servers booted, Hypervisors registered, the
 * operator as a separate process with the compiled binary's permissions),
 * waits with diagnostics, and a sampler of Nova's migration records.
 *
 * @module
 */
import assert from "node:assert/strict";
import { KubeClient } from "../../framework/client.ts";
import {
  EvictionKind,
  EvictionPolicyKind,
  HypervisorKind,
} from "../../controllers/kinds.ts";
import type { HostPlan } from "../../cli/plan.ts";
import type { Eviction, Hypervisor } from "../../models/mod.ts";
import { sharedEnvtest } from "../harness/envtest.ts";
import {
  operatorLogTail,
  type OperatorProcess,
  startOperatorProcess,
} from "../harness/operator_process.ts";
import { openStackAvailable } from "../harness/openstack.ts";
import { runPlugin } from "../harness/plugin.ts";
import {
  IN_PROGRESS,
  type MigrationSample,
  type RawMigration,
  sampleNovaMigrations,
} from "../harness/nova_migrations.ts";
import {
  type Backend,
  laneCloud,
  openBackend,
  type ServerSpec,
} from "./contract_backends.ts";

export { IN_PROGRESS, type MigrationSample, type RawMigration };

/** Whether the lane can run here (tests are ignored where not). */
export const available: boolean = await openStackAvailable();

/** The operator's poll interval in the lane (`--poll-interval`). */
export const POLL_MS = 1_000;

/** The Eviction's condition of `type`. */
export function condition(ev: Eviction | undefined, type: string) {
  return ev?.status?.conditions?.find((c) => c.type === type);
}

/** Polls `fn` every 500 ms until it gives a value; fails with `more()`. */
export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs: number,
  more: () => Promise<string>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what}${
      last === undefined ? "" : ` (last error: ${String(last)})`
    }\n${await more()}`,
  );
}

/** Everything one scenario works with. */
export interface Lane {
  b: Backend;
  client: KubeClient;
  op: OperatorProcess;
  labels: Record<string, string>;
  kubectl(args: string[], stdin?: string): Promise<string>;
  migrationsFrom(host: string): Promise<RawMigration[]>;
  eviction(name: string): Promise<Eviction | undefined>;
  diagnostics(): Promise<string>;
}

/**
 * Boots `servers`, registers `hosts` as Hypervisors, starts the operator
 * (with clouds.yaml and cloud from `operator` when given), runs `fn`, and
 * cleans up whatever happened.
 */
export async function withLane(
  servers: ServerSpec[],
  hosts: string[],
  args: string[],
  fn: (lane: Lane) => Promise<void>,
  operator: { cloudsYaml?: string; cloud?: string } = {},
): Promise<void> {
  const env = await sharedEnvtest();
  const cloud = await laneCloud();
  const client = await KubeClient.fromKubeConfig(env.kubeConfig());
  const suffix = crypto.randomUUID().slice(0, 8);
  const labels = { "evictor-lane": suffix };
  const b = await openBackend("nova", servers);
  const started = new Date(Date.now() - 5_000).toISOString().replace(
    /\.\d+Z$/,
    "Z",
  );
  let op: OperatorProcess | undefined;
  try {
    for (const host of hosts) {
      const hv = await b.nova.findHypervisorByHostname(host);
      const rp = await b.placement.findResourceProvider(host);
      assert.ok(hv && rp, `Nova and Placement know ${host}`);
      const traits = (await b.placement.getTraits(rp)).traits;
      await client.create<Hypervisor>(HypervisorKind, {
        metadata: { name: host, labels },
        spec: {},
      });
      await client.patch(
        HypervisorKind,
        host,
        {
          status: {
            hypervisorId: hv.id,
            serviceId: hv.serviceId,
            traits,
            conditions: [{
              type: "TraitsUpdated",
              status: "True",
              reason: "Updated",
              message: "",
              lastTransitionTime: started,
            }],
          },
        },
        "merge",
        "status",
      );
    }
    op = await startOperatorProcess({
      kubeconfigPath: env.kubeconfigPath,
      cloudsYaml: operator.cloudsYaml ?? cloud.cloudsYaml(),
      cloud: operator.cloud ?? "lane",
      args: [
        "--controllers=eviction",
        `--label-selector=evictor-lane=${suffix}`,
        `--poll-interval=${POLL_MS / 1000}s`,
        "--webhook-bind-address=0",
        "--metrics-bind-address=0",
        ...args,
      ],
    });
    const running = op;
    const lane: Lane = {
      b,
      client,
      op: running,
      labels,
      kubectl: async (a, stdin) => {
        const r = await env.kubectl(a, stdin === undefined ? {} : { stdin });
        if (r.code !== 0) {
          throw new Error(`kubectl ${a.join(" ")}: ${r.stderr}`);
        }
        return r.stdout;
      },
      migrationsFrom: async (host) => {
        const r = await b.raw(
          "compute",
          "GET",
          `/os-migrations?host=${host}&changes-since=${started}`,
          { microversion: "2.80" },
        );
        return (r.body as { migrations: RawMigration[] }).migrations
          .filter((m) => m.source_compute === host);
      },
      eviction: (name) =>
        client.get<Eviction>(EvictionKind, name).catch(() => undefined),
      diagnostics: async () =>
        `--- operator\n${await operatorLogTail(running, 60)}\n${await b
          .logTails()}`,
    };
    try {
      await fn(lane);
    } catch (error) {
      // Every failure carries what Nova and the operator saw.
      if (error instanceof Error && !error.message.includes("--- operator")) {
        const records = (await Promise.all(
          hosts.map((h) => lane.migrationsFrom(h).catch(() => [])),
        )).flat();
        error.message += `\nmigrations: ${JSON.stringify(records)}\n${await lane
          .diagnostics()}`;
      }
      throw error;
    }
  } finally {
    for (const host of hosts) {
      await client.delete(EvictionKind, host).catch(() => {});
    }
    // The finalizer re-enables the hosts; give it its moment, then force.
    await new Promise((r) => setTimeout(r, 3_000));
    await op?.stop();
    for (const host of hosts) {
      await client.delete(HypervisorKind, host).catch(() => {});
      await client.patch(
        EvictionKind,
        host,
        { metadata: { finalizers: null } },
        "merge",
      ).catch(() => {});
    }
    await b.close();
  }
}

/** An Eviction of `host` as kubectl takes it. */
export function evictionYaml(
  host: string,
  labels: Record<string, string>,
  reason: string,
) {
  return [
    "apiVersion: kvm.cloud.sap/v1",
    "kind: Eviction",
    "metadata:",
    `  name: ${host}`,
    "  labels:",
    ...Object.entries(labels).map(([k, v]) => `    ${k}: "${v}"`),
    "spec:",
    `  hypervisor: ${host}`,
    `  reason: ${reason}`,
    "",
  ].join("\n");
}

/**
 * Looks at Nova's migration records of the scenario's servers from and to
 * `hosts` every 300 ms until `stop`, which gives every look.
 */
export function sampleMigrations(
  lane: Lane,
  hosts: string[],
): { stop(): Promise<MigrationSample[]> } {
  return sampleNovaMigrations(
    async (host) => {
      const r = await lane.b.raw(
        "compute",
        "GET",
        `/os-migrations?host=${host}`,
        { microversion: "2.80" },
      ).catch(() => undefined);
      return r?.status === 200
        ? (r.body as { migrations: RawMigration[] }).migrations
        : undefined;
    },
    () => new Set(lane.b.servers.values()),
    hosts,
  );
}

/** Waits until the Eviction of `host` has Evicting reason `reason`. */
export function evictingReason(
  lane: Lane,
  host: string,
  reason: string,
  timeoutMs = 600_000,
): Promise<Eviction> {
  return until(
    `Eviction ${host} Evicting=${reason}`,
    async () => {
      const e = await lane.eviction(host);
      return condition(e, "Evicting")?.reason === reason ? e : undefined;
    },
    timeoutMs,
    lane.diagnostics,
  );
}

/** Each server's records from `host`, oldest first, by server name. */
export async function recordsByName(
  lane: Lane,
  host: string,
): Promise<Map<string, RawMigration[]>> {
  const records = (await lane.migrationsFrom(host)).sort((a, b) => a.id - b.id);
  const out = new Map<string, RawMigration[]>();
  for (const [name, id] of lane.b.servers) {
    out.set(name, records.filter((m) => m.instance_uuid === id));
  }
  return out;
}

/** One host of `kubectl evictor plan --output json`. */
export interface PlannedHost {
  host: string;
  capacity: { status: string; message: string };
  makespan: HostPlan["makespan"];
  vms: { name: string; order: number | null; class: string }[];
}

/**
 * Runs `kubectl evictor plan HOST --output json` (bin/kubectl-evictor) as a
 * user would, with the lane's API server and `cloudsYaml` (cloud `lane`),
 * and gives the plan of `host`; a non-zero exit fails with its stderr.
 */
export async function planWithPlugin(
  host: string,
  cloudsYaml: string,
  args: string[] = [],
): Promise<PlannedHost> {
  const api = await sharedEnvtest();
  const dir = await Deno.makeTempDir({ prefix: "evictor-lane-plan-" });
  try {
    await Deno.writeTextFile(`${dir}/clouds.yaml`, cloudsYaml);
    const out = await runPlugin(["plan", host, "--output", "json", ...args], {
      KUBECONFIG: api.kubeconfigPath,
      OS_CLIENT_CONFIG_FILE: `${dir}/clouds.yaml`,
      OS_CLOUD: "lane",
    });
    assert.equal(out.code, 0, out.stderr);
    const parsed = JSON.parse(out.stdout) as {
      hosts: PlannedHost[];
    };
    const h = parsed.hosts.find((x) => x.host === host);
    assert.ok(h, `no plan of ${host}: ${JSON.stringify(parsed)}`);
    return h;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Runs `fn` with the cluster's EvictionPolicy set to `spec`. */
export async function withPolicy(
  lane: Lane,
  spec: Record<string, unknown>,
  fn: () => Promise<void>,
): Promise<void> {
  await lane.client.create(EvictionPolicyKind, {
    metadata: { name: "default" },
    spec,
  });
  try {
    await fn();
  } finally {
    await lane.client.delete(EvictionPolicyKind, "default").catch(() => {});
  }
}
