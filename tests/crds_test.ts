/**
 * The CRDs against the real API server: accepted and Established, invalid
 * objects refused with the expected messages, valid objects round-trip, and
 * the generated zod schemas agree with the server on the same table.
 */
import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import type { z } from "zod";
import {
  EvictionPolicyResource,
  EvictionPolicySchema,
  EvictionResource,
  EvictionSchema,
  HypervisorResource,
  HypervisorSchema,
} from "../models/mod.ts";
import { type Envtest, sharedEnvtest } from "./harness/envtest.ts";
import { evictingCondition } from "../controllers/eviction/conditions.ts";

type Resource = { group: string; version: string; plural: string };

interface Case {
  name: string;
  resource: Resource;
  schema: z.ZodType;
  object: Record<string, unknown>;
  /** A part of the API server's refusal; absent for valid objects. */
  refused?: string;
  /** A part of zod's refusal, when it differs from the server's words. */
  zodRefused?: string;
  /** Only the API server can check it (transition rules). */
  serverOnly?: boolean;
}

const suffix = crypto.randomUUID().slice(0, 8);
const evictionName = (n: string) => `crd-${n}-${suffix}`;

function eviction(name: string, spec: Record<string, unknown>) {
  return {
    apiVersion: "kvm.cloud.sap/v1",
    kind: "Eviction",
    metadata: { name: evictionName(name) },
    spec,
  };
}
function hypervisor(name: string, spec: Record<string, unknown>) {
  return {
    apiVersion: "kvm.cloud.sap/v1",
    kind: "Hypervisor",
    metadata: { name: evictionName(name) },
    spec,
  };
}
function policy(name: string, spec: Record<string, unknown>) {
  return {
    apiVersion: "kvm.cloud.sap/v1alpha1",
    kind: "EvictionPolicy",
    metadata: { name },
    spec,
  };
}

const ACTION = {
  server: "3f1c2d4e-0b6a-4c1e-9f7a-2d5b8e9c1a0f",
  action: "Abort",
  requestedBy: "alice",
  requestedAt: "2026-12-07T10:00:00Z",
};

