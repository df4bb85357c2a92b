/**
 * The drain at its edges, against the real API server and the Nova
 * simulator (20 times faster than real time): a VM arriving during the final
 * pass, a start whose answer is lost, a 503 on a start, and
 * `kubectl evictor retry` re-arming a failed VM. One simulated cloud and one
 * in-process operator for the whole file; each step drains its own host.
 */
import assert from "node:assert/strict";
import { drainOutcome } from "../cli/kubectl_plugin.ts";
import { RETRY_ANNOTATION } from "../controllers/eviction/retry.ts";
import type { Eviction } from "../models/mod.ts";
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

const EVENTS = {
  group: "",
  version: "v1",
  plural: "events",
  kind: "Event",
  namespaced: true,
} as const;

const ROOT = new URL("../", import.meta.url);
const s = uniqueSuffix();
const H = {
  arrive: `arrive-${s}`,
  drop: `drop-${s}`,
  busy: `busy-${s}`,
  retry: `retry-${s}`,
  tpm: `tpm-${s}`,
  resize: `resize-${s}`,
};
const SOURCE = {
  ramMb: 1_000_000,
  vcpus: 1024,
  maxConcurrentLiveMigrations: 8,
};

const scenario: ScenarioInput = {
  seed: 17,
  timeScale: 20,
  hosts: [
    { name: `dst1-${s}`, ramMb: 8_000_000, vcpus: 8192 },
    { name: `dst2-${s}`, ramMb: 8_000_000, vcpus: 8192 },
    { name: H.arrive, ...SOURCE },
    { name: H.drop, ...SOURCE },
    { name: H.busy, ...SOURCE },
    { name: H.retry, ...SOURCE },
    { name: H.tpm, ...SOURCE },
    { name: H.resize, ...SOURCE },
  ],
  servers: [
    { name: "small", host: H.arrive, ramMb: 2048 },
    { name: "medium", host: H.arrive, ramMb: 4096 },
    { name: "big", host: H.arrive, ramMb: 32768 },
    { name: "traveller", host: `dst1-${s}`, ramMb: 2048 },
    { name: "fine", host: H.retry, ramMb: 2048 },
    { name: "breaks", host: H.retry, ramMb: 2048 },
    { name: "plain", host: H.tpm, ramMb: 2048 },
    { name: "vtpm", host: H.tpm, ramMb: 2048, liveMigrationBlocker: "vtpm" },
    { name: "stays", host: H.resize, ramMb: 2048 },
    { name: "owner", host: H.resize, ramMb: 2048 },
  ],
  serverGroups: [
    { host: H.drop, count: 6, namePrefix: "drop", ramMb: [1024, 2048] },
    { host: H.busy, count: 4, namePrefix: "busy", ramMb: [1024, 2048] },
  ],
  // Three failed migration records: with 3 attempts and a retry window of
  // one simulated second, the failure is exhausted and sticky.
  faults: { liveMigrationFailure: [{ server: "breaks", times: 3 }] },
};

function idOf(e: DrainEnv, name: string): string {
  const id = e.sim.state().servers.find((x) => x.name === name)?.id;
  assert.ok(id !== undefined, `no server ${name}`);
  return id;
}

/** Servers on `host` or on their way to it (a migration with it as destination). */
function onOrHeadingTo(e: DrainEnv, host: string): string[] {
  const st = e.sim.state();
  const heading = st.migrations.filter((m) =>
    m.dest === host && inProgress(m.status)
  ).map((m) => m.serverId);
  return [...new Set([...serversOn(e.sim, host), ...heading])];
}

async function eventReasons(e: DrainEnv, name: string): Promise<string[]> {
  const list = await e.client.list(EVENTS, { namespace: "default" });
  return (list.items as Array<
    { involvedObject?: { name?: string }; reason?: string }
  >).filter((x) => x.involvedObject?.name === name).map((x) => x.reason ?? "");
}

/**
 * Samples the Eviction and the simulator until stopped; records every
 * sample at which the Eviction read as a settled-looking Succeeded while a
 * server was on or heading to the host, and every VM ever in `failed[]`.
 */
function watchDrain(e: DrainEnv, name: string, host: string) {
  const wrongSucceeded: string[] = [];
  const everFailed = new Set<string>();
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      try {
        const ev = await e.eviction(name);
        for (const f of ev.status?.failed ?? []) everFailed.add(f.id);
        const left = onOrHeadingTo(e, host);
        if (drainOutcome(ev) === "Succeeded" && left.length > 0) {
          wrongSucceeded.push(left.join(","));
        }
      } catch { /* not created yet */ }
      await new Promise((r) => setTimeout(r, 25));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return { wrongSucceeded, everFailed };
    },
  };
}

async function settled(e: DrainEnv, name: string, timeoutMs = 60_000) {
  return await waitFor(`Eviction ${name} settled Succeeded`, async () => {
    const ev = await e.eviction(name);
    return drainOutcome(ev) === "Succeeded" ? ev : undefined;
  }, timeoutMs);
}

