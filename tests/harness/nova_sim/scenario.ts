/**
 * The simulator's scenario: hosts, servers, timing and faults. Scenarios are
 * YAML or JSON files checked by the zod schema below; a bad file gets an
 * error naming the field.
 *
 * @module
 */

import { z } from "zod";
import { parse as parseYaml } from "yaml";

const name = z.string().min(1);
const traitName = z.string().regex(/^[A-Z0-9_]{1,255}$/, {
  message: "trait names are [A-Z0-9_]+",
});

/** An HTTP fault rule: matching calls get latency and/or an error. */
export const httpFaultSchema = z.strictObject({
  /** HTTP method to match (any when absent). */
  method: z.enum(["GET", "POST", "PUT", "DELETE"]).optional(),
  /**
   * Path template to match, e.g. `/servers/{id}/action` or
   * `/compute/v2.1/servers/detail` (suffix match); any when absent.
   */
  path: z.string().min(1).optional(),
  /** Respond with this status (500, 502, 503, 504 or 429). */
  status: z.union([
    z.literal(500),
    z.literal(502),
    z.literal(503),
    z.literal(504),
    z.literal(429),
  ]).optional(),
  /** Share of matching calls affected, 0..1 (default 1). */
  rate: z.number().min(0).max(1).default(1),
  /** Affect only this many calls, then stop (default: unlimited). */
  count: z.number().int().min(1).optional(),
  /** Added latency in real milliseconds. */
  latencyMs: z.number().int().min(0).default(0),
  /** `Retry-After` seconds for 429/503. */
  retryAfterSeconds: z.number().int().min(0).optional(),
  /**
   * Process the call, then never answer (the client times out): the
   * "response lost" case.
   */
  dropResponse: z.boolean().default(false),
  /** With `status`: process the call first, then answer with the error. */
  afterProcessing: z.boolean().default(false),
});

/** A per-server fault: the server's next `times` migrations are affected. */
const serverFault = z.union([
  name,
  z.strictObject({ server: name, times: z.number().int().min(1).default(1) }),
]);

