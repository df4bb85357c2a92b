/**
 * evictor's configuration: read once from the command line and the
 * environment (every flag has an environment twin), validated, frozen.
 * A bad value stops start-up with one structured error naming the flag, the
 * bad value and what is expected.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { parseAddress } from "../framework/address.ts";
import type { LimitSettings } from "../limits/resolve.ts";
import {
  type ConcurrencyFlagError,
  parseConcurrencyFlags,
} from "../limits/flags.ts";
import { DEFAULT_RATE } from "../capacity/makespan.ts";
import { DEFAULT_FIXED_SECONDS, type DrainCost } from "../capacity/history.ts";
import { redactAmqpUrl, validateAmqpUrl } from "../openstack/amqp_url.ts";
import {
  DEFAULT_HEARTBEAT_SECONDS,
  DEFAULT_MAX_MESSAGE_BYTES,
  NOVA_EXCHANGE,
} from "../openstack/notifications.ts";
import { parseDuration } from "./duration.ts";

/** The controllers `--controllers` can switch on. */
export const CONTROLLERS = [
  "eviction",
  "hypervisor-sync",
  "maintenance",
] as const;
/** One of {@linkcode CONTROLLERS}. */
export type ControllerName = typeof CONTROLLERS[number];

/** Everything `evictor run` needs, frozen. */
export interface Config {
  /**
   * Kubeconfig files, merged as kubectl merges them: `--kubeconfig` names
   * one, `KUBECONFIG` a colon-separated list; undefined: the defaults.
   */
  readonly kubeconfig: readonly string[] | undefined;
  readonly osCloud: string | undefined;
  readonly pollIntervalMs: number;
  /** `--drain-settle`: how long a drained host must be seen empty (ms). */
  readonly drainSettleMs: number;
  readonly leaderElection:
    | false
    | {
      readonly namespace: string;
      readonly leaseName: string;
      readonly identity: string | undefined;
      readonly leaseDurationMs: number;
      readonly renewDeadlineMs: number;
      readonly retryPeriodMs: number;
    };
  readonly labelSelector: string | undefined;
  readonly controllers: readonly ControllerName[];
  /** /healthz, /livez and /readyz (plain HTTP). */
  readonly healthProbeAddress: string | false;
  /**
   * /metrics: HTTPS with the certificate in `certDir` (or a self-signed
   * one) for tokens the API server authorizes, or plain HTTP for anyone.
   */
  readonly metrics:
    | false
    | { readonly address: string; readonly certDir: string }
    | { readonly address: string; readonly selfSigned: true }
    | { readonly address: string; readonly insecure: true };
  readonly webhook:
    | false
    | { readonly address: string; readonly certDir: string }
    | { readonly address: string; readonly selfSigned: true };
  readonly limits: LimitSettings;
  readonly limitWarnings: readonly { message: string; flag: string }[];
  readonly maxConcurrentReconciles: number;
  readonly hypervisorResyncMs: number;
  readonly discoverHypervisors: boolean;
  readonly logLevel: string;
  readonly shutdownTimeoutMs: number;
  readonly novaTimeoutMs: number;
  readonly migrationRetryWindowMs: number;
  /** First wait before a failed migration is retried (doubling, capped). */
  readonly migrationRetryBackoffMs: number;
  /** `--migration-progress-interval`: a live copy's progress is read from Nova at most once in this (ms; 0: never). */
  readonly migrationProgressIntervalMs: number;
  /** The rate predictions assume before any drain has ended. */
  readonly defaultMigrationRate: DrainCost;
  /**
   * Where Nova's versioned notifications come from
   * (`--nova-notifications-url` or `--nova-notifications-url-file`, read at
   * start-up); undefined: the drains poll.
   */
  readonly novaNotifications:
    | { readonly url: string }
    | { readonly urlFile: string }
    | undefined;
  /**
   * `--nova-notifications-relist`: how old a drain's notified view of its
   * host may grow, while a copy of the drain's runs untimed, before a pass
   * lists the host afresh (ms; default 30 poll intervals). Each relist costs
   * two Nova calls per draining host.
   */
  readonly novaNotificationsRelistMs: number;
  /** How the notification feed consumes (used only with a URL). */
  readonly novaNotificationsFeed: {
    /** `--nova-notifications-exchange`: Nova's `control_exchange`. */
    readonly exchange: string;
    /** `--nova-notifications-heartbeat`, whole seconds. */
    readonly heartbeatSeconds: number;
    /** `--nova-notifications-max-message-bytes`. */
    readonly maxMessageBytes: number;
  };
}

