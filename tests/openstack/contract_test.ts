/**
 * Client-level contract: the same calls against the Nova simulator and the
 * real cloud of the real-OpenStack lane, the same assertions on what evictor
 * reads. Where the two differ, the simulator is changed to what Nova does.
 * Without the lane (no root, no apt-get) only the simulator runs.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  BadRequestError,
  ConflictError,
  NotFoundError,
} from "../../openstack/errors.ts";
import {
  type Backend,
  backendKinds,
  openBackend,
  type ServerSpec,
  SIZES,
} from "./contract_backends.ts";

const kinds = await backendKinds();
// The real cloud is slow under load: one case may take minutes.
const STEP_TIMEOUT_MS = 300_000;

/** Runs `fn` against each backend with `servers`, closing it afterwards. */
function contract(
  name: string,
  servers: ServerSpec[],
  fn: (b: Backend) => Promise<void>,
) {
  Deno.test({
    name: `contract: ${name}`,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async (t) => {
      for (const kind of kinds) {
        await t.step(kind, async () => {
          const b = await openBackend(kind, servers);
          try {
            await withTimeout(fn(b), STEP_TIMEOUT_MS, `${name} on ${kind}`);
          } catch (error) {
            if (kind === "nova" && error instanceof Error) {
              error.message += `\n${await b.logTails()}`;
            }
            throw error;
          } finally {
            await b.close();
          }
        });
      }
    },
  });
}

async function withTimeout<T>(p: Promise<T>, ms: number, what: string) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`${what}: no end after ${ms} ms`)),
          ms,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

async function until<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs = 120_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const v = await fn();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

const NOVA_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000000$/;

contract("Keystone catalog has compute and placement", [], async (b) => {
  const compute = await b.session.endpoint("compute");
  const placement = await b.session.endpoint("placement");
  assert.match(compute, /^http:\/\/127\.0\.0\.1:\d+\//);
  assert.match(placement, /^http:\/\/127\.0\.0\.1:\d+/);
  const token = await b.session.token();
  assert.ok(token.expiresAt > Date.now());
  assert.ok(token.projectId);
  // An application credential is scoped to its project: the same catalog.
  const app = b.appCredentialSession();
  assert.equal(await app.endpoint("compute"), compute);
  assert.equal((await app.token()).projectId, token.projectId);
});

contract(
  "microversions: negotiated, echoed, 406 above the maximum",
  [],
  async (b) => {
    assert.equal(await b.nova.negotiate(), "2.90");
    const ok = await b.raw("compute", "GET", "/os-services", {
      microversion: "2.90",
    });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get("openstack-api-version"), "compute 2.90");
    assert.equal(ok.headers.get("x-openstack-nova-api-version"), "2.90");
    assert.match(ok.headers.get("vary") ?? "", /OpenStack-API-Version/i);
    const tooNew = await b.raw("compute", "GET", "/os-services", {
      microversion: "2.999",
    });
    assert.equal(tooNew.status, 406);
    const fault =
      (tooNew.body as Record<string, { code: number; message: string }>)[
        "computeFault"
      ];
    assert.equal(fault?.code, 406);
    assert.match(fault?.message ?? "", /Version 2\.999 is not supported/);
    const doc = await b.raw("compute", "GET", "/");
    const version = (doc.body as { version: { min_version: string } }).version;
    assert.equal(version.min_version, "2.1");
  },
);

contract("errors: 404, 400 and 409 bodies carry Nova's message", [
  { name: "stopped", host: "node001", size: "small", status: "SHUTOFF" },
], async (b) => {
  const missing = "0c0ffee0-0000-4000-8000-000000000000";
  await assert.rejects(
    () => b.nova.getServer(missing),
    (e: unknown) => {
      assert.ok(e instanceof NotFoundError, String(e));
      assert.match(
        e.message,
        new RegExp(`Instance ${missing} could not be found`),
      );
      return true;
    },
  );
  const bad = await b.raw(
    "compute",
    "GET",
    "/os-migrations?changes-since=not-a-time",
    { microversion: "2.90" },
  );
  assert.equal(bad.status, 400);
  assert.ok(
    (bad.body as Record<string, { code: number }>)["badRequest"]?.code === 400,
    JSON.stringify(bad.body),
  );
  await assert.rejects(
    () => b.nova.listMigrations({ changesSince: "not-a-time" }),
    BadRequestError,
  );
  const id = b.servers.get("stopped") as string;
  await assert.rejects(
    () => b.nova.liveMigrate(id),
    (e: unknown) => {
      assert.ok(e instanceof ConflictError, String(e));
      assert.match(
        e.message,
        new RegExp(
          `Cannot 'os-migrateLive' instance ${id} while it is in vm_state stopped`,
        ),
      );
      return true;
    },
  );
});

