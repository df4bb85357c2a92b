/**
 * `kubectl evictor plan`: reads the cluster and OpenStack (credentials as
 * the operator reads them), changes nothing, and prints each host's plan.
 *
 * @module
 */
import { lastDrainOf } from "../capacity/last_drain_record.ts";
import { drainEndMs } from "../controllers/conditions.ts";
import * as k8s from "@kubernetes/client-node";
import {
  type Eviction,
  EvictionPolicyResource,
  EvictionPolicySchema,
  type EvictionPolicySpec,
  EvictionResource,
  EvictionSchema,
  type Hypervisor,
  HypervisorResource,
  HypervisorSchema,
} from "../models/mod.ts";
import {
  createOpenStackClients,
  loadCloudConfig,
  type NovaClient,
  type PlacementClient,
} from "../openstack/mod.ts";
import {
  DEFAULT_MAX_CONCURRENT_MIGRATIONS,
  effectiveSettings,
  freezeSettings,
  resolveLimit,
} from "../limits/resolve.ts";
import { checkCapacity, type DrainedHost } from "../capacity/check.ts";
import { waveOf } from "../capacity/gate.ts";
import { drainLessons, learnedCost } from "../capacity/history.ts";
import {
  learnedNovaLimit,
  predictionLimit,
} from "../capacity/prediction_limit.ts";
import { capacityVerdict } from "../capacity/verdict.ts";
import { PLUGIN_USER_AGENT } from "../app/version.ts";
import { customObjectsApi, type KubeTarget } from "./kube_config.ts";
import {
  outputFormat,
  parseCommand,
  renderData,
  UsageError,
  usageOf,
} from "./usage.ts";
import {
  type HostPlan,
  type PlanCost,
  planHost,
  type PlanLimit,
  renderPlan,
  shareBudget,
} from "./plan.ts";
import { planCost } from "./plan_cost.ts";
import {
  convergenceInputs,
  type InFlightReport,
  predictConvergence,
} from "./plan_convergence.ts";
import { resolveConvergence } from "../limits/convergence.ts";

/** The OpenStack clients the plan needs. */
export interface PlanClients {
  /** Nova. */
  nova: NovaClient;
  /** Placement. */
  placement: PlacementClient;
  /** Closes the session. */
  close(): void;
}

/** What `plan` needs besides its arguments. */
export interface PlanIo {
  /** The cluster of the command's `--kubeconfig` and `--context`. */
  kubeConfig: (target: KubeTarget) => Promise<k8s.KubeConfig>;
  /** Standard output. */
  out: (line: string) => void;
  /** Where the API server's warnings go (cli/warnings.ts). */
  warn: (text: string) => void;
  /** OpenStack clients (default: from clouds.yaml / OS_* of the process). */
  openStack?: () => PlanClients;
}

async function getOrUndefined<T>(
  fetch: () => Promise<unknown>,
  parse: (raw: unknown) => T,
): Promise<T | undefined> {
  try {
    return parse(await fetch());
  } catch (e) {
    if (e instanceof k8s.ApiException && e.code === 404) return undefined;
    throw e;
  }
}

function positiveNumber(
  flag: string,
  raw: string | undefined,
): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) {
    throw new UsageError(
      `${flag} "${raw}" is not valid: expected a number > 0`,
      "plan",
    );
  }
  return n;
}

function limitText(
  r: ReturnType<typeof resolveLimit>,
  hasPolicy: boolean,
): PlanLimit {
  const source = r.source;
  const from = source === "eviction"
    ? `the Eviction's spec.maxConcurrentMigrations (the ${
      hasPolicy ? "policy" : "flags"
    } give ${r.hostLimit})`
    : source === "policy"
    ? r.decidingTrait === undefined
      ? "EvictionPolicy default"
      : `EvictionPolicy, lowered by trait ${r.decidingTrait}`
    : `no EvictionPolicy: the operator's --eviction-concurrency flags apply (assumed ${DEFAULT_MAX_CONCURRENT_MIGRATIONS}${
      r.decidingTrait === undefined ? "" : `, trait ${r.decidingTrait}`
    })`;
  return {
    value: r.limit,
    source,
    ...(r.decidingTrait === undefined ? {} : { trait: r.decidingTrait }),
    text: `${r.limit} (${from})`,
  };
}

const PLAN_FORMATS = ["table", "json", "yaml"] as const;

/** The cluster objects a plan reads. */
interface ClusterView {
  policy: EvictionPolicySpec | undefined;
  /** The policy's spec as sent (fields this plugin's models may not know yet). */
  policyRaw: unknown;
  /** Every Eviction as sent, by name. */
  evictionRaws: Map<string, Record<string, unknown>>;
  /** Every Hypervisor, by name (their status.lastDrain is history). */
  hypervisors: Map<string, Hypervisor>;
  evictions: Eviction[];
}