/** A bad flag or environment variable, with its parts as fields. */
export class ConfigFlagError extends Error {
  override name = "ConfigFlagError";
  /** The flag, e.g. `--poll-interval`. */
  readonly flag: string;
  /** The environment variable it came from, when it did. */
  readonly envVar: string | undefined;
  /** The bad value as given. */
  readonly value: string | undefined;
  /** What is expected instead. */
  readonly expected: string;
  /** Further structured fields (for example a concurrency flag's entry). */
  readonly fields: Readonly<Record<string, unknown>>;

  constructor(
    message: string,
    parts: {
      flag: string;
      envVar?: string | undefined;
      value?: string | undefined;
      expected: string;
      fields?: Record<string, unknown>;
    },
  ) {
    super(message);
    this.flag = parts.flag;
    this.envVar = parts.envVar;
    this.value = parts.value;
    this.expected = parts.expected;
    this.fields = Object.freeze({ ...parts.fields });
  }
}

/** The flags of `evictor run`, with their environment twins and help. */
export const RUN_FLAGS = {
  kubeconfig: {
    type: "string",
    env: "KUBECONFIG",
    help:
      "kubeconfig file; KUBECONFIG may name several, colon-separated, merged as kubectl merges them (default: ~/.kube/config, else the in-cluster service account)",
  },
  "os-cloud": {
    type: "string",
    env: "OS_CLOUD",
    help: "cloud in clouds.yaml (OS_CLIENT_CONFIG_FILE); else OS_* variables",
  },
  "poll-interval": {
    type: "string",
    env: "EVICTOR_POLL_INTERVAL",
    default: "2s",
    help:
      "the shortest wait between two looks at a drain (passes are paced by the expected end of the earliest running migration)",
  },
  "drain-settle": {
    type: "string",
    env: "EVICTOR_DRAIN_SETTLE",
    default: "6s",
    help:
      "how long fresh looks must find a drained host empty (no server, no migration to or from it) before its Eviction turns Succeeded; 0 for the first empty look",
  },
  "leader-elect": {
    type: "boolean",
    env: "EVICTOR_LEADER_ELECT",
    default: false,
    help: "elect a leader on a Lease (run with 2 replicas)",
  },
  "leader-election-namespace": {
    type: "string",
    env: "POD_NAMESPACE",
    help: "namespace of the Lease (required with --leader-elect)",
  },
  "leader-election-id": {
    type: "string",
    env: "EVICTOR_LEADER_ELECTION_ID",
    default: "evictor",
    help: "name of the Lease",
  },
  "lease-duration": {
    type: "string",
    env: "EVICTOR_LEASE_DURATION",
    default: "15s",
    help: "how long a Lease holds",
  },
  "renew-deadline": {
    type: "string",
    env: "EVICTOR_RENEW_DEADLINE",
    default: "10s",
    help: "a leader that cannot renew within this stops",
  },
  "retry-period": {
    type: "string",
    env: "EVICTOR_RETRY_PERIOD",
    default: "2s",
    help: "how often to try to take or renew the Lease",
  },
  "label-selector": {
    type: "string",
    env: "EVICTOR_LABEL_SELECTOR",
    help: "only handle objects with these labels (partition several instances)",
  },
  controllers: {
    type: "string",
    env: "EVICTOR_CONTROLLERS",
    default: CONTROLLERS.join(","),
    help: `controllers to run, comma-separated: ${CONTROLLERS.join(", ")}`,
  },
  "metrics-bind-address": {
    type: "string",
    env: "EVICTOR_METRICS_BIND_ADDRESS",
    default: ":8443",
    help:
      "/metrics over HTTPS for tokens the API server authorizes; 0 turns it off",
  },
  "metrics-cert-dir": {
    type: "string",
    env: "EVICTOR_METRICS_CERT_DIR",
    help:
      "folder with tls.crt and tls.key for /metrics, reloaded when they change (default: the webhook's)",
  },
  "insecure-metrics": {
    type: "boolean",
    env: "EVICTOR_INSECURE_METRICS",
    default: false,
    help:
      "serve /metrics over plain HTTP without authentication (local runs only)",
  },
  "health-probe-bind-address": {
    type: "string",
    env: "EVICTOR_HEALTH_PROBE_BIND_ADDRESS",
    default: ":8081",
    help: "/healthz and /readyz (plain HTTP); 0 turns them off",
  },
  "webhook-bind-address": {
    type: "string",
    env: "EVICTOR_WEBHOOK_BIND_ADDRESS",
    default: ":9443",
    help: "the validating admission webhook (HTTPS); 0 turns it off",
  },
  "webhook-cert-dir": {
    type: "string",
    env: "EVICTOR_WEBHOOK_CERT_DIR",
    default: "/etc/evictor/webhook-certs",
    help: "folder with tls.crt and tls.key, reloaded when they change",
  },
  "webhook-self-signed": {
    type: "boolean",
    env: "EVICTOR_WEBHOOK_SELF_SIGNED",
    default: false,
    help: "serve the webhook with a self-signed certificate (local runs only)",
  },
  "eviction-concurrency": {
    type: "string",
    env: "EVICTOR_EVICTION_CONCURRENCY",
    help: "migrations in flight per hypervisor without an EvictionPolicy",
  },
  "eviction-trait-concurrency": {
    type: "string",
    multiple: true,
    env: "EVICTOR_EVICTION_TRAIT_CONCURRENCY",
    help: "TRAIT=N[,TRAIT=N] lower limits for hosts with a trait (repeatable)",
  },
  "eviction-convergence": {
    type: "string",
    multiple: true,
    env: "EVICTOR_EVICTION_CONVERGENCE",
    help:
      "KEY=VALUE[,KEY=VALUE] the default convergence policy without an EvictionPolicy: completionTimeoutPerGiB, progressTimeoutSeconds, onTimeout (Report, Abort, ForceComplete), maxAbortedTries, forceCompleteTimeoutSeconds (repeatable)",
  },
  "max-concurrent-reconciles": {
    type: "string",
    env: "EVICTOR_MAX_CONCURRENT_RECONCILES",
    default: "4",
    help: "Evictions worked on at once",
  },
  "hypervisor-resync-interval": {
    type: "string",
    env: "EVICTOR_HYPERVISOR_RESYNC_INTERVAL",
    default: "5m",
    help: "how often Hypervisor status is refreshed from Nova and Placement",
  },
  "discover-hypervisors": {
    type: "boolean",
    env: "EVICTOR_DISCOVER_HYPERVISORS",
    default: false,
    help: "create a Hypervisor for every nova-compute host that has none",
  },
  "log-level": {
    type: "string",
    env: "EVICTOR_LOG_LEVEL",
    default: "info",
    help: "trace, debug, info, warn, error or fatal",
  },
  "shutdown-timeout": {
    type: "string",
    env: "EVICTOR_SHUTDOWN_TIMEOUT",
    // below Kubernetes' default terminationGracePeriodSeconds (30)
    default: "25s",
    help:
      "the whole stop after SIGTERM: running passes finish (up to all but a fifth, at most 5 s), then the Lease is given up and the rest closed; keep it below the pod's terminationGracePeriodSeconds",
  },
  "nova-timeout": {
    type: "string",
    env: "EVICTOR_NOVA_TIMEOUT",
    default: "30s",
    help:
      "timeout of one Nova call; a start without an answer in time is resolved by looking, never charged",
  },
  "migration-retry-window": {
    type: "string",
    env: "EVICTOR_MIGRATION_RETRY_WINDOW",
    default: "1h",
    help:
      "how long after its first failure a VM failing for a transient cause (no valid host, a failed migration) is retried",
  },
  "migration-progress-interval": {
    type: "string",
    env: "EVICTOR_MIGRATION_PROGRESS_INTERVAL",
    default: "30s",
    help:
      "a live copy's progress (remaining bytes, rate) is read from Nova at most once in this, and only when needed: past its expected end, while no migration learned times it (at its first figures and 10 s later), or when its policy's decision is due; 0: never (no progress in status, and no progress timeout can act)",
  },
  "migration-retry-backoff": {
    type: "string",
    env: "EVICTOR_MIGRATION_RETRY_BACKOFF",
    default: "30s",
    help:
      "the wait before a failed migration is retried; it doubles with each failure, up to 20 times this",
  },
  "default-migration-rate": {
    type: "string",
    env: "EVICTOR_DEFAULT_MIGRATION_RATE",
    default: String(DEFAULT_RATE.mbPerSecond),
    help:
      "MB of guest RAM a migration copies per second, for predictions made before any drain has ended (then the rate drains observed is used)",
  },
  "default-migration-overhead": {
    type: "string",
    env: "EVICTOR_DEFAULT_MIGRATION_OVERHEAD",
    default: `${DEFAULT_RATE.overheadSeconds}s`,
    help:
      "the time a migration takes besides copying RAM (scheduling, preparing, switch-over), with --default-migration-rate",
  },
  "default-drain-overhead": {
    type: "string",
    env: "EVICTOR_DEFAULT_DRAIN_OVERHEAD",
    default: `${DEFAULT_FIXED_SECONDS}s`,
    help:
      "the time a drain takes besides its migrations (capacity check, disabling, its wave, the last confirms, --drain-settle), for predictions made before any drain has measured it",
  },
  "nova-notifications-url": {
    type: "string",
    env: "EVICTOR_NOVA_NOTIFICATIONS_URL",
    help:
      "amqp:// or amqps:// URL of Nova's RabbitMQ (user, password, vhost): drains follow Nova's versioned notifications instead of polling alone; never logged (better: --nova-notifications-url-file)",
  },
  "nova-notifications-url-file": {
    type: "string",
    env: "EVICTOR_NOVA_NOTIFICATIONS_URL_FILE",
    help:
      "a file holding the --nova-notifications-url (a mounted Secret), read at start-up",
  },
  "nova-notifications-relist": {
    type: "string",
    env: "EVICTOR_NOVA_NOTIFICATIONS_RELIST",
    help:
      "with notifications, how old a drain's view of its host may grow while a copy runs that the drain cannot time yet, before it lists the host afresh (two Nova calls; else the slow finished check), at least --poll-interval (default 30 poll intervals, 60s)",
  },
  "nova-notifications-exchange": {
    type: "string",
    env: "EVICTOR_NOVA_NOTIFICATIONS_EXCHANGE",
    default: NOVA_EXCHANGE,
    help:
      "the exchange Nova publishes its notifications to (nova.conf [DEFAULT] control_exchange); checked at start-up, never created",
  },
  "nova-notifications-heartbeat": {
    type: "string",
    env: "EVICTOR_NOVA_NOTIFICATIONS_HEARTBEAT",
    default: `${DEFAULT_HEARTBEAT_SECONDS}s`,
    help:
      "AMQP heartbeat of the notification connection, whole seconds from 1s to 60s: a connection silent for three of them is dropped and the drains poll",
  },
  "nova-notifications-max-message-bytes": {
    type: "string",
    env: "EVICTOR_NOVA_NOTIFICATIONS_MAX_MESSAGE_BYTES",
    default: String(DEFAULT_MAX_MESSAGE_BYTES),
    help:
      'larger notification messages are dropped unparsed and counted (evictor_nova_notifications_dropped_total{reason="too_large"}); 1024 to 134217728',
  },
} as const satisfies Record<string, FlagSpec>;

