/**
 * The two backends of the contract tests: the Nova simulator and the real
 * cloud of the real-OpenStack lane, behind one interface, so that one test
 * makes the same calls against both and asserts the same things about what
 * evictor reads.
 *
 * @module
 */
import { KeystoneSession } from "../../openstack/keystone.ts";
import { NovaClient } from "../../openstack/nova.ts";
import { PlacementClient } from "../../openstack/placement.ts";
import { type NovaSim, startNovaSim } from "../harness/nova_sim/mod.ts";
import {
  type LaneMigrationMetadata,
  openStackAvailable,
  type OpenStackCloud,
  type OpenStackOptions,
  useOpenStack,
} from "../harness/openstack.ts";
import { captureLogger } from "../harness/openstack_util.ts";
import { sharedRabbitMq } from "../harness/rabbitmq.ts";

/** Server sizes: the lane's flavors (and the same RAM in the simulator). */
export const SIZES = { small: 512, medium: 2048, large: 4096 } as const;

/** A server a test needs. */
export interface ServerSpec {
  name: string;
  host: string;
  size: keyof typeof SIZES;
  /** Default ACTIVE. */
  status?: "ACTIVE" | "SHUTOFF" | "PAUSED";
  /** What its live migrations do on the real cloud (the lane's driver). */
  migration?: LaneMigrationMetadata;
}

/** What an answer looked like on the wire. */
export interface RawAnswer {
  status: number;
  headers: Headers;
  body: unknown;
}

/** One backend, with clients on it and the servers a test asked for. */
export interface Backend {
  kind: "simulator" | "nova";
  session: KeystoneSession;
  nova: NovaClient;
  placement: PlacementClient;
  /** Compute hosts (at least three). */
  hosts: string[];
  /** Server ids by the names of the specs. */
  servers: Map<string, string>;
  /**
   * The broker the backend's Nova publishes its versioned notifications to
   * (opened with `notifications: true`; the lane's always does).
   */
  amqpUrl: string | undefined;
  /** A session authenticated with an application credential instead. */
  appCredentialSession(): KeystoneSession;
  /** A call as it goes over the wire (admin token). */
  raw(
    service: "compute" | "placement" | "identity",
    method: string,
    path: string,
    options?: { body?: unknown; microversion?: string },
  ): Promise<RawAnswer>;
  /** Enables or disables a host's compute service (admin, directly). */
  setHostEnabled(host: string, enabled: boolean): Promise<void>;
  /** Service log tails (real cloud) for failure messages. */
  logTails(): Promise<string>;
  /** Deletes what the backend created for this test. */
  close(): Promise<void>;
}

/** Which backends run here: always the simulator, Nova when the lane can. */
export async function backendKinds(): Promise<Backend["kind"][]> {
  return await openStackAvailable() ? ["simulator", "nova"] : ["simulator"];
}

/**
 * The lane's cloud: three computes; node003 runs three live migrations at
 * once (the policy-lowered test), node001 and node002 Nova's default of one;
 * node002 permits post-copy.
 */
export const LANE_CLOUD: OpenStackOptions = {
  computes: 3,
  liveMigrationLimitOf: { node003: 3 },
  // node002's force-complete switches to post-copy; the others' pause.
  permitPostCopyOn: ["node002"],
  // 2 minutes on a quiet machine; at a load of 35-50 on 2 cores the schemas
  // alone took 6-9 minutes and the default 15 ran out before the hosts
  // were mapped
  timeoutMs: 1_800_000,
};

let cloud: Promise<OpenStackCloud> | undefined;
/** The lane's cloud: the shared one, or one started for this process. */
export function laneCloud(): Promise<OpenStackCloud> {
  cloud ??= useOpenStack(LANE_CLOUD);
  return cloud;
}

/** Opens a backend of `kind` with `servers` on it (ACTIVE unless told). */
export async function openBackend(
  kind: Backend["kind"],
  servers: ServerSpec[],
  options: { notifications?: boolean } = {},
): Promise<Backend> {
  return kind === "simulator"
    ? await openSimulator(
      servers,
      options.notifications ? (await sharedRabbitMq()).url : undefined,
    )
    : await openNova(await laneCloud(), servers);
}

function sessionFor(
  authUrl: string,
  user: { username: string; password: string; projectName: string },
  region: string,
): KeystoneSession {
  return new KeystoneSession({
    authUrl,
    auth: {
      type: "password",
      username: user.username,
      password: user.password,
      userDomainName: "Default",
      projectName: user.projectName,
      projectDomainName: "Default",
    },
    regionName: region,
    logger: captureLogger(),
    timeoutMs: 60_000,
  });
}

