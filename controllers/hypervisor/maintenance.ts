/**
 * Maintenance: spec.maintenance manual, auto or termination disables the
 * host's compute service and creates an Eviction named after the host,
 * owned by its Hypervisor; the Eviction's progress is mirrored into the
 * Hypervisor's Evicting condition and status.evicted; clearing the mode
 * deletes that Eviction and re-enables the service once nothing wants it
 * disabled (the rule is in decide.ts). `ha` is left to other agents.
 *
 * @module
 */

import {
  CONDITION_EVICTING,
  REASON_DISABLED_BY_EVICTOR,
  REASON_EVICTION_NAME_TAKEN,
} from "../conditions.ts";
import { ApiError } from "../../framework/errors.ts";
import type { HandlerContext } from "../../framework/handler.ts";
import type { Operator } from "../../framework/operator.ts";
import {
  type Eviction,
  type Hypervisor,
  HypervisorApiVersion,
  type HypervisorStatus,
} from "../../models/mod.ts";
import type { ComputeService, NovaClient } from "../../openstack/mod.ts";
import { EvictionKind } from "../kinds.ts";
import {
  disableFor,
  drainRequested,
  maintenanceReason,
  shouldReEnable,
} from "./decide.ts";
import { addHypervisorPart } from "./dispatch.ts";
import {
  applyMirror,
  CONDITION_HYPERVISOR_DISABLED,
  type EvictionMirror,
  mirrorEviction,
  serviceCondition,
  withCondition,
} from "./mirror.ts";
import { sameStatus } from "./sync_status.ts";

/** What {@linkcode registerMaintenance} needs. */
export interface MaintenanceDeps {
  /** Nova. */
  nova: NovaClient;
}

const deleting = (
  o: { metadata?: { deletionTimestamp?: string | undefined } | undefined },
) => o.metadata?.deletionTimestamp !== undefined;

/** Whether `ev` is owned by the Hypervisor with this uid. */
function ownedBy(ev: Eviction, uid: string | undefined): boolean {
  return uid !== undefined &&
    (ev.metadata?.ownerReferences ?? []).some((r) =>
      r.kind === "Hypervisor" && r.uid === uid
    );
}

/**
 * The Eviction a maintenance drain creates for `hv`.
 *
 * @throws {TypeError} when the Hypervisor has no name or uid.
 *
 * @example
 * ```ts
 * import { maintenanceEviction } from "./maintenance.ts";
 * const ev = maintenanceEviction({ metadata: { name: "n1", uid: "u1", labels: { a: "b" } },
 *   spec: { maintenance: "auto" } });
 * console.assert(ev.spec.reason === "hypervisor maintenance auto");
 * console.assert(ev.metadata?.ownerReferences?.[0]?.uid === "u1");
 * ```
 */
export function maintenanceEviction(hv: Hypervisor): Eviction {
  const name = hv.metadata?.name;
  const uid = hv.metadata?.uid;
  if (name === undefined || uid === undefined) {
    throw new TypeError(
      `a Hypervisor needs metadata.name and metadata.uid to own an Eviction, got name=${name} uid=${uid}`,
    );
  }
  return {
    metadata: {
      name,
      labels: { ...(hv.metadata?.labels ?? {}) },
      ownerReferences: [{
        apiVersion: HypervisorApiVersion,
        kind: "Hypervisor",
        name,
        uid,
        controller: true,
      }],
    },
    spec: {
      hypervisor: name,
      reason: maintenanceReason(
        hv.spec?.maintenance,
        hv.spec?.maintenanceReason,
      ),
    },
  };
}

/**
 * Registers the maintenance controller (a part of the Hypervisor reconcile
 * handler; Eviction changes wake up the Hypervisor they drain).
 *
 * @example
 * ```ts ignore
 * registerMaintenance(operator, { nova });
 * await operator.start();
 * ```
 */
export function registerMaintenance(
  operator: Operator,
  deps: MaintenanceDeps,
): void {
  addHypervisorPart(operator, "maintenance", (ctx) => maintain(ctx, deps));
}

