/**
 * The plugin's commands, their help and their flags: every command takes
 * `--kubeconfig FILE`, `--context NAME` and `--help`; a usage mistake is a
 * {@linkcode UsageError} whose message names the bad value and what is
 * expected.
 *
 * @module
 */
import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import { stringify as toYaml } from "yaml";

/** The plugin's commands. */
export type CommandName = "drain" | "status" | "plan" | "retry" | "cancel";

const CLUSTER_FLAGS =
  "  --kubeconfig FILE   the kubeconfig file (default: KUBECONFIG, colon-separated\n" +
  "                      files merged as kubectl merges them, else ~/.kube/config)\n" +
  "  --context NAME      the kubeconfig context (default: its current-context)\n" +
  "  -h, --help          this help";

/** The help of each command. */
export const COMMAND_USAGE: Readonly<Record<CommandName, string>> = {
  drain:
    `kubectl evictor drain HYPERVISOR [HYPERVISOR...] --reason TEXT [--max-concurrent N] [--allow-unknown] [--wait] [--timeout SECONDS]
    Creates the Eviction of each HYPERVISOR, all at once (one wave: every
    host is disabled before any of them migrates); with --wait, follows
    them until the hosts are empty. A name that matches no Hypervisor is
    refused, with the closest existing names, and nothing is created;
    --allow-unknown creates it anyway (a host with no Hypervisor object).
    --timeout stops waiting (the drains go on) after SECONDS; 0 waits forever.`,
  status: `kubectl evictor status [HYPERVISOR] [-o table|wide|name|json|yaml]
    Prints the Evictions (or one) as a table (wide: with the limit's source,
    skipped VMs, start and the Evicting condition's message), their names
    (eviction.kvm.cloud.sap/NAME), or JSON/YAML of the shape
    {"evictions": [{name, hypervisor, reason, state, message, migrated,
    inFlight, outstanding, failed, skipped, limit, limitSource, startedAt,
    finishedAt}]}.`,
  plan:
    `kubectl evictor plan HOST [HOST...] [-o table|json|yaml] [--os-cloud NAME] [--os-region-name NAME] [--with-wave] [--mb-per-second N] [--overhead-seconds N] [--fixed-seconds N]
    Changes nothing: per host, each VM's class and order, the limit and its
    source, the capacity verdict (Placement's view) and the predicted makespan
    with the cost it assumes (per migration and per drain), learned from the
    latest ended drains (kept in the Hypervisors' status.lastDrain) or the
    documented defaults with the range of their uncertainty. The hosts named
    are checked alone; --with-wave adds the hosts of pending Evictions to the
    check, as the controller checks a wave, and names them.
    Needs OpenStack credentials, read as the operator reads them: the cloud
    --os-cloud (else OS_CLOUD) names in clouds.yaml, or the OS_* variables;
    the region --os-region-name, else OS_REGION_NAME, else region_name.`,
  retry: `kubectl evictor retry NAME [VM...]
    Asks the controller to re-arm failed VMs of the Eviction NAME (all of
    them when no VM is named), through the annotation evictor.kvm.cloud.sap/retry.`,
  cancel:
    `kubectl evictor cancel HOST [HOST...] [--abort-in-flight] [--clear-maintenance] [--dry-run] [--wait] [--timeout SECONDS]
    Undoes a drain: deletes the Evictions of each HOST, so no new migration
    starts; the copies in flight finish (--abort-in-flight: ours are
    aborted), then the compute service is re-enabled unless someone else
    disabled it. A host whose Hypervisor is in maintenance (manual, auto,
    termination) is refused: maintenance recreates the Eviction at once;
    --clear-maintenance clears spec.maintenance first. Every HOST is checked
    before anything changes. --dry-run changes nothing; --wait waits until
    the Evictions are gone (the service handled), at most --timeout SECONDS.`,
};

