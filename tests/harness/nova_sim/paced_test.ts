import assert from "node:assert/strict";
import { startNovaSim } from "./server.ts";

Deno.test("the simulator sends notifications on time while nobody polls it", async () => {
  const sim = await startNovaSim({
    timeScale: 20,
    timing: { jitter: 0, liveMbPerSecond: 1024 },
    hosts: [{ name: "a" }, { name: "b" }],
    servers: [{ name: "vm", host: "a", ramMb: 2048 }],
  });
  try {
    const done = Promise.withResolvers<string[]>();
    const types: string[] = [];
    const stop = sim.onNotification((_key, env) => {
      const msg = JSON.parse(env["oslo.message"]);
      types.push(msg.event_type);
      if (msg.event_type === "instance.live_migration_post.end") {
        done.resolve(types);
      }
    });
    const t0 = performance.now();
    sim.migrateTo("vm", "b");
    const timer = setTimeout(
      () => done.reject(new Error(`only ${types}`)),
      10_000,
    );
    const got = await done.promise;
    clearTimeout(timer);
    stop();
    assert.equal(got.at(-1), "instance.live_migration_post.end");
    assert.ok(got.includes("instance.live_migration_post_dest.end"));
    // No HTTP call was made: the pacing alone moved the world on.
    assert.equal(sim.counters().total, 0);
    assert.ok(performance.now() - t0 < 10_000);
  } finally {
    await sim.close();
  }
});
