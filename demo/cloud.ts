/**
 * What the demo's story needs from the cloud it drains: the Nova simulator
 * (`--cloud simulator`, the default) or the real cloud of the
 * real-OpenStack lane (`--cloud openstack`).
 *
 * @module
 */
import type { MigrationRecord, SummaryStyle } from "./summary.ts";

/** The clouds `--cloud` takes. */
export const CLOUDS = ["simulator", "openstack"] as const;

/** One of {@linkcode CLOUDS}. */
export type CloudName = typeof CLOUDS[number];

/**
 * `--cloud`'s value checked: the cloud, or an error naming the bad value
 * and the expected ones.
 *
 * @example
 * ```ts
 * import { parseCloud } from "./cloud.ts";
 * console.assert(parseCloud("openstack") === "openstack");
 * ```
 */
export function parseCloud(value: string): CloudName {
  const found = CLOUDS.find((c) => c === value);
  if (found === undefined) {
    throw new RangeError(
      `--cloud: got "${value}"; expected one of ${CLOUDS.join(", ")}`,
    );
  }
  return found;
}

/** The demo's cloud, started, with the hosts and figures the story uses. */
export interface DemoCloud {
  /** Hypervisors discovery should find. */
  hypervisors: number;
  /** The host drained first, alone, by Hypervisor maintenance. */
  first: string;
  /** The hosts of the wave drained with one `kubectl evictor drain`. */
  wave: readonly string[];
  /** What the wave's hosts are, for the wave's step. */
  waveWhat: string;
  /** The EvictionPolicy's clusterMaxConcurrentMigrations. */
  budget: number;
  /**
   * What the demo makes happen in the cloud besides the drains (a VM
   * booted onto a draining host, a migration that fails), one line each,
   * said before the first drain.
   */
  staged: readonly string[];
  /**
   * A VM the demo boots onto the first host while it drains, once that
   * many of its VMs have moved; `boot` returns the line announcing it.
   */
  arrival?: {
    afterMigrated: number;
    boot: () => Promise<string>;
  };
  /** The EvictionPolicy's step. */
  policyStep: string;
  /** clouds.yaml for the operator and its cloud. */
  operator: { cloudsYaml: string; cloud: string };
  /** clouds.yaml for the plugin (and people with --keep) and its cloud. */
  plugin: { cloudsYaml: string; cloud: string };
  /**
   * The broker of Nova's notifications evictor consumes (its AMQP URL and
   * where it runs), or why the drains poll instead.
   */
  notifications: { url: string; where: string } | { polling: string };
  /** Operator flags that depend on the cloud (timings, rates). */
  operatorArgs: string[];
  /** Default --timeout of the drains, seconds. */
  timeoutSeconds: number;
  /** Samples the migrations in flight from `hosts`; `stop` gives the peak. */
  sampleInFlight(hosts: readonly string[]): { stop(): Promise<number> };
  /** How often {@linkcode sampleInFlight} looks, ms. */
  sampledEveryMs: number;
  /** Nova calls so far: all, and the drains' (servers and migrations). */
  calls(): { total: number; drain: number };
  /** Every migration of the run, for the summary. */
  migrations(): Promise<MigrationRecord[]>;
  /** Nova's own per-host limit on live migrations. */
  novaLimitOf(host: string): number;
  /** A migration's time besides its record's span, for lower bounds (ms). */
  overheadMs: number;
  /** How the summary states its figures. */
  style: SummaryStyle;
  /** Said of a drain whose makespan includes a retry's backoff. */
  retryNote: string;
  /** Stops what {@linkcode DemoCloud} started. */
  close(): Promise<void>;
}

/** What starting a cloud may print. */
export interface Say {
  step(text: string): void;
  say(text: string): void;
}