interface FlagSpec {
  type: "string" | "boolean";
  env: string;
  help: string;
  default?: string | boolean;
  multiple?: boolean;
}

type FlagName = keyof typeof RUN_FLAGS;

const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "fatal"];

/**
 * Builds the frozen {@linkcode Config} from `args` (after `run`) and `env`.
 * A flag wins over its environment twin.
 *
 * @example
 * ```ts
 * import { loadConfig } from "./config.ts";
 * const config = loadConfig(["--poll-interval", "5s"], {});
 * console.assert(config.pollIntervalMs === 5000);
 * ```
 */
export function loadConfig(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): Config {
  const flags = flagReader(parseCommandLine(args), env);
  const controllers = readControllers(flags);
  const leaderElection = readLeaderElection(flags, env);
  const limits = readLimits(flags);
  const webhook = readWebhook(flags);
  const logLevel = readLogLevel(flags);
  const maxConcurrentReconciles = readMaxConcurrentReconciles(flags);
  const config: Config = {
    kubeconfig: readKubeconfig(flags),
    osCloud: flags.str("os-cloud"),
    pollIntervalMs: flags.duration("poll-interval", 100),
    drainSettleMs: flags.duration("drain-settle", 0),
    leaderElection,
    labelSelector: flags.str("label-selector"),
    controllers,
    healthProbeAddress: flags.address("health-probe-bind-address"),
    metrics: readMetrics(flags),
    webhook,
    limits: limits.settings,
    limitWarnings: limits.warnings,
    maxConcurrentReconciles,
    hypervisorResyncMs: flags.duration("hypervisor-resync-interval", 1000),
    discoverHypervisors: flags.bool("discover-hypervisors"),
    logLevel,
    shutdownTimeoutMs: flags.duration("shutdown-timeout", 0),
    novaTimeoutMs: flags.duration("nova-timeout", 100),
    migrationRetryWindowMs: flags.duration("migration-retry-window", 0),
    migrationRetryBackoffMs: flags.duration("migration-retry-backoff", 100),
    migrationProgressIntervalMs: readProgressInterval(flags),
    defaultMigrationRate: readDefaultMigrationRate(flags),
    novaNotifications: readNovaNotifications(flags),
    novaNotificationsRelistMs: readRelist(flags),
    novaNotificationsFeed: readNotificationFeed(flags),
  };
  return deepFreeze(config);
}

