/**
 * A SUSPENDED server on a draining real Nova host: reported in
 * `status.skipped` ("needs a person"), never migrated, not looped on (the
 * operator's Nova calls, counted by a loopback proxy, stay few while it
 * waits), and no Succeeded while it is there; resumed, it is drained.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startNovaRegionProxy } from "../harness/nova_region_proxy.ts";
import { laneCloud, waitServer } from "./contract_backends.ts";
import {
  available,
  condition,
  evictingReason,
  evictionYaml,
  recordsByName,
  withLane,
} from "./lane.ts";

/** How many times each key occurs. */
function countBy(keys: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of keys) out[k] = (out[k] ?? 0) + 1;
  return out;
}

/** How long the waiting drain's calls are counted. */
const WINDOW_MS = 30_000;

Deno.test({
  name:
    "lane: a SUSPENDED server on a draining host is reported in status.skipped, never migrated nor looped on, and the drain claims no Succeeded until it has left",
  ignore: !available,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const cloud = await laneCloud();
    const proxy = await startNovaRegionProxy(cloud, {
      region: `Susp${crypto.randomUUID().slice(0, 6)}`,
    });
    try {
      const host = "node001";
      await withLane(
        [
          { name: "awake", host, size: "small" },
          { name: "sleeper", host, size: "small" },
        ],
        [host],
        ["--eviction-concurrency=2"],
        async (lane) => {
          const { b } = lane;
          const sleeper = b.servers.get("sleeper") as string;
          const act = (action: Record<string, null>) =>
            b.raw("compute", "POST", `/servers/${sleeper}/action`, {
              body: action,
            });
          assert.equal((await act({ suspend: null })).status, 202);
          await waitServer(cloud, sleeper, "SUSPENDED");

          let watching = true;
          const violations: string[] = [];
          const watcher = (async () => {
            while (watching) {
              const [ev, s] = await Promise.all([
                lane.eviction(host),
                b.nova.getServer(sleeper).catch(() => undefined),
              ]);
              if (
                s?.host === host &&
                condition(ev, "Evicting")?.reason === "Succeeded"
              ) violations.push(`Succeeded with ${s.status} sleeper on host`);
              await new Promise((r) => setTimeout(r, 300));
            }
          })();
          try {
            await lane.kubectl(
              ["create", "-f", "-"],
              evictionYaml(host, lane.labels, "suspended"),
            );
            const failed = await evictingReason(
              lane,
              host,
              "WaitingForPerson",
              300_000,
            );
            const skipped = failed.status?.skipped ?? [];
            assert.deepEqual(
              skipped.map((s) => s.id),
              [sleeper],
              JSON.stringify(skipped),
            );
            assert.match(skipped[0]?.reason ?? "", /needs a person/);
            assert.equal(failed.status?.migratedCount, 1);

            // Waiting on it: few calls, no action ever on the server.
            const from = proxy.calls.length;
            await new Promise((r) => setTimeout(r, WINDOW_MS));
            const during = proxy.calls.slice(from);
            const perSecond = during.length / (WINDOW_MS / 1000);
            console.log(
              `lane suspended: ${during.length} Nova calls in ${
                WINDOW_MS / 1000
              } s of waiting (${perSecond.toFixed(2)}/s): ${
                JSON.stringify(countBy(during.map((c) =>
                  `${c.method} ${c.path.split("?")[0]}`
                )))
              }`,
            );
            // Nothing changes without a person: the drain looks at the slow
            // poll (10 x --poll-interval=1s), two calls a look (4 measured
            // here); a look every poll interval would make 30 or more.
            assert.ok(
              during.length <= 15,
              `${during.length} calls in ${WINDOW_MS / 1000} s: a loop`,
            );
            assert.deepEqual(
              proxy.calls.filter((c) =>
                c.method === "POST" && c.path.includes(sleeper)
              ).map((c) => c.path),
              [],
            );
            assert.deepEqual(
              (await recordsByName(lane, host)).get("sleeper"),
              [],
            );
            const still = await b.nova.getServer(sleeper);
            assert.equal(still.status, "SUSPENDED");
            assert.equal(still.host, host);
            assert.equal(
              condition(await lane.eviction(host), "Evicting")?.reason,
              "WaitingForPerson",
            );

            // Resumed, it moves, and only then the host is empty.
            assert.equal((await act({ resume: null })).status, 202);
            await evictingReason(lane, host, "Succeeded", 300_000);
          } finally {
            watching = false;
            await watcher;
          }
          assert.deepEqual(violations, []);
          const moved = await b.nova.getServer(sleeper);
          assert.notEqual(moved.host, host);
          for (const [name, rs] of await recordsByName(lane, host)) {
            assert.deepEqual(rs.map((m) => m.status), ["completed"], name);
          }
        },
        { cloudsYaml: proxy.cloudsYaml() },
      );
    } finally {
      await proxy.close();
    }
  },
});
