/**
 * The webhook called by a real API server (a dedicated one: the
 * ValidatingWebhookConfiguration and the EvictionPolicy `default` affect
 * the whole server): the real kubectl is refused with our messages, sees
 * our warnings, dry runs change nothing, the start-up flags give the same
 * messages, and with the webhook stopped writes to the two kinds fail
 * closed while other resources are unaffected.
 */
import assert from "node:assert/strict";
import { parseConcurrencyFlags } from "../limits/flags.ts";
import { EvictionKind, EvictionPolicyKind } from "../controllers/kinds.ts";
import type { LimitSettings } from "../limits/resolve.ts";
import { validateEvictionPolicy } from "../webhooks/eviction_policy.ts";
import { startEnvtest } from "./harness/envtest.ts";
import {
  eviction,
  hypervisor,
  manifest,
  policy,
  startWebhookOperator,
  webhookConfigurationYaml,
} from "./_webhook_fixture.ts";

const HANA = "CUSTOM_HANA_EXCLUSIVE_HOST";
const DENIED = (webhook: string) =>
  `admission webhook "${webhook}" denied the request: `;
const POLICY_HOOK = "evictionpolicies.evictor.kvm.cloud.sap";
const EVICTION_HOOK = "evictions.evictor.kvm.cloud.sap";

function flagSettings(): LimitSettings {
  const flags = parseConcurrencyFlags("2", []);
  if (!flags.ok) throw new Error(flags.error.message);
  return flags.settings;
}

/** The message the pure validator gives a new policy (and asserts it denies). */
function policyMessage(obj: unknown): string {
  const v = validateEvictionPolicy(obj, undefined, { runningEvictions: [] });
  if (v.allowed) throw new Error(`expected a refusal of ${manifest(obj)}`);
  return v.message;
}

