/**
 * The Nova API of the simulator: servers, server actions, migrations,
 * hypervisors and services, with Nova's paths, microversion rules, status
 * codes and messages.
 *
 * @module
 */

import { z } from "zod";
import { json } from "./http_util.ts";
import { type RequestContext, type Route, route } from "./route.ts";
import {
  NovaFault,
  novaTime,
  serverStatus,
  serverTime,
  type SimHost,
  type SimMigration,
  type SimServer,
  type World,
} from "./world.ts";

/** Nova's `host_status` (2.16+): from the compute service of the host. */
function hostStatus(host: SimHost | undefined): string {
  if (host === undefined) return "";
  if (host.forcedDown) return "DOWN";
  if (!host.enabled) return "MAINTENANCE";
  return host.state === "up" ? "UP" : "UNKNOWN";
}

/**
 * A server as Nova shows it to an admin. `show` is the single-server view
 * (`GET /servers/{id}`), which alone carries `server_groups` (2.71+).
 */
function serverView(
  ctx: RequestContext,
  s: SimServer,
  show = false,
): Record<string, unknown> {
  const w = ctx.world;
  const host = s.host === null ? undefined : w.hosts.get(s.host);
  const mv = ctx.mv;
  const view: Record<string, unknown> = {
    id: s.id,
    name: s.name,
    status: serverStatus(s.vmState, s.taskState),
    tenant_id: s.projectId,
    user_id: s.userId,
    created: serverTime(s.created),
    updated: serverTime(s.updated),
    hostId: s.host === null ? "" : `h${s.host}`,
    image: "",
    addresses: {},
    metadata: {},
    key_name: null,
    accessIPv4: "",
    accessIPv6: "",
    progress: 0,
    config_drive: "",
    "OS-DCF:diskConfig": "MANUAL",
    "OS-EXT-AZ:availability_zone": host?.zone ?? "",
    "OS-EXT-SRV-ATTR:host": s.host,
    "OS-EXT-SRV-ATTR:hypervisor_hostname": s.host,
    "OS-EXT-SRV-ATTR:instance_name": `instance-${s.id.slice(0, 8)}`,
    "OS-EXT-STS:task_state": s.taskState,
    "OS-EXT-STS:vm_state": s.vmState,
    "OS-EXT-STS:power_state": s.powerState,
    "OS-SRV-USG:launched_at": novaTime(ctx.world.novaMs(s.created)),
    "OS-SRV-USG:terminated_at": null,
    "os-extended-volumes:volumes_attached": [],
    security_groups: [{ name: "default" }],
    links: [{ rel: "self", href: `${ctx.serviceBase}/servers/${s.id}` }],
    flavor: mv >= 47
      ? {
        vcpus: s.flavor.vcpus,
        ram: s.flavor.ramMb,
        disk: s.flavor.disk,
        ephemeral: 0,
        swap: 0,
        original_name: s.flavor.name,
        extra_specs: s.flavor.extraSpecs ?? {},
      }
      : { id: s.flavor.name, links: [] },
  };
  if (mv >= 3) {
    // The extended attributes 2.3 added (admin view), user_data included.
    Object.assign(view, {
      "OS-EXT-SRV-ATTR:hostname": hostnameOf(s.name),
      "OS-EXT-SRV-ATTR:kernel_id": "",
      "OS-EXT-SRV-ATTR:launch_index": 0,
      "OS-EXT-SRV-ATTR:ramdisk_id": "",
      "OS-EXT-SRV-ATTR:reservation_id": `r-${
        s.id.replaceAll("-", "").slice(0, 8)
      }`,
      "OS-EXT-SRV-ATTR:root_device_name": "/dev/vda",
      "OS-EXT-SRV-ATTR:user_data": s.userData,
    });
  }
  if (mv >= 9) view["locked"] = s.locked;
  if (mv >= 16) view["host_status"] = hostStatus(host);
  if (mv >= 19) view["description"] = null;
  if (mv >= 26) view["tags"] = [];
  if (mv >= 63) view["trusted_image_certificates"] = null;
  if (mv >= 71 && show) view["server_groups"] = [];
  if (mv >= 73) view["locked_reason"] = null;
  if (mv >= 96) view["pinned_availability_zone"] = null;
  if (s.vmState === "error" && s.fault !== null) {
    view["fault"] = {
      code: s.fault.code,
      created: serverTime(s.fault.created),
      message: s.fault.message,
    };
  }
  return view;
}