/** `--migration-progress-interval`: 0 (no progress reads) or at least 1 s. */
function readProgressInterval(flags: FlagReader): number {
  // "0" is how the help and docs spell off; a duration wants a unit
  if (flags.str("migration-progress-interval") === "0") return 0;
  const ms = flags.duration("migration-progress-interval", 0);
  if (ms > 0 && ms < 1000) {
    flags.bad(
      "migration-progress-interval",
      "0 (no progress reads) or a duration of at least 1s, like 30s or 1m",
    );
  }
  return ms;
}

/**
 * `--nova-notifications-relist`: at least the poll interval (a relist
 * more often than the looks would be every look); default 30 of them.
 */
function readRelist(flags: FlagReader): number {
  const poll = flags.duration("poll-interval", 100);
  if (flags.str("nova-notifications-relist") === undefined) return poll * 30;
  return flags.duration("nova-notifications-relist", poll);
}

/** AMQP's exchange names: up to 127 of these characters. */
const EXCHANGE_NAME = /^[A-Za-z0-9_.:-]{1,127}$/;

/** The feed's exchange, heartbeat and message size limit. */
function readNotificationFeed(
  flags: FlagReader,
): Config["novaNotificationsFeed"] {
  const exchange = flags.str("nova-notifications-exchange") ?? "";
  if (!EXCHANGE_NAME.test(exchange) || exchange.startsWith("amq.")) {
    flags.bad(
      "nova-notifications-exchange",
      "an AMQP exchange name (1 to 127 of A-Z a-z 0-9 _ . : -, not amq.*) as Nova's [DEFAULT] control_exchange, e.g. nova",
    );
  }
  const heartbeatMs = parseDuration(
    flags.str("nova-notifications-heartbeat") ?? "",
  );
  if (
    heartbeatMs === undefined || heartbeatMs % 1000 !== 0 ||
    heartbeatMs < 1000 || heartbeatMs > 60_000
  ) {
    flags.bad(
      "nova-notifications-heartbeat",
      "whole seconds from 1s to 60s, like 5s",
    );
  }
  const bytesText = flags.str("nova-notifications-max-message-bytes") ?? "";
  const maxMessageBytes = /^\d+$/.test(bytesText) ? Number(bytesText) : NaN;
  if (!(maxMessageBytes >= 1024 && maxMessageBytes <= 128 * 1024 * 1024)) {
    flags.bad(
      "nova-notifications-max-message-bytes",
      "a number of bytes from 1024 to 134217728, like 1048576",
    );
  }
  return {
    exchange,
    heartbeatSeconds: (heartbeatMs ?? 0) / 1000,
    maxMessageBytes,
  };
}