/**
 * The limit a running drain of the host has seen Nova impose (its
 * `max_concurrent_live_migrations`), when lower: the plan predicts with it.
 *
 * @example
 * ```ts
 * import { limitUnderNova } from "./plan_command.ts";
 * const l = limitUnderNova({ value: 4, source: "policy", text: "4 (EvictionPolicy default)" }, 1);
 * console.log(l.value); // 1
 * ```
 */
export function limitUnderNova(
  limit: PlanLimit,
  nova: number | undefined,
): PlanLimit {
  if (
    nova === undefined || predictionLimit(limit.value, nova) === limit.value
  ) {
    return limit;
  }
  return {
    ...limit,
    value: nova,
    text:
      `${nova} (Nova runs ${nova} live migration(s) at a time from this host: its max_concurrent_live_migrations; evictor's limit ${limit.text})`,
  };
}

/**
 * Runs `plan` with its arguments; returns the exit code (0).
 *
 * @throws {UsageError} for bad arguments.
 *
 * @example
 * ```ts ignore
 * await runPlan(["node042", "--output", "json"], io);
 * ```
 */
export async function runPlan(args: string[], io: PlanIo): Promise<number> {
  const r = planRequest(args, io);
  if (r === undefined) return 0;
  const cluster = await readCluster(
    customObjectsApi(await io.kubeConfig(r.target), io.warn),
  );
  const cost = planCost(
    learnedCost(
      drainLessons(
        cluster.evictions,
        [...cluster.hypervisors.values()],
        (e) => drainEndMs(e.status),
      ),
    ),
    r.cost,
  );
  const settings = effectiveSettings(
    cluster.policy,
    freezeSettings("flags", {
      maxConcurrentMigrations: DEFAULT_MAX_CONCURRENT_MIGRATIONS,
      abortStuckMigrations: false,
    }),
  );
  // as the operator reads it: --os-cloud wins over OS_CLOUD, and
  // --os-region-name over OS_REGION_NAME over region_name
  const { cloud, region } = r;
  const clients = io.openStack?.() ??
    createOpenStackClients(
      loadCloudConfig({
        ...(cloud === undefined ? {} : { cloud, cloudFlagName: "--os-cloud" }),
        ...(region === undefined ? {} : { regionName: region }),
      }),
      { userAgent: PLUGIN_USER_AGENT },
    );
  try {
    const plans = await planHosts(
      clients,
      r.hosts,
      cluster,
      settings,
      cost,
      r.withWave,
    );
    const together = shareBudget(
      plans,
      settings.spec.clusterMaxConcurrentMigrations,
      cost,
    );
    io.out(
      r.format === "table"
        ? renderPlan(together)
        : renderData({ hosts: together }, r.format),
    );
    return 0;
  } finally {
    clients.close();
  }
}

/** `plan`'s arguments, checked; undefined when it printed its help. */
function planRequest(args: string[], io: PlanIo) {
  const { values, positionals } = parseCommand("plan", args, {
    output: { type: "string", short: "o", default: "table" },
    "os-cloud": { type: "string" },
    "os-region-name": { type: "string" },
    "with-wave": { type: "boolean", default: false },
    "mb-per-second": { type: "string" },
    "overhead-seconds": { type: "string" },
    "fixed-seconds": { type: "string" },
  });
  if (values.help) {
    io.out(usageOf("plan"));
    return undefined;
  }
  if (positionals.length === 0) {
    throw new UsageError("plan needs at least one HOST", "plan");
  }
  const format = outputFormat("plan", values.output, PLAN_FORMATS);
  const cloud = values["os-cloud"];
  if (cloud !== undefined && cloud.trim() === "") {
    throw new UsageError(
      `--os-cloud "${cloud}" is not valid: expected the name of a cloud in clouds.yaml`,
      "plan",
    );
  }
  const region = values["os-region-name"];
  if (region !== undefined && region.trim() === "") {
    throw new UsageError(
      `--os-region-name "${region}" is not valid: expected the name of a region in the service catalog`,
      "plan",
    );
  }
  const cost = {
    mbPerSecond: positiveNumber("--mb-per-second", values["mb-per-second"]),
    overheadSeconds: nonNegativeSeconds(
      "--overhead-seconds",
      values["overhead-seconds"],
    ),
    fixedSeconds: nonNegativeSeconds(
      "--fixed-seconds",
      values["fixed-seconds"],
    ),
  };
  return {
    hosts: [...new Set(positionals)],
    format,
    cloud,
    region,
    cost,
    withWave: values["with-wave"],
    target: { kubeconfig: values.kubeconfig, context: values.context },
  };
}

function nonNegativeSeconds(
  flag: string,
  raw: string | undefined,
): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!(n >= 0 && Number.isFinite(n))) {
    throw new UsageError(
      `${flag} "${raw}" is not valid: expected seconds >= 0`,
      "plan",
    );
  }
  return n;
}