contract("servers detail: what the drain reads", [
  { name: "a", host: "node001", size: "small" },
  { name: "b", host: "node001", size: "medium" },
  { name: "p", host: "node001", size: "small", status: "PAUSED" },
  { name: "s", host: "node001", size: "small", status: "SHUTOFF" },
], async (b) => {
  // Only the servers this test made: a shared cloud may hold others.
  const ours = new Set(b.servers.values());
  const list = (await b.nova.listServersOnHost("node001")).filter((s) =>
    ours.has(s.id)
  );
  const byName = new Map(list.map((s) => [s.name, s]));
  assert.deepEqual([...byName.keys()].sort(), ["a", "b", "p", "s"]);
  const a = byName.get("a");
  assert.equal(a?.status, "ACTIVE");
  assert.equal(a?.host, "node001");
  assert.equal(a?.hypervisorHostname, "node001");
  assert.equal(a?.taskState, null);
  assert.equal(a?.vmState, "active");
  assert.equal(a?.powerState, 1);
  assert.equal(a?.flavor.ramMb, 512);
  assert.equal(byName.get("b")?.flavor.ramMb, 2048);
  assert.equal(byName.get("p")?.status, "PAUSED");
  assert.equal(byName.get("p")?.vmState, "paused");
  // libvirt's 3 (paused): the lane's compute driver reports it, where
  // Nova's stock fake driver stays at 1 (running).
  assert.equal(byName.get("p")?.powerState, 3);
  assert.equal(byName.get("s")?.status, "SHUTOFF");
  assert.equal(byName.get("s")?.vmState, "stopped");
  assert.equal(byName.get("s")?.powerState, 4);
  const elsewhere = await b.nova.listServersOnHost("node002");
  assert.ok(!elsewhere.some((s) => ours.has(s.id)));
});

contract("os-hypervisors and os-services", [], async (b) => {
  const hv = await b.nova.findHypervisorByHostname("node002");
  assert.ok(hv);
  assert.match(hv.id, /^[0-9a-f-]{36}$/);
  assert.equal(hv.state, "up");
  assert.equal(hv.status, "enabled");
  assert.equal(hv.serviceHost, "node002");
  const svc = await b.nova.findComputeService("node002");
  assert.ok(svc);
  assert.equal(svc.id, hv.serviceId);
  assert.equal(svc.binary, "nova-compute");
  assert.equal(svc.state, "up");
  assert.equal(svc.status, "enabled");
  assert.equal(svc.disabledReason, null);
  const disabled = await b.nova.setComputeServiceStatus(
    svc.id,
    false,
    "evictor: contract",
  );
  assert.equal(disabled.status, "disabled");
  assert.equal(disabled.disabledReason, "evictor: contract");
  const seen = (await b.nova.listComputeServices()).find((s) =>
    s.id === svc.id
  );
  assert.equal(seen?.status, "disabled");
  const enabled = await b.nova.setComputeServiceStatus(svc.id, true);
  assert.equal(enabled.status, "enabled");
  assert.equal(enabled.disabledReason, null);
  assert.equal(await b.nova.findHypervisorByHostname("node999"), undefined);
  assert.equal(await b.nova.findComputeService("node999"), undefined);
});