/** Nova's hostname from a display name (lower case, [a-z0-9-], <= 63). */
function hostnameOf(name: string): string {
  const h = name.toLowerCase().replace(/[ _]/g, "-").replace(/[^a-z0-9.-]/g, "")
    .replace(/^[.-]+|[.-]+$/g, "").slice(0, 63);
  return h === "" ? "server" : h;
}

function parseLimit(ctx: RequestContext): number {
  const raw = ctx.url.searchParams.get("limit");
  const max = ctx.world.scenario.maxLimit;
  if (raw === null) return max;
  if (!/^\d+$/.test(raw)) {
    throw new NovaFault(
      400,
      `Invalid input for query parameters limit. Value: ${raw}. '${raw}' does not match '^[0-9]*$'`,
    );
  }
  return Math.min(Number(raw), max);
}

function paginate<T>(
  ctx: RequestContext,
  items: T[],
  keyOf: (t: T) => string,
  resource: string,
): { page: T[]; next: string | undefined } {
  const limit = parseLimit(ctx);
  const marker = ctx.url.searchParams.get("marker");
  let start = 0;
  if (marker !== null) {
    const i = items.findIndex((t) => keyOf(t) === marker);
    if (i === -1) {
      throw new NovaFault(
        400,
        resource === "servers"
          ? `marker [${marker}] not found`
          : `Marker ${marker} could not be found.`,
      );
    }
    start = i + 1;
  }
  const page = items.slice(start, start + limit);
  let next: string | undefined;
  const last = page.at(-1);
  if (limit > 0 && page.length === limit && last !== undefined) {
    const q = new URLSearchParams(ctx.url.searchParams);
    q.set("limit", String(limit));
    q.set("marker", keyOf(last));
    next = `${ctx.serviceBase}${ctx.path}?${q}`;
  }
  return { page, next };
}

function parseTime(name: string, raw: string): number {
  const withZone = /([zZ]|[+-]\d\d:?\d\d)$/.test(raw) ? raw : `${raw}Z`;
  const t = Date.parse(withZone);
  if (Number.isNaN(t) || !/^\d{4}-\d\d-\d\dT/.test(raw)) {
    throw new NovaFault(
      400,
      `Invalid input for query parameters ${name}. Value: ${raw}. '${raw}' is not a 'date-time'`,
    );
  }
  return t;
}

function listServers(ctx: RequestContext): Response {
  const q = ctx.url.searchParams;
  const allTenants = q.has("all_tenants") &&
    !["0", "false", "False"].includes(q.get("all_tenants") ?? "");
  const host = q.get("host");
  const status = q.get("status");
  const items = ctx.world.listServers()
    .filter((s) => allTenants || s.projectId === ctx.projectId)
    .filter((s) => host === null || s.host === host)
    .filter((s) =>
      status === null ||
      serverStatus(s.vmState, s.taskState) === status.toUpperCase()
    )
    .sort((a, b) => b.created - a.created || (a.id < b.id ? 1 : -1));
  const { page, next } = paginate(ctx, items, (s) => s.id, "servers");
  const body: Record<string, unknown> = {
    servers: page.map((s) => serverView(ctx, s)),
  };
  if (next !== undefined) body["servers_links"] = [{ rel: "next", href: next }];
  return json(200, body);
}

function getServer(ctx: RequestContext): Response {
  const id = ctx.params["id"] ?? "";
  const s = ctx.world.findServerByRef(id);
  if (s === undefined || s.id !== id) {
    throw new NovaFault(404, `Instance ${id} could not be found.`);
  }
  return json(200, { server: serverView(ctx, s, true) });
}

