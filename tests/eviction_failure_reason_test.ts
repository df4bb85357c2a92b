/**
 * A migration that fails after Nova's 202 is reported in Nova's words:
 * with every other host disabled, the conductor finds no valid host, the
 * record turns `error`, and the reason on the Eviction and in its
 * MigrationFailed Event carries the instance action's `details` of the
 * start's request (a real API server, the simulator over HTTP).
 */
import assert from "node:assert/strict";
import { EVENTS } from "../framework/events.ts";
import { sharedEnvtest } from "./harness/envtest.ts";
import {
  startDrainEnv,
  uniqueSuffix,
  waitFor,
} from "./harness/eviction_env.ts";

Deno.test({
  name:
    "eviction: a live migration failed for no valid host is reported with Nova's reason from the instance action",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const api = await sharedEnvtest();
    const host = `nvh-${uniqueSuffix()}`;
    const e = await startDrainEnv({
      env: api,
      pollIntervalMs: 50,
      scenario: {
        seed: 5,
        timeScale: 20,
        hosts: [{ name: host }, { name: `${host}-x`, enabled: false }],
        servers: [{ name: "vm", host, ramMb: 2048 }],
      },
    });
    try {
      await e.hypervisor(host);
      await e.evict(host, host);
      const failed = await waitFor(
        "the failure on the Eviction",
        async () => (await e.eviction(host)).status?.failed?.[0],
        30_000,
      );
      assert.match(
        failed.reason,
        /^live-migration \d+ ended error: No valid host was found\. There are not enough hosts available\.$/,
      );
      const event = await waitFor("the MigrationFailed event", async () => {
        const list = await e.client.list(EVENTS, { namespace: "default" });
        return (list.items as Array<
          {
            involvedObject?: { name?: string };
            reason?: string;
            message?: string;
          }
        >).find((x) =>
          x.involvedObject?.name === host && x.reason === "MigrationFailed"
        );
      });
      assert.match(
        event.message ?? "",
        /ended error: No valid host was found\. There are not enough hosts available\.$/,
      );
    } finally {
      await e.stop();
    }
  },
});