contract(
  "Placement: provider, traits round trip, inventories",
  [],
  async (b) => {
    const rp = await b.placement.findResourceProvider("node003");
    assert.ok(rp);
    const before = await b.placement.getTraits(rp);
    await b.placement.ensureCustomTrait("CUSTOM_EVICTOR_CONTRACT");
    const after = await b.placement.setTraits(
      rp,
      (t) => [...t, "CUSTOM_EVICTOR_CONTRACT"],
    );
    assert.ok(after.traits.includes("CUSTOM_EVICTOR_CONTRACT"));
    assert.ok(after.generation > before.generation);
    await assert.rejects(
      () => b.placement.putTraits(rp, before.traits, before.generation),
      ConflictError,
    );
    const restored = await b.placement.setTraits(
      rp,
      (t) => t.filter((x) => x !== "CUSTOM_EVICTOR_CONTRACT"),
    );
    assert.deepEqual(restored.traits, before.traits);
    const inv = await b.placement.getInventories(rp);
    for (const rc of ["VCPU", "MEMORY_MB", "DISK_GB"]) {
      assert.ok(inv[rc], `${rc} in ${JSON.stringify(inv)}`);
      assert.ok((inv[rc]?.total ?? 0) > 0);
    }
    assert.equal(await b.placement.findResourceProvider("node999"), undefined);
  },
);

contract("live migration: states, record fields, timings", [
  { name: "mover", host: "node001", size: "small" },
], async (b) => {
  const id = b.servers.get("mover") as string;
  const since = new Date(Date.now() - 2000);
  const accepted = await b.nova.liveMigrate(id);
  assert.ok(accepted.requestId?.startsWith("req-"));
  // A second start while the first runs: Nova's 409 on the task state.
  await assert.rejects(
    () => b.nova.liveMigrate(id),
    (e: unknown) => {
      assert.ok(e instanceof ConflictError, String(e));
      assert.match(
        e.message,
        new RegExp(
          `Cannot 'os-migrateLive' instance ${id} while it is in task_state migrating`,
        ),
      );
      return true;
    },
  );
  const statuses: string[] = [];
  let activeOnDestBeforeCompleted = false;
  let sawNullUpdatedAt = false;
  const done = await until(
    "the migration to end",
    async () => {
      const [records, server] = await Promise.all([
        b.nova.listMigrations({ instanceUuid: id }),
        b.nova.getServer(id),
      ]);
      const m = records[0];
      if (m === undefined) return undefined;
      if (m.updatedAt === null) sawNullUpdatedAt = true;
      if (statuses.at(-1) !== m.status) statuses.push(m.status);
      if (
        m.status !== "completed" && server.status === "ACTIVE" &&
        server.host !== "node001"
      ) activeOnDestBeforeCompleted = true;
      return ["completed", "error", "failed"].includes(m.status)
        ? m
        : undefined;
    },
    120_000,
    50,
  );
  assert.equal(done.status, "completed", statuses.join(" -> "));
  // Real Zed: accepted?, preparing, running, completed; never post-migrating.
  assert.ok(!statuses.includes("post-migrating"), statuses.join(" -> "));
  assert.ok(statuses.includes("running"), statuses.join(" -> "));
  assert.equal(done.migrationType, "live-migration");
  assert.equal(done.sourceCompute, "node001");
  assert.equal(done.sourceNode, "node001");
  assert.ok(done.destCompute && done.destCompute !== "node001");
  assert.equal(done.destNode, done.destCompute);
  // Nova never fills dest_host for a live migration.
  assert.equal(done.destHost, null);
  assert.match(done.createdAt, NOVA_TIME);
  assert.match(done.updatedAt ?? "", NOVA_TIME);
  const server = await b.nova.getServer(id);
  assert.equal(server.host, done.destCompute);
  assert.equal(server.status, "ACTIVE");
  // The filters the drain's observation uses.
  const bySource = await b.nova.listMigrations({
    host: "node001",
    changesSince: since,
  });
  assert.ok(bySource.some((m) => m.id === done.id));
  const byDest = await b.nova.listMigrations({
    host: done.destCompute,
    changesSince: since,
  });
  assert.ok(byDest.some((m) => m.id === done.id));
  const later = await b.nova.listMigrations({
    host: "node001",
    changesSince: new Date(Date.now() + 60_000),
  });
  assert.ok(!later.some((m) => m.id === done.id));
  const action = await b.nova.getInstanceAction(
    id,
    accepted.requestId as string,
  );
  assert.equal(action.action, "live-migration");
  // Observed on real Nova; reported, not asserted, when the poll missed it.
  console.log(
    `${b.kind}: ${
      statuses.join(" -> ")
    }; updated_at null seen: ${sawNullUpdatedAt}; ACTIVE on destination before completed: ${activeOnDestBeforeCompleted}`,
  );
});

