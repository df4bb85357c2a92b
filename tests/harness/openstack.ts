/**
 * A real OpenStack (Debian bookworm's Zed: MariaDB, RabbitMQ, Keystone,
 * Glance, Placement, Neutron server, Nova API/conductor/scheduler and several
 * nova-compute processes on the fake virt driver) on loopback, for the
 * real-OpenStack test lane. The packages come from `hack/openstack/install.sh`
 * (root and apt-get); the configuration from `hack/openstack/templates`.
 *
 * Every process runs under a watchdog in its own process group
 * ({@linkcode startProcessGroup}): nothing outlives the test process, even
 * when it is killed with SIGKILL. State lives in a folder of the run under
 * the cache folder; a folder whose owner is gone is removed by the next run.
 *
 * @module
 */
import {
  cacheRoot,
  freePort,
  makeOwnedTempDir,
  type ManagedProcess,
  runInstallScript,
  startProcessGroup,
  tail,
  waitFor,
} from "./processes.ts";
import { startRabbitMq } from "./rabbitmq.ts";

const ROOT = new URL("../../", import.meta.url);
const TEMPLATES = new URL("hack/openstack/templates/", ROOT).pathname;
const INSTALL = new URL("hack/openstack/install.sh", ROOT).pathname;
/** hack/openstack/driver: the lane's compute driver, first on the computes' path. */
const DRIVER_DIR = new URL("hack/openstack/driver", ROOT).pathname;

/**
 * The lane's own compute driver (hack/openstack/driver/lane_driver.py): Nova's
 * fake live-migrating driver whose live migrations a test steers per server
 * through metadata ({@linkcode LaneMigrationMetadata}), and which keeps its
 * guests across a compute restart.
 */
export const LANE_COMPUTE_DRIVER = "lane_driver.LaneDriver";

/**
 * Server metadata the lane's compute driver reads when a live migration's
 * copy starts (values are strings, as Nova's metadata).
 */
export interface LaneMigrationMetadata {
  /** Seconds the copy runs (default 5); abort and force-complete end it. */
  lane_copy_seconds?: string;
  /** How many attempts copy that long (default every one; later ones 5 s). */
  lane_slow_times?: string;
  /**
   * How a failing attempt ends after its copy: `error` or `failed` (rolled
   * back: the record gets that status, the server stays ACTIVE on its
   * source), or `instance-error` (the record `error`, the server ERROR).
   */
  lane_fail?: "error" | "failed" | "instance-error";
  /** How many attempts fail (default every one), counted per source host. */
  lane_fail_times?: string;
  /**
   * `"true"`: the copy does not converge (its remaining bytes hover at about
   * a third of the memory) until force-complete, abort or libvirt's
   * completion timeout.
   */
  lane_unconverged?: "true" | "false";
  /** How many attempts do not converge (default every one). */
  lane_unconverged_times?: string;
}

/** The packages whose presence means the cloud can start here. */
const MARKER_BINARIES = [
  "/usr/sbin/mariadbd",
  "/usr/lib/rabbitmq/bin/rabbitmq-server",
  "/usr/bin/keystone-manage",
  "/usr/bin/placement-manage",
  "/usr/bin/glance-api",
  "/usr/bin/neutron-server",
  "/usr/bin/nova-api",
  "/usr/bin/nova-compute",
  "/usr/bin/uwsgi_python3",
];

/** What {@linkcode startOpenStack} can be told. */
export interface OpenStackOptions {
  /** nova-compute processes, hosts `node001`.. (default 3). */
  computes?: number;
  /**
   * `compute_driver` (default {@linkcode LANE_COMPUTE_DRIVER}; Nova's own,
   * e.g. `fake.FakeLiveMigrateDriver`, also work).
   */
  computeDriver?: string;
  /** nova.conf `max_concurrent_live_migrations` (default 1, Nova's default). */
  maxConcurrentLiveMigrations?: number;
  /** Per-host `max_concurrent_live_migrations` over the one above. */
  liveMigrationLimitOf?: Record<string, number>;
  /** Hosts whose nova.conf sets `[libvirt] live_migration_permit_post_copy`. */
  permitPostCopyOn?: string[];
  /** Keystone token lifetime in seconds (default 3600). */
  tokenExpirationSeconds?: number;
  /** Give up starting after this long (default 900 s: heavy load is slow). */
  timeoutMs?: number;
}

