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
import { parseDurationFlag } from "./duration.ts";

/** The plugin's commands. */
export type CommandName =
  | "drain"
  | "status"
  | "wait"
  | "plan"
  | "retry"
  | "cancel"
  | "force-complete"
  | "abort"
  | "version"
  | "completion";

const CLUSTER_FLAGS =
  "  --kubeconfig FILE   the kubeconfig file (default: KUBECONFIG, colon-separated\n" +
  "                      files merged as kubectl merges them, else ~/.kube/config)\n" +
  "  --context NAME      the kubeconfig context (default: its current-context)\n" +
  "  -h, --help          this help";

/** The help of each command. */
export const COMMAND_USAGE: Readonly<Record<CommandName, string>> = {
  drain:
    `kubectl evictor drain HYPERVISOR [HYPERVISOR...] --reason TEXT [--max-concurrent N] [--allow-unknown] [--wait] [--timeout DURATION]
    Creates the Eviction of each HYPERVISOR, all at once (one wave: every
    host is disabled before any of them migrates); with --wait, follows
    them until the hosts are empty. A name that matches no Hypervisor is
    refused, with the closest existing names, and nothing is created;
    --allow-unknown creates it anyway (a host with no Hypervisor object).
    With --wait, an Eviction that exists already and has not finished is
    followed (stderr says so, and how its spec differs from this command's).
    --timeout stops waiting (the drains go on) after DURATION (90s, 5m,
    1h30m; a bare number is seconds), one deadline for all hosts; 0 waits
    forever. Booleans take =true/=false (--wait=false).`,
  status:
    `kubectl evictor status [HYPERVISOR] [-o table|wide|name|json|yaml|jsonpath=TEMPLATE|custom-columns=SPEC|summary-json|summary-yaml] [-w] [--timeout DURATION]
    Prints the Evictions (or one) with the columns of kubectl get evictions
    (wide: with the limit's source, the start, the failed VMs and the
    Evicting condition's message; dates as ages) and under them, per drain
    with a forecast end (status.predictedFinishAt), a line "NAME: ends
    ~HH:MM:SS (in Nm)" (UTC); or their names
    (eviction.kvm.cloud.sap/NAME), JSON/YAML as kubectl prints them (a List,
    or the one Eviction named), kubectl's jsonpath and custom-columns (the
    template runs against the List, or the one Eviction), or the summary shape
    {"evictions": [{name, hypervisor, reason, state, message, migrated,
    inFlight, outstanding, failed, skipped, limit, limitSource, startedAt,
    finishedAt}]} (summary-json, summary-yaml). -w, --watch: then a row (or
    object) each time one changes, as kubectl get -w, until interrupted or
    --timeout passes (exit 0).`,
  wait: `kubectl evictor wait HYPERVISOR [HYPERVISOR...] [--timeout DURATION]
    Follows existing Evictions, whoever created them, until each drain ended,
    as drain --wait does (the same progress lines, words and exit codes),
    with one deadline for all of them (--timeout: 90s, 5m, 1h30m; a bare
    number is seconds; 0, the default, waits forever).`,
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
    `kubectl evictor cancel HOST [HOST...] [--abort-in-flight] [--clear-maintenance] [--dry-run] [--wait] [--timeout DURATION]
    Undoes a drain: deletes the Evictions of each HOST, so no new migration
    starts; the copies in flight finish (--abort-in-flight: ours are
    aborted), then the compute service is re-enabled unless someone else
    disabled it. A host whose Hypervisor is in maintenance (manual, auto,
    termination) is refused: maintenance recreates the Eviction at once;
    --clear-maintenance clears spec.maintenance first. Every HOST is checked
    before anything changes. --dry-run changes nothing; --wait waits until
    the Evictions are gone (the service handled), at most --timeout (5m, 90s;
    a bare number is seconds).`,
  "force-complete":
    `kubectl evictor force-complete HOST VM [--dry-run] [--wait] [--timeout DURATION]
    Asks the drain of HOST to force-complete the live copy of VM (a server
    id, or a name) now: Nova's force_complete, which switches the copy to
    post-copy where live_migration_permit_post_copy allows it and otherwise
    pauses the VM until the copy completes (a warning on stderr says so).
    Appends {server, action, requestedBy, requestedAt} to the Eviction's
    spec.actions, requestedBy being you as the API server knows you (kubectl
    auth whoami); the controller sends it once and records the outcome in
    status.actions and an Event. A VM id not in status.inFlight, a cold
    migration or a finished drain is refused; a name is sent unchecked.
    --dry-run: the API server (and the webhook) check it, nothing changes.
    --wait: waits for the outcome (exit 0 when Sent), at most --timeout.`,
  abort:
    `kubectl evictor abort HOST VM [--dry-run] [--wait] [--timeout DURATION]
    Asks the drain of HOST to abort the live copy of VM now: the VM stays on
    HOST, running, and is migrated again later in the drain. Recorded and
    checked as force-complete is; the same flags and exit codes.`,
  version: `kubectl evictor version (or kubectl evictor --version)
    Prints the plugin's version (the one its User-Agent carries).`,
  completion: `kubectl evictor completion bash|zsh
    Prints a shell completion script for kubectl-evictor and kubectl evictor:
    commands, flags, and Eviction and Hypervisor names (through kubectl get).
    bash: source <(kubectl evictor completion bash); zsh: the same with zsh.`,
};

