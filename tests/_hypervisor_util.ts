/**
 * Helpers of the Hypervisor controller tests: the shared API server, the
 * in-process Nova simulator, OpenStack clients and an in-process Operator
 * that sees only this test's objects (a unique label).
 *
 * @module
 */

import { KubeClient } from "../framework/client.ts";
import { ApiError } from "../framework/errors.ts";
import { createLogger } from "../framework/logger.ts";
import { Operator } from "../framework/operator.ts";
import { EvictionKind, HypervisorKind } from "../controllers/kinds.ts";
import type { Eviction, Hypervisor } from "../models/mod.ts";
import {
  KeystoneSession,
  NovaClient,
  PlacementClient,
  silentLogger,
} from "../openstack/mod.ts";
import { type Envtest, sharedEnvtest } from "./harness/envtest.ts";
import {
  type NovaSim,
  type NovaSimState,
  type ScenarioInput,
  startNovaSim,
} from "./harness/nova_sim/mod.ts";

/** Options shared by envtest-backed tests. */
export const INTEGRATION = {
  sanitizeOps: false,
  sanitizeResources: false,
} as const;

/** A short unique suffix. */
export function uniq(prefix: string): string {
  return `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
}

/** `T` without its falsy members. */
export type Truthy<T> = Exclude<T, false | null | undefined | 0 | "">;

/** Polls `fn` until it returns a truthy value or `timeoutMs` passes. */
export async function waitFor<T>(
  what: string,
  fn: () => T | Promise<T>,
  timeoutMs = 20_000,
): Promise<Truthy<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as Truthy<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${
          last === undefined ? "" : `: ${String(last)}`
        }`,
      );
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Everything a Hypervisor controller test works with. */
export interface HvHarness {
  env: Envtest;
  /** Admin API client. */
  client: KubeClient;
  sim: NovaSim;
  nova: NovaClient;
  placement: PlacementClient;
  /** The unique label value (`label=<value>` selects this test's objects). */
  label: string;
  /** The label selector of this test's operator. */
  selector: string;
  /** Log lines of the operator. */
  lines: string[];
  /** A new operator that sees only this test's objects (not started). */
  operator(name?: string): Operator;
  /** Creates a Hypervisor with this test's label. */
  createHypervisor(name: string, spec?: Hypervisor["spec"]): Promise<void>;
  /** Reads a Hypervisor. */
  hypervisor(name: string): Promise<Hypervisor>;
  /** Reads an Eviction, undefined when it does not exist. */
  eviction(name: string): Promise<Eviction | undefined>;
  /** The simulated host. */
  host(name: string): NovaSimState["hosts"][number];
  /** Stops operators, deletes this test's objects, closes the simulator. */
  close(): Promise<void>;
}

/** Starts the simulator and clients; `scenario` hosts must have unique names. */
export async function startHvHarness(
  scenario: ScenarioInput,
): Promise<HvHarness> {
  const env = await sharedEnvtest();
  const client = await KubeClient.fromKubeConfig(env.kubeConfig());
  const sim = await startNovaSim(scenario);
  const c = sim.credentials;
  const session = new KeystoneSession({
    authUrl: sim.authUrl,
    auth: {
      type: "password",
      username: c.password.username,
      password: c.password.password,
      userDomainName: c.password.userDomainName,
      projectName: c.password.projectName,
      projectDomainName: c.password.projectDomainName,
    },
    regionName: c.region,
    logger: silentLogger,
    timeoutMs: 5_000,
    retry: { baseDelayMs: 1, maxDelayMs: 5 },
  });
  const nova = new NovaClient(session);
  const placement = new PlacementClient(session);
  const label = uniq("hv");
  const selector = `evictor-test=${label}`;
  const lines: string[] = [];
  const operators: Operator[] = [];
  const verbose = Deno.env.get("HV_TEST_LOG") === "1";
  const h: HvHarness = {
    env,
    client,
    sim,
    nova,
    placement,
    label,
    selector,
    lines,
    operator(name = "evictor-test") {
      const op = new Operator({
        name,
        kubeConfig: env.kubeConfig(),
        labelSelector: selector,
        healthAddress: false,
        handleSignals: false,
        processMetrics: false,
        shutdownTimeoutMs: 2_000,
        finalizer: "kvm.cloud.sap/evictor-test",
        logger: createLogger({
          name,
          level: "info",
          destination: {
            write: (l: string) => {
              lines.push(l);
              if (verbose) console.error(l.trimEnd());
            },
          },
        }),
      });
      operators.push(op);
      return op;
    },
    async createHypervisor(name, spec = {}) {
      await client.create(HypervisorKind, {
        metadata: { name, labels: { "evictor-test": label } },
        spec,
      });
    },
    hypervisor: (name) => client.get<Hypervisor>(HypervisorKind, name),
    async eviction(name) {
      try {
        return await client.get<Eviction>(EvictionKind, name);
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) return undefined;
        throw err;
      }
    },
    host(name) {
      const host = sim.state().hosts.find((x) => x.name === name);
      if (host === undefined) throw new Error(`no simulated host "${name}"`);
      return host;
    },
    async close() {
      for (const op of operators) await op.stop();
      for (const kind of [EvictionKind, HypervisorKind]) {
        const listed = await client.list(kind, { labelSelector: selector });
        for (const item of listed.items) {
          const name = (item as { metadata?: { name?: string } }).metadata
            ?.name;
          if (name === undefined) continue;
          // drop the test finalizer so that nothing is left behind
          await client.patch(kind, name, { metadata: { finalizers: null } })
            .catch(() => {});
          await client.delete(kind, name).catch(() => {});
        }
      }
      client.close();
      await sim.close();
    },
  };
  return h;
}
