/**
 * What the demo itself makes happen in its cloud, said before it happens:
 * the scenario's timed events (a VM booted onto a draining host, one
 * deleted, one put into ERROR) and its faults (a migration that fails),
 * so that no bar jumps and no failure shows up unannounced.
 *
 * @module
 */
import type { Scenario } from "../tests/harness/nova_sim/mod.ts";

type Fault = string | { server: string; times: number };

function faultLines(list: readonly Fault[], what: string): string[] {
  return list.map((f) => {
    const server = typeof f === "string" ? f : f.server;
    const times = typeof f === "string" ? 1 : f.times;
    return times === 1
      ? `${server}: its first ${what}`
      : `${server}: each of its first ${times} attempts: ${what}`;
  });
}

/**
 * One line per event and fault the scenario stages, times on evictor's
 * clock (the scenario's seconds divided by its time scale).
 *
 * @example
 * ```ts
 * import { stagedEvents } from "./staged_events.ts";
 * import { parseScenario } from "../tests/harness/nova_sim/mod.ts";
 * const s = parseScenario({ timeScale: 20, hosts: [{ name: "n1" }],
 *   events: [{ atSeconds: 150, addServer: { name: "late", host: "n1" } }] });
 * console.log(stagedEvents(s)[0]);
 * // 7.5 s after the cloud started (150 s of its time): an admin boots late (2048 MB) onto n1, admin-forced even while it drains: the drain sees it arrive and migrates it too
 * ```
 */
export function stagedEvents(scenario: Scenario): string[] {
  const at = (seconds: number) =>
    scenario.timeScale === 1
      ? `${seconds} s after the cloud started`
      : `${
        Number((seconds / scenario.timeScale).toFixed(2))
      } s after the cloud started (${seconds} s of its time)`;
  const events = scenario.events.map((ev) => {
    if ("addServer" in ev) {
      const a = ev.addServer;
      return `${
        at(ev.atSeconds)
      }: an admin boots ${a.name} (${a.ramMb} MB) onto ${a.host}, admin-forced even while it drains: the drain sees it arrive and migrates it too`;
    }
    if ("deleteServer" in ev) {
      return `${at(ev.atSeconds)}: ${ev.deleteServer} is deleted`;
    }
    return `${
      at(ev.atSeconds)
    }: ${ev.errorServer} goes to ERROR ("${ev.message}"): left for a person`;
  });
  const f = scenario.faults;
  return [
    ...events,
    ...faultLines(
      f.liveMigrationFailure,
      "live migration fails (Nova leaves it ACTIVE): the drain retries it after --migration-retry-backoff",
    ),
    ...(f.liveMigrationFailureRate > 0
      ? [
        `${
          (f.liveMigrationFailureRate * 100).toFixed(0)
        }% of all live migrations fail: the drain retries them`,
      ]
      : []),
    ...faultLines(
      f.errorOnMigration,
      "migration leaves it in ERROR: left for a person",
    ),
    ...faultLines(
      f.stuckMigration,
      "migration never finishes until aborted",
    ),
    ...faultLines(
      f.deleteDuringMigration,
      "migration ends with the server deleted",
    ),
    ...faultLines(
      f.strandedMigration,
      "live migration strands it MIGRATING on the source until reset",
    ),
    ...f.http.map((h) =>
      `HTTP faults: ${JSON.stringify(h)} (retried by the clients)`
    ),
  ];
}
