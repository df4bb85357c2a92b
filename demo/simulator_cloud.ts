/**
 * The demo's default cloud: the Nova simulator with demo/scenario.yaml
 * (8 hypervisors, 150 VMs, time 20x faster).
 *
 * @module
 */
import {
  loadScenarioFile,
  startNovaSim,
} from "../tests/harness/nova_sim/mod.ts";
import { sampleInFlight } from "../tests/harness/eviction_env.ts";
import { rabbitMqMissing, startRabbitMq } from "../tests/harness/rabbitmq.ts";
import { DEFAULT_FIXED_SECONDS } from "../capacity/history.ts";
import type { DemoCloud, Say } from "./cloud.ts";
import { stagedEvents } from "./staged_events.ts";
import { drainCalls } from "./summary.ts";

/** The VM booted onto node001 mid-drain (as an admin may, forced). */
const ARRIVAL = { name: "late-arrival", host: "node001", ramMb: 4096 };
/** node001's VMs moved before it arrives. */
const ARRIVAL_AFTER = 4;

/** Starts the simulator and describes it for the demo's story. */
export async function startSimulatorCloud(out: Say): Promise<DemoCloud> {
  out.step("Starting the Nova simulator: 8 hypervisors, 150 VMs");
  const scenario = await loadScenarioFile(
    new URL("scenario.yaml", import.meta.url).pathname,
  );
  // Nova's notifications through a real RabbitMQ, as a cloud would have
  // them; where none can run here, the drains poll (and the demo says so).
  const missing = await rabbitMqMissing();
  const broker = missing === undefined ? await startRabbitMq() : undefined;
  const sim = await startNovaSim(
    scenario,
    broker === undefined ? {} : { amqpUrl: broker.url },
  );
  out.say(
    `Keystone at ${sim.authUrl} (time runs ${scenario.timeScale}x faster)`,
  );
  const timing = scenario.timing;
  return {
    hypervisors: 8,
    first: "node001",
    // One command drains the wave: 4 + 1 + 1 slots wanted, the budget gives 5.
    wave: ["node002", "node003", "node004"],
    waveWhat: "a rack's hosts, two of them HANA",
    budget: 5,
    staged: [
      `once ${ARRIVAL_AFTER} VMs of node001 have moved, an admin boots ${ARRIVAL.name} (${ARRIVAL.ramMb} MB) onto node001 (admin-forced, while it drains): the drain sees it arrive and migrates it too`,
      ...stagedEvents(scenario),
    ],
    arrival: {
      afterMigrated: ARRIVAL_AFTER,
      boot: () => {
        const vm = sim.addServer(ARRIVAL);
        return Promise.resolve(
          `** now: an admin booted ${ARRIVAL.name} (${vm.id}, ${ARRIVAL.ramMb} MB) onto node001 while it drains; its bar counts one VM more`,
        );
      },
    },
    policyStep:
      "The EvictionPolicy: 4 per host, 1 on HANA hosts, 5 in the whole cluster",
    operator: {
      cloudsYaml: sim.cloudsYaml({
        cloud: "demo",
        auth: "application_credential",
      }),
      cloud: "demo",
    },
    plugin: { cloudsYaml: sim.cloudsYaml({ cloud: "demo" }), cloud: "demo" },
    operatorArgs: [
      "--poll-interval=250ms",
      // the default 30 s retry wait on the simulator's clock (20x faster)
      `--migration-retry-backoff=${Math.round(30_000 / scenario.timeScale)}ms`,
      // The simulator's nominal live-migration rate on evictor's clock, as
      // an operator sets their network's: what predictions assume until a
      // drain has ended and observed the real one.
      `--default-migration-rate=${timing.liveMbPerSecond * scenario.timeScale}`,
      `--default-migration-overhead=${
        Math.round(
          (timing.scheduleSeconds + timing.prepareSeconds +
            timing.postSeconds) * 1000 / scenario.timeScale,
        )
      }ms`,
      // The time a drain takes besides its migrations (wave, capacity check,
      // disabling, the settle looks), the documented default's real-cloud
      // seconds on the simulator's clock: unscaled, the first prediction
      // doubled the first drain's 11 s.
      `--default-drain-overhead=${
        Math.round(DEFAULT_FIXED_SECONDS * 1000 / scenario.timeScale)
      }ms`,
    ],
    timeoutSeconds: 300,
    sampleInFlight: (hosts) => {
      const sampler = sampleInFlight(sim, hosts, 20);
      return { stop: () => Promise.resolve(sampler.stop().max) };
    },
    sampledEveryMs: 20,
    calls: () => {
      const counters = sim.counters();
      return { total: counters.total, drain: drainCalls(counters.calls) };
    },
    migrations: () => Promise.resolve(sim.state().migrations),
    novaLimitOf: (host) =>
      sim.state().hosts.find((h) => h.name === host)
        ?.maxConcurrentLiveMigrations ?? 1,
    overheadMs: (timing.prepareSeconds + timing.postSeconds) * 1000,
    style: { timeScale: scenario.timeScale },
    retryNote:
      `its makespan includes the backoff before a failed migration was retried (--migration-retry-backoff=${
        30 / scenario.timeScale
      }s, 30 s of the simulator's time).`,
    notifications: broker === undefined
      ? { polling: missing ?? "no broker" }
      : { url: broker.url, where: `RabbitMQ on 127.0.0.1:${broker.port}` },
    close: async () => {
      await sim.close();
      await broker?.stop();
    },
  };
}
