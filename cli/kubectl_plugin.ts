/**
 * The kubectl plugin: `kubectl evictor drain HYPERVISOR --reason TEXT
 * [--max-concurrent N] [--allow-unknown] [--wait]`, `kubectl evictor status
 * [HYPERVISOR] [-o table|wide|name|json|yaml]`, `kubectl evictor plan HOST [HOST...]`
 * (cli/plan_command.ts) and `kubectl evictor retry NAME [VM...]`. Each talks
 * to the cluster kubectl would (`--kubeconfig`, `--context`, `KUBECONFIG`;
 * cli/kube_config.ts); `plan` also reads OpenStack (clouds.yaml / OS_*).
 * Every failure is one `error:` line on stderr and a non-zero exit code;
 * the API server's warnings are `Warning:` lines on stderr, as kubectl's.
 *
 * @module
 */
import {
  REASON_FAILED,
  REASON_NOT_IN_NOVA,
  REASON_SUCCEEDED,
  REASON_WAITING_FOR_PERSON,
} from "../controllers/conditions.ts";
import * as k8s from "@kubernetes/client-node";
import {
  type Eviction,
  EvictionResource,
  EvictionSchema,
} from "../models/mod.ts";
import { RETRY_ANNOTATION } from "../controllers/eviction/retry.ts";
import { renderProgressLine } from "./progress.ts";
import { type PlanIo, runPlan } from "./plan_command.ts";
import { runCancel } from "./cancel.ts";
import { customObjectsApi } from "./kube_config.ts";
import { errorLine } from "./error_line.ts";
import {
  countsOf,
  drainOutcome,
  seenEmptySeconds,
  stateOf,
  stateText,
} from "./eviction_state.ts";
import { checkHypervisorNames } from "./hypervisor_names.ts";
import { statusData, statusNames, statusTable } from "./status_output.ts";
import { warningPrinter } from "./warnings.ts";
import {
  type CommandName,
  outputFormat,
  parseCommand,
  renderData,
  UsageError,
  usageOf,
} from "./usage.ts";

export { UsageError } from "./usage.ts";
export {
  countsOf,
  drainOutcome,
  seenEmptySeconds,
  stateOf,
  stateText,
} from "./eviction_state.ts";

/** Where the plugin writes and how it waits; injected by tests. */
export interface PluginIo extends Pick<PlanIo, "openStack" | "kubeConfig"> {
  out: (line: string) => void;
  /** Standard error: progress, notes, warnings and `error:` lines. */
  err: (line: string) => void;
  /** Rewrites the current line (a TTY) instead of adding one. */
  interactive: boolean;
  sleep: (ms: number) => Promise<void>;
}

/** The help text of the plugin. */
export const PLUGIN_USAGE: string = usageOf();

const { group, version, plural } = EvictionResource;

/**
 * Runs the plugin with `args` (what follows `kubectl evictor`) and returns
 * the exit code: 0 done; 1 an error, or a drain `--wait` did not see
 * drained (failed, nothing drained, timed out); 2 a usage mistake.
 * Nothing is thrown: every failure is written as one `error:` line to
 * `io.err`, and the API server's warnings as `Warning:` lines.
 *
 * @example
 * ```ts ignore
 * const code = await runPlugin(["status", "-o", "json"], io);
 * ```
 */
export async function runPlugin(args: string[], io: PluginIo): Promise<number> {
  // one printer for the run: a warning repeated by several calls shows once
  const warn = warningPrinter(io.err);
  try {
    const [command, ...rest] = commandFirst(args);
    switch (command) {
      case "drain":
        return await drain(rest, io, warn);
      case "status":
        return await status(rest, io, warn);
      case "plan":
        return await runPlan(rest, { ...io, warn });
      case "retry":
        return await retry(rest, io, warn);
      case "cancel":
        return await runCancel(rest, io, warn);
      case undefined:
        throw new UsageError(
          "no command: expected drain, status, plan, retry or cancel",
        );
      case "help":
      case "--help":
      case "-h":
        io.out(PLUGIN_USAGE);
        return 0;
      default:
        throw new UsageError(
          `unknown command "${command}": expected drain, status, plan, retry or cancel`,
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

async function drain(
  args: string[],
  io: PluginIo,
  warn: (text: string) => void,
): Promise<number> {
  const { values, positionals } = parseCommand("drain", args, {
    reason: { type: "string" },
    "max-concurrent": { type: "string" },
    "allow-unknown": { type: "boolean", default: false },
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
  const api = customObjectsApi(await io.kubeConfig(target(values)), warn);
  // Before anything is created: a wave with a typo in it is no wave.
  if (!values["allow-unknown"]) await checkHypervisorNames(api, hypervisors);
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
      // errorLine's text without its "error: " (one line, no class name)
      io.err(
        `error: eviction.${group}/${hypervisor} not created: ${
          errorLine(r.reason).line.replace(/^error: /, "")
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
    if (end === REASON_NOT_IN_NOVA) {
      // Not a drained host: the name may be a typo of one that has VMs.
      io.out(
        `\n${name}: nothing drained: Nova has no compute service named ${eviction.spec.hypervisor}; no VM was moved and no host was disabled (check the name: openstack compute service list --service nova-compute)`,
      );
      return 1;
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
      // kubectl wait's words and exit code
      io.err(
        `${
          io.interactive ? "\n" : ""
        }error: timed out waiting for eviction.${group}/${name} after ${
          timeoutMs / 1000
        } s: ${stateOf(eviction)} (the drain goes on)`,
      );
      return 1;
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

async function retry(
  args: string[],
  io: PluginIo,
  warn: (text: string) => void,
): Promise<number> {
  const { values, positionals } = parseCommand("retry", args, {});
  if (helped("retry", values, io)) return 0;
  const [name, ...vms] = positionals;
  if (!name) {
    throw new UsageError("retry needs the NAME of an Eviction", "retry");
  }
  const value = retryValue(vms);
  const api = customObjectsApi(await io.kubeConfig(target(values)), warn);
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

async function status(
  args: string[],
  io: PluginIo,
  warn: (text: string) => void,
): Promise<number> {
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
  const format = outputFormat("status", values.output, STATUS_FORMATS);
  const api = customObjectsApi(await io.kubeConfig(target(values)), warn);
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
  switch (format) {
    case "table":
    case "wide":
      io.out(statusTable(evictions, format === "wide"));
      if (format === "table") {
        // the table has no room for why; these must not read as drained
        for (const e of evictions) {
          if (drainOutcome(e) === REASON_NOT_IN_NOVA) {
            io.err(
              `note: ${
                e.metadata?.name ?? e.spec.hypervisor
              }: nothing drained: Nova has no compute service named ${e.spec.hypervisor}`,
            );
          }
        }
      }
      break;
    case "name":
      if (evictions.length > 0) io.out(statusNames(evictions));
      break;
    default:
      io.out(renderData(statusData(evictions), format));
  }
  return 0;
}

const STATUS_FORMATS = ["table", "wide", "name", "json", "yaml"] as const;
