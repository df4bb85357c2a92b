/**
 * A live migration whose record completes while its server stays MIGRATING
 * on the source (real Zed when post_live_migration_at_destination fails on
 * a Neutron 401; the simulator's `strand` fault): the drain reports it
 * within the bound (skipped, a Warning Event, Evicting
 * False/WaitingForPerson once it is all that is left, none failed), frees its slot for the others, never starts it
 * again while the task shows, and finishes once a person resets it
 * (`os-resetState` over Nova's API). A real API server, the simulator over
 * HTTP, 20 times faster than real time.
 */
import assert from "node:assert/strict";
import { EVENTS } from "../framework/events.ts";
import { DEFAULT_PLAN_OPTIONS } from "../controllers/eviction/plan_options.ts";
import { sharedEnvtest } from "./harness/envtest.ts";
import {
  drained,
  type DrainEnv,
  startDrainEnv,
  uniqueSuffix,
  waitFor,
} from "./harness/eviction_env.ts";
import { call, passwordToken } from "./harness/nova_sim/test_client.ts";

const POLL_MS = 50;
const RATE = 20;

for (const notified of [false, true]) {
  Deno.test({
    name:
      "eviction: a migration completed with its server still MIGRATING is reported within the bound, frees its slot, and drains after a reset" +
      (notified ? " (with Nova's notifications)" : ""),
    sanitizeOps: false,
    sanitizeResources: false,
    fn: () => strandedDrain(notified),
  });
}

/** The drain of a host whose largest VM's migration strands it. */
async function strandedDrain(notified: boolean): Promise<void> {
  const api = await sharedEnvtest();
  const host = `stall-${uniqueSuffix()}`;
  const e = await startDrainEnv({
    env: api,
    pollIntervalMs: POLL_MS,
    ...(notified ? { notifications: {} } : {}),
    // One slot: a stranded VM that kept it would stop the whole drain.
    concurrency: "1",
    scenario: {
      seed: 23,
      timeScale: RATE,
      hosts: [
        { name: host, maxConcurrentLiveMigrations: 4 },
        { name: `${host}-dst`, ramMb: 1_000_000, vcpus: 1024 },
      ],
      servers: [
        // The largest: started first.
        { name: "stranded", host, ramMb: 16384 },
        { name: "a", host, ramMb: 2048 },
        { name: "b", host, ramMb: 2048 },
        { name: "c", host, ramMb: 2048 },
      ],
      faults: { strandedMigration: ["stranded"] },
    },
  });
  try {
    const id = e.sim.world.findServerByRef("stranded")?.id ?? "";
    await e.hypervisor(host);
    await e.evict(host, host);

    await reportedWithinBound(e, host, id);
    await othersDrained(e, host, id);

    // A person resets it: ACTIVE on the source, and the drain moves it.
    const token = await passwordToken(e.sim);
    const reset = await call(e.sim, token, "POST", `/servers/${id}/action`, {
      "os-resetState": { state: "active" },
    });
    assert.equal(reset.status, 202);
    const done = await drained(e, host);
    assert.equal(done.status?.migratedCount, 4);
    assert.deepEqual(done.status?.skipped ?? [], []);
    assert.equal(e.sim.counters().migrationsAccepted[id], 2);
    assert.deepEqual(
      e.sim.state().servers.filter((s) => s.host === host && !s.deleted),
      [],
    );
  } finally {
    await e.stop();
  }
}

/** Skipped past the bound (never sooner), naming the record and the reset. */
async function reportedWithinBound(
  e: DrainEnv,
  host: string,
  id: string,
): Promise<void> {
  const skipped = await waitFor(
    "the stranded VM skipped",
    async () =>
      (await e.eviction(host)).status?.skipped?.find((s) => s.id === id),
  );
  const seenAt = e.sim.world.now();
  const record = e.sim.state().migrations.find((m) => m.serverId === id);
  assert.equal(record?.status, "completed");
  // The controller's settle interval: 3 poll intervals, on its clock.
  const boundMs = DEFAULT_PLAN_OPTIONS.clockSkewMs + 3 * POLL_MS * RATE;
  const late = seenAt - (record?.updatedAt ?? 0);
  // Nova writes whole seconds: the end it shows is up to 1 s before the
  // true one, and the controller can count only from what it shows.
  const novaResolutionMs = 1000;
  assert.ok(
    late > boundMs - novaResolutionMs,
    `reported ${late} ms after the end`,
  );
  // Passes come at least every 30 poll intervals while one is in
  // flight; the rest is slack for a loaded machine.
  assert.ok(late < boundMs + 120_000, `reported ${late} ms after the end`);
  assert.match(skipped.reason, new RegExp(`live-migration ${record?.id} `));
  assert.match(skipped.reason, /still shows status MIGRATING/);
  assert.match(
    skipped.reason,
    new RegExp(`nova reset-state --active ${id}`),
  );
}

/** The others drain through the freed slot; it is all that is left. */
async function othersDrained(
  e: DrainEnv,
  host: string,
  id: string,
): Promise<void> {
  const stalled = await waitFor("the others migrated", async () => {
    const ev = await e.eviction(host);
    return ev.status?.migratedCount === 3 ? ev : undefined;
  });
  const st = stalled.status ?? {};
  assert.equal(st.inFlightCount, 0);
  assert.deepEqual(st.outstandingInstances, [id]);
  assert.equal(st.finishedAt, undefined);
  const evicting = await waitFor(
    "Evicting False/WaitingForPerson",
    async () =>
      (await e.eviction(host)).status?.conditions?.find((c) =>
        c.type === "Evicting" && c.reason === "WaitingForPerson"
      ),
  );
  assert.equal(evicting.status, "False");
  assert.match(
    evicting.message ?? "",
    new RegExp(
      `^waiting for a person: 1 VMs left on the host, none failed: ${id} \\(migration ended, task stuck: `,
    ),
  );
  const warning = await waitFor("the InstanceSkipped Warning", async () => {
    const list = await e.client.list(EVENTS, { namespace: "default" });
    return (list.items as Array<{
      involvedObject?: { name?: string };
      type?: string;
      reason?: string;
      message?: string;
    }>).find((x) =>
      x.involvedObject?.name === host && x.reason === "InstanceSkipped"
    );
  });
  assert.equal(warning.type, "Warning");
  assert.match(warning.message ?? "", new RegExp(`^${id}: `));
  // Never started again while it shows the task (Nova would 409).
  assert.equal(e.sim.counters().migrationRequests[id], 1);
}
