/**
 * Optional discovery: a Hypervisor object for every nova-compute host that
 * has none. Existing Hypervisors are never touched (create only; an
 * AlreadyExists answer is fine). Runs on the leader only, every interval.
 *
 * @module
 */

import type { KubeClient } from "../../framework/client.ts";
import { ApiError } from "../../framework/errors.ts";
import type { Logger } from "../../framework/logger.ts";
import type { Operator } from "../../framework/operator.ts";
import type { NovaClient } from "../../openstack/mod.ts";
import { HypervisorKind } from "../kinds.ts";

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/**
 * Which hosts need a Hypervisor: the compute hosts without one, sorted and
 * without duplicates; host names that cannot be object names (upper case,
 * underscores, longer than 253) are returned in `invalid`.
 *
 * @example
 * ```ts
 * import { hostsToCreate } from "./discovery.ts";
 * const r = hostsToCreate(["b", "a", "Bad_Name", "a"], new Set(["b"]));
 * console.assert(r.create.join() === "a" && r.invalid.join() === "Bad_Name");
 * ```
 */
export function hostsToCreate(
  hosts: readonly string[],
  existing: ReadonlySet<string>,
): { create: string[]; invalid: string[] } {
  const create = new Set<string>();
  const invalid = new Set<string>();
  for (const h of hosts) {
    if (h.length > 253 || !DNS_SUBDOMAIN.test(h)) invalid.add(h);
    else if (!existing.has(h)) create.add(h);
  }
  return { create: [...create].sort(), invalid: [...invalid].sort() };
}

/** What one discovery pass needs. */
export interface DiscoveryDeps {
  /** Nova. */
  nova: NovaClient;
  /** Labels of the Hypervisors it creates. */
  labels: Record<string, string>;
}

/**
 * One discovery pass: lists the nova-compute services and every Hypervisor
 * (all of them, not only those of this operator's label selector: an
 * existing one must never be recreated), creates the missing ones and
 * returns their names.
 *
 * @example
 * ```ts ignore
 * const created = await discoverOnce(client, { nova, labels: {} }, logger);
 * ```
 */
export async function discoverOnce(
  client: KubeClient,
  deps: DiscoveryDeps,
  logger: Logger,
  signal?: AbortSignal,
): Promise<string[]> {
  const services = await deps.nova.listComputeServices(signal);
  const listed = await client.list(HypervisorKind);
  const existing = new Set<string>();
  for (const item of listed.items) {
    const name = (item as { metadata?: { name?: unknown } }).metadata?.name;
    if (typeof name === "string") existing.add(name);
  }
  const { create, invalid } = hostsToCreate(
    services.map((s) => s.host),
    existing,
  );
  if (invalid.length > 0) {
    logger.warn(
      { invalid },
      `compute hosts whose names cannot name a Hypervisor: ${
        invalid.join(", ")
      }`,
    );
  }
  const created: string[] = [];
  for (const name of create) {
    if (signal?.aborted) break;
    try {
      await client.create(HypervisorKind, {
        metadata: { name, labels: { ...deps.labels } },
        spec: {},
      });
      created.push(name);
      logger.info({ hypervisor: name }, "discovered: Hypervisor created");
    } catch (err) {
      // created meanwhile by someone else: theirs, leave it
      if (!(err instanceof ApiError && err.status === 409)) throw err;
    }
  }
  return created;
}

/**
 * Runs {@linkcode discoverOnce} every `intervalMs` while the operator runs,
 * on the leader only; errors are logged and the next pass tries again.
 *
 * @example
 * ```ts ignore
 * startDiscovery(operator, { nova, labels: {}, intervalMs: 300_000 });
 * ```
 */
export function startDiscovery(
  operator: Operator,
  deps: DiscoveryDeps & { intervalMs: number },
): void {
  const log = operator.logger.child({ name: "discovery" });
  const abort = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> | undefined;
  const schedule = (ms: number) => {
    if (abort.signal.aborted) return;
    timer = setTimeout(() => {
      running = pass();
    }, ms);
  };
  const pass = async () => {
    if (operator.isLeader) {
      try {
        await discoverOnce(operator.client, deps, log, abort.signal);
      } catch (err) {
        if (!abort.signal.aborted) {
          log.warn(
            { err: err instanceof Error ? err.message : String(err) },
            "discovery failed; trying again at the next interval",
          );
        }
      }
    }
    schedule(deps.intervalMs);
  };
  // Not the leader yet at start-up with leader election: the first pass
  // comes soon, then one per interval.
  operator.onStartup(() => schedule(Math.min(deps.intervalMs, 1000)));
  operator.onCleanup(async () => {
    abort.abort();
    clearTimeout(timer);
    await running;
  });
}