const EXIT_CODES = "Exit codes:\n" +
  "  0  done (drain --wait: every host drained and settled empty;\n" +
  "     cancel --wait: every Eviction gone)\n" +
  "  1  an error (the API server refused, a name matches no Hypervisor, ...),\n" +
  "     or drain --wait did not drain a host: VMs left that need a person,\n" +
  "     nothing drained because Nova has no compute service of that name,\n" +
  "     or --timeout passed (the drain goes on); cancel refused a host\n" +
  "  2  a usage mistake (an unknown flag, a bad value, a missing argument)";

/**
 * The help of one command, or of the plugin.
 *
 * @example
 * ```ts
 * import { usageOf } from "./usage.ts";
 * console.assert(usageOf("drain").includes("--context NAME"));
 * ```
 */
export function usageOf(command?: CommandName): string {
  const commands = command === undefined
    ? Object.values(COMMAND_USAGE)
    : [COMMAND_USAGE[command]];
  return `Usage:\n${
    commands.map((c) => `  ${c}`).join("\n")
  }\n\nFlags of every command:\n${CLUSTER_FLAGS}\n\n${EXIT_CODES}`;
}

/**
 * A usage mistake: the message says what was wrong and what is expected.
 *
 * @example
 * ```ts
 * import { UsageError } from "./usage.ts";
 * const e = new UsageError("drain needs a HYPERVISOR name", "drain");
 * console.assert(e.command === "drain");
 * ```
 */
export class UsageError extends Error {
  override name = "UsageError";
  /** The command whose help explains it, if any. */
  readonly command: CommandName | undefined;

  /** Creates the error. */
  constructor(message: string, command?: CommandName) {
    super(message);
    this.command = command;
  }
}

const COMMON_OPTIONS = {
  kubeconfig: { type: "string" },
  context: { type: "string" },
  help: { type: "boolean", short: "h", default: false },
} as const satisfies ParseArgsOptionsConfig;

/**
 * Parses a command's arguments with the common flags; node's parse errors
 * become one-line {@linkcode UsageError}s.
 *
 * @example
 * ```ts
 * import { parseCommand } from "./usage.ts";
 * const { values } = parseCommand("status", ["--context", "eu"], {});
 * console.assert(values.context === "eu");
 * ```
 */
export function parseCommand<O extends ParseArgsOptionsConfig>(
  command: CommandName,
  args: string[],
  options: O,
): ReturnType<
  typeof parseArgs<
    {
      args: string[];
      allowPositionals: true;
      strict: true;
      options: O & typeof COMMON_OPTIONS;
    }
  >
> {
  try {
    return parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: { ...options, ...COMMON_OPTIONS },
    });
  } catch (e) {
    // node's messages go on with advice about `--`: the first sentence says it
    const message = (e instanceof Error ? e.message : String(e))
      .split("\n")[0]?.replace(/\. To specify a positional.*$/, "") ?? "";
    throw new UsageError(`${command}: ${message}`, command);
  }
}

/** Output formats of `-o`/`--output`, as kubectl names them. */
export type OutputFormat = "table" | "wide" | "name" | "json" | "yaml";

/**
 * Checks an `-o` value against the formats the command has.
 *
 * @example
 * ```ts
 * import { outputFormat } from "./usage.ts";
 * console.assert(outputFormat("status", "wide", ["table", "wide"]) === "wide");
 * ```
 */
export function outputFormat<F extends OutputFormat>(
  command: CommandName,
  value: string | undefined,
  formats: readonly F[],
): F {
  const v = value ?? "table";
  const found = formats.find((f) => f === v);
  if (found !== undefined) return found;
  const list = formats.length < 2
    ? formats.join("")
    : `${formats.slice(0, -1).join(", ")} or ${formats.at(-1)}`;
  throw new UsageError(
    `--output "${v}" is not valid: expected ${list}`,
    command,
  );
}

/**
 * Renders a machine-readable value as JSON (indented) or YAML.
 *
 * @example
 * ```ts
 * import { renderData } from "./usage.ts";
 * console.assert(renderData({ a: 1 }, "yaml") === "a: 1");
 * ```
 */
export function renderData(value: unknown, format: "json" | "yaml"): string {
  return format === "json"
    ? JSON.stringify(value, null, 2)
    : toYaml(value).trimEnd();
}