const EXIT_CODES = "Exit codes (kubectl's):\n" +
  "  0  done (drain --wait, wait: every host drained and settled empty;\n" +
  "     cancel --wait: every Eviction gone; force-complete, abort: the request\n" +
  "     recorded, with --wait: sent to Nova)\n" +
  "  1  anything else: a usage mistake (an unknown flag, a bad value, a missing\n" +
  "     argument), an error (the API server refused, a name matches no\n" +
  "     Hypervisor, ...), or drain --wait/wait did not see a host drained:\n" +
  "     VMs left that need a person, nothing drained because Nova has no\n" +
  "     compute service of that name, the Eviction was deleted, or --timeout\n" +
  "     passed (the drain goes on); cancel refused a host; force-complete or\n" +
  "     abort refused, or with --wait answered NotInFlight or Refused";

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
  const all = { ...options, ...COMMON_OPTIONS };
  const { rest, explicit } = booleanForms(command, args, all);
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      allowPositionals: true,
      strict: true,
      options: all,
    });
  } catch (e) {
    // node's messages go on with advice about `--`: the first sentence says it
    const message = (e instanceof Error ? e.message : String(e))
      .split("\n")[0]?.replace(/\. To specify a positional.*$/, "") ?? "";
    throw new UsageError(`${command}: ${message}`, command);
  }
  const values = parsed.values as Record<string, unknown>;
  for (const [name, value] of explicit) values[name] = value;
  return parsed;
}

const TRUE = ["1", "t", "T", "TRUE", "true", "True"];
const FALSE = ["0", "f", "F", "FALSE", "false", "False"];

/**
 * kubectl's (Go's) boolean forms: `--wait=false`, `--wait=true` (and
 * `1`, `t`, `0`, `f` ...), which node's parseArgs refuses: each becomes
 * `--wait` or nothing, and the last form of each flag given wins; and
 * pflag's `-o=json` for a short flag's value.
 */
function booleanForms(
  command: CommandName,
  args: readonly string[],
  options: ParseArgsOptionsConfig,
): { rest: string[]; explicit: Map<string, boolean> } {
  const rest: string[] = [];
  const explicit = new Map<string, boolean>();
  const byShort = new Map(
    Object.entries(options).flatMap(([name, o]) =>
      o.short === undefined ? [] : [[o.short, name] as const]
    ),
  );
  for (let i = 0; i < args.length; i++) {
    const a = args[i] ?? "";
    if (a === "--") {
      rest.push(...args.slice(i));
      break;
    }
    // `-o=json` as pflag reads it (node's parseArgs would give "=json")
    const shortValue = /^-([^-])=(.*)$/s.exec(a);
    const shortName = byShort.get(shortValue?.[1] ?? "");
    if (shortValue && shortName && options[shortName]?.type === "string") {
      rest.push(`-${shortValue[1]}`, shortValue[2] ?? "");
      continue;
    }
    const long = /^--([^=]+)(?:=(.*))?$/s.exec(a);
    const name = long?.[1] ??
      (/^-([^-])$/.test(a) ? byShort.get(a[1] ?? "") : undefined);
    const option = name === undefined ? undefined : options[name];
    if (name !== undefined && option?.type === "boolean") {
      const text = long?.[2];
      if (text === undefined) explicit.set(name, true);
      else if (TRUE.includes(text)) explicit.set(name, true);
      else if (FALSE.includes(text)) {
        explicit.set(name, false);
        continue;
      } else {
        throw new UsageError(
          `--${name} "${text}" is not valid: expected true or false`,
          command,
        );
      }
      rest.push(long === null ? a : `--${name}`);
      continue;
    }
    rest.push(a);
    // the value of a string flag is never read as a flag
    if (option?.type === "string" && long?.[2] === undefined) {
      i++;
      if (i < args.length) rest.push(args[i] ?? "");
    }
  }
  return { rest, explicit };
}

/**
 * The command's positionals as Kubernetes object names, each once; none,
 * or a bad one, is a usage error naming it as `what` (HOST, HYPERVISOR).
 *
 * @example
 * ```ts
 * import { objectNames } from "./usage.ts";
 * console.assert(objectNames("cancel", ["n1", "n1", "n2"], "HOST").join() === "n1,n2");
 * ```
 */
export function objectNames(
  command: CommandName,
  positionals: readonly string[],
  what: string,
): string[] {
  const names = [...new Set(positionals)];
  if (names.length === 0) {
    throw new UsageError(`${command} needs a ${what} name`, command);
  }
  for (const n of names) {
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(n) || n.length > 253) {
      throw new UsageError(
        `${what} "${n}" is not valid: expected a Kubernetes object name (lower case letters, digits, "-" and ".")`,
        command,
      );
    }
  }
  return names;
}

/**
 * The milliseconds of a `--timeout` value (`5m`, `90s`, `1h30m`; a bare
 * number is seconds; 0 waits forever); a bad one is a usage error.
 *
 * @example
 * ```ts
 * import { timeoutFlag } from "./usage.ts";
 * console.assert(timeoutFlag("wait", "5m") === 300_000);
 * ```
 */
export function timeoutFlag(
  command: CommandName,
  value: string | undefined,
): number {
  try {
    return parseDurationFlag("--timeout", value ?? "0");
  } catch (e) {
    if (e instanceof RangeError) throw new UsageError(e.message, command);
    throw e;
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