const actionSchema = z.union([
  z.object({
    "os-migrateLive": z.object({
      host: z.string().nullable(),
      block_migration: z.union([z.boolean(), z.literal("auto")]),
      force: z.boolean().optional(),
    }).strict(),
  }).strict(),
  z.object({
    migrate: z.object({ host: z.string() }).strict().nullable(),
  }).strict(),
  z.object({ confirmResize: z.null() }).strict(),
  z.object({
    "os-resetState": z.object({ state: z.enum(["active", "error"]) })
      .strict(),
  }).strict(),
]);

/** The server actions the simulator knows (others: Nova's 400). */
const ACTIONS = ["os-migrateLive", "migrate", "confirmResize", "os-resetState"];

async function serverAction(ctx: RequestContext): Promise<Response> {
  const id = ctx.params["id"] ?? "";
  const body = await ctx.body();
  const parsed = actionSchema.safeParse(body);
  if (!parsed.success) {
    const key = typeof body === "object" && body !== null
      ? Object.keys(body)[0]
      : undefined;
    if (
      key !== undefined &&
      !ACTIONS.includes(key)
    ) {
      throw new NovaFault(400, `There is no such action: ${key}`);
    }
    const issue = parsed.error.issues[0];
    throw new NovaFault(
      400,
      `Invalid input for field/attribute ${
        issue?.path.map(String).join(".") ?? key
      }. Value: ${JSON.stringify(body)}. ${issue?.message ?? ""}`,
    );
  }
  const a = parsed.data;
  if ("os-migrateLive" in a) {
    if (ctx.mv >= 68 && a["os-migrateLive"].force !== undefined) {
      throw new NovaFault(
        400,
        "Invalid input for field/attribute os-migrateLive. Additional properties are not allowed ('force' was unexpected)",
      );
    }
    const { host, force } = a["os-migrateLive"];
    if (force === true && host === null) {
      throw new NovaFault(400, "Can't force to a non-provided destination");
    }
    ctx.counters.migrationRequest(id);
    // Before 2.30 a named host skipped the scheduler; 2.30 made that
    // `force`, and 2.68 removed it (a named host is always checked).
    const m = ctx.world.liveMigrate(
      id,
      host,
      ctx.mv < 30 ? host !== null : force === true,
    );
    ctx.world.recordAction(id, ctx.requestId, "live-migration", m);
    return json(202, undefined);
  }
  if ("migrate" in a) {
    ctx.counters.migrationRequest(id);
    const m = ctx.world.coldMigrate(id, a.migrate?.host ?? null);
    ctx.world.recordAction(id, ctx.requestId, "migrate", m);
    return json(202, undefined);
  }
  if ("os-resetState" in a) {
    return resetState(ctx, id, a["os-resetState"].state);
  }
  ctx.world.confirmResize(id);
  ctx.world.recordAction(id, ctx.requestId, "confirmResize");
  return json(204, undefined);
}

/**
 * `os-resetState` (admin): vm_state set, task_state cleared, whatever the
 * server was doing; recorded as a `resetState` instance action; 202.
 */
function resetState(
  ctx: RequestContext,
  id: string,
  state: "active" | "error",
): Response {
  ctx.world.advance();
  const s = ctx.world.findServerByRef(id);
  if (s === undefined || s.id !== id) {
    throw new NovaFault(404, `Instance ${id} could not be found.`);
  }
  ctx.world.recordAction(id, ctx.requestId, "resetState");
  ctx.world.resetState(id, state);
  return json(202, undefined);
}

/**
 * `GET /servers/{id}/os-instance-actions/{request_id}` as an admin sees it:
 * `updated_at` from 2.58, events' `host` and `hostId` from 2.62, `details`
 * (the failure's message) from 2.84; a deleted server's actions stay
 * readable (2.21+).
 */