/** A flavor the harness created. */
export interface LaneFlavor {
  id: string;
  name: string;
  ramMb: number;
  vcpus: number;
}

/** The running cloud. */
export interface OpenStackCloud {
  /** Keystone v3, `http://127.0.0.1:PORT/v3`. */
  authUrl: string;
  /** The catalog's region. */
  region: string;
  /** Public endpoints by service type. */
  endpoints: Record<
    "identity" | "compute" | "placement" | "image" | "network",
    string
  >;
  /** The compute hosts, `node001`.. */
  hosts: string[];
  /** Each host's nova.conf `max_concurrent_live_migrations`. */
  liveMigrationLimits: Record<string, number>;
  /**
   * The message broker, `amqp://user:pass@127.0.0.1:PORT/`. Nova publishes
   * versioned notifications on its topic exchange `nova` (routing keys
   * `versioned_notifications.info` and `.error`).
   */
  amqpUrl: string;
  /**
   * The same broker for evictor's notification feed: the user `evictor`
   * with exactly the permissions docs/configuration.md names.
   */
  feedAmqpUrl: string;
  /** The admin user (project admin, domain Default). */
  admin: { username: string; password: string; projectName: string };
  /** An application credential of the admin user (unrestricted). */
  applicationCredential: { id: string; secret: string };
  /** The image servers boot from. */
  imageId: string;
  /** Flavors, smallest first. */
  flavors: LaneFlavor[];
  /** clouds.yaml with clouds `lane` (password) and `lane-appcred`. */
  cloudsYaml(): string;
  /** An admin call to a service; JSON in and out. */
  call(
    service: keyof OpenStackCloud["endpoints"],
    method: string,
    path: string,
    options?: { body?: unknown; microversion?: string },
  ): Promise<{ status: number; headers: Headers; body: unknown }>;
  /** The last lines of every service's log, for failure messages. */
  logTails(lines?: number): Promise<string>;
  /** The folder with configuration, state and logs. */
  dir: string;
  /** Stops every process and removes the folder. */
  stop(): Promise<void>;
}

/** Whether the packages are installed (nothing to install first). */
export async function openStackInstalled(): Promise<boolean> {
  for (const path of MARKER_BINARIES) {
    if (!await Deno.stat(path).then(() => true, () => false)) return false;
  }
  return true;
}

/** Whether this machine can run the lane: installed, or root with apt-get. */
export async function openStackAvailable(): Promise<boolean> {
  if (await openStackInstalled()) return true;
  return Deno.uid() === 0 &&
    await Deno.stat("/usr/bin/apt-get").then(() => true, () => false);
}

/** Runs hack/openstack/install.sh (idempotent); its output goes to stderr. */
export async function installOpenStack(): Promise<void> {
  await runInstallScript(INSTALL);
}

const ADMIN_PASSWORD = "lane-admin-secret";
const REGION = "RegionOne";

/**
 * Installs (when needed), configures and starts the cloud, and waits until
 * Nova lists every compute as up and mapped, with an image and flavors.
 *
 * @example
 * ```ts ignore
 * const cloud = await startOpenStack({ computes: 3 });
 * try {
 *   const r = await cloud.call("compute", "GET", "/os-services");
 * } finally {
 *   await cloud.stop();
 * }
 * ```
 */