/** The scenario schema. */
export const scenarioSchema = z.strictObject({
  /** Seed of the PRNG (ids, jitter, fault draws). */
  seed: z.number().int().default(1),
  /** Virtual seconds per real second. */
  timeScale: z.number().positive().default(1),
  /** Region of the catalog endpoints. */
  region: name.default("RegionOne"),
  /** Highest Nova microversion served. */
  maxMicroversion: z.string().regex(/^2\.\d+$/).default("2.96"),
  /** Highest Placement microversion served. */
  maxPlacementMicroversion: z.string().regex(/^1\.\d+$/).default("1.39"),
  /** Nova's osapi_max_limit: page size of lists. */
  maxLimit: z.number().int().min(1).default(1000),
  /** Keystone identities the simulator accepts. */
  credentials: z.strictObject({
    username: name.default("admin"),
    password: name.default("secret"),
    userDomainName: name.default("Default"),
    /** The id of the user's domain (Keystone's `default` domain is named Default). */
    userDomainId: name.default("default"),
    projectName: name.default("admin"),
    projectDomainName: name.default("Default"),
    /** The id of the project's domain. */
    projectDomainId: name.default("default"),
    applicationCredentials: z.array(z.strictObject({
      id: name,
      name: name.optional(),
      secret: name,
    })).default([{
      id: "evictor-appcred",
      name: "evictor",
      secret: "appcred-secret",
    }]),
  }).default({
    username: "admin",
    password: "secret",
    userDomainName: "Default",
    userDomainId: "default",
    projectName: "admin",
    projectDomainName: "Default",
    projectDomainId: "default",
    applicationCredentials: [{
      id: "evictor-appcred",
      name: "evictor",
      secret: "appcred-secret",
    }],
  }),
  /** Token lifetime in real seconds. */
  tokenTtlSeconds: z.number().positive().default(3600),
  /** How long migrations take (virtual time). */
  timing: z.strictObject({
    /** Live migration copy speed: MB of guest RAM per virtual second. */
    liveMbPerSecond: z.number().positive().default(1000),
    /** Cold migration copy speed: MB of guest RAM per virtual second. */
    coldMbPerSecond: z.number().positive().default(500),
    /** Jitter: each duration is multiplied by 1 ± jitter. */
    jitter: z.number().min(0).max(0.9).default(0.1),
    /** Conductor scheduling delay (accepted -> queued). */
    scheduleSeconds: z.number().min(0).default(0.5),
    /** preparing (live) / pre-migrating (cold). */
    prepareSeconds: z.number().min(0).default(2),
    /** post-migrating (cold migrations; real live migrations skip it). */
    postSeconds: z.number().min(0).default(1),
    /** From the live migration's 202 until its record can be listed. */
    recordDelaySeconds: z.number().min(0).default(0.2),
    /** From the server ACTIVE on the destination to the record `completed`. */
    liveCompleteSeconds: z.number().min(0).default(0.3),
  }).default({
    liveMbPerSecond: 1000,
    coldMbPerSecond: 500,
    jitter: 0.1,
    scheduleSeconds: 0.5,
    prepareSeconds: 2,
    postSeconds: 1,
    recordDelaySeconds: 0.2,
    liveCompleteSeconds: 0.3,
  }),
  /** Compute hosts (one hypervisor, one nova-compute service each). */
  hosts: z.array(z.strictObject({
    name,
    ramMb: z.number().int().positive().default(262144),
    vcpus: z.number().int().positive().default(64),
    traits: z.array(traitName).default([]),
    enabled: z.boolean().default(true),
    disabledReason: z.string().optional(),
    state: z.enum(["up", "down"]).default("up"),
    maxConcurrentLiveMigrations: z.number().int().min(1).default(1),
    zone: name.default("nova"),
    /**
     * Live-migration copy rate from this host, MB of guest RAM per virtual
     * second (default: `timing.liveMbPerSecond`).
     */
    copyMbPerSecond: z.number().positive().optional(),
    /**
     * `[libvirt] live_migration_downtime` (ms, Nova's default 500): a copy
     * switches over (ends) once what remains fits in this pause at the
     * copy rate.
     */
    maxDowntimeMs: z.number().int().min(100).default(500),
    /**
     * `[libvirt] live_migration_permit_post_copy`: `force_complete` (and the
     * timeout's `force_complete`) switch the copy to post-copy instead of
     * pausing the VM.
     */
    permitPostCopy: z.boolean().default(false),
    /**
     * `[libvirt] live_migration_completion_timeout`: seconds per GiB of RAM
     * (at least 2 GiB) after which Nova acts on its own; 0 = off. Real
     * Nova's default is 800; the simulator's is 0 so a `stuckMigration`
     * stays stuck until the caller acts.
     */
    completionTimeoutPerGiB: z.number().int().min(0).default(0),
    /** `[libvirt] live_migration_timeout_action`: what Nova does then. */
    timeoutAction: z.enum(["abort", "force_complete"]).default("abort"),
  })).min(1),
  /** Servers, each on a host. */
  servers: z.array(z.strictObject({
    name,
    id: z.uuid().optional(),
    host: name,
    ramMb: z.number().int().positive().default(2048),
    vcpus: z.number().int().positive().default(1),
    flavorName: name.optional(),
    /** Flavor extra specs (e.g. `trait:CUSTOM_GOLD: required`), shown at 2.47+. */
    extraSpecs: z.record(z.string(), z.string()).optional(),
    status: z.enum([
      "ACTIVE",
      "SHUTOFF",
      "PAUSED",
      "SUSPENDED",
      "RESCUE",
      "ERROR",
    ])
      .default("ACTIVE"),
    taskState: z.string().nullable().default(null),
    projectId: name.default("demo-project"),
    locked: z.boolean().default(false),
    /**
     * Marks the server as one Nova refuses to live-migrate, with Nova's
     * reason: `vtpm` (a vTPM whose secret is not host-managed) or `sev`.
     */
    liveMigrationBlocker: z.enum(["vtpm", "sev"]).optional(),
    /** user_data (base64) shown as `OS-EXT-SRV-ATTR:user_data` (2.3+). */
    userData: z.base64().optional(),
    /**
     * Guest memory the VM dirties per second while it runs (MB/s): its live
     * copy converges only when the host copies faster than this (absent:
     * the copy takes RAM / copy rate, as without a dirty rate).
     */
    dirtyRateMBps: z.number().min(0).optional(),
  })).default([]),
  /** Many generated servers: `count` per host with RAM cycling over `ramMb`. */
  serverGroups: z.array(z.strictObject({
    host: name,
    count: z.number().int().min(1),
    namePrefix: name.default("vm"),
    ramMb: z.array(z.number().int().positive()).min(1).default([2048]),
    vcpus: z.number().int().positive().default(1),
    status: z.enum(["ACTIVE", "SHUTOFF"]).default("ACTIVE"),
  })).default([]),
  /**
   * Things that happen at a virtual time (seconds after start): a server
   * arriving on a host (admin-forced, even a disabled one), a server
   * deleted, a server going to ERROR.
   */
  events: z.array(z.union([
    z.strictObject({
      atSeconds: z.number().min(0),
      addServer: z.strictObject({
        name,
        host: name,
        ramMb: z.number().int().positive().default(2048),
        vcpus: z.number().int().positive().default(1),
        status: z.enum(["ACTIVE", "SHUTOFF"]).default("ACTIVE"),
      }),
    }),
    z.strictObject({ atSeconds: z.number().min(0), deleteServer: name }),
    z.strictObject({
      atSeconds: z.number().min(0),
      errorServer: name,
      message: z.string().default("Simulated failure"),
    }),
  ])).default([]),
  /** Faults. */
  faults: z.strictObject({
    /** Live migrations that fail asynchronously: VM stays ACTIVE, migration `error`. */
    liveMigrationFailure: z.array(serverFault).default([]),
    /** Share of all live migrations that fail asynchronously (0..1). */
    liveMigrationFailureRate: z.number().min(0).max(1).default(0),
    /** Migrations after which the VM goes to ERROR (no fault, as Zed). */
    errorOnMigration: z.array(serverFault).default([]),
    /** Migrations that never finish (until aborted). */
    stuckMigration: z.array(serverFault).default([]),
    /** Servers deleted while their migration runs. */
    deleteDuringMigration: z.array(serverFault).default([]),
    /**
     * Live migrations whose post-migration step fails at the destination
     * (real Zed on a Neutron 401): the record completes, the server stays
     * MIGRATING on the source until `os-resetState`.
     */
    strandedMigration: z.array(serverFault).default([]),
    /** HTTP faults. */
    http: z.array(httpFaultSchema).default([]),
    /** Added latency of the token endpoint, real milliseconds. */
    tokenLatencyMs: z.number().int().min(0).default(0),
  }).default({
    liveMigrationFailure: [],
    liveMigrationFailureRate: 0,
    errorOnMigration: [],
    stuckMigration: [],
    deleteDuringMigration: [],
    strandedMigration: [],
    http: [],
    tokenLatencyMs: 0,
  }),
}).superRefine((s, ctx) => {
  const hosts = new Set<string>();
  s.hosts.forEach((h, i) => {
    if (hosts.has(h.name)) {
      ctx.addIssue({
        code: "custom",
        path: ["hosts", i, "name"],
        message: `duplicate host "${h.name}"`,
      });
    }
    hosts.add(h.name);
  });
  const servers = new Set<string>();
  s.servers.forEach((v, i) => {
    if (!hosts.has(v.host)) {
      ctx.addIssue({
        code: "custom",
        path: ["servers", i, "host"],
        message: `unknown host "${v.host}"`,
      });
    }
    if (servers.has(v.name)) {
      ctx.addIssue({
        code: "custom",
        path: ["servers", i, "name"],
        message: `duplicate server "${v.name}"`,
      });
    }
    servers.add(v.name);
    if (v.id !== undefined) servers.add(v.id);
  });
  s.events.forEach((ev, i) => {
    if ("addServer" in ev) {
      if (!hosts.has(ev.addServer.host)) {
        ctx.addIssue({
          code: "custom",
          path: ["events", i, "addServer", "host"],
          message: `unknown host "${ev.addServer.host}"`,
        });
      }
      servers.add(ev.addServer.name);
    }
  });
  s.events.forEach((ev, i) => {
    const ref = "deleteServer" in ev
      ? ev.deleteServer
      : "errorServer" in ev
      ? ev.errorServer
      : undefined;
    if (ref !== undefined && !servers.has(ref)) {
      ctx.addIssue({
        code: "custom",
        path: [
          "events",
          i,
          "deleteServer" in ev ? "deleteServer" : "errorServer",
        ],
        message: `unknown server "${ref}"`,
      });
    }
  });
  s.serverGroups.forEach((g, i) => {
    if (!hosts.has(g.host)) {
      ctx.addIssue({
        code: "custom",
        path: ["serverGroups", i, "host"],
        message: `unknown host "${g.host}"`,
      });
    }
  });
  for (
    const key of [
      "liveMigrationFailure",
      "errorOnMigration",
      "stuckMigration",
      "deleteDuringMigration",
      "strandedMigration",
    ] as const
  ) {
    s.faults[key].forEach((f, i) => {
      const ref = typeof f === "string" ? f : f.server;
      if (!servers.has(ref)) {
        ctx.addIssue({
          code: "custom",
          path: ["faults", key, i],
          message:
            `unknown server "${ref}" (servers from serverGroups cannot be named here)`,
        });
      }
    });
  }
});