function showInstanceAction(ctx: RequestContext): Response {
  const id = ctx.params["id"] ?? "";
  const requestId = ctx.params["request_id"] ?? "";
  ctx.world.advance();
  const s = ctx.world.servers.get(id);
  if (s === undefined || (s.deleted && ctx.mv < 21)) {
    throw new NovaFault(404, `Instance ${id} could not be found.`);
  }
  const a = ctx.world.instanceActions.get(`${id} ${requestId}`);
  if (a === undefined) {
    throw new NovaFault(404, `Action ${requestId} not found`);
  }
  const action: Record<string, unknown> = {
    action: a.action,
    instance_uuid: a.serverId,
    request_id: a.requestId,
    user_id: s.userId,
    project_id: s.projectId,
    start_time: novaTime(ctx.world.novaMs(a.startTime)),
    message: a.message,
  };
  if (ctx.mv >= 58) {
    action["updated_at"] = novaTime(ctx.world.novaMs(a.updatedAt));
  }
  action["events"] = a.events.map((e) => {
    const v: Record<string, unknown> = {
      event: e.event,
      start_time: novaTime(ctx.world.novaMs(e.startTime)),
      finish_time: e.finishTime === null
        ? null
        : novaTime(ctx.world.novaMs(e.finishTime)),
      result: e.result,
      traceback: e.result === "Error"
        ? `Traceback (most recent call last):\n  ...\nnova.exception: ${e.details}\n`
        : null,
    };
    if (ctx.mv >= 62) {
      v["host"] = e.host;
      v["hostId"] = e.host === "" ? "" : `hostid-${e.host}`;
    }
    if (ctx.mv >= 84) v["details"] = e.details;
    return v;
  });
  return json(200, { instanceAction: action });
}

/** Nova never fills `dest_host` of a live migration; a cold one's is the IP. */
function destHost(w: RequestContext["world"], m: SimMigration): string | null {
  if (m.type === "live-migration" || m.dest === null) return null;
  return w.hosts.get(m.dest)?.hostIp ?? null;
}

function migrationView(
  ctx: RequestContext,
  m: SimMigration,
): Record<string, unknown> {
  const w = ctx.world;
  const s = w.servers.get(m.serverId);
  const v: Record<string, unknown> = {
    id: m.id,
    created_at: novaTime(ctx.world.novaMs(m.createdAt)),
    updated_at: m.touched
      ? novaTime(
        ctx.world.novaMs(ctx.world.recordUpdatedAt(m, ctx.world.now())),
      )
      : null,
    dest_compute: m.dest,
    dest_host: destHost(w, m),
    dest_node: m.scheduled ? m.dest : null,
    instance_uuid: m.serverId,
    new_instance_type_id: m.type === "resize" ? 2 : 1,
    old_instance_type_id: 1,
    source_compute: m.source,
    source_node: m.scheduled ? m.source : null,
    status: m.status,
    migration_type: m.type,
  };
  if (ctx.mv >= 59) v["uuid"] = m.uuid;
  if (ctx.mv >= 80) {
    v["user_id"] = m.userId;
    v["project_id"] = m.projectId;
  }
  if (
    m.type === "live-migration" && NOVA_IN_PROGRESS.includes(m.status) &&
    s !== undefined
  ) {
    v["links"] = [{
      rel: "self",
      href: `${ctx.serviceBase}/servers/${m.serverId}/migrations/${m.id}`,
    }];
  }
  return v;
}

