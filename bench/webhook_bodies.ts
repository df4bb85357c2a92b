/**
 * AdmissionReview bodies as kube-apiserver sends them for `kubectl apply`
 * (resource and kind, userInfo, options, the whole object with its
 * managedFields and last-applied annotation, oldObject on UPDATE), for
 * both kinds, allowed and denied, and the seed objects they are judged
 * against.
 *
 * @module
 */

/** The trait with a lower limit in the seeded policy. */
export const HANA = "CUSTOM_HANA_EXCLUSIVE_HOST";

/** The seeded cluster: Hypervisors, unfinished Evictions and a policy. */
export interface Seed {
  /** Objects to create. */
  readonly objects: readonly Record<string, unknown>[];
  /** Status of the Evictions and Hypervisors, applied to the status subresource. */
  readonly statuses: readonly Record<string, unknown>[];
}

const hvName = (i: number) => `node${String(i).padStart(3, "0")}`;

/**
 * `hypervisors` Hypervisors (every fifth with the HANA trait), an
 * unfinished Eviction with status.effectiveLimit for the first `evictions`
 * of them, and the EvictionPolicy `default`.
 */
export function seed(hypervisors: number, evictions: number): Seed {
  const objects: Record<string, unknown>[] = [];
  const statuses: Record<string, unknown>[] = [];
  for (let i = 0; i < hypervisors; i++) {
    const name = hvName(i);
    objects.push({
      apiVersion: "kvm.cloud.sap/v1",
      kind: "Hypervisor",
      metadata: { name },
      spec: {},
    });
    statuses.push({
      apiVersion: "kvm.cloud.sap/v1",
      kind: "Hypervisor",
      metadata: { name },
      status: {
        traits: i % 5 === 0
          ? [HANA, "HW_CPU_X86_AVX2", "COMPUTE_STATUS_DISABLED"]
          : ["HW_CPU_X86_AVX2", "COMPUTE_NET_VIF_MODEL_VIRTIO"],
      },
    });
  }
  for (let i = 0; i < evictions; i++) {
    const name = hvName(i);
    objects.push({
      apiVersion: "kvm.cloud.sap/v1",
      kind: "Eviction",
      metadata: { name },
      spec: { hypervisor: name, reason: "kernel 6.12" },
    });
    statuses.push({
      apiVersion: "kvm.cloud.sap/v1",
      kind: "Eviction",
      metadata: { name },
      status: {
        effectiveLimit: i % 5 === 0 ? 1 : 4,
        limitSource: "policy",
        startedAt: "2026-11-29T20:00:00Z",
      },
    });
  }
  objects.push(policyObject({
    maxConcurrentMigrations: 4,
    traitLimits: [
      { trait: HANA, maxConcurrentMigrations: 1 },
      { trait: "HW_GPU_API_CUDA", maxConcurrentMigrations: 2 },
    ],
    clusterMaxConcurrentMigrations: 40,
    abortStuckMigrations: false,
  }));
  return { objects, statuses };
}

function policyObject(spec: Record<string, unknown>): Record<string, unknown> {
  return {
    apiVersion: "kvm.cloud.sap/v1alpha1",
    kind: "EvictionPolicy",
    metadata: { name: "default" },
    spec,
  };
}

function asStored(
  obj: Record<string, unknown>,
  operation: "CREATE" | "UPDATE",
): Record<string, unknown> {
  const meta = obj["metadata"] as Record<string, unknown>;
  const applied = JSON.stringify(obj);
  return {
    ...obj,
    metadata: {
      ...meta,
      annotations: {
        "kubectl.kubernetes.io/last-applied-configuration": `${applied}\n`,
      },
      creationTimestamp: operation === "CREATE" ? null : "2026-11-29T20:00:00Z",
      generation: operation === "CREATE" ? 1 : 3,
      ...(operation === "UPDATE"
        ? {
          uid: "6b1f1c9e-3a51-4d0e-9a43-0f0d3c9a7e21",
          resourceVersion: "48213",
        }
        : {}),
      managedFields: [{
        apiVersion: obj["apiVersion"],
        fieldsType: "FieldsV1",
        fieldsV1: {
          "f:metadata": {
            "f:annotations": {
              ".": {},
              "f:kubectl.kubernetes.io/last-applied-configuration": {},
            },
          },
          "f:spec": Object.fromEntries(
            Object.keys(obj["spec"] as Record<string, unknown>).map((
              k,
            ) => [`f:${k}`, {}]),
          ),
        },
        manager: "kubectl-client-side-apply",
        operation: "Update",
        time: "2026-11-29T21:00:00Z",
      }],
    },
  };
}

/** One request body and the verdict it must get. */
export interface BenchBody {
  /** What it is. */
  readonly name: string;
  /** The webhook path. */
  readonly path: string;
  /** The JSON body with `__UID__` where the request uid goes. */
  readonly template: string;
  /** The verdict it must get. */
  readonly allowed: boolean;
}

