/**
 * The kubectl plugin: `kubectl evictor drain HYPERVISOR --reason TEXT
 * [--max-concurrent N] [--wait]`, `kubectl evictor status [HYPERVISOR]
 * [-o table|json|yaml]`, `kubectl evictor plan HOST [HOST...]`
 * (cli/plan_command.ts) and `kubectl evictor retry NAME [VM...]`. Each talks
 * to the cluster kubectl would (`--kubeconfig`, `--context`, `KUBECONFIG`;
 * cli/kube_config.ts); `plan` also reads OpenStack (clouds.yaml / OS_*).
 * Every failure is one line on stderr and a non-zero exit code.
 *
 * @module
 */
import {
  CONDITION_EVICTING,
  REASON_FAILED,
  REASON_PENDING,
  REASON_SUCCEEDED,
  REASON_WAITING_FOR_PERSON,
  stoppedForPerson,
} from "../controllers/conditions.ts";
import * as k8s from "@kubernetes/client-node";
import {
  type Eviction,
  EvictionResource,
  EvictionSchema,
} from "../models/mod.ts";
import { RETRY_ANNOTATION } from "../controllers/eviction/retry.ts";
import { type DrainCounts, renderProgressLine } from "./progress.ts";
import { type PlanIo, runPlan } from "./plan_command.ts";
import { customObjectsApi } from "./kube_config.ts";
import { apiMessage, errorLine } from "./error_line.ts";
import {
  type CommandName,
  outputFormat,
  parseCommand,
  renderData,
  UsageError,
  usageOf,
} from "./usage.ts";

export { UsageError } from "./usage.ts";

/** Where the plugin writes and how it waits; injected by tests. */
export interface PluginIo extends Pick<PlanIo, "openStack" | "kubeConfig"> {
  out: (line: string) => void;
  err: (line: string) => void;
  /** Rewrites the current line (a TTY) instead of adding one. */
  interactive: boolean;
  sleep: (ms: number) => Promise<void>;
}

/** The help text of the plugin. */
export const PLUGIN_USAGE: string = usageOf();

const { group, version, plural } = EvictionResource;

/** Counts of a drain from an Eviction's status. */
export function countsOf(e: Eviction): DrainCounts {
  const s = e.status ?? {};
  return {
    migrated: s.migratedCount ?? 0,
    inFlight: s.inFlightCount ?? s.inFlight?.length ?? 0,
    outstanding: s.outstandingCount ?? 0,
    failed: s.failed?.length ?? 0,
    skipped: s.skipped?.length ?? 0,
  };
}

/** The Evicting condition's reason, or "Pending" before the first pass. */
export function stateOf(e: Eviction): string {
  return e.status?.conditions?.find((c) => c.type === CONDITION_EVICTING)
    ?.reason ?? REASON_PENDING;
}

/**
 * The state for people: the Evicting reason, and when the drain stopped
 * for a person (Failed, WaitingForPerson) the condition's message too,
 * which says what waits for whom and names the VMs.
 *
 * @example
 * ```ts
 * import { stateText } from "./kubectl_plugin.ts";
 * console.log(stateText({ spec: { hypervisor: "n1", reason: "r" }, status: { conditions: [{
 *   type: "Evicting", status: "False", reason: "WaitingForPerson", lastTransitionTime: "2026-01-01T00:00:00Z",
 *   message: "waiting for a person: 1 VMs left on the host, none failed: vm-a (SUSPENDED needs a person)" }] } }));
 * // WaitingForPerson: waiting for a person: 1 VMs left on the host, none failed: vm-a (SUSPENDED needs a person)
 * ```
 */
export function stateText(e: Eviction): string {
  const c = e.status?.conditions?.find((c) => c.type === CONDITION_EVICTING);
  if (c === undefined) return REASON_PENDING;
  return stoppedForPerson(c.reason) && c.message !== ""
    ? `${c.reason}: ${c.message}`
    : c.reason;
}