contract("NoValidHost: a conductor-failed record and the action's reason", [
  { name: "stuck", host: "node001", size: "small" },
], async (b) => {
  for (const h of b.hosts.filter((h) => h !== "node001")) {
    await b.setHostEnabled(h, false);
  }
  const id = b.servers.get("stuck") as string;
  const accepted = await b.nova.liveMigrate(id);
  const failed = await until("the record to fail", async () => {
    const m = (await b.nova.listMigrations({ instanceUuid: id }))[0];
    return m && ["error", "failed"].includes(m.status) ? m : undefined;
  });
  assert.equal(failed.status, "error");
  assert.equal(failed.sourceCompute, "node001");
  assert.equal(failed.sourceNode, null);
  assert.equal(failed.destCompute, null);
  assert.equal(failed.destNode, null);
  assert.equal(failed.destHost, null);
  const server = await until("the server to settle", async () => {
    const s = await b.nova.getServer(id);
    return s.taskState === null ? s : undefined;
  });
  // Since 2.34 the checks are asynchronous: the server stays ACTIVE.
  assert.equal(server.status, "ACTIVE");
  assert.equal(server.host, "node001");
  const action = await b.nova.getInstanceAction(
    id,
    accepted.requestId as string,
  );
  const details = action.events.map((e) => e.details ?? "").join(" | ");
  assert.match(details, /No valid host was found/);
});

// Convergence: progress on the per-migration record, force_complete and
// abort, and their errors. The lane's driver holds `lane_unconverged` copies
// (remaining bytes hovering), the simulator its stuck ones.
const HELD = { lane_unconverged: "true", lane_copy_seconds: "2" } as const;
const MIB = 1024 * 1024;

/** A raw call that must answer `status`; gives the body. */
async function expectStatus(
  b: Backend,
  method: string,
  path: string,
  status: number,
  options: { body?: unknown; microversion?: string } = {},
): Promise<unknown> {
  const r = await b.raw("compute", method, path, options);
  assert.equal(
    r.status,
    status,
    `${method} ${path} (${options.microversion}): ${JSON.stringify(r.body)}`,
  );
  return r.body;
}

/** The message of a Nova fault body (`{"badRequest": {message}}` etc.). */
function faultMessage(body: unknown): string {
  const fault = Object.values(body as Record<string, { message?: string }>)[0];
  return fault?.message ?? JSON.stringify(body);
}

interface ServerMigration {
  id: number;
  status: string;
  memory_total_bytes: number | null;
  memory_processed_bytes: number | null;
  memory_remaining_bytes: number | null;
}

/** The server's live migration in progress, once its copy reports bytes. */
function copyReporting(b: Backend, id: string): Promise<ServerMigration> {
  return until("a running copy with progress", async () => {
    const body = await expectStatus(
      b,
      "GET",
      `/servers/${id}/migrations`,
      200,
      { microversion: "2.80" },
    ) as { migrations: ServerMigration[] };
    const m = body.migrations[0];
    return m?.status === "running" && m.memory_total_bytes !== null
      ? m
      : undefined;
  });
}

function getMigration(b: Backend, id: string, mid: number) {
  return b.raw("compute", "GET", `/servers/${id}/migrations/${mid}`, {
    microversion: "2.80",
  });
}

/** Starts a live migration of `id` and waits for its copy to report. */
async function startHeldCopy(b: Backend, id: string) {
  await b.nova.liveMigrate(id);
  return await copyReporting(b, id);
}

/** Waits for the migration's record to leave the in-progress statuses. */
function finished(b: Backend, id: string, mid: number) {
  return until("the migration to end", async () => {
    const m = (await b.nova.listMigrations({ instanceUuid: id })).find((x) =>
      x.id === mid
    );
    const s = await b.nova.getServer(id);
    return m && ["completed", "cancelled", "error", "failed"].includes(
        m.status,
      ) &&
        s.taskState === null
      ? { record: m, server: s }
      : undefined;
  });
}