function review(
  resource: { group: string; version: string; resource: string; kind: string },
  operation: "CREATE" | "UPDATE",
  object: Record<string, unknown>,
  oldObject: Record<string, unknown> | undefined,
): string {
  const { kind, ...gvr } = resource;
  const gvk = { group: gvr.group, version: gvr.version, kind };
  const name = (object["metadata"] as Record<string, unknown>)["name"];
  return JSON.stringify({
    kind: "AdmissionReview",
    apiVersion: "admission.k8s.io/v1",
    request: {
      uid: "__UID__",
      kind: gvk,
      resource: gvr,
      requestKind: gvk,
      requestResource: gvr,
      name,
      operation,
      userInfo: {
        username: "ops-alice",
        groups: ["system:authenticated", "cloud-ops"],
        extra: {
          "authentication.kubernetes.io/credential-id": ["X509SHA256=ab"],
        },
      },
      object: asStored(object, operation),
      oldObject: oldObject === undefined ? null : asStored(oldObject, "UPDATE"),
      dryRun: false,
      options: {
        kind: operation === "CREATE" ? "CreateOptions" : "UpdateOptions",
        apiVersion: "meta.k8s.io/v1",
        fieldManager: "kubectl-client-side-apply",
        fieldValidation: "Strict",
      },
    },
  });
}

const POLICIES = {
  group: "kvm.cloud.sap",
  version: "v1alpha1",
  resource: "evictionpolicies",
  kind: "EvictionPolicy",
};
const EVICTIONS = {
  group: "kvm.cloud.sap",
  version: "v1",
  resource: "evictions",
  kind: "Eviction",
};

/** The request mix, sent round-robin: half each kind, half of each denied. */
export function benchBodies(
  policyPath: string,
  evictionPath: string,
  hypervisors: number,
): BenchBody[] {
  const current = seed(0, 0).objects[0] ?? {};
  const eviction = (name: string, spec: Record<string, unknown>) => ({
    apiVersion: "kvm.cloud.sap/v1",
    kind: "Eviction",
    metadata: { name },
    spec,
  });
  const free = hvName(hypervisors - 1);
  return [
    {
      name: "policy UPDATE lowering running drains (allowed, warnings)",
      path: policyPath,
      allowed: true,
      template: review(
        POLICIES,
        "UPDATE",
        policyObject({
          maxConcurrentMigrations: 2,
          traitLimits: [
            { trait: HANA, maxConcurrentMigrations: 1 },
            { trait: "HW_GPU_API_CUDA", maxConcurrentMigrations: 2 },
          ],
          clusterMaxConcurrentMigrations: 20,
          abortStuckMigrations: false,
        }),
        current,
      ),
    },
    {
      name: "policy UPDATE with a trait limit above the default (denied)",
      path: policyPath,
      allowed: false,
      template: review(
        POLICIES,
        "UPDATE",
        policyObject({
          maxConcurrentMigrations: 4,
          traitLimits: [
            { trait: HANA, maxConcurrentMigrations: 1 },
            { trait: "HW_GPU_API_CUDA", maxConcurrentMigrations: 16 },
          ],
          abortStuckMigrations: false,
        }),
        current,
      ),
    },
    {
      name: "policy CREATE with a trait twice in different case (denied)",
      path: policyPath,
      allowed: false,
      template: review(
        POLICIES,
        "CREATE",
        policyObject({
          maxConcurrentMigrations: 4,
          traitLimits: [
            { trait: "CUSTOM_A", maxConcurrentMigrations: 1 },
            { trait: "Custom_A", maxConcurrentMigrations: 2 },
          ],
          abortStuckMigrations: false,
        }),
        undefined,
      ),
    },
    {
      name: "Eviction CREATE for a free hypervisor (allowed)",
      path: evictionPath,
      allowed: true,
      template: review(
        EVICTIONS,
        "CREATE",
        eviction(free, { hypervisor: free, reason: "kernel 6.12" }),
        undefined,
      ),
    },
    {
      name: "Eviction CREATE for a hypervisor being drained (denied)",
      path: evictionPath,
      allowed: false,
      template: review(
        EVICTIONS,
        "CREATE",
        eviction("node001-again", { hypervisor: "node001", reason: "again" }),
        undefined,
      ),
    },
    {
      name: "Eviction CREATE, unknown host, limit clamped (allowed, warnings)",
      path: evictionPath,
      allowed: true,
      template: review(
        EVICTIONS,
        "CREATE",
        eviction("node999", {
          hypervisor: "node999",
          reason: "hardware",
          maxConcurrentMigrations: 8,
        }),
        undefined,
      ),
    },
  ];
}
