/**
 * Progress, cheaply (a real API server, the simulator over HTTP, 20 times
 * faster than real time). A drain reads Nova's per-migration record
 * (`GET /servers/{id}/migrations/{mid}`) of a copy that runs long, at most
 * once per progress interval, and never of the short copies beside it
 * (they end before the next look); an ordinary drain of short copies makes
 * no progress read and no more Nova calls per VM than the same drain with
 * progress reads off (`--migration-progress-interval=0`).
 */
import assert from "node:assert/strict";
import { sharedEnvtest } from "./harness/envtest.ts";
import {
  startDrainEnv,
  uniqueSuffix,
  waitFor,
} from "./harness/eviction_env.ts";
import type { ServedCall } from "./harness/nova_sim/server.ts";

const TIME_SCALE = 20;
const POLL_MS = 200; // real: 4 s simulated
/** The progress interval: 30 s simulated. */
const INTERVAL_MS = 30_000;
const READ = "GET /compute/v2.1/servers/{id}/migrations/{mid}";

Deno.test({
  name:
    "eviction: a long copy's progress is read at most once per interval, the short copies' never",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const api = await sharedEnvtest();
    const host = `pg-${uniqueSuffix()}`;
    const e = await startDrainEnv({
      env: api,
      concurrency: "2",
      pollIntervalMs: POLL_MS,
      progressIntervalMs: INTERVAL_MS / TIME_SCALE,
      // a decision pending for every copy: the looks come by its reads
      planOptions: { migrationTimeoutSeconds: 3600 },
      scenario: {
        seed: 11,
        timeScale: TIME_SCALE,
        timing: { jitter: 0 },
        // Nova copies two at once here: the short ones pass the long one
        hosts: [{ name: host, maxConcurrentLiveMigrations: 2 }, {
          name: `${host}-d`,
        }],
        servers: [
          { name: "long", host, ramMb: 8192 },
          ...[1, 2, 3, 4].map((i) => ({
            name: `short${i}`,
            host,
            ramMb: 2048,
          })),
        ],
      },
    });
    const reads: ServedCall[] = [];
    const stop = e.sim.onCall((c) => {
      if (c.key === READ) reads.push(c);
    });
    try {
      const id = (name: string) =>
        e.sim.state().servers.find((s) => s.name === name)?.id ?? "";
      const long = id("long");
      e.sim.injectMigrationFault(long, "stuck");
      await e.hypervisor(host);
      await e.evict(host, host);
      const copyOfLong = () =>
        e.sim.state().migrations.find((m) =>
          m.serverId === long && m.status === "running"
        );
      // the short ones moved, the long one copying for 130 s (simulated)
      await waitFor(
        "the short VMs moved and the long copy read thrice",
        () => {
          const moved = e.sim.state().servers.filter((s) =>
            s.name.startsWith("short") && s.host !== host
          );
          return moved.length === 4 && reads.length >= 3 ? true : undefined;
        },
        120_000,
      ).catch(async (err) => {
        throw new Error(
          `${err}: ${reads.length} reads; ${
            JSON.stringify(
              e.sim.state().migrations.map((
                m,
              ) => [m.serverId === long, m.status]),
            )
          }; ${JSON.stringify((await e.eviction(host)).status?.inFlight)}\n${
            e.logs.slice(-20).join("")
          }`,
        );
      });
      const copy = copyOfLong();
      assert.ok(copy, "the long copy still runs");
      assert.deepEqual(
        [...new Set(reads.map((r) => r.params["id"]))],
        [long],
        "only the long copy is read",
      );
      assert.ok(reads.every((r) => r.params["mid"] === String(copy.id)));
      for (let i = 1; i < reads.length; i++) {
        const gap = (reads[i]?.atMs ?? 0) - (reads[i - 1]?.atMs ?? 0);
        // as Nova saw them arrive: a read's way there may take a while
        assert.ok(
          gap >= INTERVAL_MS / 2,
          `reads ${gap} ms apart (simulated), the interval is ${INTERVAL_MS}`,
        );
      }
    } finally {
      stop();
      await e.stop();
    }
  },
});

const VMS = 16;

/** An ordinary drain's Nova calls per VM and progress reads. */
async function ordinaryDrain(progressIntervalMs: number) {
  const api = await sharedEnvtest();
  const host = `po-${uniqueSuffix()}`;
  const e = await startDrainEnv({
    env: api,
    concurrency: "2",
    pollIntervalMs: POLL_MS,
    progressIntervalMs,
    planOptions: { migrationTimeoutSeconds: 3600 },
    scenario: {
      seed: 5,
      timeScale: TIME_SCALE,
      timing: { jitter: 0 },
      hosts: [{ name: host }, { name: `${host}-d` }],
      // each copies 4 s (simulated): well inside the progress interval
      serverGroups: [{ host, count: VMS, ramMb: [4096] }],
    },
  });
  try {
    await e.hypervisor(host);
    await e.evict(host, host);
    await waitFor(
      "the drain Succeeded",
      async () =>
        (await e.eviction(host)).status?.conditions?.some((c) =>
            c.type === "Evicting" && c.reason === "Succeeded"
          )
          ? true
          : undefined,
      120_000,
    );
    const calls = e.sim.counters().calls;
    const nova = Object.entries(calls)
      .filter(([k]) => k.includes("/compute/"))
      .reduce((sum, [, n]) => sum + n, 0);
    return { perVm: nova / VMS, reads: calls[READ] ?? 0 };
  } finally {
    await e.stop();
  }
}

Deno.test({
  name:
    "eviction: an ordinary drain of short copies reads no progress and costs no more Nova calls per VM than with progress reads off",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const off = await ordinaryDrain(0);
    const on = await ordinaryDrain(INTERVAL_MS / TIME_SCALE);
    assert.equal(on.reads, 0);
    assert.equal(off.reads, 0);
    // The same drain both ways: no read, no look for one. What differs is
    // the timers' luck under load, a few looks (two or three calls each);
    // a read of every copy at every look would add two or more per VM.
    assert.ok(
      on.perVm <= off.perVm + 0.5,
      `calls per VM: ${on.perVm} with progress reads, ${off.perVm} without`,
    );
    console.log(`calls per VM: ${on.perVm} on, ${off.perVm} off`);
  },
});
