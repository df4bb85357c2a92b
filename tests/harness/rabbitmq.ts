/**
 * A real RabbitMQ (Debian's `rabbitmq-server`) on loopback: free ports, its
 * own node name and its own epmd, every process under a watchdog in its own
 * process group ({@linkcode startProcessGroup}), so nothing outlives the test
 * process. The real-OpenStack lane starts its broker with this module too.
 *
 * The test command (`tests/run.ts`) installs the package when it is missing
 * and it can (root and apt-get: `hack/rabbitmq/install.sh`), starts one
 * broker for the run and announces it in `EVICTOR_RABBITMQ`
 * ({@linkcode sharedRabbitMq}); where there is none, tests that need it are
 * ignored with the reason ({@linkcode rabbitMqMissing}), never passed silently.
 *
 * @module
 */
import { feedPermissions } from "../../openstack/amqp_refusals.ts";
import {
  cacheRoot,
  freePort,
  makeOwnedTempDir,
  type ManagedProcess,
  runInstallScript,
  startProcessGroup,
  tail,
  tcpOpen,
  waitFor,
} from "./processes.ts";

const RABBITMQ_SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server";
const RABBITMQCTL = "/usr/lib/rabbitmq/bin/rabbitmqctl";
const INSTALL = new URL("../../hack/rabbitmq/install.sh", import.meta.url)
  .pathname;

/** The variable through which the test command announces its broker. */
export const SHARED_RABBITMQ_ENV = "EVICTOR_RABBITMQ";

/** The broker's user (`loopback_users = none` lets it in over TCP). */
const USER = "guest";
/**
 * The notification feed's user: exactly the permissions
 * docs/configuration.md names (for the exchange `nova`), no more.
 */
export const FEED_USER = "evictor";
/** The queues oslo.messaging declares for Nova's (versioned) notifications. */
const NOTIFICATION_QUEUES = "^(versioned_)?notifications\\.";
/** Unconsumed notifications kept per such queue; older ones are dropped. */
const NOTIFICATION_QUEUE_MAX = 1000;

/** Starts one process of the broker (the lane passes its own, to track deaths). */
export type ProcessStarter = (
  name: string,
  command: string,
  args: string[],
  env: Record<string, string>,
) => ManagedProcess;

/** What {@linkcode startRabbitMq} can be told. */
export interface RabbitMqOptions {
  /** AMQP port (default: a free one). */
  port?: number;
  /** State folder (default: a fresh folder of this process in the cache). */
  dir?: string;
  /** Folder of the logs (default `<dir>/logs`). */
  logs?: string;
  /** Give up at this time (ms since the epoch; default: in 300 s: a loaded machine boots Erlang slowly). */
  deadline?: number;
  /** How to start a process (default: a process group logging to `logs`). */
  start?: ProcessStarter;
  /** Failures noticed by the caller (a process died): ends the wait early. */
  died?: string[];
}

/** A running broker. */
export interface RabbitMq {
  /** `amqp://guest:guest@127.0.0.1:PORT/` */
  url: string;
  /**
   * `amqp://evictor:evictor-pw@127.0.0.1:PORT/`: the feed's user, with exactly
   * the documented permissions on `/` ({@linkcode feedPermissions}).
   */
  feedUrl: string;
  /** The AMQP port. */
  port: number;
  /** The environment `rabbitmqctl` needs to reach this node. */
  env: Record<string, string>;
  /**
   * Adds a virtual host that `guest` may use and returns its URL: a clean
   * broker of its own (exchanges, queues) without starting another.
   */
  addVhost(name: string): Promise<string>;
  /**
   * Adds (or updates) a user (password: its name and `-pw`) with `permissions`
   * on `vhost` (default `/`, which must exist), and returns its URL.
   */
  addUser(
    name: string,
    permissions: { configure: string; write: string; read: string },
    vhost?: string,
  ): Promise<string>;
  /** Stops the broker only (epmd stays): clients see the connection drop. */
  stopBroker(): Promise<void>;
  /** Starts the stopped broker again on the same port and state. */
  startBroker(): Promise<void>;
  /** Stops everything and removes the folder when this module made it. */
  stop(): Promise<void>;
}

