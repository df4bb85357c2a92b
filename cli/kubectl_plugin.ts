/**
 * The kubectl plugin's commands (usage.ts says each), on the cluster
 * kubectl would use. Every failure is one `error:` line on stderr and exit
 * code 1, as kubectl's.
 *
 * @module
 */
import * as k8s from "@kubernetes/client-node";
import {
  type Eviction,
  EvictionResource,
  EvictionSchema,
  type EvictionSpec,
} from "../models/mod.ts";
import { RETRY_ANNOTATION } from "../controllers/eviction/retry.ts";
import { VERSION } from "../app/version.ts";
import { type PlanIo, runPlan } from "./plan_command.ts";
import { runCancel } from "./cancel.ts";
import { runVmRequest } from "./vm_request.ts";
import { customObjectsApi } from "./kube_config.ts";
import { errorLine } from "./error_line.ts";
import { drainOutcome, stateOf } from "./eviction_state.ts";
import { checkHypervisorNames } from "./hypervisor_names.ts";
import { ageSince } from "./age.ts";
import { followEvictions } from "./follow.ts";
import { specDifferences } from "./follow_report.ts";
import { runWait } from "./wait_command.ts";
import { runStatus } from "./status_command.ts";
import { runCompletion } from "./completion_command.ts";
import { warningPrinter } from "./warnings.ts";
import {
  COMMAND_USAGE,
  type CommandName,
  objectNames,
  parseCommand,
  timeoutFlag,
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
}

/** The help text of the plugin. */
export const PLUGIN_USAGE: string = usageOf();

const { group, version, plural } = EvictionResource;

/**
 * Runs the plugin with `args` (what follows `kubectl evictor`) and returns
 * the exit code, as kubectl's: 0 done; 1 anything else (a usage mistake,
 * an error, or a drain `--wait` or `wait` did not see drained: failed,
 * nothing drained, deleted, timed out).
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
        return await runStatus(rest, { ...io, warn });
      case "wait":
        return await runWait(rest, { ...io, warn });
      case "plan":
        return await runPlan(rest, { ...io, warn });
      case "retry":
        return await retry(rest, io, warn);
      case "cancel":
        return await runCancel(rest, io, warn);
      case "force-complete":
      case "abort":
        return await runVmRequest(command, rest, io, warn);
      case "completion":
        return runCompletion(rest, io);
      case "version":
      case "--version":
        if (!helped("version", parseCommand("version", rest, {}).values, io)) {
          io.out(`kubectl-evictor ${VERSION}`);
        }
        return 0;
      case undefined:
        throw new UsageError(`no command: expected ${commandList()}`);
      case "help":
      case "--help":
      case "-h":
        io.out(PLUGIN_USAGE);
        return 0;
      default:
        throw new UsageError(
          `unknown command "${command}": expected ${commandList()}`,
        );
    }
  } catch (e) {
    const { line, code } = errorLine(e);
    io.err(line);
    return code;
  }
}

/** The commands, for messages: "drain, status, ... or completion". */
function commandList(): string {
  const names = Object.keys(COMMAND_USAGE);
  return `${names.slice(0, -1).join(", ")} or ${names.at(-1)}`;
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
  const request = drainRequest(args, io);
  if (request === undefined) return 0;
  const { hypervisors, spec, values } = request;
  const kc = await io.kubeConfig(target(values));
  const api = customObjectsApi(kc, warn);
  // Before anything is created: a wave with a typo in it is no wave.
  if (!values["allow-unknown"]) await checkHypervisorNames(api, hypervisors);
  const { code, follow } = await createEvictions(
    api,
    hypervisors,
    spec,
    values.wait,
    io,
  );
  if (!values.wait || follow.length === 0) return code;
  return Math.max(
    code,
    await followEvictions(kc, api, follow, request.timeoutMs, io),
  );
}

/** `drain`'s arguments, checked; undefined when it printed its help. */
function drainRequest(args: string[], io: PluginIo) {
  const { values, positionals } = parseCommand("drain", args, {
    reason: { type: "string" },
    "max-concurrent": { type: "string" },
    "allow-unknown": { type: "boolean", default: false },
    wait: { type: "boolean", default: false },
    timeout: { type: "string", default: "0" },
  });
  if (helped("drain", values, io)) return undefined;
  const hypervisors = objectNames("drain", positionals, "HYPERVISOR");
  const reason = values.reason?.trim();
  if (!reason) {
    throw new UsageError(
      "--reason is required: say why the host is drained",
      "drain",
    );
  }
  const max = values["max-concurrent"];
  const n = Number(max);
  if (max !== undefined && (!Number.isInteger(n) || n < 1 || n > 64)) {
    throw new UsageError(
      `--max-concurrent "${max}" is not valid: expected an integer from 1 to 64`,
      "drain",
    );
  }
  const spec: Omit<EvictionSpec, "hypervisor"> = {
    reason,
    ...(max === undefined ? {} : { maxConcurrentMigrations: n }),
  };
  const timeoutMs = timeoutFlag("drain", values.timeout);
  return { hypervisors, spec, values, timeoutMs };
}

/**
 * Creates the Evictions all at once (Evictions that exist together form
 * one wave); with `wait`, one that exists already and still drains is
 * followed instead (the way back in after Ctrl-C or a --timeout).
 */
async function createEvictions(
  api: k8s.CustomObjectsApi,
  hypervisors: readonly string[],
  spec: Omit<EvictionSpec, "hypervisor">,
  wait: boolean,
  io: PluginIo,
): Promise<{ code: number; follow: string[] }> {
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
          spec: { ...spec, hypervisor },
        },
      })
    ),
  );
  let code = 0;
  const follow: string[] = [];
  for (const [i, r] of created.entries()) {
    const hypervisor = hypervisors[i] ?? "";
    if (r.status === "fulfilled") {
      io.out(`eviction.${group}/${hypervisor} created`);
      follow.push(hypervisor);
      continue;
    }
    if (wait && isAlreadyExists(r.reason)) {
      // unreadable (RBAC, a newer CRD): refused as before, with why below
      const existing = await runningEviction(api, hypervisor).catch(() =>
        undefined
      );
      if (existing !== undefined) {
        io.err(followingNote(existing, { ...spec, hypervisor }));
        follow.push(hypervisor);
        continue;
      }
    }
    // errorLine's text without its "error: " (one line, no class name)
    io.err(
      `error: eviction.${group}/${hypervisor} not created: ${
        errorLine(r.reason).line.replace(/^error: /, "")
      }`,
    );
    code = 1;
  }
  return { code, follow };
}

/** The note that `drain --wait` follows an Eviction that existed already. */
function followingNote(existing: Eviction, spec: EvictionSpec): string {
  const differs = specDifferences(existing.spec, spec);
  return `eviction.${group}/${spec.hypervisor} exists already (created ${
    ageSince(existing.metadata?.creationTimestamp ?? "", Date.now())
  } ago, ${stateOf(existing)}): following it${
    differs.length === 0
      ? ""
      : `; its spec differs from this command's: ${differs.join(", ")}`
  }`;
}

function isAlreadyExists(e: unknown): boolean {
  return e instanceof k8s.ApiException && e.code === 409;
}

/** The Eviction `name` if its drain has not ended, else undefined. */
async function runningEviction(
  api: k8s.CustomObjectsApi,
  name: string,
): Promise<Eviction | undefined> {
  const e = EvictionSchema.parse(
    await api.getClusterCustomObject({ group, version, plural, name }),
  );
  return drainOutcome(e) === undefined ? e : undefined;
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
