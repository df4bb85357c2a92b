/**
 * A fast failure after the drain has learned its timings (a real API
 * server, the simulator over HTTP). Two long live migrations teach the
 * drain how long one takes, so it looks at Nova when a migration should
 * end, not every poll interval. The drain looks at each start a poll
 * interval after it: for the third, which goes well, that first look is
 * a glance (one list of the host's migrations, no list of its servers).
 * Then every other host is disabled: the next start fails in the
 * conductor (NoValidHost, the record `error` half a second after the
 * 202), and the failure is on the Eviction within two poll intervals of
 * the start, not when the failed copy would have ended (on real Zed:
 * 22.7 s).
 */
import assert from "node:assert/strict";
import { sharedEnvtest } from "./harness/envtest.ts";
import {
  startDrainEnv,
  uniqueSuffix,
  waitFor,
} from "./harness/eviction_env.ts";

const POLL_MS = 500; // real
const TIME_SCALE = 10;
const SERVERS_DETAIL = "GET /compute/v2.1/servers/detail";
const MIGRATIONS = "GET /compute/v2.1/os-migrations";

Deno.test({
  name:
    "eviction: with timings learned, a start failing fast (NoValidHost) is on the Eviction within two poll intervals",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const api = await sharedEnvtest();
    const host = `fl-${uniqueSuffix()}`;
    const dest = `${host}-d`;
    const e = await startDrainEnv({
      env: api,
      concurrency: "1",
      pollIntervalMs: POLL_MS,
      scenario: {
        seed: 3,
        timeScale: TIME_SCALE,
        timing: { jitter: 0 },
        hosts: [{ name: host }, { name: dest }],
        // each copies 32 s (virtual; 3.2 s real), preparing 2 s more
        serverGroups: [{ host, count: 5, ramMb: [32768] }],
      },
    });
    try {
      const mine = () =>
        e.sim.state().migrations.filter((m) => m.source === host);
      await e.hypervisor(host);
      await e.evict(host, host);
      const calls = (route: string) => e.sim.counters().calls[route] ?? 0;
      // The third migration: the first two's timing is learned.
      await waitFor("the third migration", () => mine()[2], 90_000, 10);
      const before = { looks: calls(SERVERS_DETAIL), lists: calls(MIGRATIONS) };
      await waitFor("the third migration copying", () => {
        const third = mine()[2];
        return third?.status === "running" ? true : undefined;
      }, 30_000);
      const dst = e.sim.world.hosts.get(dest);
      assert.ok(dst !== undefined);
      e.sim.world.setService(dst, "disabled", "test: no valid host", undefined);
      const failedRecord = await waitFor(
        "a start failed for no valid host",
        () => mine().find((m) => m.status === "error"),
        60_000,
        10,
      );
      // While the third copied (3.5 s real), the drain was paced by what
      // it learned (a full look at its end, not one every poll interval),
      // and its first look was a glance: a list of migrations alone.
      const looks = calls(SERVERS_DETAIL) - before.looks;
      const glances = calls(MIGRATIONS) - before.lists - looks;
      assert.ok(looks <= 3, `timings learned: ${looks} looks during a copy`);
      assert.ok(glances >= 1, `the first look a glance: ${glances} glances`);
      const failed = await waitFor(
        "the failure on the Eviction",
        async () =>
          (await e.eviction(host)).status?.failed?.find((f) =>
            f.id === failedRecord.serverId
          ),
        30_000,
        10,
      );
      const lagMs = (e.sim.world.now() - failedRecord.createdAt) / TIME_SCALE;
      assert.match(failed.reason, /No valid host was found/);
      assert.ok(
        lagMs <= 2 * POLL_MS,
        `the failure was on the Eviction ${
          Math.round(lagMs)
        } ms (real) after its start; poll interval ${POLL_MS} ms`,
      );
    } finally {
      await e.stop();
    }
  },
});