function listMigrations(ctx: RequestContext): Response {
  ctx.world.advance();
  const q = ctx.url.searchParams;
  const host = q.get("host");
  const instance = q.get("instance_uuid");
  const type = q.get("migration_type");
  const status = q.get("status");
  const source = q.get("source_compute");
  const sinceRaw = q.get("changes-since");
  const beforeRaw = q.get("changes-before");
  // Nova compares these with its own clock's times
  const off = ctx.world.novaClockOffsetMs;
  const since = sinceRaw === null
    ? undefined
    : parseTime("changes-since", sinceRaw) - off;
  const before = beforeRaw === null
    ? undefined
    : parseTime("changes-before", beforeRaw) - off;
  if (since !== undefined && before !== undefined && before < since) {
    throw new NovaFault(
      400,
      "The value of changes-since must be less than or equal to changes-before.",
    );
  }
  const now = ctx.world.now();
  const items = ctx.world.migrations
    .filter((m) => m.visibleAt <= now)
    .filter((m) => host === null || m.source === host || m.dest === host)
    .filter((m) => instance === null || m.serverId === instance)
    .filter((m) => type === null || m.type === type)
    .filter((m) => status === null || m.status === status)
    .filter((m) => source === null || m.source === source)
    .filter((m) =>
      since === undefined ||
      (m.touched && ctx.world.recordUpdatedAt(m, now) >= since)
    )
    .filter((m) =>
      before === undefined ||
      (m.touched && ctx.world.recordUpdatedAt(m, now) <= before)
    )
    .sort((a, b) => b.createdAt - a.createdAt || b.id - a.id);
  if (ctx.mv < 59) {
    return json(200, { migrations: items.map((m) => migrationView(ctx, m)) });
  }
  const { page, next } = paginate(ctx, items, (m) => m.uuid, "migrations");
  const body: Record<string, unknown> = {
    migrations: page.map((m) => migrationView(ctx, m)),
  };
  if (next !== undefined) {
    body["migrations_links"] = [{ rel: "next", href: next }];
  }
  return json(200, body);
}

function serverMigrationView(
  ctx: RequestContext,
  m: SimMigration,
): Record<string, unknown> {
  const w = ctx.world;
  // the record's fields: null until the copy's monitor first saved them
  const mem = w.savedProgress(m, w.now());
  const v: Record<string, unknown> = {
    id: m.id,
    uuid: m.uuid,
    server_uuid: m.serverId,
    status: m.status,
    source_compute: m.source,
    source_node: m.scheduled ? m.source : null,
    dest_compute: m.dest,
    dest_node: m.scheduled ? m.dest : null,
    dest_host: destHost(w, m),
    created_at: novaTime(ctx.world.novaMs(m.createdAt)),
    updated_at: m.touched
      ? novaTime(
        ctx.world.novaMs(ctx.world.recordUpdatedAt(m, ctx.world.now())),
      )
      : null,
    memory_total_bytes: mem === null ? null : m.memoryTotalBytes,
    memory_processed_bytes: mem?.processed ?? null,
    memory_remaining_bytes: mem?.remaining ?? null,
    // no block migration: libvirt reports no disk to copy
    disk_total_bytes: mem === null ? null : 0,
    disk_processed_bytes: mem === null ? null : 0,
    disk_remaining_bytes: mem === null ? null : 0,
  };
  // Nova's figures are the driver's saves: none before the copy starts.
  if (m.copyStartedAt === undefined) {
    for (const k of ["memory", "disk"]) {
      for (const f of ["total", "processed", "remaining"]) {
        v[`${k}_${f}_bytes`] = null;
      }
    }
  }
  if (ctx.mv < 59) delete v["uuid"];
  if (ctx.mv >= 80) {
    v["user_id"] = m.userId;
    v["project_id"] = m.projectId;
  }
  return v;
}

/**
 * Nova API's in-progress live-migration statuses (server_migrations.py,
 * migrations.py, the DB's `migration_get_in_progress_by_instance`): a copy
 * in post-copy is not among them.
 */
const NOVA_IN_PROGRESS = ["queued", "preparing", "running", "post-migrating"];

function inProgressLive(w: World, serverId: string): SimMigration[] {
  const now = w.now();
  return w.migrations.filter((m) =>
    m.serverId === serverId && m.type === "live-migration" &&
    NOVA_IN_PROGRESS.includes(m.status) && m.visibleAt <= now
  );
}

/** Nova's answer for a route its microversion does not have yet. */
function requireMicroversion(ctx: RequestContext, minor: number): void {
  if (ctx.mv < minor) {
    throw new NovaFault(404, "The resource could not be found.");
  }
}