const CASES: Case[] = [
  {
    name: "eviction: valid",
    resource: EvictionResource,
    schema: EvictionSchema,
    object: eviction("valid", {
      hypervisor: "node001",
      reason: "kernel 6.12",
      maxConcurrentMigrations: 3,
    }),
  },
  {
    name: "eviction: without reason",
    resource: EvictionResource,
    schema: EvictionSchema,
    object: eviction("noreason", { hypervisor: "node001" }),
    refused: "spec.reason: Required value",
  },
  {
    name: "eviction: empty hypervisor",
    resource: EvictionResource,
    schema: EvictionSchema,
    object: eviction("emptyhv", { hypervisor: "", reason: "x" }),
    refused: "spec.hypervisor: Invalid value",
  },
  {
    name: "eviction: maxConcurrentMigrations 0",
    resource: EvictionResource,
    schema: EvictionSchema,
    object: eviction("mcm0", {
      hypervisor: "node001",
      reason: "x",
      maxConcurrentMigrations: 0,
    }),
    refused: "should be greater than or equal to 1",
  },
  {
    name: "eviction: a person's request in spec.actions",
    resource: EvictionResource,
    schema: EvictionSchema,
    object: eviction("actions", {
      hypervisor: "node001",
      reason: "x",
      actions: [ACTION],
    }),
  },
  {
    name: "eviction: spec.actions with an unknown action",
    resource: EvictionResource,
    schema: EvictionSchema,
    object: eviction("actionbad", {
      hypervisor: "node001",
      reason: "x",
      actions: [{ ...ACTION, action: "Restart" }],
    }),
    refused: 'spec.actions[0].action: Unsupported value: "Restart"',
  },
  {
    name: "eviction: more than 128 requests",
    resource: EvictionResource,
    schema: EvictionSchema,
    object: eviction("actionsmany", {
      hypervisor: "node001",
      reason: "x",
      actions: Array.from({ length: 129 }, () => ACTION),
    }),
    refused: "spec.actions: Too many: 129: must have at most 128 items",
    zodRefused: "Too big",
  },
  {
    name: "policy: valid",
    resource: EvictionPolicyResource,
    schema: EvictionPolicySchema,
    object: policy("default", {
      maxConcurrentMigrations: 4,
      traitLimits: [{
        trait: "CUSTOM_HANA_EXCLUSIVE_HOST",
        maxConcurrentMigrations: 1,
      }],
      clusterMaxConcurrentMigrations: 10,
    }),
  },
  {
    name: "policy: limit 0",
    resource: EvictionPolicyResource,
    schema: EvictionPolicySchema,
    object: policy("default", { maxConcurrentMigrations: 0 }),
    refused:
      "spec.maxConcurrentMigrations: Invalid value: 0: spec.maxConcurrentMigrations in body should be greater than or equal to 1",
  },
  {
    name: "policy: limit 65",
    resource: EvictionPolicyResource,
    schema: EvictionPolicySchema,
    object: policy("default", { maxConcurrentMigrations: 65 }),
    refused:
      "spec.maxConcurrentMigrations: Invalid value: 65: spec.maxConcurrentMigrations in body should be less than or equal to 64",
  },
  {
    name: "policy: trait limit 65",
    resource: EvictionPolicyResource,
    schema: EvictionPolicySchema,
    object: policy("default", {
      traitLimits: [{ trait: "CUSTOM_A", maxConcurrentMigrations: 65 }],
    }),
    refused: "should be less than or equal to 64",
  },
  {
    name: "policy: duplicate trait",
    resource: EvictionPolicyResource,
    schema: EvictionPolicySchema,
    object: policy("default", {
      traitLimits: [
        { trait: "CUSTOM_A", maxConcurrentMigrations: 1 },
        { trait: "CUSTOM_A", maxConcurrentMigrations: 2 },
      ],
    }),
    refused: `spec.traitLimits[1]: Duplicate value: {"trait":"CUSTOM_A"}`,
    zodRefused: `Duplicate value: {"trait":"CUSTOM_A"}`,
  },
  {
    name: "policy: not named default",
    resource: EvictionPolicyResource,
    schema: EvictionPolicySchema,
    object: policy("strict", { maxConcurrentMigrations: 2 }),
    refused:
      "metadata.name must be 'default': there is one EvictionPolicy per cluster",
  },
  {
    name: "policy: convergence everywhere, and noPauseTraits",
    resource: EvictionPolicyResource,
    schema: EvictionPolicySchema,
    object: policy("default", {
      maxConcurrentMigrations: 2,
      convergence: {
        completionTimeoutPerGiB: 600,
        progressTimeoutSeconds: 150,
        onTimeout: "Abort",
        maxAbortedTries: 2,
        forceCompleteTimeoutSeconds: 300,
      },
      traitLimits: [{
        trait: "CUSTOM_HANA_EXCLUSIVE_HOST",
        maxConcurrentMigrations: 1,
        convergence: { onTimeout: "Report" },
      }],
      noPauseTraits: ["CUSTOM_HANA_EXCLUSIVE_HOST"],
    }),
  },
  {
    name: "policy: convergence onTimeout unknown",
    resource: EvictionPolicyResource,
    schema: EvictionPolicySchema,
    object: policy("default", { convergence: { onTimeout: "Pause" } }),
    refused: `spec.convergence.onTimeout: Unsupported value: "Pause"`,
  },
  {
    name: "policy: a trait's progressTimeoutSeconds 0",
    resource: EvictionPolicyResource,
    schema: EvictionPolicySchema,
    object: policy("default", {
      traitLimits: [{
        trait: "CUSTOM_A",
        maxConcurrentMigrations: 1,
        convergence: { progressTimeoutSeconds: 0 },
      }],
    }),
    refused:
      "spec.traitLimits[0].convergence.progressTimeoutSeconds: Invalid value: 0",
  },
  {
    name: "eviction: convergence valid",
    resource: EvictionResource,
    schema: EvictionSchema,
    object: eviction("convergence", {
      hypervisor: "node001",
      reason: "x",
      convergence: { completionTimeoutPerGiB: 120, onTimeout: "ForceComplete" },
    }),
  },
  {
    name: "eviction: convergence maxAbortedTries above 100",
    resource: EvictionResource,
    schema: EvictionSchema,
    object: eviction("tries", {
      hypervisor: "node001",
      reason: "x",
      convergence: { maxAbortedTries: 101 },
    }),
    refused: "should be less than or equal to 100",
  },
  {
    name: "hypervisor: valid, unknown upstream fields kept",
    resource: HypervisorResource,
    schema: HypervisorSchema,
    object: hypervisor("valid", {
      maintenance: "manual",
      maintenanceReason: "kernel",
      customTraits: ["CUSTOM_FOO"],
      lifecycleEnabled: true,
    }),
  },
  {
    name: "hypervisor: manual maintenance without reason",
    resource: HypervisorResource,
    schema: HypervisorSchema,
    object: hypervisor("noreason", { maintenance: "manual" }),
    refused:
      "spec.maintenanceReason is required when spec.maintenance is manual",
  },
  {
    name: "hypervisor: manual maintenance with a blank reason",
    resource: HypervisorResource,
    schema: HypervisorSchema,
    object: hypervisor("blank", {
      maintenance: "manual",
      maintenanceReason: "   ",
    }),
    refused:
      "spec.maintenanceReason is required when spec.maintenance is manual",
  },
  {
    name: "hypervisor: unknown maintenance mode",
    resource: HypervisorResource,
    schema: HypervisorSchema,
    object: hypervisor("mode", { maintenance: "sometimes" }),
    refused: `spec.maintenance: Unsupported value: "sometimes"`,
  },
];

