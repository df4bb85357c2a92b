import assert from "node:assert/strict";
import {
  loadScenarioFile,
  parseScenario,
} from "../tests/harness/nova_sim/mod.ts";
import { stagedEvents } from "./staged_events.ts";

Deno.test("stagedEvents: every event and fault of a scenario, on evictor's clock", () => {
  const s = parseScenario({
    timeScale: 20,
    hosts: [{ name: "n1" }, { name: "n2" }],
    servers: [
      { name: "a", host: "n1" },
      { name: "b", host: "n1" },
      { name: "c", host: "n2" },
    ],
    events: [
      { atSeconds: 150, addServer: { name: "late", host: "n1", ramMb: 4096 } },
      { atSeconds: 10, deleteServer: "b" },
      { atSeconds: 30, errorServer: "c", message: "disk gone" },
    ],
    faults: {
      liveMigrationFailure: [{ server: "a", times: 1 }, {
        server: "c",
        times: 2,
      }],
      stuckMigration: ["b"],
    },
  });
  assert.deepEqual(stagedEvents(s), [
    "7.5 s after the cloud started (150 s of its time): an admin boots late (4096 MB) onto n1, admin-forced even while it drains: the drain sees it arrive and migrates it too",
    "0.5 s after the cloud started (10 s of its time): b is deleted",
    '1.5 s after the cloud started (30 s of its time): c goes to ERROR ("disk gone"): left for a person',
    "a: its first live migration fails (Nova leaves it ACTIVE): the drain retries it after --migration-retry-backoff",
    "c: each of its first 2 attempts: live migration fails (Nova leaves it ACTIVE): the drain retries it after --migration-retry-backoff",
    "b: its first migration never finishes until aborted",
  ]);
  assert.deepEqual(
    stagedEvents(parseScenario({ hosts: [{ name: "n1" }] })),
    [],
  );
});

Deno.test("stagedEvents: the demo's scenario stages cache-2's failure and no timed event", async () => {
  const s = await loadScenarioFile(
    new URL("scenario.yaml", import.meta.url).pathname,
  );
  // The VM booted onto node001 mid-drain is the demo's own act (under load
  // a timed event could land before the drain): none in the scenario.
  assert.deepEqual(s.events, []);
  assert.deepEqual(stagedEvents(s), [
    "cache-2: its first live migration fails (Nova leaves it ACTIVE): the drain retries it after --migration-retry-backoff",
  ]);
});