/** The EvictionPolicy, every Hypervisor and every Eviction. */
async function readCluster(api: k8s.CustomObjectsApi): Promise<ClusterView> {
  const policy = await getOrUndefined(
    () =>
      api.getClusterCustomObject({
        group: EvictionPolicyResource.group,
        version: EvictionPolicyResource.version,
        plural: EvictionPolicyResource.plural,
        name: "default",
      }),
    (raw) => ({
      spec: EvictionPolicySchema.parse(raw).spec,
      raw: (raw as { spec?: unknown }).spec,
    }),
  );
  // Every Hypervisor, not only the hosts planned: what ended drains of
  // other hosts learned is kept in their status.lastDrain.
  const hvList = await api.listClusterCustomObject({
    group: HypervisorResource.group,
    version: HypervisorResource.version,
    plural: HypervisorResource.plural,
  }) as { items?: unknown[] };
  const hypervisors = new Map<string, Hypervisor>();
  for (const item of hvList.items ?? []) {
    const parsed = HypervisorSchema.safeParse(item);
    const name = parsed.data?.metadata?.name;
    if (parsed.success && name !== undefined) {
      hypervisors.set(name, parsed.data);
    }
  }
  const list = await api.listClusterCustomObject({
    group: EvictionResource.group,
    version: EvictionResource.version,
    plural: EvictionResource.plural,
  }) as { items?: unknown[] };
  const evictions: Eviction[] = [];
  const evictionRaws = new Map<string, Record<string, unknown>>();
  for (const item of list.items ?? []) {
    const parsed = EvictionSchema.safeParse(item);
    if (!parsed.success) continue;
    evictions.push(parsed.data);
    evictionRaws.set(
      parsed.data.metadata?.name ?? "",
      item as Record<string, unknown>,
    );
  }
  return {
    policy: policy?.spec,
    policyRaw: policy?.raw,
    hypervisors,
    evictions,
    evictionRaws,
  };
}

/**
 * Each host's plan. The hosts named are checked together; with
 * `withWave`, as the controller does, the hosts of unfinished Evictions
 * join the check (no target, their VMs compete for the same room) and each
 * plan names them.
 */
async function planHosts(
  clients: PlanClients,
  hosts: readonly string[],
  cluster: ClusterView,
  settings: ReturnType<typeof effectiveSettings>,
  cost: PlanCost,
  withWave: boolean,
): Promise<HostPlan[]> {
  const { hypervisors, evictions } = cluster;
  const wave = new Map<string, DrainedHost>();
  for (const h of hosts) {
    const drains = withWave ? evictions : [];
    for (const d of waveOf(h, drains, (n) => hypervisors.get(n))) {
      wave.set(d.name, d);
    }
  }
  const pending = [...wave.keys()].filter((h) => !hosts.includes(h));
  const report = await checkCapacity(clients.nova, clients.placement, [
    ...wave.values(),
  ]);
  const vmsPerHost = new Map(
    [...report.vmsByHost].map(([h, v]) => [h, v.length]),
  );
  const plans: HostPlan[] = [];
  for (const host of hosts) {
    const servers = await clients.nova.listServersOnHost(host);
    const own = evictions.find((e) =>
      e.spec.hypervisor === host && e.status?.finishedAt === undefined
    );
    const resolved = resolveLimit(
      settings,
      hypervisors.get(host)?.status?.traits,
      own?.spec.maxConcurrentMigrations,
    );
    const verdict = capacityVerdict({
      host,
      vmsPerHost,
      unplaced: report.assignment.unplaced,
    });
    const plan = planHost({
      host,
      servers,
      limit: limitUnderNova(
        limitText(resolved, cluster.policy !== undefined),
        learnedNovaLimit(
          host,
          evictions,
          lastDrainOf(hypervisors.get(host) ?? {}),
        ),
      ),
      capacity: { status: verdict.status, message: verdict.message },
      cost,
      ...(withWave ? { wave: pending } : {}),
    });
    const raw = own === undefined
      ? undefined
      : cluster.evictionRaws.get(own.metadata?.name ?? "");
    plans.push({
      ...plan,
      convergence: predictConvergence(
        plan.vms.map((v) => ({ ...v, live: v.class === "live" })),
        resolveConvergence(
          convergenceInputs(
            cluster.policyRaw,
            hypervisors.get(host)?.status?.traits ?? [],
            raw?.["spec"],
          ),
        ),
        cost,
        inFlightOf(raw),
      ),
    });
  }
  return plans;
}

/** status.inFlight of a raw Eviction (ids with what the drain reports). */
function inFlightOf(
  raw: Record<string, unknown> | undefined,
): InFlightReport[] {
  const status = raw?.["status"] as { inFlight?: unknown } | undefined;
  const items = Array.isArray(status?.inFlight) ? status.inFlight : [];
  return items.filter((f): f is InFlightReport =>
    typeof f === "object" && f !== null && typeof f.id === "string"
  );
}
