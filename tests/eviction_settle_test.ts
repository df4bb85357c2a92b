/**
 * The settled Succeeded, against the real API server and the Nova
 * simulator (20 times faster than real time; poll interval 2 s and settle
 * interval 6 s simulated): a VM placed on the host 1 s after its last VM
 * left, and one forced onto it 1 s after Succeeded, are each seen and
 * drained; a migration Nova queued towards the host before the drain
 * started keeps it from finishing; `kubectl evictor drain --wait` does not
 * return 0 before the settled Succeeded.
 */
import assert from "node:assert/strict";
import { drainOutcome, runPlugin } from "../cli/kubectl_plugin.ts";
import { EvictionKind } from "../controllers/kinds.ts";
import { sharedEnvtest } from "./harness/envtest.ts";
import {
  type DrainEnv,
  inProgress,
  serversOn,
  startDrainEnv,
  uniqueSuffix,
  waitFor,
} from "./harness/eviction_env.ts";
import type { ScenarioInput } from "./harness/nova_sim/mod.ts";

const TIME_SCALE = 20;
const s = uniqueSuffix();
const H = {
  late: `late-${s}`,
  forced: `forced-${s}`,
  queued: `queued-${s}`,
  src: `src-${s}`,
};
const DST = `dst-${s}`;
const SOURCE = {
  ramMb: 1_000_000,
  vcpus: 1024,
  maxConcurrentLiveMigrations: 4,
};

const scenario: ScenarioInput = {
  seed: 23,
  timeScale: TIME_SCALE,
  hosts: [
    { name: DST, ramMb: 8_000_000, vcpus: 8192 },
    { name: `dst2-${s}`, ramMb: 8_000_000, vcpus: 8192 },
    { name: H.late, ...SOURCE },
    { name: H.forced, ...SOURCE },
    { name: H.queued, ...SOURCE },
    // Nova's default per-host limit: a second migration from here waits queued.
    {
      name: H.src,
      ramMb: 1_000_000,
      vcpus: 1024,
      maxConcurrentLiveMigrations: 1,
    },
  ],
  servers: [
    { name: "l1", host: H.late, ramMb: 2048 },
    { name: "l2", host: H.late, ramMb: 4096 },
    { name: "f1", host: H.forced, ramMb: 2048 },
    { name: "f2", host: H.forced, ramMb: 2048 },
    { name: "traveller", host: DST, ramMb: 2048 },
    { name: "q1", host: H.queued, ramMb: 2048 },
    // Its migration never ends until the test aborts it: it holds src's
    // only slot, however slow the machine.
    { name: "blocker", host: H.src, ramMb: 2048 },
    { name: "waiter", host: H.src, ramMb: 2048 },
  ],
  faults: { stuckMigration: [{ server: "blocker", times: 1 }] },
};

/** Real ms for simulated seconds. */
const real = (simSeconds: number) => (simSeconds * 1000) / TIME_SCALE;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function idOf(e: DrainEnv, name: string): string {
  const id = e.sim.state().servers.find((x) => x.name === name)?.id;
  assert.ok(id !== undefined, `no server ${name}`);
  return id;
}

/** Servers on `host` or on their way to it. */
function onOrHeadingTo(e: DrainEnv, host: string): string[] {
  const heading = e.sim.state().migrations.filter((m) =>
    m.dest === host && inProgress(m.status)
  ).map((m) => m.serverId);
  return [...new Set([...serversOn(e.sim, host), ...heading])];
}

/**
 * Samples the Eviction and the simulator every 10 ms until stopped: the
 * longest stretch (simulated seconds) during which the Eviction read as a
 * settled Succeeded while a server was on or heading to the host.
 */
