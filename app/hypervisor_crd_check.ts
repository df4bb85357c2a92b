/**
 * At start-up, whether the installed Hypervisor CRD keeps what evictor
 * writes to Hypervisors. Installed side by side with the upstream operator
 * (cobaltcore-dev/openstack-hypervisor-operator), the CRD is its: no
 * `status.lastDrain`, no `x-kubernetes-preserve-unknown-fields`, so the API
 * server prunes that record without an error. Said once: a warning log line
 * and a Warning Event on the CRD. The drains then keep the record in an
 * annotation (capacity/last_drain_record.ts), which is never pruned.
 *
 * @module
 */

import { ApiError, errText } from "../framework/errors.ts";
import {
  type CrdLike,
  prunedPaths,
  servedSchema,
} from "../framework/crd_pruning.ts";
import type { KindDescriptor, KubeObject } from "../framework/kind.ts";
import type { Operator } from "../framework/operator.ts";
import type { Hypervisor } from "../models/mod.ts";
import { LAST_DRAIN_ANNOTATION } from "../capacity/last_drain_record.ts";

/** The Hypervisor CRD's name. */
export const HYPERVISOR_CRD = "hypervisors.kvm.cloud.sap";

/** CustomResourceDefinitions (for the Event's object). */
const CRD_KIND: KindDescriptor = {
  group: "apiextensions.k8s.io",
  version: "v1",
  plural: "customresourcedefinitions",
  kind: "CustomResourceDefinition",
  namespaced: false,
};

/**
 * A Hypervisor with every status field evictor writes (the status sync's
 * and the drains' record), each set, so that pruning shows on any of them.
 */
export const WRITTEN_HYPERVISOR: Hypervisor = {
  apiVersion: "kvm.cloud.sap/v1",
  kind: "Hypervisor",
  metadata: { name: "sample" },
  status: {
    hypervisorId: "id",
    serviceId: "id",
    traits: ["CUSTOM_X"],
    numInstances: 1,
    evicted: true,
    conditions: [{
      type: "TraitsUpdated",
      status: "True",
      reason: "Updated",
      message: "m",
      lastTransitionTime: "2026-01-01T00:00:00Z",
      observedGeneration: 1,
    }],
    lastDrain: {
      eviction: "sample",
      startedAt: "2026-01-01T00:00:00Z",
      endedAt: "2026-01-01T00:01:00Z",
      migrated: 1,
      predictedMakespanSeconds: 60,
      migrationRate: { mbPerSecond: 100, overheadMs: 1000, migrations: 1 },
      fixedMs: 1000,
    },
  },
};

/**
 * The fields of {@linkcode WRITTEN_HYPERVISOR} that the CRD's served `v1`
 * schema prunes (empty when it keeps them all, or serves no v1).
 *
 * @example
 * ```ts
 * import { prunedHypervisorFields } from "./hypervisor_crd_check.ts";
 * const upstream = { spec: { versions: [{ name: "v1", served: true, schema: { openAPIV3Schema: {
 *   properties: { status: { properties: { hypervisorId: {}, serviceId: {}, traits: {}, numInstances: {}, evicted: {}, conditions: {} } } } } } }] } };
 * console.log(prunedHypervisorFields(upstream)); // [ "status.lastDrain" ]
 * ```
 */
export function prunedHypervisorFields(crd: CrdLike): string[] {
  // metadata, apiVersion and kind are never pruned (the API server's own)
  return prunedPaths(servedSchema(crd, "v1"), {
    status: WRITTEN_HYPERVISOR.status,
  });
}

/** The one warning for `pruned` fields. */
export function prunedMessage(pruned: readonly string[]): string {
  return `the installed Hypervisor CRD (${HYPERVISOR_CRD}) prunes ${
    pruned.join(", ")
  } of what evictor writes (the upstream operator's CRD): what drains learn is kept in the Hypervisors' annotation ${LAST_DRAIN_ANNOTATION} instead; install evictor's CRD (manifests/crds/) to keep it in status.lastDrain`;
}

/**
 * Registers the check as a start-up step of `operator`: reads the CRD
 * (RBAC: get on that one CRD), and when it prunes fields logs one warning
 * and records one Warning Event `FieldsPruned` on it. Never stops the
 * start: a CRD that cannot be read is logged and the drains' writes tell
 * for themselves. Returns what the check found, once it ran.
 */
export function registerHypervisorCrdCheck(
  operator: Operator,
): { found: Promise<string[] | undefined> } {
  let resolve: (v: string[] | undefined) => void = () => {};
  const found = new Promise<string[] | undefined>((r) => resolve = r);
  operator.onStartup(async () => {
    const log = operator.logger.child({ crd: HYPERVISOR_CRD });
    let crd: CrdLike & KubeObject;
    try {
      crd = await operator.client.request<CrdLike & KubeObject>(
        "GET",
        `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${HYPERVISOR_CRD}`,
      );
    } catch (err) {
      const why = err instanceof ApiError && err.status === 403
        ? "not allowed to read it (RBAC: get customresourcedefinitions)"
        : errText(err);
      log.warn(
        { err: why },
        "could not check which fields the Hypervisor CRD keeps",
      );
      resolve(undefined);
      return;
    }
    const pruned = prunedHypervisorFields(crd);
    if (pruned.length > 0) {
      const message = prunedMessage(pruned);
      log.warn({ pruned }, message);
      await operator.events.record(CRD_KIND, crd, {
        type: "Warning",
        reason: "FieldsPruned",
        message,
      }).catch((err) =>
        log.warn({ err: errText(err) }, "the FieldsPruned Event failed")
      );
    }
    resolve(pruned);
  });
  return { found };
}