/**
 * How a drain stands for `--wait`: `Succeeded` only when the Evicting
 * condition says so for the current generation with nothing outstanding or
 * in flight and `finishedAt` set (the controller sets these together, once
 * looks a settle interval apart found the host empty); `Failed` when it
 * stopped otherwise; undefined while it runs (or settles).
 *
 * @example
 * ```ts
 * import { drainOutcome } from "./kubectl_plugin.ts";
 * console.log(drainOutcome({ spec: { hypervisor: "n", reason: "r" } })); // undefined
 * ```
 */
export function drainOutcome(
  e: Eviction,
): typeof REASON_SUCCEEDED | typeof REASON_FAILED | undefined {
  const c = e.status?.conditions?.find((c) => c.type === CONDITION_EVICTING);
  if (c?.status !== "False") return undefined;
  if (c.reason !== REASON_SUCCEEDED) return REASON_FAILED;
  const s = e.status ?? {};
  const current = e.metadata?.generation !== undefined &&
    s.observedGeneration === e.metadata.generation;
  return current && s.outstandingCount === 0 && s.inFlightCount === 0 &&
      s.finishedAt !== undefined
    ? REASON_SUCCEEDED
    : undefined;
}

/**
 * How long the controller's looks have found the host empty, as of
 * `nowMs`: from status.emptySince (else finishedAt), in whole seconds.
 *
 * @example
 * ```ts
 * import { seenEmptySeconds } from "./kubectl_plugin.ts";
 * const s = { emptySince: "2026-01-01T00:00:00Z" };
 * console.assert(seenEmptySeconds(s, Date.parse("2026-01-01T00:00:07.5Z")) === 7);
 * ```
 */
export function seenEmptySeconds(
  status: { emptySince?: string | undefined; finishedAt?: string | undefined },
  nowMs: number,
): number | undefined {
  const since = Date.parse(status.emptySince ?? status.finishedAt ?? "");
  if (Number.isNaN(since)) return undefined;
  return Math.max(0, Math.floor((nowMs - since) / 1000));
}

/**
 * Runs the plugin with `args` (what follows `kubectl evictor`) and returns
 * the exit code: 0 done, 1 failed drain or error, 2 usage error or timeout.
 * Nothing is thrown: every failure is written as one line to `io.err`.
 *
 * @example
 * ```ts ignore
 * const code = await runPlugin(["status", "-o", "json"], io);
 * ```
 */
export async function runPlugin(args: string[], io: PluginIo): Promise<number> {
  try {
    const [command, ...rest] = commandFirst(args);
    switch (command) {
      case "drain":
        return await drain(rest, io);
      case "status":
        return await status(rest, io);
      case "plan":
        return await runPlan(rest, io);
      case "retry":
        return await retry(rest, io);
      case undefined:
        throw new UsageError(
          "no command: expected drain, status, plan or retry",
        );
      case "help":
      case "--help":
      case "-h":
        io.out(PLUGIN_USAGE);
        return 0;
      default:
        throw new UsageError(
          `unknown command "${command}": expected drain, status, plan or retry`,
        );
    }
  } catch (e) {
    const { line, code } = errorLine(e);
    io.err(line);
    return code;
  }
}

/**
 * The arguments with the cluster flags given before the command moved after
 * it (`kubectl evictor --context eu status` as kubectl's own flags go).
 *
 * @example
 * ```ts
 * import { commandFirst } from "./kubectl_plugin.ts";
 * console.log(commandFirst(["--context", "eu", "status"])); // ["status", "--context", "eu"]
 * ```
 */
export function commandFirst(args: string[]): string[] {
  const before: string[] = [];
  let i = 0;
  while (i < args.length) {
    const a = args[i] ?? "";
    if (/^--(kubeconfig|context)=/.test(a)) {
      before.push(a);
      i += 1;
    } else if (a === "--kubeconfig" || a === "--context") {
      before.push(a, ...args.slice(i + 1, i + 2));
      i += 2;
    } else break;
  }
  return i === 0 || i >= args.length
    ? args
    : [args[i] ?? "", ...before, ...args.slice(i + 1)];
}

/** Prints the command's help when `--help` was given. */
function helped(
  command: CommandName,
  values: { help?: boolean | undefined },
  io: PluginIo,
): boolean {
  if (values.help === true) io.out(usageOf(command));
  return values.help === true;
}

