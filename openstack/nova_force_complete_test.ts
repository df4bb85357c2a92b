import assert from "node:assert/strict";
import {
  BASIC_SCENARIO,
  eventually,
  withSim,
} from "../tests/harness/openstack_util.ts";
import { ConflictError, TimeoutError, UnavailableError } from "./errors.ts";
import { NovaClient } from "./nova.ts";

const FORCE = "POST /compute/v2.1/servers/{id}/migrations/{mid}/action";

/** Starts a live migration of `name` held unconverged, running. */
async function stuckCopy(
  nova: NovaClient,
  sim: Parameters<Parameters<typeof withSim>[1]>[0]["sim"],
  name: string,
): Promise<{ id: string; migrationId: number }> {
  const id = sim.state().servers.find((s) => s.name === name)?.id ?? "";
  sim.injectMigrationFault(id, "stuck");
  await nova.liveMigrate(id);
  let migrationId = -1;
  await eventually(async () => {
    const [m] = await nova.listServerMigrations(id);
    if (m?.status !== "running") return false;
    migrationId = m.id;
    return true;
  });
  return { id, migrationId };
}

Deno.test("nova: forceCompleteLiveMigration ends a copy held unconverged", async () => {
  await withSim({ ...BASIC_SCENARIO, timeScale: 50 }, async ({ nova, sim }) => {
    const { id, migrationId } = await stuckCopy(nova, sim, "vm-b");
    await nova.forceCompleteLiveMigration(id, migrationId);
    assert.equal(sim.counters().calls[FORCE], 1);
    await eventually(async () =>
      (await nova.listMigrations({ instanceUuid: id }))[0]?.status ===
        "completed"
    );
    assert.equal((await nova.getServer(id)).host, "node002");
  });
});

Deno.test("nova: forceCompleteLiveMigration refusals are typed with Nova's message", async () => {
  await withSim({ ...BASIC_SCENARIO, timeScale: 50 }, async ({ nova, sim }) => {
    const a = sim.state().servers.find((s) => s.name === "vm-a")?.id ?? "";
    // not migrating: Nova checks the task state first (409; task_state None)
    await assert.rejects(
      nova.forceCompleteLiveMigration(a, 1),
      (err: unknown) =>
        err instanceof ConflictError && /invalid state/.test(err.message),
    );
    const { id, migrationId } = await stuckCopy(nova, sim, "vm-b");
    await nova.abortLiveMigration(id, migrationId);
    // the copy is cancelled: the server is no longer migrating
    await assert.rejects(
      nova.forceCompleteLiveMigration(id, migrationId),
      ConflictError,
    );
    await assert.rejects(
      nova.forceCompleteLiveMigration(id, -1),
      /migrationId must be a non-negative integer, got -1/,
    );
  });
});

Deno.test("nova: a force_complete whose answer is lost, or answered 503 after Nova acted, is sent once", async () => {
  await withSim(
    { ...BASIC_SCENARIO, timeScale: 50 },
    async ({ session, sim }) => {
      const nova = new NovaClient(session, { timeoutMs: 300 });
      const first = await stuckCopy(nova, sim, "vm-b");
      sim.injectHttpFault({
        method: "POST",
        path: "/servers/{id}/migrations/{mid}/action",
        dropResponse: true,
        count: 1,
      });
      await assert.rejects(
        nova.forceCompleteLiveMigration(first.id, first.migrationId),
        TimeoutError,
      );
      assert.equal(sim.counters().calls[FORCE], 1, "never resent");
      // Nova acted: the copy ends
      await eventually(async () =>
        (await nova.getServer(first.id)).host === "node002"
      );
      const second = await stuckCopy(nova, sim, "vm-a");
      sim.injectHttpFault({
        method: "POST",
        path: "/servers/{id}/migrations/{mid}/action",
        status: 503,
        afterProcessing: true,
        count: 1,
      });
      await assert.rejects(
        nova.forceCompleteLiveMigration(second.id, second.migrationId),
        UnavailableError,
      );
      assert.equal(sim.counters().calls[FORCE], 2, "one call each");
    },
  );
});