let objectsApi: k8s.CustomObjectsApi | undefined;

/** The custom-objects client of the shared API server. */
async function setup(): Promise<
  { env: Envtest; api: k8s.CustomObjectsApi }
> {
  const env = await sharedEnvtest();
  objectsApi ??= env.kubeConfig().makeApiClient(k8s.CustomObjectsApi);
  return { env, api: objectsApi };
}

async function create(
  api: k8s.CustomObjectsApi,
  r: Resource,
  body: Record<string, unknown>,
  dryRun: boolean,
): Promise<Record<string, unknown>> {
  return await api.createClusterCustomObject({
    group: r.group,
    version: r.version,
    plural: r.plural,
    body,
    ...(dryRun ? { dryRun: "All" } : {}),
  }) as Record<string, unknown>;
}

function refusal(error: unknown): string {
  if (error instanceof k8s.ApiException) {
    const body = typeof error.body === "string"
      ? JSON.parse(error.body)
      : error.body;
    return String(body?.message ?? error.message);
  }
  throw error;
}

Deno.test("CRDs are installed and Established", async () => {
  const { env } = await setup();
  const ext = env.kubeConfig().makeApiClient(k8s.ApiextensionsV1Api);
  for (
    const name of [
      "evictions.kvm.cloud.sap",
      "hypervisors.kvm.cloud.sap",
      "evictionpolicies.kvm.cloud.sap",
    ]
  ) {
    const crd = await ext.readCustomResourceDefinition({ name });
    assert.ok(
      crd.status?.conditions?.some((c) =>
        c.type === "Established" && c.status === "True"
      ),
      `${name} is not Established`,
    );
  }
});

for (const c of CASES) {
  Deno.test(`API server and zod agree: ${c.name}`, async () => {
    const { api } = await setup();
    // The policy is a cluster singleton other tests may use: check it with
    // a server-side dry run, which validates fully and stores nothing.
    const dryRun = c.resource === EvictionPolicyResource;
    const zodResult = c.schema.safeParse(c.object);
    if (c.refused === undefined) {
      const stored = await create(api, c.resource, c.object, dryRun);
      const spec = stored.spec as Record<string, unknown>;
      for (const [key, value] of Object.entries(c.object.spec as object)) {
        assert.deepEqual(spec[key], value, `spec.${key} did not round-trip`);
      }
      const parsed = c.schema.safeParse(stored);
      assert.ok(
        parsed.success,
        `zod refused what the server stored: ${parsed.error}`,
      );
      assert.ok(
        zodResult.success,
        `zod refused a valid object: ${zodResult.error}`,
      );
    } else {
      let message: string | undefined;
      try {
        await create(api, c.resource, c.object, dryRun);
      } catch (e) {
        message = refusal(e);
      }
      assert.ok(
        message !== undefined,
        "the API server accepted an invalid object",
      );
      assert.ok(
        message.includes(c.refused),
        `expected the refusal to include\n  ${c.refused}\nbut it was\n  ${message}`,
      );
      assert.ok(!zodResult.success, "zod accepted an invalid object");
      const zodMessages = zodResult.error.issues.map((i) => i.message).join(
        "; ",
      );
      const expected = c.zodRefused ??
        (c.refused.includes("must") || c.refused.includes("required when")
          ? c.refused
          : undefined);
      if (expected) {
        assert.ok(
          zodMessages.includes(expected),
          `zod's refusal "${zodMessages}" lacks "${expected}"`,
        );
      }
    }
  });
}