/** `--kubeconfig FILE` is one file; its twin `KUBECONFIG` a list. */
function readKubeconfig(flags: FlagReader): readonly string[] | undefined {
  const value = flags.str("kubeconfig");
  if (value === undefined) return undefined;
  if (flags.source("kubeconfig").envVar === undefined) return [value];
  const files = value.split(":").filter((p) => p !== "");
  return files.length === 0 ? undefined : files;
}

type FlagValues = Record<string, string | boolean | string[] | undefined>;

/** The command line parsed against {@linkcode RUN_FLAGS}. */
function parseCommandLine(args: readonly string[]): FlagValues {
  try {
    const parsed = parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: false,
      options: Object.fromEntries(
        Object.entries(RUN_FLAGS).map(([name, spec]) => [
          name,
          {
            type: spec.type,
            ...("multiple" in spec ? { multiple: true } : {}),
          },
        ]),
      ),
    });
    return parsed.values as FlagValues;
  } catch (e) {
    const message = e instanceof Error ? e.message.split("\n")[0] ?? "" : "";
    throw new ConfigFlagError(`invalid command line: ${message}`, {
      flag: "(command line)",
      expected: "the flags listed by `evictor run --help`",
    });
  }
}

/** Typed reads of the flags, each with its environment twin and default. */
interface FlagReader {
  /** The flag's value, else its environment twin, else its default. */
  source(name: FlagName): { value: unknown; envVar?: string };
  /** A non-empty string value. */
  str(name: FlagName): string | undefined;
  /** A boolean flag. */
  bool(name: FlagName): boolean;
  /** Throws the {@linkcode ConfigFlagError} of a bad value. */
  bad(name: FlagName, expected: string): never;
  /** A duration of at least `min` ms. */
  duration(name: FlagName, min?: number): number;
  /** A listening address, or false for `0`. */
  address(name: FlagName): string | false;
}