contract("unconverged copy: progress hovers, abort rolls back", [
  { name: "held", host: "node001", size: "small", migration: HELD },
  { name: "waiter", host: "node001", size: "small" },
], async (b) => {
  const id = b.servers.get("held") as string;
  const first = await startHeldCopy(b, id);
  const total = SIZES.small * MIB;
  assert.equal(first.memory_total_bytes, total);
  // One live migration at a time from node001: the next one queues, and
  // its record has no figures until its copy's first save.
  const waiter = b.servers.get("waiter") as string;
  await b.nova.liveMigrate(waiter);
  const queued = await until("the second migration queued", async () => {
    const body = await expectStatus(
      b,
      "GET",
      `/servers/${waiter}/migrations`,
      200,
      { microversion: "2.80" },
    ) as { migrations: ServerMigration[] };
    const m = body.migrations[0];
    return m?.status === "queued" ? m : undefined;
  });
  assert.deepEqual(
    [
      queued.memory_total_bytes,
      queued.memory_processed_bytes,
      queued.memory_remaining_bytes,
    ],
    [null, null, null],
  );
  // Past the copy's first pass: the libvirt driver saves every 5 s, so 12 s
  // of looks see at least two saves after the first.
  const samples: ServerMigration[] = [];
  const until12 = Date.now() + 12_000;
  while (Date.now() < until12) {
    const r = await getMigration(b, id, first.id);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    samples.push((r.body as { migration: ServerMigration }).migration);
    await new Promise((r) => setTimeout(r, 500));
  }
  for (const m of samples) {
    assert.equal(m.status, "running");
    assert.equal(m.memory_total_bytes, total);
    assert.ok((m.memory_remaining_bytes ?? 0) > total / 20, JSON.stringify(m));
  }
  const last = samples.at(-1) as ServerMigration;
  assert.ok((last.memory_processed_bytes ?? 0) > 0, JSON.stringify(last));
  console.log(
    `${b.kind}: remaining ${
      [...new Set(samples.map((m) => m.memory_remaining_bytes))].join(", ")
    } of ${total}`,
  );
  // Below 2.24 there is no abort.
  const old = await expectStatus(
    b,
    "DELETE",
    `/servers/${id}/migrations/${first.id}`,
    404,
    { microversion: "2.23" },
  );
  assert.match(faultMessage(old), /could not be found/);
  // An unknown migration of a migrating server.
  const unknown = await b.raw(
    "compute",
    "DELETE",
    `/servers/${id}/migrations/999999`,
    { microversion: "2.24" },
  );
  console.log(
    `${b.kind}: abort of an unknown migration: ${unknown.status} ${
      faultMessage(unknown.body)
    }`,
  );
  assert.equal(unknown.status, 404);
  assert.match(
    faultMessage(unknown.body),
    new RegExp(`Migration 999999 not found for instance ${id}`),
  );
  await expectStatus(
    b,
    "DELETE",
    `/servers/${id}/migrations/${first.id}`,
    202,
    { microversion: "2.24" },
  );
  const { record, server } = await finished(b, id, first.id);
  assert.equal(record.status, "cancelled");
  assert.equal(server.host, "node001");
  assert.equal(server.status, "ACTIVE");
  assert.equal(server.powerState, 1);
  // The queued one runs once the slot is free.
  const next = await until("the queued migration to start", async () => {
    const m = (await b.nova.listMigrations({ instanceUuid: waiter }))[0];
    return m && m.status !== "queued" ? m : undefined;
  });
  assert.equal((await finished(b, waiter, next.id)).record.status, "completed");
  // What a finished migration answers.
  const gone = await getMigration(b, id, first.id);
  assert.equal(gone.status, 404);
  assert.match(
    faultMessage(gone.body),
    new RegExp(
      `Live migration ${first.id} for server ${id} is not in progress`,
    ),
  );
  const again = await expectStatus(
    b,
    "DELETE",
    `/servers/${id}/migrations/${first.id}`,
    409,
    { microversion: "2.65" },
  );
  assert.equal(
    faultMessage(again),
    `Instance ${id} is in an invalid state for 'abort live migration'`,
  );
  const late = await expectStatus(
    b,
    "POST",
    `/servers/${id}/migrations/${first.id}/action`,
    409,
    { microversion: "2.22", body: { force_complete: null } },
  );
  assert.equal(
    faultMessage(late),
    `Instance ${id} is in an invalid state for 'force_complete'`,
  );
});