function requireServer(ctx: RequestContext): SimServer {
  const id = ctx.params["id"] ?? "";
  ctx.world.advance();
  const s = ctx.world.findServerByRef(id);
  if (s === undefined || s.id !== id) {
    throw new NovaFault(404, `Instance ${id} could not be found.`);
  }
  return s;
}

function listServerMigrations(ctx: RequestContext): Response {
  requireMicroversion(ctx, 23);
  const s = requireServer(ctx);
  return json(200, {
    migrations: inProgressLive(ctx.world, s.id).map((m) =>
      serverMigrationView(ctx, m)
    ),
  });
}

function getServerMigration(ctx: RequestContext): Response {
  requireMicroversion(ctx, 23);
  const s = requireServer(ctx);
  const raw = ctx.params["mid"] ?? "";
  const now = ctx.world.now();
  const m = ctx.world.migrations.find((x) =>
    String(x.id) === raw && x.serverId === s.id && x.visibleAt <= now
  );
  // server_migrations.py show: three 404s, in this order.
  if (m === undefined) {
    throw new NovaFault(
      404,
      `In-progress live migration ${raw} is not found for server ${s.id}.`,
    );
  }
  if (m.type !== "live-migration") {
    throw new NovaFault(
      404,
      `Migration ${raw} for server ${s.id} is not live-migration.`,
    );
  }
  if (!NOVA_IN_PROGRESS.includes(m.status)) {
    throw new NovaFault(
      404,
      `Live migration ${raw} for server ${s.id} is not in progress.`,
    );
  }
  return json(200, { migration: serverMigrationView(ctx, m) });
}

function abortServerMigration(ctx: RequestContext): Response {
  requireMicroversion(ctx, 24);
  const s = requireServer(ctx);
  const raw = ctx.params["mid"] ?? "";
  if (!/^\d+$/.test(raw)) {
    throw new NovaFault(
      400,
      `Invalid input for field/attribute migration_id. Value: ${raw}.`,
    );
  }
  ctx.world.abortLiveMigration(s.id, Number(raw), ctx.mv, ctx.requestId);
  return json(202, undefined);
}

/**
 * `POST /servers/{id}/migrations/{mid}/action` with `{"force_complete":
 * null}` (2.22+): post-copy where the host permits it, else the VM is
 * paused until the copy converges (World.forceCompleteLiveMigration).
 */
async function serverMigrationAction(ctx: RequestContext): Promise<Response> {
  requireMicroversion(ctx, 22);
  const s = requireServer(ctx);
  const raw = ctx.params["mid"] ?? "";
  if (!/^\d+$/.test(raw)) {
    throw new NovaFault(
      400,
      `Invalid input for field/attribute migration_id. Value: ${raw}.`,
    );
  }
  const body = await ctx.req.json().catch(() => undefined);
  if (
    typeof body !== "object" || body === null || !("force_complete" in body)
  ) {
    throw new NovaFault(
      400,
      "Invalid input for field/attribute force_complete. Value: None.",
    );
  }
  ctx.world.forceCompleteLiveMigration(s.id, Number(raw), ctx.requestId);
  return json(202, undefined);
}

function parseBool(name: string, raw: string | null): boolean {
  if (raw === null) return false;
  const v = raw.toLowerCase();
  if (["true", "1", "yes", "on", "y", "t"].includes(v)) return true;
  if (["false", "0", "no", "off", "n", "f"].includes(v)) return false;
  throw new NovaFault(
    400,
    `Invalid input for query parameters ${name}. Value: ${raw}. '${raw}' is not a boolean`,
  );
}