function watchWrongSucceeded(e: DrainEnv, name: string, host: string) {
  let stopped = false;
  let since: number | undefined;
  let longestMs = 0;
  let samples = 0;
  const loop = (async () => {
    while (!stopped) {
      try {
        const ev = await e.eviction(name);
        const wrong = drainOutcome(ev) === "Succeeded" &&
          onOrHeadingTo(e, host).length > 0;
        const now = performance.now();
        if (wrong) {
          since ??= now;
          longestMs = Math.max(longestMs, now - since);
          samples++;
        } else since = undefined;
      } catch { /* not created yet */ }
      await sleep(10);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return { longestSimSeconds: (longestMs * TIME_SCALE) / 1000, samples };
    },
  };
}

async function settledSucceeded(e: DrainEnv, name: string, after?: string) {
  return await waitFor(
    `Eviction ${name} settled Succeeded`,
    async () => {
      const ev = await e.eviction(name);
      if (drainOutcome(ev) !== "Succeeded") return undefined;
      return after === undefined || (ev.status?.finishedAt ?? "") > after
        ? ev
        : undefined;
    },
    60_000,
    10,
  );
}

/** The host's last VM has left: none on it, no migration from it in progress. */
async function lastDeparture(e: DrainEnv, host: string): Promise<void> {
  await waitFor(
    `the last VM left ${host}`,
    () => {
      const st = e.sim.state();
      const moving = st.migrations.some((m) =>
        m.source === host && inProgress(m.status)
      );
      return serversOn(e.sim, host).length === 0 && !moving &&
          st.migrations.some((m) => m.source === host)
        ? true
        : undefined;
    },
    60_000,
    2,
  );
}

Deno.test({
  name: "settled Succeeded: late arrivals, a queued migration, --wait",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const env = await sharedEnvtest();
    const e = await startDrainEnv({ env, scenario, concurrency: "4" });
    try {
      await t.step(
        "a VM placed on the host 1 s after the last departure is drained, and --wait returns only after it",
        async () => {
          await e.hypervisor(H.late);
          const out: string[] = [];
          const err: string[] = [];
          const watch = watchWrongSucceeded(e, H.late, H.late);
          const plugin = runPlugin(
            ["drain", H.late, "--reason", "kernel", "--wait"],
            {
              kubeConfig: () => Promise.resolve(env.kubeConfig()),
              out: (l) => out.push(l),
              err: (l) => err.push(l),
              interactive: false,
            },
          ).then((code) => ({ code, at: performance.now() }));
          // The plugin's Eviction joins this test's partition (label).
          await waitFor(
            "the plugin's Eviction",
            async () => {
              await e.client.patch(EvictionKind, H.late, {
                metadata: { labels: e.label },
              });
              return true;
            },
            10_000,
            10,
          );
          await lastDeparture(e, H.late);
          const departedAt = performance.now();
          await sleep(real(1));
          e.sim.addServer({ name: "late", host: H.late, ramMb: 2048 });
          const { code, at } = await plugin;
          const late = e.sim.state().servers.find((x) => x.name === "late");
          const wrong = await watch.stop();
          assert.equal(code, 0, err.join("\n"));
          assert.ok(
            late?.host !== H.late,
            "--wait returned with late on the host",
          );
          assert.deepEqual(onOrHeadingTo(e, H.late), []);
          assert.equal(wrong.samples, 0, "Succeeded with late on the host");
          const ev = await e.eviction(H.late);
          assert.equal(ev.status?.migratedCount, 3);
          assert.match(
            out.join("\n"),
            /drained, 3 VMs migrated; the host has been seen empty for \d+ s/,
          );
          console.log(
            `late arrival: --wait returned ${
              ((at - departedAt) * TIME_SCALE / 1000).toFixed(1)
            } simulated s after the last departure`,
          );
        },
      );

      await t.step(
        "a VM forced onto the host 1 s after Succeeded reopens the drain within the window",
        async () => {
          await e.hypervisor(H.forced);
          const watch = watchWrongSucceeded(e, H.forced, H.forced);
          await e.evict(H.forced, H.forced);
          const first = await settledSucceeded(e, H.forced);
          await sleep(real(1));
          e.sim.migrateTo("traveller", H.forced);
          const traveller = idOf(e, "traveller");
          await waitFor(
            "the drain reopened",
            async () => {
              const ev = await e.eviction(H.forced);
              return ev.status?.finishedAt === undefined ? true : undefined;
            },
            30_000,
            5,
          );
          await settledSucceeded(e, H.forced, first.status?.finishedAt);
          const wrong = await watch.stop();
          assert.ok(
            !serversOn(e.sim, H.forced).includes(traveller),
            "the traveller stayed",
          );
          assert.deepEqual(onOrHeadingTo(e, H.forced), []);
          // The first looks after Succeeded are a poll interval (2 s) apart.
          assert.ok(
            wrong.longestSimSeconds <= 5,
            `Succeeded stood ${wrong.longestSimSeconds} simulated s with the traveller on or heading to the host`,
          );
          console.log(
            `forced after Succeeded: Succeeded stood ${
              wrong.longestSimSeconds.toFixed(1)
            } simulated s while it came`,
          );
        },
      );

      await t.step(
        "a migration queued towards the host before the drain started keeps it from finishing",
        async () => {
          e.sim.migrateTo("blocker", DST);
          await waitFor(
            "the blocker holds src's slot",
            () =>
              e.sim.state().migrations.some((m) =>
                  m.serverId === idOf(e, "blocker") &&
                  ["preparing", "running"].includes(m.status)
                )
                ? true
                : undefined,
            10_000,
            5,
          );
          e.sim.migrateTo("waiter", H.queued);
          const waiter = idOf(e, "waiter");
          await waitFor(
            "the waiter's migration is queued",
            () =>
              e.sim.state().migrations.some((m) =>
                  m.serverId === waiter && m.status === "queued"
                )
                ? true
                : undefined,
            10_000,
            5,
          );
          // Longer than the changes-since margin (10 s) before the drain.
          await sleep(real(20));
          await e.hypervisor(H.queued);
          const watch = watchWrongSucceeded(e, H.queued, H.queued);
          await e.evict(H.queued, H.queued);
          // q1 leaves within a few seconds; the waiter stays queued for
          // about a minute more: no Succeeded meanwhile.
          await lastDeparture(e, H.queued);
          await sleep(real(20));
          const waiting = await e.eviction(H.queued);
          assert.notEqual(drainOutcome(waiting), "Succeeded");
          assert.ok(
            e.sim.state().migrations.some((m) =>
              m.serverId === waiter && m.status === "queued"
            ),
            "the waiter is still queued",
          );
          assert.deepEqual(waiting.status?.outstandingInstances, [waiter]);
          // Once the blocker is through, the waiter lands and is drained.
          const blocker = idOf(e, "blocker");
          const stuck = e.sim.world.migrations.find((m) =>
            m.serverId === blocker &&
            ["preparing", "running"].includes(m.status)
          );
          assert.ok(stuck !== undefined, "the blocker still copies");
          e.sim.world.abortLiveMigration(blocker, stuck.id, 65);
          await waitFor(
            "waiter landed and drained",
            async () => {
              const ev = await e.eviction(H.queued);
              const moved = e.sim.state().migrations.some((m) =>
                m.serverId === waiter && m.source === H.queued &&
                m.status === "completed"
              );
              return moved && drainOutcome(ev) === "Succeeded" ? ev : undefined;
            },
            60_000,
            20,
          );
          const wrong = await watch.stop();
          assert.equal(wrong.samples, 0, "Succeeded while the waiter came");
          assert.deepEqual(onOrHeadingTo(e, H.queued), []);
        },
      );
    } finally {
      await e.stop();
    }
  },
});
