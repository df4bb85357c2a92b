/**
 * `kubectl evictor cancel` as kubectl runs it (the real kubectl and API
 * server, the operator on the Nova simulator, 10 times faster than real
 * time): after a cancel no migration starts, the copies in flight finish
 * (or, with --abort-in-flight, ours are aborted), the compute service is
 * re-enabled and the Eviction is gone; a drain that Hypervisor maintenance
 * asked for is refused with what brings it back, and ended with
 * --clear-maintenance; --dry-run changes nothing.
 */
import assert from "node:assert/strict";
import { sharedEnvtest } from "./harness/envtest.ts";
import {
  type DrainEnv,
  eventsOf,
  inProgress,
  serversOn,
  startDrainEnv,
  uniqueSuffix,
  waitFor,
} from "./harness/eviction_env.ts";
import { assertOneLine, kubectlEvictor } from "./_plugin_cli.ts";
import { EvictionKind, HypervisorKind } from "../controllers/kinds.ts";
import type { Hypervisor } from "../models/mod.ts";
import { ApiError } from "../framework/errors.ts";

const s = uniqueSuffix();
const H = {
  finish: `cx-finish-${s}`,
  abort: `cx-abort-${s}`,
  maint: `cx-maint-${s}`,
};
const LIMIT = 2;
const BIG = { ramMb: 16_000_000, vcpus: 8192, maxConcurrentLiveMigrations: 8 };

/** The host's migration records, by server id, as the simulator has them. */
function recordsFrom(e: DrainEnv, host: string) {
  return e.sim.state().migrations.filter((m) => m.source === host);
}

async function gone(e: DrainEnv, name: string): Promise<boolean> {
  try {
    await e.eviction(name);
    return false;
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return true;
    throw err;
  }
}

function enabled(e: DrainEnv, host: string): boolean | undefined {
  return e.sim.state().hosts.find((h) => h.name === host)?.enabled;
}