export async function startOpenStack(
  options: OpenStackOptions = {},
): Promise<OpenStackCloud> {
  if (!await openStackInstalled()) await installOpenStack();
  const computes = options.computes ?? 3;
  const deadline = Date.now() + (options.timeoutMs ?? 900_000);
  const dir = await makeOwnedTempDir(`${cacheRoot()}/openstack`, "cloud-");
  const processes: ManagedProcess[] = [];
  /** The broker's URL, once it is up. */
  let amqpUrl = "";
  let feedAmqpUrl = "";
  const died: string[] = [];
  const logs = `${dir}/logs`;
  const hosts = Array.from(
    { length: computes },
    (_, i) => `node${String(i + 1).padStart(3, "0")}`,
  );
  const ports = {
    DB_PORT: freePort(),
    RABBIT_PORT: freePort(),
    KEYSTONE_PORT: freePort(),
    PLACEMENT_PORT: freePort(),
    GLANCE_PORT: freePort(),
    NEUTRON_PORT: freePort(),
    NOVA_PORT: freePort(),
  };
  const liveMigrationLimits = Object.fromEntries(hosts.map((h) => [
    h,
    options.liveMigrationLimitOf?.[h] ??
      options.maxConcurrentLiveMigrations ?? 1,
  ]));
  const fields: Record<string, string> = {
    STATE: dir,
    ADMIN_PASSWORD,
    TOKEN_EXPIRATION: String(options.tokenExpirationSeconds ?? 3600),
    MAX_LIVE_MIGRATIONS: String(options.maxConcurrentLiveMigrations ?? 1),
    COMPUTE_DRIVER: options.computeDriver ?? LANE_COMPUTE_DRIVER,
    ...Object.fromEntries(
      Object.entries(ports).map(([k, v]) => [k, String(v)]),
    ),
  };
  const url = (port: number, path = "") => `http://127.0.0.1:${port}${path}`;
  const endpoints = {
    identity: url(ports.KEYSTONE_PORT, "/v3"),
    compute: url(ports.NOVA_PORT, "/v2.1"),
    placement: url(ports.PLACEMENT_PORT),
    image: url(ports.GLANCE_PORT),
    network: url(ports.NEUTRON_PORT),
  };
  const start = (
    name: string,
    command: string,
    args: string[],
    env?: Record<string, string>,
  ) => {
    const p = startProcessGroup(
      name,
      command,
      args,
      `${logs}/${name}.log`,
      env === undefined ? undefined : { ...Deno.env.toObject(), ...env },
    );
    processes.push(p);
    // A service that dies while the cloud starts fails the start at once.
    p.exited.then((code) => {
      if (!stopping) died.push(`${name} exited with code ${code}`);
    });
    return p;
  };
  const logTails = (lines = 15) => logTailsOf(logs, lines);
  let stopping = false;
  const stop = async () => {
    stopping = true;
    await Promise.all(processes.reverse().map((p) => p.stop(10_000)));
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  const phase = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    const t0 = Date.now();
    try {
      const r = await fn();
      log(`${what} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      return r;
    } catch (error) {
      throw new Error(
        `openstack: ${what} failed: ${
          error instanceof Error ? error.message : String(error)
        }\n${await logTails()}`,
      );
    }
  };

  try {
    await Deno.mkdir(logs, { recursive: true });
    for (
      const sub of [
        "etc/keystone",
        "etc/placement",
        "etc/glance",
        "etc/neutron",
        "etc/nova",
        "mysql",
        "keystone/lock",
        "glance/images",
        "glance/staging",
        "glance/tasks",
        "glance/lock",
        "neutron/lock",
        "nova/lock",
        ...hosts.flatMap((h) => [`${h}/instances`, `${h}/lock`]),
      ]
    ) await Deno.mkdir(`${dir}/${sub}`, { recursive: true });
    const render = async (template: string, to: string, more = {}) => {
      let text = await Deno.readTextFile(`${TEMPLATES}${template}`);
      const all: Record<string, string> = { ...fields, ...more };
      text = text.replace(/@([A-Z_]+)@/g, (m, k: string) => all[k] ?? m);
      const left = /@[A-Z_]+@/.exec(text);
      if (left) throw new Error(`${template}: no value for ${left[0]}`);
      await Deno.writeTextFile(`${dir}/${to}`, text);
    };
    await render("mariadb.cnf", "etc/mariadb.cnf");
    await render("keystone.conf", "etc/keystone/keystone.conf");
    await render("placement.conf", "etc/placement/placement.conf");
    await render("glance-api.conf", "etc/glance/glance-api.conf");
    await render("neutron.conf", "etc/neutron/neutron.conf");
    await render("ml2_conf.ini", "etc/neutron/ml2_conf.ini");
    await render("nova.conf", "etc/nova/nova.conf");
    for (const host of hosts) {
      await render("nova-compute.conf", `etc/nova/${host}.conf`, {
        HOST: host,
        MAX_LIVE_MIGRATIONS: String(liveMigrationLimits[host]),
        POST_COPY: String(options.permitPostCopyOn?.includes(host) ?? false),
      });
    }
    const run = (
      what: string,
      cmd: string,
      args: string[],
      env?: Record<string, string>,
    ) => runTool(what, cmd, args, `${logs}/setup-${what}.log`, deadline, env);

    // MariaDB and RabbitMQ (with our own epmd, so every pid is ours).
    await phase("database and message queue", async () => {
      await run("mariadb-install-db", "mariadb-install-db", [
        `--defaults-file=${dir}/etc/mariadb.cnf`,
        "--user=root",
        "--skip-test-db",
        "--auth-root-authentication-method=socket",
      ]);
      start("mariadb", "/usr/sbin/mariadbd", [
        `--defaults-file=${dir}/etc/mariadb.cnf`,
        "--user=root",
      ]);
      // RabbitMQ with its own epmd (every pid is ours), alongside.
      const broker = startRabbitMq({
        dir: `${dir}/rabbitmq`,
        port: ports.RABBIT_PORT,
        logs,
        deadline,
        died,
        start,
      });
      // Awaited below; a failure of the database first must not leave it unhandled.
      broker.catch(() => {});
      await waitFor(
        "mariadb",
        () => fileExists(`${dir}/mysql/mysqld.sock`),
        deadline,
        died,
      );
      const sql = [
        "CREATE USER IF NOT EXISTS 'openstack'@'127.0.0.1' IDENTIFIED BY 'openstack';",
        "GRANT ALL PRIVILEGES ON *.* TO 'openstack'@'127.0.0.1';",
        ...["keystone", "placement", "glance", "neutron", "nova_api", "nova"]
          .concat(["nova_cell0"])
          .map((db) => `CREATE DATABASE IF NOT EXISTS ${db};`),
      ].join(" ");
      await run("mariadb-users", "mariadb", [
        `--socket=${dir}/mysql/mysqld.sock`,
        "-e",
        sql,
      ]);
      amqpUrl = (await broker).url;
      feedAmqpUrl = (await broker).feedUrl;
    });

    // Schemas: Keystone first (the others only need the database).
    const nova = ["--config-file", `${dir}/etc/nova/nova.conf`];
    const cellDb =
      `mysql+pymysql://openstack:openstack@127.0.0.1:${ports.DB_PORT}`;
    const schemas = phase("schemas", () =>
      Promise.all([
        (async () => {
          const ks = [
            "--config-file",
            `${dir}/etc/keystone/keystone.conf`,
          ];
          await run("keystone-db", "keystone-manage", [...ks, "db_sync"]);
          for (const what of ["fernet_setup", "credential_setup"]) {
            await run(`keystone-${what}`, "keystone-manage", [
              ...ks,
              what,
              "--keystone-user",
              "root",
              "--keystone-group",
              "root",
            ]);
          }
          await run("keystone-bootstrap", "keystone-manage", [
            ...ks,
            "bootstrap",
            "--bootstrap-password",
            ADMIN_PASSWORD,
            "--bootstrap-admin-url",
            endpoints.identity,
            "--bootstrap-public-url",
            endpoints.identity,
            "--bootstrap-internal-url",
            endpoints.identity,
            "--bootstrap-region-id",
            REGION,
          ]);
        })(),
        run("placement-db", "placement-manage", [
          "--config-file",
          `${dir}/etc/placement/placement.conf`,
          "db",
          "sync",
        ]),
        run("glance-db", "glance-manage", [
          "--config-file",
          `${dir}/etc/glance/glance-api.conf`,
          "db_sync",
        ]),
        run("neutron-db", "neutron-db-manage", [
          "--config-file",
          `${dir}/etc/neutron/neutron.conf`,
          "--config-file",
          `${dir}/etc/neutron/ml2_conf.ini`,
          "upgrade",
          "heads",
        ]),
        (async () => {
          // Cells v2: the API database, cell0, cell1, then the cell schemas.
          await run("nova-api-db", "nova-manage", [
            ...nova,
            "api_db",
            "sync",
          ]);
          await run("nova-map-cell0", "nova-manage", [
            ...nova,
            "cell_v2",
            "map_cell0",
            "--database_connection",
            `${cellDb}/nova_cell0`,
          ]);
          await run("nova-create-cell", "nova-manage", [
            ...nova,
            "cell_v2",
            "create_cell",
            "--name",
            "cell1",
          ]);
          await run("nova-db", "nova-manage", [...nova, "db", "sync"]);
        })(),
      ]));

    // Keystone can serve as soon as its schema is there.
    const uwsgi = (name: string, port: number, wsgi: string, env = {}) =>
      start(name, "/usr/bin/uwsgi_python3", uwsgiArgs(port, wsgi), env);
    await schemas;
    uwsgi("keystone", ports.KEYSTONE_PORT, "/usr/bin/keystone-wsgi-public", {
      OS_KEYSTONE_CONFIG_DIR: `${dir}/etc/keystone`,
      OS_KEYSTONE_CONFIG_FILES: "keystone.conf",
    });
    uwsgi("placement", ports.PLACEMENT_PORT, "/usr/bin/placement-api", {
      OS_PLACEMENT_CONFIG_DIR: `${dir}/etc/placement`,
    });
    start("glance-api", "glance-api", [
      "--config-file",
      `${dir}/etc/glance/glance-api.conf`,
    ]);
    start("neutron-server", "neutron-server", [
      "--config-file",
      `${dir}/etc/neutron/neutron.conf`,
      "--config-file",
      `${dir}/etc/neutron/ml2_conf.ini`,
    ]);
    const admin = new AdminSession(endpoints.identity, ADMIN_PASSWORD);
    await phase("keystone", async () => {
      await waitFor("keystone token", () => admin.ready(), deadline, died);
      for (
        const [type, name] of [
          ["compute", "nova"],
          ["placement", "placement"],
          ["image", "glance"],
          ["network", "neutron"],
        ] as const
      ) {
        await admin.registerService(type, name, endpoints[type], REGION);
      }
    });
    start("nova-api", "nova-api", nova);
    start("nova-conductor", "nova-conductor", nova);
    start("nova-scheduler", "nova-scheduler", nova);
    await phase("placement", () =>
      waitFor(
        "placement",
        async () =>
          (await admin.call(endpoints.placement, "GET", "/")).status === 200,
        deadline,
        died,
      ));
    // Computes register with Placement when they start: Placement first.
    for (const host of hosts) {
      start(host, "nova-compute", [
        "--config-file",
        `${dir}/etc/nova/${host}.conf`,
      ], { PYTHONPATH: DRIVER_DIR });
    }
    await phase(
      "nova computes up",
      () =>
        waitFor(
          "every nova-compute up",
          async () => {
            const r = await admin.call(
              endpoints.compute,
              "GET",
              "/os-services",
            );
            if (r.status !== 200) return false;
            const services = (r.body as { services: ServiceRow[] }).services;
            return hosts.every((h) =>
              services.some((s) =>
                s.binary === "nova-compute" && s.host === h && s.state === "up"
              )
            );
          },
          deadline,
          died,
        ),
    );
    await phase("hosts mapped", async () => {
      await run("nova-discover", "nova-manage", [
        ...nova,
        "cell_v2",
        "discover_hosts",
      ]);
      await waitFor(
        "hypervisors and providers",
        async () => {
          const h = await admin.call(
            endpoints.compute,
            "GET",
            "/os-hypervisors",
          );
          const p = await admin.call(
            endpoints.placement,
            "GET",
            "/resource_providers",
          );
          return h.status === 200 && p.status === 200 &&
            (h.body as { hypervisors: unknown[] }).hypervisors.length ===
              hosts.length &&
            (p.body as { resource_providers: unknown[] }).resource_providers
                .length === hosts.length;
        },
        deadline,
        died,
      );
    });
    const imageId = await phase("image", async () => {
      await waitFor(
        "glance",
        async () =>
          (await admin.call(endpoints.image, "GET", "/v2/images")).status ===
            200,
        deadline,
        died,
      );
      return await admin.uploadImage(endpoints.image);
    });
    await phase("neutron", async () => {
      // A first database read configures SQLAlchemy's mappers; before it,
      // GET /v2.0/ports (Nova's first call) fails on the Port.port_forwardings
      // backref with a 500. Networks first, then ports, as Nova will.
      for (const path of ["/v2.0/networks", "/v2.0/ports"]) {
        await waitFor(
          `neutron ${path}`,
          async () =>
            (await admin.call(endpoints.network, "GET", path)).status === 200,
          deadline,
          died,
        );
      }
    });
    const flavors = await phase(
      "flavors",
      () => admin.createFlavors(endpoints.compute),
    );
    const applicationCredential = await admin.applicationCredential();

    return cloudFrom(
      {
        endpoints,
        hosts,
        liveMigrationLimits,
        amqpUrl,
        feedAmqpUrl,
        adminPassword: ADMIN_PASSWORD,
        applicationCredential,
        imageId,
        flavors,
        dir,
      },
      logTails,
      stop,
    );
  } catch (error) {
    await stop();
    throw error;
  }
}

/** uwsgi serving `wsgi` on 127.0.0.1:`port`. */
function uwsgiArgs(port: number, wsgi: string): string[] {
  return [
    // HTTP/1.1 with keep-alive: with plain --http-socket uwsgi closes
    // connections that Python clients then reuse (RemoteDisconnected).
    "--http11-socket",
    `127.0.0.1:${port}`,
    "--wsgi-file",
    wsgi,
    "--processes",
    "1",
    "--threads",
    "8",
    "--die-on-term",
    "--need-app",
    "--disable-logging",
  ];
}

/** A second Keystone of a running cloud; see {@linkcode startShortTokenKeystone}. */
export interface ShortTokenKeystone {
  /** Its Keystone v3, `http://127.0.0.1:PORT/v3`. */
  authUrl: string;
  /** Stops it (the cloud's own Keystone goes on). */
  stop(): Promise<void>;
}

/**
 * Starts a second Keystone on the cloud's database and keys whose tokens
 * live `seconds`. The rest of the cloud (Nova's, Placement's token checks)
 * accepts its tokens as the first one's, and refuses them once expired: a
 * client that authenticates here has to re-authenticate, while the shared
 * cloud keeps its long tokens. The process belongs to the caller (it is
 * killed with it).
 */
export async function startShortTokenKeystone(
  cloud: OpenStackCloud,
  seconds: number,
): Promise<ShortTokenKeystone> {
  if (!Number.isInteger(seconds) || seconds < 1) {
    throw new RangeError(
      `token lifetime: got ${seconds}; expected an integer number of seconds >= 1`,
    );
  }
  const port = freePort();
  const conf = `${cloud.dir}/etc/keystone-${port}`;
  await Deno.mkdir(conf, { recursive: true });
  const text = await Deno.readTextFile(
    `${cloud.dir}/etc/keystone/keystone.conf`,
  );
  await Deno.writeTextFile(
    `${conf}/keystone.conf`,
    text.replace(/^expiration = \d+$/m, `expiration = ${seconds}`),
  );
  const p = startProcessGroup(
    `keystone-${port}`,
    "/usr/bin/uwsgi_python3",
    uwsgiArgs(port, "/usr/bin/keystone-wsgi-public"),
    `${cloud.dir}/logs/keystone-${port}.log`,
    {
      ...Deno.env.toObject(),
      OS_KEYSTONE_CONFIG_DIR: conf,
      OS_KEYSTONE_CONFIG_FILES: "keystone.conf",
    },
  );
  const authUrl = `http://127.0.0.1:${port}/v3`;
  const died: string[] = [];
  p.exited.then((code) => died.push(`keystone-${port} exited with ${code}`));
  try {
    await waitFor(
      `a token from the Keystone on port ${port}`,
      () => new AdminSession(authUrl, cloud.admin.password).ready(),
      Date.now() + 120_000,
      died,
    );
  } catch (error) {
    await p.stop(10_000);
    throw error;
  }
  return { authUrl, stop: () => p.stop(10_000) };
}

/** The environment variable that hands a running cloud to test processes. */
export const SHARED_OPENSTACK_ENV = "EVICTOR_OPENSTACK";

/** What a running cloud is, as text for {@linkcode SHARED_OPENSTACK_ENV}. */
interface Descriptor {
  endpoints: OpenStackCloud["endpoints"];
  hosts: string[];
  liveMigrationLimits: Record<string, number>;
  amqpUrl: string;
  feedAmqpUrl: string;
  adminPassword: string;
  applicationCredential: { id: string; secret: string };
  imageId: string;
  flavors: LaneFlavor[];
  dir: string;
}

/** The text that {@linkcode sharedOpenStack} reads back in another process. */
export function describeOpenStack(cloud: OpenStackCloud): string {
  const d: Descriptor = {
    endpoints: cloud.endpoints,
    hosts: cloud.hosts,
    liveMigrationLimits: cloud.liveMigrationLimits,
    amqpUrl: cloud.amqpUrl,
    feedAmqpUrl: cloud.feedAmqpUrl,
    adminPassword: cloud.admin.password,
    applicationCredential: cloud.applicationCredential,
    imageId: cloud.imageId,
    flavors: cloud.flavors,
    dir: cloud.dir,
  };
  return JSON.stringify(d);
}

/**
 * The cloud a parent process started and announced in
 * {@linkcode SHARED_OPENSTACK_ENV}, or undefined; its `stop` is a no-op.
 */
export function sharedOpenStack(): OpenStackCloud | undefined {
  const text = Deno.env.get(SHARED_OPENSTACK_ENV);
  if (!text) return undefined;
  const d = JSON.parse(text) as Descriptor;
  const logs = `${d.dir}/logs`;
  return cloudFrom(d, (lines = 15) => logTailsOf(logs, lines), async () => {});
}

/**
 * The shared cloud when there is one, else a new one with `options` (whose
 * `stop` stops it).
 */
export async function useOpenStack(
  options: OpenStackOptions = {},
): Promise<OpenStackCloud> {
  return sharedOpenStack() ?? await startOpenStack(options);
}

async function logTailsOf(logs: string, lines: number): Promise<string> {
  const parts: string[] = [];
  try {
    for await (const e of Deno.readDir(logs)) {
      if (!e.isFile || e.name.startsWith("setup-")) continue;
      parts.push(`--- ${e.name}\n${await tail(`${logs}/${e.name}`, lines)}`);
    }
  } catch {
    parts.push(`(no logs in ${logs})`);
  }
  return parts.sort().join("\n");
}

function cloudFrom(
  d: Descriptor,
  logTails: (lines?: number) => Promise<string>,
  stop: () => Promise<void>,
): OpenStackCloud {
  const { endpoints, applicationCredential } = d;
  const admin = new AdminSession(endpoints.identity, d.adminPassword);
  return {
    authUrl: endpoints.identity,
    region: REGION,
    endpoints,
    hosts: d.hosts,
    liveMigrationLimits: d.liveMigrationLimits,
    amqpUrl: d.amqpUrl,
    feedAmqpUrl: d.feedAmqpUrl,
    admin: {
      username: "admin",
      password: d.adminPassword,
      projectName: "admin",
    },
    applicationCredential,
    imageId: d.imageId,
    flavors: d.flavors,
    dir: d.dir,
    cloudsYaml: () =>
      [
        "clouds:",
        "  lane:",
        "    auth:",
        `      auth_url: ${endpoints.identity}`,
        "      username: admin",
        `      password: ${d.adminPassword}`,
        "      project_name: admin",
        "      user_domain_name: Default",
        "      project_domain_name: Default",
        `    region_name: ${REGION}`,
        "    interface: public",
        "    identity_api_version: 3",
        "  lane-appcred:",
        "    auth_type: v3applicationcredential",
        "    auth:",
        `      auth_url: ${endpoints.identity}`,
        `      application_credential_id: ${applicationCredential.id}`,
        `      application_credential_secret: ${applicationCredential.secret}`,
        `    region_name: ${REGION}`,
        "    interface: public",
        "    identity_api_version: 3",
        "",
      ].join("\n"),
    call: (service, method, path, opts = {}) =>
      admin.call(endpoints[service], method, path, opts),
    logTails,
    stop,
  };
}

interface ServiceRow {
  binary: string;
  host: string;
  state: string;
  status: string;
}

function log(message: string) {
  console.error(`openstack: ${message}`);
}

async function fileExists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

/** Runs a set-up command to its end, output to `logPath`; throws with its tail. */
async function runTool(
  what: string,
  cmd: string,
  args: string[],
  logPath: string,
  deadline: number,
  env?: Record<string, string>,
): Promise<void> {
  const status = await new Deno.Command(cmd, {
    args,
    ...(env === undefined ? {} : { env }),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())),
  }).output();
  const text = new TextDecoder().decode(status.stdout) +
    new TextDecoder().decode(status.stderr);
  await Deno.writeTextFile(logPath, text, { append: true });
  if (!status.success) {
    throw new Error(
      `${what} (${cmd} ${args.join(" ")}) exited ${status.code}:\n${await tail(
        logPath,
        20,
      )}`,
    );
  }
}

