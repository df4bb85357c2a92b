import assert from "node:assert/strict";
import fc from "fast-check";
import { parse as parseYaml } from "yaml";
import {
  type AdmissionRequest,
  handleAdmission,
} from "../framework/admission.ts";
import type { CacheReader } from "../framework/informer.ts";
import type { KubeObject } from "../framework/kind.ts";
import { silentLogger } from "../framework/logger.ts";
import { Operator } from "../framework/operator.ts";
import { parseConcurrencyFlags } from "../limits/flags.ts";
import type { LimitSettings } from "../limits/resolve.ts";
import type { Eviction, EvictionPolicy, Hypervisor } from "../models/mod.ts";
import {
  EVICTION_WEBHOOK_PATH,
  NOT_SYNCED_MESSAGE,
  POLICY_WEBHOOK_PATH,
  registerWebhooks,
  type WebhookCaches,
  webhookValidators,
} from "./register.ts";

const HANA = "CUSTOM_HANA_EXCLUSIVE_HOST";

function cache<T extends KubeObject>(
  objects: T[],
  hasSynced = true,
): CacheReader<T> {
  return {
    get: (key) => objects.find((o) => o.metadata?.name === key),
    list: (filter) => objects.filter((o) => filter?.(o) ?? true),
    hasSynced,
  };
}

function flags(): LimitSettings {
  const r = parseConcurrencyFlags("3", [`${HANA}=2`]);
  if (!r.ok) throw r.error;
  return r.settings;
}

const EVICTIONS: Eviction[] = [{
  apiVersion: "kvm.cloud.sap/v1",
  kind: "Eviction",
  metadata: { name: "node001" },
  spec: { hypervisor: "node001", reason: "kernel" },
  status: { effectiveLimit: 3 },
}];
const HYPERVISORS: Hypervisor[] = [
  { metadata: { name: "node001" }, spec: {} },
  { metadata: { name: "node002" }, spec: {}, status: { traits: [HANA] } },
];
const POLICY: EvictionPolicy = {
  apiVersion: "kvm.cloud.sap/v1alpha1",
  kind: "EvictionPolicy",
  metadata: { name: "default" },
  spec: {
    maxConcurrentMigrations: 4,
    traitLimits: [{ trait: HANA, maxConcurrentMigrations: 1 }],
    abortStuckMigrations: false,
  },
};

function caches(policies: EvictionPolicy[] = [], synced = true): WebhookCaches {
  return {
    evictions: cache(EVICTIONS, synced),
    hypervisors: cache(HYPERVISORS),
    policies: cache(policies),
  };
}

function request(
  object: unknown,
  extra: Partial<AdmissionRequest<KubeObject>> = {},
): AdmissionRequest<KubeObject> {
  return {
    uid: "1",
    operation: "CREATE",
    name: "",
    namespace: "",
    object: object as KubeObject,
    oldObject: undefined,
    userInfo: {},
    dryRun: false,
    ...extra,
  };
}

function evictionObj(name: string, spec: Record<string, unknown>) {
  return { metadata: { name }, spec };
}

Deno.test("webhookValidators: the Eviction context comes from the caches", async () => {
  const v = webhookValidators(caches([POLICY]), flags());
  assert.deepEqual(
    await v.eviction(request(
      evictionObj("node001-b", { hypervisor: "node001", reason: "again" }),
    )),
    {
      allowed: false,
      message:
        'spec.hypervisor: got "node001", which already has the unfinished Eviction "node001"; expected at most one unfinished Eviction per hypervisor (wait until "node001" is finished, or delete it)',
    },
  );
  // the policy in the cache wins over the flags, with the host's cached traits
  assert.deepEqual(
    await v.eviction(request(
      evictionObj("node002", {
        hypervisor: "node002",
        reason: "r",
        maxConcurrentMigrations: 3,
      }),
    )),
    {
      allowed: true,
      warnings: [
        `spec.maxConcurrentMigrations: 3 is above the limit 1 that the EvictionPolicy gives hypervisor "node002" (trait ${HANA}), so it is clamped to 1`,
      ],
    },
  );
});

Deno.test("webhookValidators: without a policy the flags' settings apply", async () => {
  const v = webhookValidators(caches(), flags());
  assert.deepEqual(
    await v.eviction(request(
      evictionObj("node002", {
        hypervisor: "node002",
        reason: "r",
        maxConcurrentMigrations: 3,
      }),
    )),
    {
      allowed: true,
      warnings: [
        `spec.maxConcurrentMigrations: 3 is above the limit 2 that the start-up flags give hypervisor "node002" (trait ${HANA}), so it is clamped to 2`,
      ],
    },
  );
});