function hypervisorView(
  ctx: RequestContext,
  h: SimHost,
  detail: boolean,
  withServers: boolean,
): Record<string, unknown> {
  const v: Record<string, unknown> = {
    id: ctx.mv >= 53 ? h.hypervisorId : h.hypervisorIntId,
    hypervisor_hostname: h.name,
    state: h.state,
    status: h.enabled ? "enabled" : "disabled",
  };
  if (detail) {
    v["hypervisor_type"] = "QEMU";
    v["hypervisor_version"] = 8002000;
    v["host_ip"] = h.hostIp;
    v["service"] = {
      host: h.name,
      id: ctx.mv >= 53 ? h.serviceId : h.serviceIntId,
      disabled_reason: h.disabledReason,
    };
    if (ctx.mv < 88) {
      const u = ctx.world.usage(h.name);
      Object.assign(v, {
        vcpus: h.vcpus,
        vcpus_used: u.vcpus,
        memory_mb: h.ramMb,
        memory_mb_used: u.ramMb,
        free_ram_mb: h.ramMb - u.ramMb,
        running_vms: ctx.world.listServers().filter((s) =>
          s.host === h.name
        ).length,
        local_gb: 1000,
        local_gb_used: 0,
        free_disk_gb: 1000,
        disk_available_least: 1000,
        current_workload: 0,
        // A JSON string before 2.28, an object since.
        cpu_info: ctx.mv >= 28 ? {} : "{}",
      });
    } else {
      v["uptime"] =
        " 10:00:00 up 42 days,  1 user,  load average: 0.10, 0.20, 0.30";
    }
  }
  if (withServers) {
    const servers = ctx.world.listServers().filter((s) => s.host === h.name)
      .map((s) => ({ uuid: s.id, name: `instance-${s.id.slice(0, 8)}` }));
    if (servers.length > 0 || ctx.mv >= 75) v["servers"] = servers;
  }
  return v;
}

function listHypervisors(detail: boolean) {
  return (ctx: RequestContext): Response => {
    const q = ctx.url.searchParams;
    const pattern = q.get("hypervisor_hostname_pattern");
    const withServers = parseBool("with_servers", q.get("with_servers"));
    if (pattern !== null && (q.has("limit") || q.has("marker"))) {
      throw new NovaFault(
        400,
        "Paging over hypervisors with the hypervisor_hostname_pattern query parameter is not supported.",
      );
    }
    let hosts = [...ctx.world.hosts.values()];
    if (pattern !== null) {
      // Nova matches the pattern as a SQL LIKE '%pattern%'.
      hosts = hosts.filter((h) => h.name.includes(pattern));
      if (hosts.length === 0) {
        throw new NovaFault(
          404,
          `No hypervisor matching '${pattern}' could be found.`,
        );
      }
    }
    return json(200, {
      hypervisors: hosts.map((h) =>
        hypervisorView(ctx, h, detail, withServers)
      ),
    });
  };
}

const UUID_RE =
  /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

/**
 * `GET /os-hypervisors/{id}`: the detail view of one hypervisor; from 2.53
 * the id is its UUID and `with_servers=true` adds its servers.
 */
function showHypervisor(ctx: RequestContext): Response {
  const id = ctx.params["id"] ?? "";
  const notFound = () =>
    new NovaFault(404, `Hypervisor with ID '${id}' could not be found.`);
  const withServers = ctx.mv >= 53 &&
    parseBool("with_servers", ctx.url.searchParams.get("with_servers"));
  let host: SimHost | undefined;
  if (ctx.mv >= 53) {
    if (!UUID_RE.test(id)) throw new NovaFault(400, `Invalid uuid ${id}`);
    const want = id.toLowerCase().replaceAll("-", "");
    host = [...ctx.world.hosts.values()].find((h) =>
      h.hypervisorId.replaceAll("-", "") === want
    );
  } else {
    if (!/^-?\d+$/.test(id)) throw notFound();
    host = [...ctx.world.hosts.values()].find((h) =>
      h.hypervisorIntId === Number(id)
    );
  }
  if (host === undefined) throw notFound();
  return json(200, {
    hypervisor: hypervisorView(ctx, host, true, withServers),
  });
}

function serviceView(ctx: RequestContext, h: SimHost): Record<string, unknown> {
  const v: Record<string, unknown> = {
    id: ctx.mv >= 53 ? h.serviceId : h.serviceIntId,
    binary: "nova-compute",
    host: h.name,
    zone: h.zone,
    status: h.enabled ? "enabled" : "disabled",
    state: h.forcedDown ? "down" : h.state,
    updated_at: novaTime(ctx.world.novaMs(h.updatedAt)),
    disabled_reason: h.disabledReason,
  };
  if (ctx.mv >= 11) v["forced_down"] = h.forcedDown;
  return v;
}