function appCredSession(
  authUrl: string,
  credential: { id: string; secret: string },
  region: string,
): KeystoneSession {
  return new KeystoneSession({
    authUrl,
    auth: {
      type: "v3applicationcredential",
      applicationCredentialId: credential.id,
      applicationCredentialSecret: credential.secret,
    },
    regionName: region,
    logger: captureLogger(),
    timeoutMs: 60_000,
  });
}

async function rawCall(
  session: KeystoneSession,
  service: "compute" | "placement" | "identity",
  method: string,
  path: string,
  options: { body?: unknown; microversion?: string } = {},
): Promise<RawAnswer> {
  const token = await session.token();
  const base = await session.endpoint(service);
  const headers: Record<string, string> = {
    "x-auth-token": token.value,
    accept: "application/json",
  };
  if (options.microversion) {
    headers["openstack-api-version"] = `${service} ${options.microversion}`;
  }
  if (options.body !== undefined) headers["content-type"] = "application/json";
  const r = await fetch(`${base.replace(/\/$/, "")}${path}`, {
    method,
    headers,
    ...(options.body === undefined
      ? {}
      : { body: JSON.stringify(options.body) }),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await r.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch { /* not JSON */ }
  return { status: r.status, headers: r.headers, body };
}

async function openSimulator(
  specs: ServerSpec[],
  amqpUrl: string | undefined,
): Promise<Backend> {
  const hosts = ["node001", "node002", "node003"];
  const sim: NovaSim = await startNovaSim({
    seed: 3,
    timeScale: 1,
    hosts: hosts.map((name) => ({ name })),
    servers: specs.map((s) => ({
      name: s.name,
      host: s.host,
      ramMb: SIZES[s.size],
      vcpus: 1,
      ...(s.status === undefined ? {} : { status: s.status }),
    })),
  }, amqpUrl === undefined ? {} : { amqpUrl });
  const c = sim.credentials;
  const session = sessionFor(sim.authUrl, {
    username: c.password.username,
    password: c.password.password,
    projectName: c.password.projectName,
  }, c.region);
  const servers = new Map<string, string>();
  for (const s of sim.state().servers) servers.set(s.name, s.id);
  // The lane's driver fails live migrations by metadata; the simulator by
  // its fault of the same effect (rolled back, or the server in ERROR).
  // A copy the lane's driver holds unconverged is the simulator's stuck one.
  for (const spec of specs) {
    const fail = spec.migration?.lane_fail;
    if (fail !== undefined) {
      sim.injectMigrationFault(
        spec.name,
        fail === "instance-error" ? "error" : "fail",
        Number(spec.migration?.lane_fail_times ?? 1000),
      );
    }
    if (spec.migration?.lane_unconverged === "true") {
      sim.injectMigrationFault(
        spec.name,
        "stuck",
        Number(spec.migration?.lane_unconverged_times ?? 1000),
      );
    }
  }
  const backend: Backend = {
    kind: "simulator",
    session,
    amqpUrl,
    appCredentialSession: () =>
      appCredSession(sim.authUrl, c.applicationCredential, c.region),
    nova: new NovaClient(session),
    placement: new PlacementClient(session),
    hosts,
    servers,
    raw: (service, method, path, options) =>
      rawCall(session, service, method, path, options),
    setHostEnabled: async (host, enabled) => {
      const svc = await backend.nova.findComputeService(host);
      if (!svc) throw new Error(`no compute service on ${host}`);
      await backend.nova.setComputeServiceStatus(
        svc.id,
        enabled,
        enabled ? undefined : "contract test",
      );
    },
    logTails: () => Promise.resolve("(simulator)"),
    close: () => sim.close(),
  };
  return backend;
}

/**
 * A backend on `cloud` (any cloud of the harness, not only the lane's) with
 * `specs` booted on their hosts; every host is enabled first.
 */
export async function openNova(
  cloud: OpenStackCloud,
  specs: ServerSpec[],
): Promise<Backend> {
  const session = sessionFor(cloud.authUrl, cloud.admin, cloud.region);
  const nova = new NovaClient(session);
  const servers = new Map<string, string>();
  const backend: Backend = {
    kind: "nova",
    session,
    amqpUrl: cloud.amqpUrl,
    appCredentialSession: () =>
      appCredSession(cloud.authUrl, cloud.applicationCredential, cloud.region),
    nova,
    placement: new PlacementClient(session),
    hosts: cloud.hosts,
    servers,
    raw: (service, method, path, options) =>
      rawCall(session, service, method, path, options),
    setHostEnabled: async (host, enabled) => {
      const svc = await nova.findComputeService(host);
      if (!svc) throw new Error(`no compute service on ${host}`);
      await nova.setComputeServiceStatus(
        svc.id,
        enabled,
        enabled ? undefined : "contract test",
      );
    },
    logTails: () => cloud.logTails(),
    close: async () => {
      for (const host of cloud.hosts) {
        await backend.setHostEnabled(host, true).catch(() => {});
      }
      await deleteServers(cloud, [...servers.values()]);
    },
  };
  try {
    // A test killed before its clean-up may have left hosts disabled.
    for (const host of cloud.hosts) await backend.setHostEnabled(host, true);
    await bootServers(cloud, specs, servers);
  } catch (error) {
    await backend.close();
    throw new Error(
      `booting ${specs.length} servers failed: ${
        error instanceof Error ? error.message : String(error)
      }\n${await cloud.logTails()}`,
    );
  }
  return backend;
}

/**
 * Boots `specs` on the real cloud, each on its host (`"host"`, 2.74+), and
 * brings each to its status: pause or stop after ACTIVE.
 */
export async function bootServers(
  cloud: OpenStackCloud,
  specs: ServerSpec[],
  into: Map<string, string>,
): Promise<void> {
  for (const spec of specs) {
    const flavor = cloud.flavors.find((f) => f.ramMb === SIZES[spec.size]);
    if (!flavor) throw new Error(`no flavor with ${SIZES[spec.size]} MB`);
    const r = await cloud.call("compute", "POST", "/servers", {
      microversion: "2.74",
      body: {
        server: {
          name: spec.name,
          imageRef: cloud.imageId,
          flavorRef: flavor.id,
          networks: "none",
          host: spec.host,
          ...(spec.migration === undefined ? {} : {
            metadata: spec.migration,
          }),
        },
      },
    });
    if (r.status !== 202) {
      throw new Error(
        `boot ${spec.name}: ${r.status} ${JSON.stringify(r.body)}`,
      );
    }
    into.set(spec.name, (r.body as { server: { id: string } }).server.id);
  }
  for (const spec of specs) {
    const id = into.get(spec.name) as string;
    await waitServer(cloud, id, "ACTIVE");
    if (spec.status === "PAUSED" || spec.status === "SHUTOFF") {
      const action = spec.status === "PAUSED" ? { pause: null } : {
        "os-stop": null,
      };
      const r = await cloud.call("compute", "POST", `/servers/${id}/action`, {
        body: action,
      });
      if (r.status !== 202) {
        throw new Error(`${spec.status} ${spec.name}: ${r.status}`);
      }
      await waitServer(cloud, id, spec.status);
    }
  }
}

/** Waits until a server has `status` and no task (ERROR fails at once). */
export async function waitServer(
  cloud: OpenStackCloud,
  id: string,
  status: string,
  timeoutMs = 180_000,
): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  let last: Record<string, unknown> = {};
  while (Date.now() < deadline) {
    const r = await cloud.call("compute", "GET", `/servers/${id}`, {
      microversion: "2.90",
    });
    last = (r.body as { server?: Record<string, unknown> }).server ?? {};
    if (
      last["status"] === status && last["OS-EXT-STS:task_state"] === null
    ) return last;
    if (last["status"] === "ERROR" && status !== "ERROR") {
      throw new Error(
        `server ${id} went ERROR: ${JSON.stringify(last["fault"])}`,
      );
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(
    `server ${id} not ${status} after ${timeoutMs} ms: ${last["status"]}/${
      last["OS-EXT-STS:task_state"]
    }`,
  );
}

/** Deletes servers and waits until Nova no longer knows them. */
export async function deleteServers(
  cloud: OpenStackCloud,
  ids: string[],
): Promise<void> {
  for (const id of ids) {
    await cloud.call("compute", "DELETE", `/servers/${id}`).catch(() => {});
  }
  const deadline = Date.now() + 120_000;
  for (const id of ids) {
    while (Date.now() < deadline) {
      const r = await cloud.call("compute", "GET", `/servers/${id}`).catch(
        () => undefined,
      );
      if (r?.status === 404) break;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}