Deno.test("webhookValidators: the policy context names the cached running drains", async () => {
  const v = webhookValidators(caches(), flags());
  const result = await v.policy(request({
    metadata: { name: "default" },
    spec: { maxConcurrentMigrations: 2 },
  }));
  assert.deepEqual(result, {
    allowed: true,
    warnings: [
      'spec: lowers the limit of 1 running drain: Eviction "node001" from 3 to 2; they start no new migrations until fewer than the new limit are in flight',
    ],
  });
});

Deno.test("webhookValidators: dry runs are judged the same; DELETE is allowed", async () => {
  const v = webhookValidators(caches(), flags());
  const bad = {
    metadata: { name: "default" },
    spec: {
      maxConcurrentMigrations: 2,
      traitLimits: [{ trait: "CUSTOM_A", maxConcurrentMigrations: 3 }],
    },
  };
  const wet = await v.policy(request(bad));
  assert.equal(wet.allowed, false);
  assert.deepEqual(await v.policy(request(bad, { dryRun: true })), wet);
  assert.deepEqual(
    await v.policy(
      request(undefined, { operation: "DELETE", oldObject: bad }),
    ),
    { allowed: true },
  );
});

Deno.test("webhookValidators: refuses to judge before the caches are synced", async () => {
  const v = webhookValidators(caches([], false), flags());
  for (const validate of [v.policy, v.eviction]) {
    assert.deepEqual(
      await validate(request({ metadata: { name: "default" }, spec: {} })),
      { allowed: false, message: NOT_SYNCED_MESSAGE, code: 503 },
    );
  }
});

Deno.test("registerWebhooks: serves both kinds at the manifest's paths", async () => {
  const operator = new Operator({
    name: "register-test",
    handleSignals: false,
    processMetrics: false,
    logger: silentLogger(),
  });
  registerWebhooks(operator, { flagSettings: flags() });
  for (const path of [POLICY_WEBHOOK_PATH, EVICTION_WEBHOOK_PATH]) {
    assert.throws(
      () =>
        operator.validate(
          {
            group: "x",
            version: "v1",
            plural: "xs",
            kind: "X",
            namespaced: false,
          },
          () => ({ allowed: true }),
          { path },
        ),
      /already registered/,
    );
  }
  const manifest = parseYaml(
    await Deno.readTextFile(
      new URL(
        "../manifests/webhook/validating_webhook_configuration.yaml",
        import.meta.url,
      ),
    ),
  ) as {
    webhooks: Array<{
      clientConfig: { service: { path: string } };
      rules: Array<{ resources: string[] }>;
    }>;
  };
  assert.deepEqual(
    manifest.webhooks.map((w) => [
      w.rules.flatMap((r) => r.resources),
      w.clientConfig.service.path,
    ]),
    [
      [["evictionpolicies"], POLICY_WEBHOOK_PATH],
      [["evictions"], EVICTION_WEBHOOK_PATH],
    ],
  );
});

Deno.test("property: random bodies through the framework never reach a throw", async () => {
  const v = webhookValidators(caches([POLICY]), flags());
  const objectArb = fc.oneof(
    fc.anything(),
    fc.record({
      metadata: fc.oneof(
        fc.anything(),
        fc.record({ name: fc.oneof(fc.string(), fc.anything()) }),
      ),
      spec: fc.oneof(
        fc.anything(),
        fc.dictionary(
          fc.constantFrom(
            "hypervisor",
            "reason",
            "maxConcurrentMigrations",
            "traitLimits",
            "clusterMaxConcurrentMigrations",
          ),
          fc.anything(),
        ),
      ),
    }, { requiredKeys: [] }),
  );
  const bodyArb = fc.oneof(
    fc.anything(),
    fc.record({
      apiVersion: fc.constantFrom("admission.k8s.io/v1", "v1"),
      kind: fc.constantFrom("AdmissionReview", "Status"),
      request: fc.record({
        uid: fc.oneof(fc.string(), fc.anything()),
        operation: fc.constantFrom("CREATE", "UPDATE", "DELETE", "PATCH"),
        object: objectArb,
        oldObject: objectArb,
        dryRun: fc.oneof(fc.boolean(), fc.anything()),
      }, { requiredKeys: [] }),
    }, { requiredKeys: [] }),
  );
  await fc.assert(
    fc.asyncProperty(bodyArb, async (body) => {
      for (const validate of [v.policy, v.eviction]) {
        let threw: unknown;
        const out = await handleAdmission(body, validate, undefined, (err) => {
          threw = err;
        });
        assert.equal(threw, undefined, `the validator threw: ${String(threw)}`);
        assert.ok(out.status === 200 || out.status === 400);
      }
    }),
    { numRuns: 500 },
  );
});