Deno.test({
  name: "eviction edges: arrivals, lost and refused start answers, retry",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const env = await sharedEnvtest();
    const e = await startDrainEnv({
      env,
      scenario,
      concurrency: "4",
      planOptions: { maxAttempts: 3, retryWindowMs: 1000 },
    });
    try {
      await t.step(
        "a VM arriving during the final pass keeps the drain Running until it is drained",
        async () => {
          const name = `arrive-${s}`;
          await e.hypervisor(H.arrive);
          const watch = watchDrain(e, name, H.arrive);
          await e.evict(name, H.arrive);
          // The final pass: only the big VM's migration is left in flight.
          const bigId = idOf(e, "big");
          await waitFor(
            "only the big VM left in flight",
            () => {
              const mine = e.sim.state().migrations.filter((m) =>
                m.source === H.arrive
              );
              const others = mine.filter((m) => m.serverId !== bigId);
              const big = mine.find((m) => m.serverId === bigId);
              return others.length === 2 &&
                  others.every((m) => m.status === "completed") &&
                  big !== undefined && inProgress(big.status)
                ? true
                : undefined;
            },
            60_000,
            5,
          );
          // An admin places a VM on the host, and another forces one there.
          e.sim.addServer({ name: "late", host: H.arrive, ramMb: 2048 });
          e.sim.migrateTo("traveller", H.arrive);
          const ev = await settled(e, name);
          const { wrongSucceeded, everFailed } = await watch.stop();
          assert.deepEqual(
            wrongSucceeded,
            [],
            "Succeeded while a server was on or heading to the host",
          );
          assert.deepEqual(onOrHeadingTo(e, H.arrive), []);
          const st = e.sim.state();
          for (const n of ["late", "traveller", "big"]) {
            const srv = st.servers.find((x) => x.name === n);
            assert.ok(srv?.host !== H.arrive, `${n} is still on the host`);
          }
          // The traveller arrived, then was drained: never a failure.
          assert.equal(
            st.migrations.filter((m) =>
              m.serverId === idOf(e, "traveller") && m.source === H.arrive
            ).length,
            1,
          );
          assert.deepEqual([...everFailed], []);
          assert.deepEqual(ev.status?.failed ?? [], []);
          assert.ok(!(await eventReasons(e, name)).includes("MigrationFailed"));
        },
      );

      await t.step(
        "a start whose answer is lost does not stop other starts, and its VM is not counted failed",
        async () => {
          const name = `drop-${s}`;
          await e.hypervisor(H.drop);
          // The next start's answer never comes; Nova carries it out.
          e.sim.injectActionFault("*", {
            action: "os-migrateLive",
            mode: "drop",
            processed: true,
          });
          const before = e.sim.actionFaultLog().length;
          const watch = watchDrain(e, name, H.drop);
          let heldAt: number | undefined;
          let startsWhileHeld = 0;
          const sampler = setInterval(() => {
            const n = e.sim.state().migrations.filter((m) =>
              m.source === H.drop
            ).length;
            if (e.sim.heldAnswers() === 0) return;
            heldAt ??= n;
            startsWhileHeld = Math.max(startsWhileHeld, n - heldAt);
          }, 5);
          await e.evict(name, H.drop, 3);
          let ev: Eviction;
          try {
            ev = await settled(e, name);
          } finally {
            clearInterval(sampler);
          }
          const { wrongSucceeded, everFailed } = await watch.stop();
          const hit = e.sim.actionFaultLog()[before];
          assert.ok(hit !== undefined, "the fault hit a start");
          assert.ok(
            startsWhileHeld >= 1,
            `no other start while the answer was held (${startsWhileHeld})`,
          );
          assert.deepEqual(wrongSucceeded, []);
          assert.deepEqual(serversOn(e.sim, H.drop), []);
          assert.equal(ev.status?.migratedCount, 6);
          assert.ok(
            !everFailed.has(hit.serverId),
            "the VM was charged a failure",
          );
          assert.equal(
            e.sim.counters().migrationsAccepted[hit.serverId],
            1,
            "Nova's start was seen, not repeated",
          );
          assert.ok(!(await eventReasons(e, name)).includes("MigrationFailed"));
        },
      );

      await t.step(
        "a 503 on a start is retried and not counted failed",
        async () => {
          const name = `busy-${s}`;
          await e.hypervisor(H.busy);
          e.sim.injectActionFault("*", {
            action: "os-migrateLive",
            mode: "status",
            status: 503,
            processed: false,
          });
          const before = e.sim.actionFaultLog().length;
          const watch = watchDrain(e, name, H.busy);
          await e.evict(name, H.busy);
          const ev = await settled(e, name);
          const { wrongSucceeded, everFailed } = await watch.stop();
          const hit = e.sim.actionFaultLog()[before];
          assert.ok(hit !== undefined, "the 503 hit a start");
          assert.deepEqual(wrongSucceeded, []);
          assert.deepEqual(serversOn(e.sim, H.busy), []);
          assert.equal(ev.status?.migratedCount, 4);
          assert.equal(e.sim.counters().migrationsAccepted[hit.serverId], 1);
          assert.ok(
            !everFailed.has(hit.serverId),
            "the VM was charged a failure",
          );
          assert.deepEqual(ev.status?.failed ?? [], []);
          assert.ok(!(await eventReasons(e, name)).includes("MigrationFailed"));
        },
      );

      await t.step(
        "kubectl evictor retry re-arms a failed VM",
        async () => {
          const name = `retry-${s}`;
          await e.hypervisor(H.retry);
          await e.evict(name, H.retry);
          const breaks = idOf(e, "breaks");
          // Three failed migrations, then no more attempts: it needs a person.
          await waitFor("breaks exhausted, fine drained", async () => {
            const ev = await e.eviction(name);
            const f = (ev.status?.failed ?? []).find((x) => x.id === breaks);
            return f !== undefined && f.attempts >= 3 &&
                serversOn(e.sim, H.retry).join() === breaks
              ? true
              : undefined;
          }, 60_000);
          // Sticky: 40 simulated seconds later nothing was tried again.
          await new Promise((r) => setTimeout(r, 2000));
          const waiting = await e.eviction(name);
          assert.ok(
            (waiting.status?.failed ?? []).some((f) => f.id === breaks),
            "an exhausted failure is sticky",
          );
          assert.notEqual(drainOutcome(waiting), "Succeeded");
          assert.equal(e.sim.counters().migrationsAccepted[breaks], 3);
          assert.deepEqual(serversOn(e.sim, H.retry), [breaks]);
          const run = await new Deno.Command(`${env.binDir}/kubectl`, {
            args: ["evictor", "retry", name, breaks],
            env: {
              PATH: `${new URL("bin", ROOT).pathname}:${
                Deno.env.get("PATH") ?? ""
              }`,
              KUBECONFIG: env.kubeconfigPath,
            },
            stdout: "piped",
            stderr: "piped",
          }).output();
          assert.equal(run.code, 0, new TextDecoder().decode(run.stderr));
          const ev = await settled(e, name);
          assert.deepEqual(serversOn(e.sim, H.retry), []);
          assert.deepEqual(ev.status?.failed ?? [], []);
          assert.equal(
            ev.metadata?.annotations?.[RETRY_ANNOTATION],
            undefined,
            "the controller consumed the annotation",
          );
          assert.ok((await eventReasons(e, name)).includes("RetryRequested"));
          assert.equal(e.sim.counters().migrationsAccepted[breaks], 4);
        },
      );

      await t.step(
        "a VM Nova cannot live-migrate is skipped with Nova's reason, never charged",
        async () => {
          const name = `tpm-${s}`;
          await e.hypervisor(H.tpm);
          await e.evict(name, H.tpm);
          const vtpm = idOf(e, "vtpm");
          const ev = await waitFor("vtpm skipped, plain drained", async () => {
            const x = await e.eviction(name);
            const skipped = (x.status?.skipped ?? []).find((k) =>
              k.id === vtpm
            );
            return skipped !== undefined &&
                serversOn(e.sim, H.tpm).join() === vtpm
              ? x
              : undefined;
          }, 60_000);
          const reason = ev.status?.skipped?.find((k) => k.id === vtpm)?.reason;
          assert.match(
            reason ?? "",
            /not supported for vTPM-enabled instance/,
            "Nova's reason",
          );
          assert.ok(!(ev.status?.failed ?? []).some((f) => f.id === vtpm));
          assert.notEqual(drainOutcome(ev), "Succeeded");
          assert.equal(e.sim.counters().migrationsAccepted[vtpm], undefined);
        },
      );

      await t.step(
        "a user's own resize from the host is left to its owner; the drain ends once they confirm",
        async () => {
          const name = `resize-${s}`;
          await e.hypervisor(H.resize);
          // The owner resizes before the drain; it lands in VERIFY_RESIZE on
          // another host while the drain runs (a revert would bring it back).
          e.sim.resize("owner", 4096);
          await e.evict(name, H.resize);
          const owner = idOf(e, "owner");
          const resizeOf = () =>
            e.sim.state().migrations.find((m) =>
              m.serverId === owner && m.type === "resize"
            );
          await waitFor(
            "stays drained, owner's resize finished",
            () =>
              serversOn(e.sim, H.resize).length === 0 &&
                resizeOf()?.status === "finished"
                ? true
                : undefined,
            60_000,
          );
          // Long enough for a wrong confirm or a wrong Succeeded.
          await new Promise((r) => setTimeout(r, 1500));
          assert.equal(
            resizeOf()?.status,
            "finished",
            "the drain confirmed it",
          );
          assert.notEqual(
            drainOutcome(await e.eviction(name)),
            "Succeeded",
            "Succeeded while a revert could bring the VM back",
          );
          // The owner confirms: nothing can come back, the drain ends.
          e.sim.world.confirmResize(owner);
          const ev = await settled(e, name);
          assert.equal(resizeOf()?.status, "confirmed");
          assert.deepEqual(ev.status?.failed ?? [], []);
        },
      );
    } finally {
      await e.stop();
    }
  },
});