/** The admin's token and the REST calls the set-up makes. */
class AdminSession {
  #token: string | undefined;
  #expires = 0;
  constructor(
    readonly authUrl: string,
    readonly password: string,
  ) {}

  async ready(): Promise<boolean> {
    await this.token();
    return true;
  }

  async token(): Promise<string> {
    if (this.#token && Date.now() < this.#expires) return this.#token;
    const r = await fetch(`${this.authUrl}/auth/tokens`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        auth: {
          identity: {
            methods: ["password"],
            password: {
              user: {
                name: "admin",
                domain: { name: "Default" },
                password: this.password,
              },
            },
          },
          scope: { project: { name: "admin", domain: { name: "Default" } } },
        },
      }),
    });
    await r.body?.cancel();
    const token = r.headers.get("x-subject-token");
    if (r.status !== 201 || !token) {
      throw new Error(`keystone answered ${r.status}`);
    }
    this.#token = token;
    this.#expires = Date.now() + 600_000;
    return token;
  }

  async call(
    base: string,
    method: string,
    path: string,
    options: { body?: unknown; microversion?: string; raw?: string } = {},
  ): Promise<{ status: number; headers: Headers; body: unknown }> {
    const headers: Record<string, string> = {
      "x-auth-token": await this.token(),
      accept: "application/json",
    };
    if (options.microversion) {
      headers["openstack-api-version"] = base.includes("/v2.1")
        ? `compute ${options.microversion}`
        : `placement ${options.microversion}`;
    }
    let body: BodyInit | undefined;
    if (options.raw) {
      headers["content-type"] = "application/octet-stream";
      body = options.raw;
    } else if (options.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(options.body);
    }
    const r = await fetch(`${base}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body }),
      signal: AbortSignal.timeout(120_000),
    });
    const text = await r.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch { /* not JSON */ }
    return { status: r.status, headers: r.headers, body: parsed };
  }

  async #ok(
    what: string,
    base: string,
    method: string,
    path: string,
    options: { body?: unknown; microversion?: string; raw?: string } = {},
  ): Promise<Record<string, unknown>> {
    const r = await this.call(base, method, path, options);
    if (r.status >= 300) {
      throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
    }
    return (r.body ?? {}) as Record<string, unknown>;
  }

  async registerService(
    type: string,
    name: string,
    url: string,
    region: string,
  ): Promise<void> {
    const s = await this.#ok(
      `service ${type}`,
      this.authUrl,
      "POST",
      "/services",
      {
        body: { service: { type, name, enabled: true } },
      },
    );
    const id = (s["service"] as { id: string }).id;
    for (const iface of ["public", "internal", "admin"]) {
      await this.#ok(`endpoint ${type}`, this.authUrl, "POST", "/endpoints", {
        body: {
          endpoint: {
            service_id: id,
            interface: iface,
            url,
            region_id: region,
          },
        },
      });
    }
  }

  async uploadImage(base: string): Promise<string> {
    const img = await this.#ok("image", base, "POST", "/v2/images", {
      body: {
        name: "lane-image",
        disk_format: "raw",
        container_format: "bare",
        visibility: "public",
      },
    });
    const id = img["id"] as string;
    await this.#ok("image data", base, "PUT", `/v2/images/${id}/file`, {
      raw: "evictor test image\n",
    });
    return id;
  }

  async createFlavors(base: string): Promise<LaneFlavor[]> {
    const specs = [
      { name: "lane.small", ramMb: 512, vcpus: 1 },
      { name: "lane.medium", ramMb: 2048, vcpus: 2 },
      { name: "lane.large", ramMb: 4096, vcpus: 4 },
    ];
    const out: LaneFlavor[] = [];
    for (const f of specs) {
      const r = await this.#ok(`flavor ${f.name}`, base, "POST", "/flavors", {
        body: {
          flavor: { name: f.name, ram: f.ramMb, vcpus: f.vcpus, disk: 1 },
        },
      });
      out.push({ ...f, id: (r["flavor"] as { id: string }).id });
    }
    return out;
  }

  async applicationCredential(): Promise<{ id: string; secret: string }> {
    const me = await fetch(`${this.authUrl}/auth/tokens`, {
      headers: {
        "x-auth-token": await this.token(),
        "x-subject-token": await this.token(),
      },
    });
    const body = await me.json() as { token: { user: { id: string } } };
    const r = await this.#ok(
      "application credential",
      this.authUrl,
      "POST",
      `/users/${body.token.user.id}/application_credentials`,
      {
        body: {
          application_credential: { name: "evictor-lane", unrestricted: true },
        },
      },
    );
    const ac = r["application_credential"] as { id: string; secret: string };
    return { id: ac.id, secret: ac.secret };
  }
}