/** A scenario as written (defaults optional). */
export type ScenarioInput = z.input<typeof scenarioSchema>;
/** A scenario with defaults filled in. */
export type Scenario = z.output<typeof scenarioSchema>;
/** An HTTP fault rule as written. */
export type HttpFaultInput = z.input<typeof httpFaultSchema>;
/** An HTTP fault rule with defaults. */
export type HttpFault = z.output<typeof httpFaultSchema>;

/**
 * Checks a scenario object; throws a `TypeError` naming the first bad field.
 *
 * @example
 * ```ts
 * import { parseScenario } from "./scenario.ts";
 * const s = parseScenario({ hosts: [{ name: "node001" }] });
 * console.log(s.hosts[0]?.maxConcurrentLiveMigrations); // 1
 * ```
 */
export function parseScenario(input: unknown, source = "scenario"): Scenario {
  const result = scenarioSchema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const at = issue === undefined || issue.path.length === 0
    ? "(top level)"
    : issue.path.map((p) => typeof p === "number" ? `[${p}]` : `.${String(p)}`)
      .join("").replace(/^\./, "");
  throw new TypeError(`${source}: ${at}: ${issue?.message ?? "invalid"}`);
}

/**
 * Reads a YAML or JSON scenario file.
 *
 * @example
 * ```ts ignore
 * import { loadScenarioFile } from "./scenario.ts";
 * const s = await loadScenarioFile("tests/harness/nova_sim/scenarios/small.yaml");
 * ```
 */
export async function loadScenarioFile(path: string): Promise<Scenario> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    throw new TypeError(
      `${path}: cannot read scenario file: ${
        e instanceof Error ? e.message : String(e)
      }`,
    );
  }
  let data: unknown;
  try {
    data = parseYaml(text);
  } catch (e) {
    const msg = e instanceof Error ? e.message.split("\n")[0] : String(e);
    throw new TypeError(`${path}: not valid YAML or JSON: ${msg}`);
  }
  return parseScenario(data, path);
}