function listServices(ctx: RequestContext): Response {
  const q = ctx.url.searchParams;
  const binary = q.get("binary");
  const host = q.get("host");
  const hosts = [...ctx.world.hosts.values()]
    .filter(() => binary === null || binary === "nova-compute")
    .filter((h) => host === null || h.name === host);
  return json(200, { services: hosts.map((h) => serviceView(ctx, h)) });
}

const serviceUpdateSchema = z.object({
  status: z.enum(["enabled", "disabled"]).optional(),
  disabled_reason: z.string().min(1).max(255).optional(),
  forced_down: z.boolean().optional(),
}).strict();

async function updateService(ctx: RequestContext): Promise<Response> {
  if (ctx.mv < 53) {
    throw new NovaFault(404, "The resource could not be found.");
  }
  const id = ctx.params["id"] ?? "";
  if (
    !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)
  ) {
    throw new NovaFault(400, `Invalid uuid ${id}`);
  }
  const body = await ctx.body();
  const parsed = serviceUpdateSchema.safeParse(body);
  if (!parsed.success) {
    throw new NovaFault(
      400,
      `Invalid input for field/attribute ${
        parsed.error.issues[0]?.path.join(".") ?? "body"
      }. Value: ${JSON.stringify(body)}.`,
    );
  }
  const u = parsed.data;
  if (u.status === undefined && u.forced_down === undefined) {
    throw new NovaFault(
      400,
      "At least one of 'status' or 'forced_down' must be specified in the request body.",
    );
  }
  if (u.disabled_reason !== undefined && u.status !== "disabled") {
    throw new NovaFault(
      400,
      "Specifying 'disabled_reason' with status 'enabled' is invalid.",
    );
  }
  const h = [...ctx.world.hosts.values()].find((x) => x.serviceId === id);
  if (h === undefined) {
    throw new NovaFault(404, `Service ${id} could not be found.`);
  }
  ctx.world.setService(h, u.status, u.disabled_reason, u.forced_down);
  return json(200, { service: serviceView(ctx, h) });
}

function versionDoc(ctx: RequestContext): Response {
  return json(200, {
    version: {
      id: "v2.1",
      status: "CURRENT",
      version: ctx.world.scenario.maxMicroversion,
      min_version: "2.1",
      updated: "2013-07-23T11:33:21Z",
      links: [{ rel: "self", href: `${ctx.serviceBase}/` }],
    },
  });
}

/** The Nova routes (paths inside `/compute/v2.1`). */
export const novaRoutes: Route[] = [
  // Nova's version documents need no token (api-ref: "API Versions").
  route("compute", "GET", "/", versionDoc, false),
  route("compute", "GET", "/servers/detail", listServers),
  route("compute", "GET", "/servers/{id}", getServer),
  route("compute", "POST", "/servers/{id}/action", serverAction),
  route(
    "compute",
    "GET",
    "/servers/{id}/os-instance-actions/{request_id}",
    showInstanceAction,
  ),
  route("compute", "GET", "/servers/{id}/migrations", listServerMigrations),
  route("compute", "GET", "/servers/{id}/migrations/{mid}", getServerMigration),
  route(
    "compute",
    "DELETE",
    "/servers/{id}/migrations/{mid}",
    abortServerMigration,
  ),
  route(
    "compute",
    "POST",
    "/servers/{id}/migrations/{mid}/action",
    serverMigrationAction,
  ),
  route("compute", "GET", "/os-migrations", listMigrations),
  route("compute", "GET", "/os-hypervisors", listHypervisors(false)),
  route("compute", "GET", "/os-hypervisors/detail", listHypervisors(true)),
  route("compute", "GET", "/os-hypervisors/{id}", showHypervisor),
  route("compute", "GET", "/os-services", listServices),
  route("compute", "PUT", "/os-services/{id}", updateService),
];