function flagReader(
  values: FlagValues,
  env: Readonly<Record<string, string | undefined>>,
): FlagReader {
  const source = (name: FlagName): { value: unknown; envVar?: string } => {
    const spec: FlagSpec = RUN_FLAGS[name];
    const fromFlag = values[name];
    if (fromFlag !== undefined) return { value: fromFlag };
    const fromEnv = env[spec.env];
    if (fromEnv !== undefined && fromEnv !== "") {
      if (spec.type === "boolean") {
        if (!["true", "false", "1", "0"].includes(fromEnv)) {
          throw new ConfigFlagError(`${spec.env} is not a boolean`, {
            flag: `--${name}`,
            envVar: spec.env,
            value: fromEnv,
            expected: "true, false, 1 or 0",
          });
        }
        return {
          value: fromEnv === "true" || fromEnv === "1",
          envVar: spec.env,
        };
      }
      return {
        value: spec.multiple ? [fromEnv] : fromEnv,
        envVar: spec.env,
      };
    }
    return { value: spec.default };
  };
  const str = (name: FlagName) => {
    const v = source(name).value;
    return typeof v === "string" && v !== "" ? v : undefined;
  };
  const bool = (name: FlagName) => source(name).value === true;
  const bad = (name: FlagName, expected: string): never => {
    const s = source(name);
    throw new ConfigFlagError(`--${name} is not valid`, {
      flag: `--${name}`,
      envVar: s.envVar,
      value: String(s.value),
      expected,
    });
  };
  const duration = (name: FlagName, min = 1) => {
    const ms = parseDuration(str(name) ?? "");
    return ms !== undefined && ms >= min
      ? ms
      : bad(name, `a duration of at least ${min} ms, like 500ms, 2s or 5m`);
  };
  const address = (name: FlagName): string | false => {
    const text = str(name);
    if (text === "0") return false;
    try {
      parseAddress(text ?? "");
      return text ?? "";
    } catch {
      return bad(name, '"host:port", ":port", or 0 to turn it off');
    }
  };
  return { source, str, bool, bad, duration, address };
}