/** The command's cluster flags. */
function target(
  values: { kubeconfig?: string | undefined; context?: string | undefined },
) {
  return { kubeconfig: values.kubeconfig, context: values.context };
}

async function drain(args: string[], io: PluginIo): Promise<number> {
  const { values, positionals } = parseCommand("drain", args, {
    reason: { type: "string" },
    "max-concurrent": { type: "string" },
    wait: { type: "boolean", default: false },
    timeout: { type: "string", default: "0" },
  });
  if (helped("drain", values, io)) return 0;
  const hypervisors = [...new Set(positionals)];
  if (hypervisors.length === 0) {
    throw new UsageError("drain needs a HYPERVISOR name", "drain");
  }
  for (const h of hypervisors) {
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(h) || h.length > 253) {
      throw new UsageError(
        `HYPERVISOR "${h}" is not valid: expected a Kubernetes object name (lower case letters, digits, "-" and ".")`,
        "drain",
      );
    }
  }
  const reason = values.reason?.trim();
  if (!reason) {
    throw new UsageError(
      "--reason is required: say why the host is drained",
      "drain",
    );
  }
  let maxConcurrent: number | undefined;
  const max = values["max-concurrent"];
  if (max !== undefined) {
    const n = Number(max);
    if (!Number.isInteger(n) || n < 1 || n > 64) {
      throw new UsageError(
        `--max-concurrent "${max}" is not valid: expected an integer from 1 to 64`,
        "drain",
      );
    }
    maxConcurrent = n;
  }
  const timeoutSeconds = Number(values.timeout);
  if (!Number.isFinite(timeoutSeconds) || timeoutSeconds < 0) {
    throw new UsageError(
      `--timeout "${values.timeout}" is not valid: expected seconds >= 0 (0 waits forever)`,
      "drain",
    );
  }
  const api = customObjectsApi(await io.kubeConfig(target(values)));
  // All at once: Evictions that exist together form one wave.
  const created = await Promise.allSettled(
    hypervisors.map((hypervisor) =>
      api.createClusterCustomObject({
        group,
        version,
        plural,
        body: {
          apiVersion: `${group}/${version}`,
          kind: "Eviction",
          metadata: { name: hypervisor },
          spec: {
            hypervisor,
            reason,
            ...(maxConcurrent === undefined
              ? {}
              : { maxConcurrentMigrations: maxConcurrent }),
          },
        },
      })
    ),
  );
  let code = 0;
  const made: string[] = [];
  created.forEach((r, i) => {
    const hypervisor = hypervisors[i]!;
    if (r.status === "fulfilled") {
      io.out(`eviction.${group}/${hypervisor} created`);
      made.push(hypervisor);
    } else {
      io.err(
        `eviction.${group}/${hypervisor} not created: ${
          r.reason instanceof k8s.ApiException
            ? apiMessage(r.reason)
            : String(r.reason)
        }`,
      );
      code = 1;
    }
  });
  if (!values.wait) return code;
  for (const hypervisor of made) {
    code = Math.max(
      code,
      await follow(api, hypervisor, timeoutSeconds * 1000, io),
    );
  }
  return code;
}