Deno.test({
  name:
    "kubectl evictor cancel: no start after it, copies finish or are aborted, service re-enabled; maintenance refused or cleared",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const api = await sharedEnvtest();
    const e = await startDrainEnv({
      env: api,
      concurrency: String(LIMIT),
      maintenance: true,
      scenario: {
        seed: 40,
        timeScale: 10,
        hosts: [
          { name: `cx-dst-${s}`, ...BIG },
          ...Object.values(H).map((name) => ({ name, ...BIG })),
        ],
        // 64 GiB each: about 70 s of simulator time per copy (7 s real)
        servers: Object.values(H).flatMap((host) =>
          Array.from({ length: 8 }, (_, i) => ({
            name: `vm-${host}-${i}`,
            host,
            ramMb: 65536,
          }))
        ),
        faults: {
          // the abort host's copies never end unless aborted
          stuckMigration: Array.from(
            { length: 8 },
            (_, i) => ({ server: `vm-${H.abort}-${i}` }),
          ),
        },
      },
    });
    const kube = { KUBECONFIG: api.kubeconfigPath };
    try {
      await t.step(
        "cancel: the copies in flight finish, nothing starts after it, the service is re-enabled",
        async () => {
          const host = H.finish;
          await e.hypervisor(host);
          await e.evict(host, host);
          const running = await waitFor(
            "copies in flight",
            () => {
              const r = recordsFrom(e, host).filter((m) =>
                inProgress(m.status)
              );
              return r.length > 0 ? r : undefined;
            },
            60_000,
          );
          assert.equal(enabled(e, host), false, "the drain disabled it");
          const before = recordsFrom(e, host).length;
          const run = await kubectlEvictor(
            api,
            ["cancel", host, "--wait", "--timeout", "300"],
            kube,
          );
          assert.equal(run.code, 0, run.stderr);
          assert.match(
            run.stdout,
            new RegExp(
              `^eviction\\.kvm\\.cloud\\.sap/${host} deleted: no new migration starts; its \\d+ migrations in flight finish`,
              "m",
            ),
          );
          assert.match(
            run.stdout,
            new RegExp(
              `eviction\\.kvm\\.cloud\\.sap/${host} gone: compute service \\S+ of host ${host} re-enabled`,
            ),
          );
          assert.ok(await gone(e, host), "the Eviction is gone");
          assert.equal(enabled(e, host), true, "the service is re-enabled");
          // Each copy in flight at the cancel finished; it was not aborted.
          const after = recordsFrom(e, host);
          for (const r of running) {
            const now = after.find((m) => m.id === r.id);
            assert.equal(now?.status, "completed", `migration ${r.id}`);
          }
          // A pass that raced the delete may have issued one round of
          // starts; nothing after that, and the drain did not go on.
          assert.ok(
            after.length <= before + LIMIT,
            `${after.length} records, ${before} at the cancel`,
          );
          assert.ok(
            serversOn(e.sim, host).length >= 8 - after.length,
            "the rest stay on the host",
          );
          assert.ok(after.every((m) => !inProgress(m.status)));
        },
      );

      await t.step(
        "cancel --wait past its --timeout says so and the cancel goes on; --abort-in-flight then aborts ours, the service is re-enabled at once",
        async () => {
          const host = H.abort;
          await e.hypervisor(host);
          await e.evict(host, host);
          const running = await waitFor(
            "copies in flight",
            () => {
              const r = recordsFrom(e, host).filter((m) =>
                m.status === "running"
              );
              return r.length === LIMIT ? r : undefined;
            },
            60_000,
          );
          // the copies never end: the watch's one deadline ends the wait
          const late = await kubectlEvictor(
            api,
            ["cancel", host, "--wait", "--timeout", "2s"],
            kube,
          );
          assert.equal(late.code, 1, late.stderr);
          assert.match(
            late.stderr,
            new RegExp(
              `^${host}: cancelling: ${LIMIT} migrations in flight settle first$`,
              "m",
            ),
          );
          assert.match(
            late.stderr,
            new RegExp(
              `^error: timed out waiting for the deletion of eviction\\.kvm\\.cloud\\.sap/${host} after 2 s: ${LIMIT} migrations in flight \\(the cancel goes on\\)$`,
              "m",
            ),
          );
          assert.doesNotMatch(late.stdout, / gone: /);
          const deleting = await e.eviction(host);
          assert.ok(deleting.metadata?.deletionTimestamp, "being deleted");
          const run = await kubectlEvictor(
            api,
            ["cancel", host, "--abort-in-flight", "--wait", "--timeout", "300"],
            kube,
          );
          assert.equal(run.code, 0, run.stderr);
          assert.match(
            run.stdout,
            new RegExp(
              `eviction\\.kvm\\.cloud\\.sap/${host} annotated evictor\\.kvm\\.cloud\\.sap/abort-in-flight=true\\n`,
            ),
          );
          assert.match(run.stdout, /migrations in flight are aborted/);
          assert.ok(await gone(e, host));
          assert.equal(enabled(e, host), true, "the service is re-enabled");
          const after = recordsFrom(e, host);
          for (const r of running) {
            assert.equal(
              after.find((m) => m.id === r.id)?.status,
              "cancelled",
              `migration ${r.id} aborted`,
            );
          }
          assert.ok(after.every((m) => !inProgress(m.status)));
          assert.equal(serversOn(e.sim, host).length, 8, "nothing moved");
          const aborted = (await eventsOf(e, host)).filter((x) =>
            x.reason === "MigrationsAborted"
          );
          assert.equal(aborted.length, 1, "one Event for the aborts");
          for (const r of running) {
            assert.ok(aborted[0]?.message?.includes(r.serverId));
          }
        },
      );

      await t.step(
        "a maintenance drain: refused with what brings it back; --dry-run changes nothing; --clear-maintenance ends it",
        async () => {
          const host = H.maint;
          await e.hypervisor(host, { maintenance: "manual" });
          // the maintenance controller creates the Eviction, named after the host
          const ev = await waitFor("the maintenance Eviction", async () => {
            try {
              return await e.eviction(host);
            } catch {
              return undefined;
            }
          });
          const refused = await kubectlEvictor(api, ["cancel", host], kube);
          assertOneLine(
            refused,
            1,
            new RegExp(
              `Hypervisor ${host} is in maintenance "manual" \\("test"\\), which recreates its Eviction as soon as it is deleted.*--clear-maintenance`,
            ),
          );
          const dry = await kubectlEvictor(
            api,
            ["cancel", host, "--clear-maintenance", "--dry-run"],
            kube,
          );
          assert.equal(dry.code, 0, dry.stderr);
          assert.match(
            dry.stdout,
            new RegExp(
              `hypervisor\\.kvm\\.cloud\\.sap/${host} maintenance "manual" cleared \\(dry run\\)\\neviction\\.kvm\\.cloud\\.sap/${host} deleted \\(dry run\\)`,
            ),
          );
          const still = await e.eviction(host);
          assert.equal(still.metadata?.uid, ev.metadata?.uid, "not deleted");
          assert.equal(still.metadata?.deletionTimestamp, undefined);
          const hv = await e.client.get<Hypervisor>(HypervisorKind, host);
          assert.equal(hv.spec?.maintenance, "manual", "not cleared");

          await waitFor(
            "the service disabled",
            () => enabled(e, host) === false || undefined,
          );
          const run = await kubectlEvictor(
            api,
            [
              "cancel",
              host,
              "--clear-maintenance",
              "--wait",
              "--timeout",
              "300",
            ],
            kube,
          );
          assert.equal(run.code, 0, run.stderr);
          const cleared = await e.client.get<Hypervisor>(HypervisorKind, host);
          assert.equal(cleared.spec?.maintenance, "");
          assert.ok(await gone(e, host), "gone");
          await waitFor(
            "the service re-enabled",
            () => enabled(e, host) === true || undefined,
            60_000,
          );
          // Not recreated: the maintenance controller has seen it cleared.
          const list = await e.client.list(EvictionKind);
          assert.ok(
            !(list.items as { metadata?: { name?: string } }[]).some((x) =>
              x.metadata?.name === host
            ),
            "no Eviction of the host came back",
          );
        },
      );

      await t.step(
        "cancel of a host without an Eviction: one line",
        async () => {
          const run = await kubectlEvictor(
            api,
            ["cancel", `cx-none-${s}`],
            kube,
          );
          assertOneLine(
            run,
            1,
            new RegExp(`no Eviction drains cx-none-${s}: nothing to cancel`),
          );
        },
      );
    } finally {
      await e.stop();
    }
  },
});
