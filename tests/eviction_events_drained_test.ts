/**
 * What a person reads, against the real API server (and the real kubectl)
 * with the Nova simulator: a drain of a 76-VM host where nothing fails
 * leaves at most 20 Events on its Eviction (routine starts and finishes
 * summarised per pass, in one Event per reason), while a failure still
 * gets its own; and `kubectl wait --for=condition=Drained` returns for the
 * drained host only, not for a host Nova does not know (for which
 * `--for=condition=Evicting=False` says "condition met").
 */
import assert from "node:assert/strict";
import { sharedEnvtest } from "./harness/envtest.ts";
import {
  drained,
  eventsOf,
  startDrainEnv,
  uniqueSuffix,
  waitFor,
} from "./harness/eviction_env.ts";

const s = uniqueSuffix();
const BIG = { ramMb: 16_000_000, vcpus: 8192, maxConcurrentLiveMigrations: 8 };
const H = {
  many: `ev-many-${s}`,
  failing: `ev-fail-${s}`,
  ghost: `ev-ghost-${s}`,
};

Deno.test({
  name:
    "Events: a 76-VM drain leaves at most 20, a failure its own; kubectl wait --for=condition=Drained only for a drained host",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const api = await sharedEnvtest();
    const e = await startDrainEnv({
      env: api,
      concurrency: "8",
      scenario: {
        seed: 76,
        timeScale: 20,
        hosts: [
          { name: `ev-dst1-${s}`, ...BIG },
          { name: `ev-dst2-${s}`, ...BIG },
          { name: H.many, ...BIG },
          { name: H.failing, ...BIG },
        ],
        serverGroups: [{
          host: H.many,
          count: 76,
          namePrefix: "vm",
          ramMb: [2048, 4096, 8192, 16384],
        }],
        servers: [
          { name: "broken", host: H.failing, ramMb: 2048 },
          { name: "fine", host: H.failing, ramMb: 2048 },
        ],
        faults: { liveMigrationFailure: [{ server: "broken" }] },
      },
    });
    try {
      await t.step(
        "a 76-VM drain where nothing fails: at most 20 Events, starts and finishes summarised",
        async () => {
          await e.hypervisor(H.many);
          await e.evict(H.many, H.many);
          const done = await drained(e, H.many, 300_000);
          assert.equal(done.status?.migratedCount, 76);
          // the last summaries are recorded without holding the pass
          const events = await waitFor("the summaries", async () => {
            const list = await eventsOf(e, H.many);
            const completed = list.find((x) =>
              x.reason === "MigrationsCompleted"
            );
            return completed?.message?.includes("76 migrated") === true
              ? list
              : undefined;
          });
          const shown = events.map((x) => `${x.reason}: ${x.message}`).join(
            "\n",
          );
          assert.ok(events.length <= 20, `${events.length} Events:\n${shown}`);
          const reasons = new Set(events.map((x) => x.reason));
          for (const r of ["MigrationsStarted", "MigrationsCompleted"]) {
            assert.ok(reasons.has(r), `no ${r}:\n${shown}`);
          }
          for (const r of ["MigrationStarted", "MigrationFinished"]) {
            assert.ok(!reasons.has(r), `per-VM ${r}:\n${shown}`);
          }
          assert.ok(
            events.every((x) => x.type === "Normal"),
            `nothing failed:\n${shown}`,
          );
          for (const x of events) {
            assert.ok(
              new TextEncoder().encode(x.message ?? "").length <= 1024,
              `${x.reason}: note over 1 KiB`,
            );
          }
          const started = events.find((x) => x.reason === "MigrationsStarted");
          assert.match(
            started?.message ?? "",
            /^started \d+ live migrations?: .+ \(\d+ in flight, \d+ outstanding, \d+ migrated\)$/,
          );
          // the one Event per reason counts its passes
          const count = (events.find((x) =>
            x.reason === "MigrationsStarted"
          ) as { count?: number } | undefined)?.count ?? 0;
          assert.ok(count > 1, `MigrationsStarted counted ${count} passes`);
        },
      );

      await t.step(
        "kubectl wait --for=condition=Drained: met for the drained host",
        async () => {
          const run = await api.kubectl([
            "wait",
            "--for=condition=Drained",
            `eviction/${H.many}`,
            "--timeout=60s",
          ]);
          assert.equal(run.code, 0, run.stderr);
          assert.match(run.stdout, /condition met/);
          const ev = await e.eviction(H.many);
          const c = ev.status?.conditions?.find((x) =>
            x.type === "Drained"
          );
          assert.equal(c?.reason, "Succeeded");
          assert.match(c?.message ?? "", /empty and settled since .*: 76 VMs/);
        },
      );

      await t.step(
        "a host Nova does not know: Evicting=False is met, Drained is not",
        async () => {
          // no Hypervisor, no compute service: nothing to drain
          await e.evict(H.ghost, H.ghost);
          const ev = await waitFor("NotInNova", async () => {
            const x = await e.eviction(H.ghost);
            const c = x.status?.conditions?.find((c) => c.type === "Drained");
            return c?.reason === "NotInNova" ? x : undefined;
          });
          const drainedCond = ev.status?.conditions?.find((c) =>
            c.type === "Drained"
          );
          assert.equal(drainedCond?.status, "False");
          const evicting = await api.kubectl([
            "wait",
            "--for=condition=Evicting=False",
            `eviction/${H.ghost}`,
            "--timeout=30s",
          ]);
          assert.equal(evicting.code, 0, "the ambiguity Drained removes");
          const wait = await api.kubectl([
            "wait",
            "--for=condition=Drained",
            `eviction/${H.ghost}`,
            "--timeout=3s",
          ]);
          assert.notEqual(wait.code, 0, wait.stdout);
          assert.match(wait.stderr, /timed out/);
        },
      );

      await t.step("a failure still gets its own Event", async () => {
        await e.hypervisor(H.failing);
        await e.evict(H.failing, H.failing);
        const failed = await waitFor("MigrationFailed", async () => {
          const list = await eventsOf(e, H.failing);
          return list.find((x) => x.reason === "MigrationFailed");
        }, 120_000);
        const broken = e.sim.state().servers.find((x) => x.name === "broken");
        assert.equal(failed.type, "Warning");
        assert.match(failed.message ?? "", new RegExp(`^${broken?.id} `));
      });
    } finally {
      await e.stop();
    }
  },
});