async function follow(
  api: k8s.CustomObjectsApi,
  name: string,
  timeoutMs: number,
  io: PluginIo,
): Promise<number> {
  const started = Date.now();
  let last = "";
  // The controller declares Succeeded only after looks a settle interval
  // apart found the host empty (status.finishedAt): re-reading the same
  // status here would add nothing, so the first settled Succeeded ends it.
  for (;;) {
    const raw = await api.getClusterCustomObject({
      group,
      version,
      plural,
      name,
    });
    const eviction = EvictionSchema.parse(raw);
    const line = `${renderProgressLine(name, countsOf(eviction))} (${
      stateText(eviction)
    })`;
    if (line !== last) {
      if (io.interactive) io.err(`\r${line}`);
      else io.err(line);
      last = line;
    }
    const end = drainOutcome(eviction);
    if (end === REASON_SUCCEEDED) {
      const empty = seenEmptySeconds(eviction.status ?? {}, Date.now());
      io.out(
        `\n${name}: drained, ${
          eviction.status?.migratedCount ?? 0
        } VMs migrated; the host has been seen empty for ${
          empty ?? 0
        } s (since ${
          eviction.status?.emptySince ?? eviction.status?.finishedAt
        })`,
      );
      return 0;
    }
    if (end === REASON_FAILED) {
      const failed = eviction.status?.failed ?? [];
      io.out(
        stateOf(eviction) === REASON_WAITING_FOR_PERSON
          ? `\n${name}: the drain waits for a person (no VM failed) for these VMs:`
          : `\n${name}: drain stopped with VMs left that need a person:`,
      );
      for (const f of failed) {
        io.out(`  ${f.id}: ${f.reason} (${f.attempts} attempts)`);
      }
      for (const s of eviction.status?.skipped ?? []) {
        io.out(`  ${s.id}: ${s.reason}`);
      }
      return 1;
    }
    if (timeoutMs > 0 && Date.now() - started > timeoutMs) {
      io.err(
        `\n${name}: still draining after ${
          timeoutMs / 1000
        } s; stopped waiting (the drain goes on)`,
      );
      return 2;
    }
    await io.sleep(1000);
  }
}

/**
 * The retry annotation's value for the VMs named (every failed VM, `*`,
 * when none); a bad VM id is a usage error naming it.
 *
 * @example
 * ```ts
 * import { retryValue } from "./kubectl_plugin.ts";
 * console.log(retryValue([])); // *
 * ```
 */
export function retryValue(vms: string[]): string {
  if (vms.length === 0) return "*";
  for (const vm of vms) {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(vm)) {
      throw new UsageError(
        `VM "${vm}" is not valid: expected a Nova server id such as 3f1c2d4e-0b6a-4c1e-9f7a-2d5b8e9c1a0f`,
        "retry",
      );
    }
  }
  return [...new Set(vms)].join(",");
}

async function retry(args: string[], io: PluginIo): Promise<number> {
  const { values, positionals } = parseCommand("retry", args, {});
  if (helped("retry", values, io)) return 0;
  const [name, ...vms] = positionals;
  if (!name) {
    throw new UsageError("retry needs the NAME of an Eviction", "retry");
  }
  const value = retryValue(vms);
  const api = customObjectsApi(await io.kubeConfig(target(values)));
  let eviction: Eviction;
  try {
    eviction = EvictionSchema.parse(
      await api.getClusterCustomObject({ group, version, plural, name }),
    );
  } catch (e) {
    if (e instanceof k8s.ApiException && e.code === 404) {
      io.err(
        `error: no Eviction "${name}": see kubectl evictor status for the names`,
      );
      return 1;
    }
    throw e;
  }
  await api.patchClusterCustomObject(
    {
      group,
      version,
      plural,
      name,
      body: { metadata: { annotations: { [RETRY_ANNOTATION]: value } } },
    },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
  );
  const failed = new Set((eviction.status?.failed ?? []).map((f) => f.id));
  if (value === "*") {
    io.out(
      `eviction.${group}/${name}: retry requested for every failed VM (${failed.size} failed now)`,
    );
  } else {
    io.out(`eviction.${group}/${name}: retry requested for ${vms.join(", ")}`);
    const unknown = vms.filter((vm) => !failed.has(vm));
    if (unknown.length > 0) {
      io.err(
        `note: not failed now, the controller will ignore: ${
          unknown.join(", ")
        }`,
      );
    }
  }
  return 0;
}

async function status(args: string[], io: PluginIo): Promise<number> {
  const { values, positionals } = parseCommand("status", args, {
    output: { type: "string", short: "o", default: "table" },
  });
  if (helped("status", values, io)) return 0;
  if (positionals.length > 1) {
    throw new UsageError(
      `status takes at most one HYPERVISOR, got ${positionals.length}`,
      "status",
    );
  }
  const format = outputFormat("status", values.output);
  const api = customObjectsApi(await io.kubeConfig(target(values)));
  const [name] = positionals;
  const evictions: Eviction[] = [];
  if (name) {
    evictions.push(EvictionSchema.parse(
      await api.getClusterCustomObject({ group, version, plural, name }),
    ));
  } else {
    const list = await api.listClusterCustomObject({
      group,
      version,
      plural,
    }) as {
      items?: unknown[];
    };
    for (const item of list.items ?? []) {
      const parsed = EvictionSchema.safeParse(item);
      if (parsed.success) evictions.push(parsed.data);
    }
  }
  io.out(
    format === "table"
      ? statusTable(evictions)
      : renderData(statusData(evictions), format),
  );
  return 0;
}