/** Whether the broker is installed here. */
export async function rabbitMqInstalled(): Promise<boolean> {
  return await Deno.stat(RABBITMQ_SERVER).then(() => true, () => false);
}

/**
 * Why this machine cannot run a broker (not installed, and no root with
 * apt-get to install it), or undefined when it can.
 */
export async function rabbitMqMissing(): Promise<string | undefined> {
  if (await rabbitMqInstalled()) return undefined;
  const apt = await Deno.stat("/usr/bin/apt-get").then(() => true, () => false);
  if (Deno.uid() === 0 && apt) return undefined;
  return `rabbitmq-server is not installed and cannot be installed here (needs root and apt-get: ${INSTALL})`;
}

/** Runs hack/rabbitmq/install.sh (idempotent); its output goes to stderr. */
export async function installRabbitMq(): Promise<void> {
  await runInstallScript(INSTALL);
}

/**
 * Starts a broker (installing it first when missing) and waits until it
 * accepts AMQP connections; Nova's notification queues are capped by a
 * policy, as in any cloud where nothing consumes them.
 *
 * @example
 * ```ts ignore
 * const mq = await startRabbitMq();
 * try {
 *   console.log(mq.url);
 * } finally {
 *   await mq.stop();
 * }
 * ```
 */
export async function startRabbitMq(
  options: RabbitMqOptions = {},
): Promise<RabbitMq> {
  if (!await rabbitMqInstalled()) await installRabbitMq();
  const owned = options.dir === undefined;
  const dir = options.dir ??
    await makeOwnedTempDir(`${cacheRoot()}/rabbitmq`, "broker-");
  const logs = options.logs ?? `${dir}/logs`;
  const deadline = options.deadline ?? Date.now() + 300_000;
  const died = options.died ?? [];
  const port = options.port ?? freePort();
  const epmdPort = freePort();
  const distPort = freePort();
  for (const sub of ["home", "mnesia", "log", "etc"]) {
    await Deno.mkdir(`${dir}/${sub}`, { recursive: true });
  }
  await Deno.mkdir(logs, { recursive: true });
  await Deno.writeTextFile(
    `${dir}/etc/rabbitmq.conf`,
    [
      "# A test broker: loopback only.",
      `listeners.tcp.default = 127.0.0.1:${port}`,
      "loopback_users = none",
      "log.console = true",
      "log.file = false",
      "disk_free_limit.absolute = 50MB",
      "",
    ].join("\n"),
  );
  await Deno.writeTextFile(`${dir}/enabled_plugins`, "[].\n");
  const env = {
    HOME: `${dir}/home`,
    RABBITMQ_CONFIG_FILE: `${dir}/etc/rabbitmq.conf`,
    RABBITMQ_MNESIA_BASE: `${dir}/mnesia`,
    RABBITMQ_LOG_BASE: `${dir}/log`,
    RABBITMQ_ENABLED_PLUGINS_FILE: `${dir}/enabled_plugins`,
    RABBITMQ_NODENAME: `evictor${port}@localhost`,
    RABBITMQ_NODE_IP_ADDRESS: "127.0.0.1",
    RABBITMQ_NODE_PORT: String(port),
    RABBITMQ_DIST_PORT: String(distPort),
    ERL_EPMD_ADDRESS: "127.0.0.1",
    ERL_EPMD_PORT: String(epmdPort),
  };
  const start: ProcessStarter = options.start ??
    ((name, command, args, e) =>
      startProcessGroup(name, command, args, `${logs}/${name}.log`, {
        ...Deno.env.toObject(),
        ...e,
      }));
  const epmd = start("epmd", "epmd", [
    "-address",
    "127.0.0.1",
    "-port",
    String(epmdPort),
  ], env);
  let broker: ManagedProcess | undefined;
  const fail = async (error: unknown): Promise<never> => {
    await broker?.stop(10_000);
    await epmd.stop();
    if (owned) await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw new Error(
      `rabbitmq: ${
        error instanceof Error ? error.message : String(error)
      }\n${await tail(
        `${logs}/rabbitmq.log`,
        20,
      )}`,
    );
  };
  const startBroker = async (until = deadline) => {
    broker = start("rabbitmq", RABBITMQ_SERVER, [], env);
    await waitFor("rabbitmq", () => tcpOpen(port), until, died);
  };
  try {
    await waitFor("epmd", () => tcpOpen(epmdPort), deadline, died);
    await startBroker();
    // the port opens before the rabbit application has booted
    await ctl(env, ["await_startup"], `${logs}/setup-rabbitmq-startup.log`);
    // oslo.messaging declares a queue per notification topic so that none
    // is lost; nothing consumes them here: cap them.
    await ctl(env, [
      "set_policy",
      "--apply-to",
      "queues",
      "notification-queues-capped",
      NOTIFICATION_QUEUES,
      JSON.stringify({ "max-length": NOTIFICATION_QUEUE_MAX }),
    ], `${logs}/setup-rabbitmq-policy.log`);
  } catch (error) {
    return await fail(error);
  }
  const addUser = async (
    name: string,
    p: { configure: string; write: string; read: string },
    vhost = "/",
  ) => {
    const log = `${logs}/setup-rabbitmq-user-${name}.log`;
    // add_user fails for a user that exists: then only the permissions change.
    // The password differs from the name: logs redact the password.
    await ctl(env, ["add_user", name, `${name}-pw`], log).catch(() => {});
    await ctl(env, [
      "set_permissions",
      "-p",
      vhost,
      name,
      p.configure,
      p.write,
      p.read,
    ], log);
    const path = vhost === "/" ? "" : encodeURIComponent(vhost);
    return `amqp://${name}:${name}-pw@127.0.0.1:${port}/${path}`;
  };
  let feedUrl: string;
  try {
    feedUrl = await addUser(FEED_USER, feedPermissions("nova"));
  } catch (error) {
    return await fail(error);
  }
  return {
    url: `amqp://${USER}:${USER}@127.0.0.1:${port}/`,
    feedUrl,
    port,
    env,
    addUser,
    addVhost: async (name: string) => {
      const log = `${logs}/setup-rabbitmq-vhost.log`;
      await ctl(env, ["add_vhost", name], log);
      await ctl(
        env,
        ["set_permissions", "-p", name, USER, ".*", ".*", ".*"],
        log,
      );
      return `amqp://${USER}:${USER}@127.0.0.1:${port}/${
        encodeURIComponent(name)
      }`;
    },
    stopBroker: async () => {
      await broker?.stop(20_000);
    },
    startBroker: async () => {
      // A restart gets a wait of its own: the first start's may be spent.
      await startBroker(Date.now() + 300_000);
    },
    stop: async () => {
      await broker?.stop(20_000);
      await epmd.stop();
      if (owned) await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

/** What the test command announces in {@linkcode SHARED_RABBITMQ_ENV}. */
interface SharedDescriptor {
  url: string;
  feedUrl: string;
  port: number;
}

/** The announcement of a broker, for {@linkcode SHARED_RABBITMQ_ENV}. */
export function describeRabbitMq(mq: RabbitMq): string {
  const d: SharedDescriptor = {
    url: mq.url,
    feedUrl: mq.feedUrl,
    port: mq.port,
  };
  return JSON.stringify(d);
}

let shared: Promise<{ url: string; feedUrl: string }> | undefined;

/**
 * The run's broker (announced by the test command), or one of this test
 * process's own, started on first use and ended with the process. Tests
 * that stop the broker must start their own ({@linkcode startRabbitMq}).
 */
export function sharedRabbitMq(): Promise<{ url: string; feedUrl: string }> {
  shared ??= (async () => {
    const announced = Deno.env.get(SHARED_RABBITMQ_ENV);
    if (announced) return JSON.parse(announced) as SharedDescriptor;
    return await startRabbitMq();
  })();
  return shared;
}

async function ctl(
  env: Record<string, string>,
  args: string[],
  logPath: string,
): Promise<void> {
  const out = await new Deno.Command(RABBITMQCTL, {
    args,
    env: { ...Deno.env.toObject(), ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) +
    new TextDecoder().decode(out.stderr);
  await Deno.writeTextFile(logPath, text);
  if (!out.success) {
    throw new Error(
      `rabbitmqctl ${args[0]} failed (${out.code}): ${text.slice(-500)}`,
    );
  }
}