/**
 * `--nova-notifications-url` or `--nova-notifications-url-file` (not
 * both). The URL is checked here; an error shows it with its password
 * redacted, never as given.
 */
function readNovaNotifications(flags: FlagReader): Config["novaNotifications"] {
  const url = flags.str("nova-notifications-url");
  const urlFile = flags.str("nova-notifications-url-file");
  if (url !== undefined && urlFile !== undefined) {
    throw new ConfigFlagError(
      "--nova-notifications-url and --nova-notifications-url-file exclude each other",
      {
        flag: "--nova-notifications-url",
        expected:
          "one of --nova-notifications-url and --nova-notifications-url-file",
      },
    );
  }
  if (urlFile !== undefined) return { urlFile };
  if (url === undefined) return undefined;
  try {
    validateAmqpUrl(url);
  } catch (e) {
    const s = flags.source("nova-notifications-url");
    throw new ConfigFlagError(
      `--nova-notifications-url is not valid: ${(e as Error).message}`,
      {
        flag: "--nova-notifications-url",
        envVar: s.envVar,
        value: redactAmqpUrl(url),
        expected: "amqp://user:password@host:port/vhost or amqps://...",
      },
    );
  }
  return { url };
}

/** `--controllers`: a non-empty list of known controllers. */
function readControllers(flags: FlagReader): ControllerName[] {
  const controllers = (flags.str("controllers") ?? "").split(",")
    .map((c) => c.trim())
    .filter((c) => c !== "");
  const unknown = controllers.find((c) =>
    !(CONTROLLERS as readonly string[]).includes(c)
  );
  if (unknown !== undefined || controllers.length === 0) {
    flags.bad(
      "controllers",
      `a comma-separated list of ${CONTROLLERS.join(", ")}`,
    );
  }
  return controllers as ControllerName[];
}

/** `--leader-elect` and its Lease settings. */
function readLeaderElection(
  flags: FlagReader,
  env: Readonly<Record<string, string | undefined>>,
): Config["leaderElection"] {
  const leaderElect = flags.bool("leader-elect");
  const namespace = flags.str("leader-election-namespace");
  if (leaderElect && namespace === undefined) {
    throw new ConfigFlagError("--leader-election-namespace is required", {
      flag: "--leader-election-namespace",
      envVar: "POD_NAMESPACE",
      expected: "the namespace of the Lease, when --leader-elect is on",
    });
  }
  const leaseDurationMs = flags.duration("lease-duration");
  const renewDeadlineMs = flags.duration("renew-deadline");
  const retryPeriodMs = flags.duration("retry-period");
  if (!(retryPeriodMs < renewDeadlineMs && renewDeadlineMs < leaseDurationMs)) {
    flags.bad(
      "renew-deadline",
      "--retry-period < --renew-deadline < --lease-duration",
    );
  }
  return leaderElect && namespace !== undefined
    ? {
      namespace,
      leaseName: flags.str("leader-election-id") ?? "evictor",
      identity: env["POD_NAME"],
      leaseDurationMs,
      renewDeadlineMs,
      retryPeriodMs,
    }
    : false;
}