async function maintain(
  ctx: HandlerContext<Hypervisor>,
  deps: MaintenanceDeps,
): Promise<void> {
  const hv = ctx.object;
  // a deleted Hypervisor's Eviction goes with it (ownerReference)
  if (hv === undefined || deleting(hv)) return;
  const host = ctx.name;
  const mode = hv.spec?.maintenance;
  const wanted = drainRequested(mode);
  const uid = hv.metadata?.uid;
  const evictions = ctx.cache(EvictionKind);
  const forHost = evictions.list((e) => e.spec.hypervisor === host);
  const status: HypervisorStatus = hv.status ?? {};
  const conditions = status.conditions ?? [];
  // Nothing asked, nothing left of an earlier drain: no Nova call at all.
  const involved = wanted || forHost.length > 0 ||
    status.evicted !== undefined ||
    conditions.some((c) =>
      c.type === CONDITION_EVICTING ||
      (c.type === CONDITION_HYPERVISOR_DISABLED &&
        c.reason === REASON_DISABLED_BY_EVICTOR)
    );
  if (!involved) return;

  let service: ComputeService | undefined;
  let serviceRead = false;
  let mirror: EvictionMirror;
  const named = evictions.get(host);
  if (wanted) {
    service = await deps.nova.findComputeService(host, ctx.signal);
    serviceRead = true;
    const reason = disableFor(mode, hv.spec?.maintenanceReason, service);
    if (reason !== undefined && service !== undefined) {
      service = await deps.nova.setComputeServiceStatus(
        service.id,
        false,
        reason,
        ctx.signal,
      );
      await ctx.event(
        "Normal",
        "ServiceDisabled",
        `compute service of ${host} disabled: ${reason}`,
      );
    }
    if (named !== undefined && named.spec.hypervisor !== host) {
      mirror = {
        evicting: {
          type: CONDITION_EVICTING,
          status: "False",
          reason: REASON_EVICTION_NAME_TAKEN,
          message:
            `the Eviction named ${host} drains ${named.spec.hypervisor}: delete or rename it`,
        },
        evicted: false,
      };
    } else {
      if (named === undefined) await createEviction(ctx, hv);
      mirror = mirrorEviction(named ?? forHost[0], true);
    }
  } else {
    for (const ev of forHost) {
      const name = ev.metadata?.name;
      if (name !== undefined && ownedBy(ev, uid) && !deleting(ev)) {
        await deleteEviction(ctx, name);
      }
    }
    if (forHost.length === 0) {
      service = await deps.nova.findComputeService(host, ctx.signal);
      serviceRead = true;
      if (
        service !== undefined &&
        shouldReEnable({ service, maintenance: mode, evictionsLeft: 0 })
      ) {
        service = await deps.nova.setComputeServiceStatus(
          service.id,
          true,
          undefined,
          ctx.signal,
        );
        await ctx.event(
          "Normal",
          "ServiceEnabled",
          `compute service of ${host} re-enabled: nothing wants it disabled`,
        );
      }
    }
    mirror = mirrorEviction(
      forHost.find((e) => e.metadata?.name === host) ?? forHost[0],
      false,
    );
  }

  const observed = serviceRead && service !== undefined ? service : undefined;
  const next = (prev: HypervisorStatus) => {
    const now = new Date();
    const mirrored = applyMirror(prev, mirror, now);
    return observed === undefined ? mirrored : withCondition(
      mirrored,
      serviceCondition(observed),
      CONDITION_HYPERVISOR_DISABLED,
      now,
    );
  };
  if (!sameStatus(status, next(status))) {
    await ctx.updateStatus((latest) => next(latest));
  }
}

async function createEviction(
  ctx: HandlerContext<Hypervisor>,
  hv: Hypervisor,
): Promise<void> {
  const ev = maintenanceEviction(hv);
  try {
    await ctx.client.create(EvictionKind, ev);
  } catch (err) {
    // our cache had not seen it yet: the watch brings it
    if (err instanceof ApiError && err.status === 409) return;
    throw err;
  }
  await ctx.event(
    "Normal",
    "EvictionCreated",
    `Eviction ${ctx.name} created: ${ev.spec.reason}`,
  );
}

async function deleteEviction(
  ctx: HandlerContext<Hypervisor>,
  name: string,
): Promise<void> {
  try {
    await ctx.client.delete(EvictionKind, name);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return;
    throw err;
  }
  await ctx.event(
    "Normal",
    "EvictionDeleted",
    `maintenance cleared: Eviction ${name} deleted`,
  );
}
