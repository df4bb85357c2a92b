/**
 * Helpers shared by the OpenStack client tests (not exported by mod.ts).
 *
 * @module
 */

import type { Clock } from "../../openstack/clock.ts";
import type { Logger } from "../../openstack/logger.ts";
import { KeystoneSession } from "../../openstack/keystone.ts";
import { NovaClient } from "../../openstack/nova.ts";
import { PlacementClient } from "../../openstack/placement.ts";
import {
  type NovaSim,
  type ScenarioInput,
  type SimClock,
  startNovaSim,
} from "./nova_sim/mod.ts";
import type { HttpTransportOptions } from "../../openstack/http.ts";

/** One captured log line. */
export interface LogLine {
  /** Level. */
  level: "debug" | "info" | "warn";
  /** Structured fields. */
  obj: Record<string, unknown>;
  /** Message. */
  msg: string | undefined;
}

/** A logger that keeps every line, and the lines as one JSON text. */
export function captureLogger(): Logger & { lines: LogLine[]; text(): string } {
  const lines: LogLine[] = [];
  return {
    lines,
    debug: (obj, msg) => lines.push({ level: "debug", obj, msg }),
    info: (obj, msg) => lines.push({ level: "info", obj, msg }),
    warn: (obj, msg) => lines.push({ level: "warn", obj, msg }),
    text: () => JSON.stringify(lines),
  };
}

/** A clock whose sleeps resolve at once and record their lengths. */
export function fakeClock(
  start = Date.now(),
): Clock & { sleeps: number[]; advance(ms: number): void } {
  let now = start;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => now,
    sleep: (ms: number) => {
      sleeps.push(ms);
      now += ms;
      return Promise.resolve();
    },
    advance: (ms: number) => {
      now += ms;
    },
  };
}

/** A two-host scenario used by most tests. */
export const BASIC_SCENARIO: ScenarioInput = {
  seed: 7,
  timeScale: 1000,
  hosts: [
    { name: "node001", traits: ["CUSTOM_GPU"] },
    { name: "node002" },
    { name: "node003", enabled: false, disabledReason: "broken" },
  ],
  servers: [
    { name: "vm-a", host: "node001", ramMb: 4096, vcpus: 2 },
    { name: "vm-b", host: "node001", ramMb: 8192, vcpus: 4 },
    { name: "vm-c", host: "node001", ramMb: 2048, status: "SHUTOFF" },
    { name: "vm-d", host: "node002", ramMb: 1024 },
  ],
};

/** The simulator and clients connected to it. */
export interface Harness {
  /** The simulator. */
  sim: NovaSim;
  /** The session. */
  session: KeystoneSession;
  /** Nova. */
  nova: NovaClient;
  /** Placement. */
  placement: PlacementClient;
  /** Captured logs. */
  logger: ReturnType<typeof captureLogger>;
}

/** Runs `fn` with a simulator and clients; closes the simulator afterwards. */
export async function withSim(
  scenario: ScenarioInput,
  fn: (h: Harness) => Promise<void>,
  options: {
    auth?: "password" | "application_credential";
    transport?: HttpTransportOptions;
    novaPageSize?: number;
    clock?: SimClock;
  } = {},
): Promise<void> {
  const sim = await startNovaSim(
    scenario,
    options.clock === undefined ? {} : { clock: options.clock },
  );
  const logger = captureLogger();
  try {
    const c = sim.credentials;
    const session = new KeystoneSession({
      authUrl: sim.authUrl,
      auth: options.auth === "application_credential"
        ? {
          type: "v3applicationcredential",
          applicationCredentialId: c.applicationCredential.id,
          applicationCredentialSecret: c.applicationCredential.secret,
        }
        : {
          type: "password",
          username: c.password.username,
          password: c.password.password,
          userDomainName: c.password.userDomainName,
          projectName: c.password.projectName,
          projectDomainName: c.password.projectDomainName,
        },
      regionName: c.region,
      logger,
      timeoutMs: 5_000,
      retry: { baseDelayMs: 1, maxDelayMs: 5 },
      ...options.transport,
    });
    const nova = new NovaClient(
      session,
      options.novaPageSize === undefined
        ? {}
        : { pageSize: options.novaPageSize },
    );
    const placement = new PlacementClient(session);
    await fn({ sim, session, nova, placement, logger });
  } finally {
    await sim.close();
  }
}

/** Polls `check` (real time) until it returns true or `timeoutMs` passes. */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 5_000,
  what = "condition",
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}