/** `--eviction-concurrency`, `--eviction-trait-concurrency` and `--eviction-convergence`. */
function readLimits(
  flags: FlagReader,
): { settings: LimitSettings; warnings: Config["limitWarnings"] } {
  const concurrency = flags.source("eviction-concurrency").value;
  const traitConcurrency = flags.source("eviction-trait-concurrency").value;
  const convergence = flags.source("eviction-convergence").value;
  const strings = (v: unknown) =>
    Array.isArray(v)
      ? v.filter((t): t is string => typeof t === "string")
      : undefined;
  const limits = parseConcurrencyFlags(
    typeof concurrency === "string" ? concurrency : undefined,
    strings(traitConcurrency),
    strings(convergence),
  );
  if (!limits.ok) {
    const e: ConcurrencyFlagError = limits.error;
    throw new ConfigFlagError(e.message, {
      flag: e.flag,
      value: e.value === undefined ? undefined : String(e.value),
      expected: e.expected,
      fields: { entry: e.entry, field: e.field, rule: e.rule },
    });
  }
  return {
    settings: limits.settings,
    warnings: limits.warnings.map((w) => ({
      message: w.message,
      flag: w.flag,
    })),
  };
}

/** The webhook: off, self-signed, or with the certificate folder. */
function readWebhook(flags: FlagReader): Config["webhook"] {
  const address = flags.address("webhook-bind-address");
  if (address === false) return false;
  return flags.bool("webhook-self-signed") ? { address, selfSigned: true } : {
    address,
    certDir: flags.str("webhook-cert-dir") ?? "/etc/evictor/webhook-certs",
  };
}

function readMetrics(flags: FlagReader): Config["metrics"] {
  const address = flags.address("metrics-bind-address");
  if (address === false) return false;
  if (flags.bool("insecure-metrics")) return { address, insecure: true };
  const certDir = flags.str("metrics-cert-dir");
  if (certDir !== undefined) return { address, certDir };
  // the webhook's certificate, as it is configured (even when the webhook is off)
  return flags.bool("webhook-self-signed") ? { address, selfSigned: true } : {
    address,
    certDir: flags.str("webhook-cert-dir") ?? "/etc/evictor/webhook-certs",
  };
}

function readLogLevel(flags: FlagReader): string {
  const logLevel = flags.str("log-level") ?? "info";
  if (!LOG_LEVELS.includes(logLevel)) {
    flags.bad("log-level", LOG_LEVELS.join(", "));
  }
  return logLevel;
}

function readMaxConcurrentReconciles(flags: FlagReader): number {
  const reconciles = Number(flags.str("max-concurrent-reconciles"));
  if (!Number.isInteger(reconciles) || reconciles < 1 || reconciles > 256) {
    flags.bad("max-concurrent-reconciles", "an integer from 1 to 256");
  }
  return reconciles;
}

function readDefaultMigrationRate(
  flags: FlagReader,
): Config["defaultMigrationRate"] {
  const mbPerSecond = Number(flags.str("default-migration-rate"));
  if (!Number.isFinite(mbPerSecond) || mbPerSecond <= 0) {
    flags.bad("default-migration-rate", "MB per second, a number > 0");
  }
  return {
    mbPerSecond,
    overheadSeconds: flags.duration("default-migration-overhead", 0) / 1000,
    fixedSeconds: flags.duration("default-drain-overhead", 0) / 1000,
  };
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/**
 * The help text of `evictor run`, generated from {@linkcode RUN_FLAGS}.
 *
 * @example
 * ```ts
 * import { runHelp } from "./config.ts";
 * console.assert(runHelp().includes("--poll-interval"));
 * ```
 */
export function runHelp(): string {
  const lines = Object.entries(RUN_FLAGS).map(
    ([name, spec]: [string, FlagSpec]) => {
      const arg = spec.type === "string"
        ? ` ${
          name === "eviction-trait-concurrency"
            ? "TRAIT=N"
            : name === "eviction-convergence"
            ? "KEY=VALUE"
            : "VALUE"
        }`
        : "";
      const def = spec.default === undefined || spec.default === false
        ? ""
        : ` (default ${spec.default})`;
      return `  --${name}${arg}\n      ${spec.help}${def} [env ${spec.env}]`;
    },
  );
  return `Usage: evictor run [flags]

Runs the operator (Eviction, Hypervisor and maintenance controllers) and the
validating admission webhook in one process.

Flags (a flag wins over its environment variable):
${lines.join("\n")}
`;
}