/** One Eviction in `status -o json|yaml`: a stable, documented shape. */
export interface EvictionStatusData {
  /** The Eviction's name. */
  name: string;
  /** The host drained. */
  hypervisor: string;
  /** Why. */
  reason: string;
  /** The Evicting condition's reason, or Pending before the first pass. */
  state: string;
  /** VMs migrated off the host. */
  migrated: number;
  /** Migrations running now. */
  inFlight: number;
  /** VMs still to move. */
  outstanding: number;
  /** Failed VMs with their reason and attempts. */
  failed: { id: string; reason: string; attempts: number }[];
  /** VMs left alone, with the reason (they need a person). */
  skipped: { id: string; reason: string }[];
  /** The limit in force, or null before the first pass. */
  limit: number | null;
  /** Where it comes from: policy, flags or eviction; null before the first pass. */
  limitSource: string | null;
  /** When the drain started, or null. */
  startedAt: string | null;
  /** When it finished, or null while it runs. */
  finishedAt: string | null;
}

/**
 * The machine-readable form of `status`: `{ evictions: [...] }`, sorted by
 * name, with every field present (null when unknown), so that scripts
 * need no schema of the custom resource.
 *
 * @example
 * ```ts
 * import { statusData } from "./kubectl_plugin.ts";
 * const d = statusData([{ metadata: { name: "n1" }, spec: { hypervisor: "n1", reason: "r" } }]);
 * console.assert(d.evictions[0]?.state === "Pending");
 * ```
 */
export function statusData(
  evictions: Eviction[],
): { evictions: EvictionStatusData[] } {
  return {
    evictions: evictions
      .slice()
      .sort((a, b) =>
        (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? "")
      )
      .map((e) => {
        const c = countsOf(e);
        const s = e.status ?? {};
        return {
          name: e.metadata?.name ?? "",
          hypervisor: e.spec.hypervisor,
          reason: e.spec.reason,
          state: stateOf(e),
          migrated: c.migrated,
          inFlight: c.inFlight,
          outstanding: c.outstanding,
          failed: (s.failed ?? []).map((f) => ({
            id: f.id,
            reason: f.reason,
            attempts: f.attempts,
          })),
          skipped: (s.skipped ?? []).map((k) => ({
            id: k.id,
            reason: k.reason,
          })),
          limit: s.effectiveLimit ?? null,
          limitSource: s.limitSource ?? null,
          startedAt: s.startedAt ?? null,
          finishedAt: s.finishedAt ?? null,
        };
      }),
  };
}

/**
 * Renders Evictions as an aligned table (like kubectl's).
 *
 * @example
 * ```ts
 * import { statusTable } from "./kubectl_plugin.ts";
 * console.log(statusTable([]));
 * ```
 */
export function statusTable(evictions: Eviction[]): string {
  const header = [
    "NAME",
    "HYPERVISOR",
    "STATE",
    "MIGRATED",
    "IN FLIGHT",
    "OUTSTANDING",
    "FAILED",
    "SKIPPED",
    "LIMIT",
  ];
  const rows = evictions
    .slice()
    .sort((a, b) =>
      (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? "")
    )
    .map((e) => {
      const c = countsOf(e);
      return [
        e.metadata?.name ?? "",
        e.spec.hypervisor,
        stateOf(e),
        String(c.migrated),
        String(c.inFlight),
        String(c.outstanding),
        String(c.failed),
        String(c.skipped),
        e.status?.effectiveLimit === undefined
          ? "-"
          : String(e.status.effectiveLimit),
      ];
    });
  if (rows.length === 0) return "No evictions found.";
  const widths = header.map((h, i) =>
    Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length))
  );
  return [header, ...rows]
    .map((r) =>
      r.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join("   ").trimEnd()
    )
    .join("\n");
}