contract("unconverged copy: force_complete ends it on the destination", [
  { name: "paused", host: "node001", size: "small", migration: HELD },
], async (b) => {
  const id = b.servers.get("paused") as string;
  const m = await startHeldCopy(b, id);
  // Below their microversions: no show (2.23), no force_complete (2.22).
  const noShow = await expectStatus(
    b,
    "GET",
    `/servers/${id}/migrations/${m.id}`,
    404,
    { microversion: "2.22" },
  );
  assert.match(faultMessage(noShow), /could not be found/);
  const noForce = await expectStatus(
    b,
    "POST",
    `/servers/${id}/migrations/${m.id}/action`,
    404,
    { microversion: "2.21", body: { force_complete: null } },
  );
  assert.match(faultMessage(noForce), /could not be found/);
  const unknown = await b.raw(
    "compute",
    "POST",
    `/servers/${id}/migrations/999999/action`,
    { microversion: "2.22", body: { force_complete: null } },
  );
  console.log(
    `${b.kind}: force_complete of an unknown migration: ${unknown.status} ${
      faultMessage(unknown.body)
    }`,
  );
  assert.equal(unknown.status, 400);
  assert.match(
    faultMessage(unknown.body),
    new RegExp(`Migration 999999 not found for instance ${id}`),
  );
  await expectStatus(
    b,
    "POST",
    `/servers/${id}/migrations/${m.id}/action`,
    202,
    { microversion: "2.22", body: { force_complete: null } },
  );
  const { record, server } = await finished(b, id, m.id);
  assert.equal(record.status, "completed");
  assert.ok(server.host && server.host !== "node001", server.host ?? "");
  assert.equal(server.host, record.destCompute);
  assert.equal(server.status, "ACTIVE");
  // Paused for the rest of the copy on the source, running on arrival.
  assert.equal(server.powerState, 1);
  const late = await expectStatus(
    b,
    "POST",
    `/servers/${id}/migrations/${m.id}/action`,
    409,
    { microversion: "2.22", body: { force_complete: null } },
  );
  assert.equal(
    faultMessage(late),
    `Instance ${id} is in an invalid state for 'force_complete'`,
  );
  const abort = await expectStatus(
    b,
    "DELETE",
    `/servers/${id}/migrations/${m.id}`,
    409,
    { microversion: "2.24" },
  );
  assert.equal(
    faultMessage(abort),
    `Instance ${id} is in an invalid state for 'abort live migration'`,
  );
});

contract("unconverged copy: force_complete with post-copy permitted", [
  { name: "postcopy", host: "node002", size: "small", migration: HELD },
], async (b) => {
  const id = b.servers.get("postcopy") as string;
  const m = await startHeldCopy(b, id);
  await expectStatus(
    b,
    "POST",
    `/servers/${id}/migrations/${m.id}/action`,
    202,
    { microversion: "2.22", body: { force_complete: null } },
  );
  const statuses: string[] = [];
  const { record, server } = await until(
    "the copy to end",
    async () => {
      const r = (await b.nova.listMigrations({ instanceUuid: id })).find((x) =>
        x.id === m.id
      );
      if (r && statuses.at(-1) !== r.status) statuses.push(r.status);
      const s = await b.nova.getServer(id);
      return r?.status === "completed" && s.taskState === null
        ? { record: r, server: s }
        : undefined;
    },
    120_000,
    50,
  );
  assert.ok(server.host && server.host !== "node002", server.host ?? "");
  assert.equal(server.host, record.destCompute);
  assert.equal(server.powerState, 1);
  console.log(`${b.kind}: post-copy statuses ${statuses.join(" -> ")}`);
  // Nova's record says so while the destination pulls the rest; the
  // simulator does not model post-copy (yet).
  if (b.kind === "nova") {
    assert.ok(statuses.includes("running (post-copy)"), statuses.join(" -> "));
  }
});