async function until(
  what: string,
  done: () => boolean | Promise<boolean>,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** kubectl's "Warning: ..." lines. */
function warningsOf(stderr: string): string[] {
  return stderr.split("\n").filter((l) => l.startsWith("Warning: ")).map((l) =>
    l.slice("Warning: ".length)
  );
}

Deno.test({
  name: "webhook against a real API server with the real kubectl",
  // one API server and one operator for all steps; they are stopped in finally
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const env = await startEnvtest();
  const hook = await startWebhookOperator(env, flagSettings());
  try {
    const kubectl = (args: string[], obj?: unknown) =>
      env.kubectl(
        args,
        obj === undefined ? {} : { stdin: manifest(obj) },
      );
    const apply = (obj: unknown, ...extra: string[]) =>
      kubectl(["apply", ...extra, "-f", "-"], obj);
    const policyJson = async () => {
      const r = await kubectl([
        "get",
        "evictionpolicy",
        "default",
        "-o",
        "json",
      ]);
      return r.code === 0 ? r.stdout : undefined;
    };
    const evictions = hook.operator.cache(EvictionKind);
    const policies = hook.operator.cache(EvictionPolicyKind);

    // Hypervisors first: node001 without traits, node002 with the HANA trait
    for (const name of ["node001", "node002"]) {
      const r = await apply(hypervisor(name));
      assert.equal(r.code, 0, r.stderr);
    }
    const traits = await kubectl([
      "patch",
      "hypervisor",
      "node002",
      "--subresource=status",
      "--type=merge",
      "-p",
      JSON.stringify({ status: { traits: [HANA, "HW_CPU_X86_AVX2"] } }),
    ]);
    assert.equal(traits.code, 0, traits.stderr);

    const config = await webhookConfigurationYaml(hook.baseUrl, env.caCertPem);
    const installed = await env.kubectl(["apply", "-f", "-"], {
      stdin: config,
    });
    assert.equal(installed.code, 0, installed.stderr);
    // the API server picks the configuration up asynchronously
    const probe = policy({
      maxConcurrentMigrations: 4,
      traitLimits: [{ trait: "custom_probe", maxConcurrentMigrations: 1 }],
    });
    await until("the API server calls the webhook", async () => {
      const r = await apply(probe, "--dry-run=server");
      return r.code !== 0 && r.stderr.includes(DENIED(POLICY_HOOK));
    });

    await t.step(
      "dry-run of a bad policy is refused and creates nothing",
      async () => {
        const events = await kubectl(["get", "events", "-A", "-o", "name"]);
        const bad = policy({
          maxConcurrentMigrations: 4,
          traitLimits: [{ trait: "CUSTOM_BIG", maxConcurrentMigrations: 16 }],
        });
        const r = await apply(bad, "--dry-run=server");
        assert.notEqual(r.code, 0);
        assert.ok(
          r.stderr.includes(DENIED(POLICY_HOOK) + policyMessage(bad)),
          r.stderr,
        );
        assert.equal(await policyJson(), undefined);
        // a good dry run is allowed, with its warnings, and creates nothing
        const good = await apply(
          policy({
            maxConcurrentMigrations: 4,
            traitLimits: [{ trait: "CUSTOM_A", maxConcurrentMigrations: 4 }],
          }),
          "--dry-run=server",
        );
        assert.equal(good.code, 0, good.stderr);
        assert.match(good.stdout, /created \(server dry run\)/);
        assert.deepEqual(warningsOf(good.stderr), [
          "spec.traitLimits[0].maxConcurrentMigrations: 4 for CUSTOM_A equals the default spec.maxConcurrentMigrations, so it has no effect",
        ]);
        assert.equal(await policyJson(), undefined);
        // and the webhook wrote nothing either
        const after = await kubectl(["get", "events", "-A", "-o", "name"]);
        assert.equal(after.stdout, events.stdout);
      },
    );

    await t.step(
      "bad policies: kubectl apply fails and prints our message",
      async (t) => {
        const cases: Array<{ name: string; obj: Record<string, unknown> }> = [
          {
            name: "trait name not in placement syntax",
            obj: policy({
              maxConcurrentMigrations: 4,
              traitLimits: [{
                trait: "custom_hana",
                maxConcurrentMigrations: 1,
              }],
            }),
          },
          {
            name: "the same trait twice, differing only in case",
            obj: policy({
              maxConcurrentMigrations: 4,
              traitLimits: [
                { trait: "CUSTOM_A", maxConcurrentMigrations: 1 },
                { trait: "custom_a", maxConcurrentMigrations: 2 },
              ],
            }),
          },
          {
            name: "a trait limit above the default",
            obj: policy({
              maxConcurrentMigrations: 4,
              traitLimits: [{
                trait: "CUSTOM_BIG",
                maxConcurrentMigrations: 16,
              }],
            }),
          },
          {
            name: "a trait name with a space",
            obj: policy({
              maxConcurrentMigrations: 2,
              traitLimits: [{ trait: "CUSTOM A", maxConcurrentMigrations: 1 }],
            }),
          },
        ];
        for (const c of cases) {
          await t.step(c.name, async () => {
            const r = await apply(c.obj);
            assert.notEqual(r.code, 0);
            assert.ok(
              r.stderr.includes(DENIED(POLICY_HOOK) + policyMessage(c.obj)),
              r.stderr,
            );
          });
        }
        // What the CRD schema refuses never reaches the webhook: the API
        // server validates the schema (CEL rules, list-map keys) first.
        const schemaCases = [
          {
            name: "a name other than default (the CRD's CEL rule)",
            obj: policy({ maxConcurrentMigrations: 4 }, "fast"),
            refused:
              "metadata.name must be 'default': there is one EvictionPolicy per cluster",
          },
          {
            name: "the exact same trait twice (the CRD's list-map key)",
            obj: policy({
              maxConcurrentMigrations: 4,
              traitLimits: [
                { trait: "CUSTOM_A", maxConcurrentMigrations: 1 },
                { trait: "CUSTOM_A", maxConcurrentMigrations: 2 },
              ],
            }),
            refused: "Duplicate value",
          },
        ];
        for (const c of schemaCases) {
          await t.step(c.name, async () => {
            const r = await apply(c.obj);
            assert.notEqual(r.code, 0);
            assert.ok(r.stderr.includes(c.refused), r.stderr);
            assert.ok(!r.stderr.includes(DENIED(POLICY_HOOK)), r.stderr);
          });
        }
        assert.equal(await policyJson(), undefined);
      },
    );

    await t.step(
      "start-up flags give the same messages as kubectl shows",
      async () => {
        const mistakes: Array<{ concurrency: string; traits: string[] }> = [
          { concurrency: "4", traits: ["CUSTOM_BIG=16"] },
          { concurrency: "4", traits: ["custom_hana=1"] },
          { concurrency: "4", traits: ["CUSTOM_A=1,custom_a=2"] },
        ];
        for (const m of mistakes) {
          const flags = parseConcurrencyFlags(m.concurrency, m.traits);
          assert.ok(!flags.ok, `flags ${m.traits.join(" ")} were accepted`);
          const traitLimits = m.traits.flatMap((f) => f.split(",")).map((e) => {
            const at = e.lastIndexOf("=");
            return {
              trait: e.slice(0, at),
              maxConcurrentMigrations: Number(e.slice(at + 1)),
            };
          });
          const r = await apply(
            policy({
              maxConcurrentMigrations: Number(m.concurrency),
              traitLimits,
            }),
            "--dry-run=server",
          );
          assert.notEqual(r.code, 0);
          assert.ok(
            r.stderr.includes(DENIED(POLICY_HOOK) + flags.error.message),
            `flags: ${flags.error.message}\nkubectl: ${r.stderr}`,
          );
        }
        // and the same warnings
        const warned = parseConcurrencyFlags("4", ["CUSTOM_A=4,HANA_HOST=1"]);
        assert.ok(warned.ok);
        const r = await apply(
          policy({
            maxConcurrentMigrations: 4,
            traitLimits: [
              { trait: "CUSTOM_A", maxConcurrentMigrations: 4 },
              { trait: "HANA_HOST", maxConcurrentMigrations: 1 },
            ],
          }),
          "--dry-run=server",
        );
        assert.equal(r.code, 0, r.stderr);
        assert.deepEqual(
          warningsOf(r.stderr),
          warned.warnings.map((w) => w.message),
        );
      },
    );

    await t.step(
      "a good policy passes; its warnings appear in kubectl's output",
      async () => {
        const r = await apply(policy({
          maxConcurrentMigrations: 4,
          traitLimits: [
            { trait: HANA, maxConcurrentMigrations: 1 },
            { trait: "HW_GPU_API_CUDA", maxConcurrentMigrations: 4 },
            { trait: "HANA_EXCLUSIVE", maxConcurrentMigrations: 2 },
          ],
          clusterMaxConcurrentMigrations: 3,
        }));
        assert.equal(r.code, 0, r.stderr);
        assert.match(
          r.stdout,
          /evictionpolicy\.kvm\.cloud\.sap\/default created/,
        );
        assert.deepEqual(warningsOf(r.stderr), [
          "spec.traitLimits[1].maxConcurrentMigrations: 4 for HW_GPU_API_CUDA equals the default spec.maxConcurrentMigrations, so it has no effect",
          "spec.traitLimits[2].trait: HANA_EXCLUSIVE is neither CUSTOM_* nor in a standard placement trait namespace (COMPUTE_, HW_, MISC_, OWNER_, STORAGE_), so it will likely never match a host",
          "spec.clusterMaxConcurrentMigrations: 3 is below the per-host default spec.maxConcurrentMigrations 4, so no drain can reach its per-host limit",
        ]);
        await until(
          "the policy is cached",
          () => policies.get("default") !== undefined,
        );
      },
    );

    await t.step(
      "Evictions: refusals and warnings through kubectl",
      async () => {
        const first = await apply(
          eviction("node001", { hypervisor: "node001", reason: "kernel 6.12" }),
        );
        assert.equal(first.code, 0, first.stderr);
        assert.deepEqual(warningsOf(first.stderr), []);
        await until(
          "the Eviction is cached",
          () => evictions.get("node001") !== undefined,
        );

        const second = await apply(
          eviction("node001-b", { hypervisor: "node001", reason: "again" }),
        );
        assert.notEqual(second.code, 0);
        assert.ok(
          second.stderr.includes(
            DENIED(EVICTION_HOOK) +
              'spec.hypervisor: got "node001", which already has the unfinished Eviction "node001"; expected at most one unfinished Eviction per hypervisor (wait until "node001" is finished, or delete it)',
          ),
          second.stderr,
        );

        const blank = await apply(
          eviction("node002", { hypervisor: "node002", reason: " \t " }),
        );
        assert.notEqual(blank.code, 0);
        assert.ok(
          blank.stderr.includes(
            DENIED(EVICTION_HOOK) +
              `spec.reason: got " \\t "; expected a reason that is not only whitespace (it becomes the compute service's disabled reason)`,
          ),
          blank.stderr,
        );

        const unknown = await apply(
          eviction("node999", { hypervisor: "node999", reason: "r" }),
        );
        assert.equal(unknown.code, 0, unknown.stderr);
        assert.deepEqual(warningsOf(unknown.stderr), [
          'spec.hypervisor: no Hypervisor named "node999" exists, so its traits and trait limits are unknown; check the name',
        ]);

        const clamped = await apply(
          eviction("node002", {
            hypervisor: "node002",
            reason: "kernel 6.12",
            maxConcurrentMigrations: 3,
          }),
        );
        assert.equal(clamped.code, 0, clamped.stderr);
        assert.deepEqual(warningsOf(clamped.stderr), [
          `spec.maxConcurrentMigrations: 3 is above the limit 1 that the EvictionPolicy gives hypervisor "node002" (trait ${HANA}), so it is clamped to 1`,
        ]);
        for (const name of ["node001-b"]) {
          const got = await kubectl(["get", "eviction", name]);
          assert.notEqual(got.code, 0, `${name} exists`);
        }
      },
    );

    await t.step(
      "a policy update lowering running drains' limits: allowed, warns naming them",
      async () => {
        const status = await kubectl([
          "patch",
          "eviction",
          "node001",
          "--subresource=status",
          "--type=merge",
          "-p",
          JSON.stringify({
            status: { effectiveLimit: 4, limitSource: "policy" },
          }),
        ]);
        assert.equal(status.code, 0, status.stderr);
        await until(
          "the status is cached",
          () => evictions.get("node001")?.status?.effectiveLimit === 4,
        );
        const r = await apply(policy({
          maxConcurrentMigrations: 2,
          traitLimits: [{ trait: HANA, maxConcurrentMigrations: 1 }],
        }));
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, /configured/);
        assert.deepEqual(warningsOf(r.stderr), [
          'spec: lowers the limit of 1 running drain: Eviction "node001" from 4 to 2; they start no new migrations until fewer than the new limit are in flight',
        ]);
        await until(
          "the new policy is cached",
          () => policies.get("default")?.spec.maxConcurrentMigrations === 2,
        );
      },
    );

    await t.step(
      "a bad update is refused and changes nothing (also as a dry run)",
      async () => {
        const before = await policyJson();
        const bad = policy({
          maxConcurrentMigrations: 2,
          traitLimits: [{ trait: HANA, maxConcurrentMigrations: 3 }],
        });
        for (const extra of [["--dry-run=server"], []]) {
          const r = await apply(bad, ...extra);
          assert.notEqual(r.code, 0);
          assert.ok(
            r.stderr.includes(DENIED(POLICY_HOOK) + policyMessage(bad)),
            r.stderr,
          );
          assert.equal(await policyJson(), before);
        }
      },
    );

    await t.step(
      "webhook stopped: the two kinds fail closed, others are unaffected",
      async () => {
        await hook.stop();
        const pol = await apply(policy({ maxConcurrentMigrations: 3 }));
        assert.notEqual(pol.code, 0);
        assert.match(
          pol.stderr,
          new RegExp(
            `failed calling webhook "${POLICY_HOOK.replaceAll(".", "\\.")}"`,
          ),
        );
        const evi = await apply(
          eviction("node003", { hypervisor: "node003", reason: "kernel" }),
        );
        assert.notEqual(evi.code, 0);
        assert.match(evi.stderr, /failed calling webhook "evictions\.evictor/);
        assert.notEqual(
          (await kubectl(["get", "eviction", "node003"])).code,
          0,
        );
        // reads, other kinds and the status subresource (not matched) still work
        const cm = await apply({
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: "unaffected", namespace: "default" },
          data: { a: "b" },
        });
        assert.equal(cm.code, 0, cm.stderr);
        const hv = await apply(hypervisor("node003"));
        assert.equal(hv.code, 0, hv.stderr);
        const status = await kubectl([
          "patch",
          "eviction",
          "node001",
          "--subresource=status",
          "--type=merge",
          "-p",
          JSON.stringify({ status: { effectiveLimit: 2 } }),
        ]);
        assert.equal(status.code, 0, status.stderr);
        const got = await kubectl([
          "get",
          "evictionpolicy",
          "default",
          "-o",
          "jsonpath={.spec.maxConcurrentMigrations}",
        ]);
        assert.equal(got.stdout, "2");
      },
    );
  } finally {
    await hook.stop();
    await env.stop();
  }
});