Deno.test("spec.hypervisor is immutable", async () => {
  const { api } = await setup();
  const r = EvictionResource;
  const name = evictionName("immutable");
  await create(
    api,
    r,
    eviction("immutable", { hypervisor: "node001", reason: "x" }),
    false,
  );
  try {
    const current = await api.getClusterCustomObject({
      group: r.group,
      version: r.version,
      plural: r.plural,
      name,
    }) as { spec: Record<string, unknown> };
    let message: string | undefined;
    try {
      await api.replaceClusterCustomObject({
        group: r.group,
        version: r.version,
        plural: r.plural,
        name,
        body: { ...current, spec: { ...current.spec, hypervisor: "node002" } },
      });
    } catch (e) {
      message = refusal(e);
    }
    assert.ok(message, "changing spec.hypervisor was accepted");
    assert.match(message, /spec\.hypervisor is immutable/);
    // The reason may change.
    await api.patchClusterCustomObject({
      group: r.group,
      version: r.version,
      plural: r.plural,
      name,
      body: { spec: { reason: "changed" } },
    }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
  } finally {
    await api.deleteClusterCustomObject({
      group: r.group,
      version: r.version,
      plural: r.plural,
      name,
    });
  }
});

Deno.test("kubectl get evictions prints the printer columns", async () => {
  const { env, api } = await setup();
  const r = EvictionResource;
  const name = evictionName("columns");
  await create(
    api,
    r,
    eviction("columns", { hypervisor: "node042", reason: "kernel" }),
    false,
  );
  try {
    await api.patchClusterCustomObjectStatus({
      group: r.group,
      version: r.version,
      plural: r.plural,
      name,
      body: {
        status: {
          migratedCount: 2,
          outstandingCount: 7,
          inFlightCount: 3,
          effectiveLimit: 4,
          conditions: [{
            type: "Evicting",
            status: "True",
            reason: "Running",
            message: "draining",
            lastTransitionTime: new Date().toISOString().replace(
              /\.\d+Z$/,
              "Z",
            ),
          }],
        },
      },
    }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
    const out = await env.kubectl(["get", "evictions", name]);
    assert.equal(out.code, 0, out.stderr);
    const [header, row] = out.stdout.trimEnd().split("\n");
    assert.match(
      header ?? "",
      /^NAME\s+HYPERVISOR\s+REASON\s+STATE\s+MIGRATED\s+IN FLIGHT\s+OUTSTANDING\s+LIMIT\s+AGE$/,
    );
    assert.match(
      row ?? "",
      new RegExp(
        `^${name}\\s+node042\\s+kernel\\s+Running\\s+2\\s+3\\s+7\\s+4\\s+\\S+$`,
      ),
    );
    const short = await env.kubectl(["get", "evi", name, "-o", "name"]);
    assert.equal(short.stdout.trim(), `eviction.kvm.cloud.sap/${name}`);

    // A drain left with a SUSPENDED VM only, as the controller writes it:
    // State WaitingForPerson (never Failed with nothing failed), and -o wide
    // names the VM.
    const c = evictingCondition(
      {
        outstandingCount: 1,
        inFlightCount: 0,
        migratedCount: 3,
        skipped: [{ id: "vm-s", reason: "SUSPENDED needs a person" }],
      },
      { ready: 0, busy: 0, backoff: 0, needsPerson: 1, held: undefined },
    );
    await api.patchClusterCustomObjectStatus({
      group: r.group,
      version: r.version,
      plural: r.plural,
      name,
      body: {
        status: {
          outstandingCount: 1,
          inFlightCount: 0,
          skipped: [{ id: "vm-s", reason: "SUSPENDED needs a person" }],
          conditions: [{
            ...c,
            lastTransitionTime: new Date().toISOString().replace(
              /\.\d+Z$/,
              "Z",
            ),
          }],
        },
      },
    }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
    const wide = await env.kubectl(["get", "evictions", name, "-o", "wide"]);
    assert.equal(wide.code, 0, wide.stderr);
    const [wideHeader, wideRow] = wide.stdout.trimEnd().split("\n");
    assert.match(
      wideHeader ?? "",
      /^NAME\s+HYPERVISOR\s+REASON\s+STATE\s+MIGRATED\s+IN FLIGHT\s+OUTSTANDING\s+LIMIT\s+AGE\s+SOURCE\s+STARTED\s+MIGRATIONS\s+MESSAGE$/,
    );
    assert.match(
      wideRow ?? "",
      new RegExp(
        // no source, start or failed VMs written: those cells are empty
        `^${name}\\s+node042\\s+kernel\\s+WaitingForPerson\\s+2\\s+0\\s+1\\s+4\\s+\\S+\\s+` +
          "waiting for a person: 1 VMs left on the host, none failed: vm-s \\(SUSPENDED needs a person\\)$",
      ),
    );
  } finally {
    await api.deleteClusterCustomObject({
      group: r.group,
      version: r.version,
      plural: r.plural,
      name,
    });
  }
});
