/**
 * The convergence fields against a real API server and the real kubectl:
 * the CRD schema refuses what it can (zero, negative and non-integer
 * bounds, an unknown onTimeout) before the webhook is asked, the webhook
 * refuses the rest with our one-line messages (noPauseTraits that are no
 * placement trait names), and its warnings (ForceComplete, above all for
 * a noPauseTraits host; a per-GiB bound above Nova's; the legacy fields
 * beside convergence) reach the client, on an EvictionPolicy and on an
 * Eviction.
 */
import assert from "node:assert/strict";
import { parseConcurrencyFlags } from "../limits/flags.ts";
import { EvictionPolicyKind, HypervisorKind } from "../controllers/kinds.ts";
import type { LimitSettings } from "../limits/resolve.ts";
import { validateEvictionPolicy } from "../webhooks/eviction_policy.ts";
import { FORCE_COMPLETE_EFFECT } from "../limits/convergence_validation.ts";
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
const GPU = "CUSTOM_GPU";
const DENIED = (webhook: string) =>
  `admission webhook "${webhook}" denied the request: `;
const POLICY_HOOK = "evictionpolicies.evictor.kvm.cloud.sap";
const EVICTION_HOOK = "evictions.evictor.kvm.cloud.sap";

function flagSettings(): LimitSettings {
  const flags = parseConcurrencyFlags("2", []);
  if (!flags.ok) throw new Error(flags.error.message);
  return flags.settings;
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
  name: "convergence fields against a real API server with the real kubectl",
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const env = await startEnvtest();
  const hook = await startWebhookOperator(env, flagSettings());
  try {
    const apply = (obj: unknown, ...extra: string[]) =>
      env.kubectl(["apply", ...extra, "-f", "-"], { stdin: manifest(obj) });
    for (const name of ["node001", "node002"]) {
      const r = await apply(hypervisor(name));
      assert.equal(r.code, 0, r.stderr);
    }
    const traits = await env.kubectl([
      "patch",
      "hypervisor",
      "node002",
      "--subresource=status",
      "--type=merge",
      "-p",
      JSON.stringify({ status: { traits: [HANA, GPU] } }),
    ]);
    assert.equal(traits.code, 0, traits.stderr);
    const config = await webhookConfigurationYaml(hook.baseUrl, env.caCertPem);
    const installed = await env.kubectl(["apply", "-f", "-"], {
      stdin: config,
    });
    assert.equal(installed.code, 0, installed.stderr);
    const probe = policy({ noPauseTraits: ["custom_probe"] });
    await until("the API server calls the webhook", async () => {
      const r = await apply(probe, "--dry-run=server");
      return r.code !== 0 && r.stderr.includes(DENIED(POLICY_HOOK));
    });
    await until(
      "the operator sees node002's traits",
      () =>
        hook.operator.cache(HypervisorKind).get("node002")?.status?.traits
          ?.length === 2,
    );

    await t.step("the schema refuses bad bounds and actions", async (t) => {
      const cases: Array<{ name: string; obj: unknown; refused: RegExp }> = [
        {
          name: "a zero progress timeout in the policy",
          obj: policy({ convergence: { progressTimeoutSeconds: 0 } }),
          refused:
            /spec\.convergence\.progressTimeoutSeconds: Invalid value: 0: .*greater than or equal to 1/,
        },
        {
          name: "a negative per-GiB bound in a trait entry",
          obj: policy({
            maxConcurrentMigrations: 2,
            traitLimits: [{
              trait: HANA,
              maxConcurrentMigrations: 1,
              convergence: { completionTimeoutPerGiB: -5 },
            }],
          }),
          refused:
            /spec\.traitLimits\[0\]\.convergence\.completionTimeoutPerGiB: Invalid value: -5/,
        },
        {
          name: "a non-integer bound",
          obj: policy({ convergence: { forceCompleteTimeoutSeconds: 1.5 } }),
          refused:
            /spec\.convergence\.forceCompleteTimeoutSeconds: Invalid value: "number"/,
        },
        {
          name: "an unknown onTimeout",
          obj: policy({ convergence: { onTimeout: "Pause" } }),
          refused:
            /spec\.convergence\.onTimeout: Unsupported value: "Pause": supported values: "Report", "Abort", "ForceComplete"/,
        },
        {
          name: "an Eviction's zero maxAbortedTries",
          obj: eviction("node001", {
            hypervisor: "node001",
            reason: "kernel",
            convergence: { maxAbortedTries: 0 },
          }),
          refused:
            /spec\.convergence\.maxAbortedTries: Invalid value: 0: .*greater than or equal to 1/,
        },
        {
          name: "an exact duplicate in noPauseTraits (a set)",
          obj: policy({ noPauseTraits: [HANA, HANA] }),
          refused: /spec\.noPauseTraits\[1\]: Duplicate value/,
        },
      ];
      for (const c of cases) {
        await t.step(c.name, async () => {
          const r = await apply(c.obj, "--dry-run=server");
          assert.notEqual(r.code, 0, r.stdout);
          assert.match(r.stderr, c.refused);
          assert.ok(!r.stderr.includes("admission webhook"), r.stderr);
        });
      }
    });

    await t.step(
      "the webhook refuses what the schema cannot, in one line",
      async () => {
        const bad = policy({ noPauseTraits: [HANA, "hana host"] });
        const r = await apply(bad);
        assert.notEqual(r.code, 0);
        const v = validateEvictionPolicy(bad, undefined, {
          runningEvictions: [],
        });
        assert.ok(!v.allowed);
        assert.equal(
          v.message,
          'spec.noPauseTraits[1]: got "hana host"; expected a placement trait name: upper-case letters, digits and underscore (^[A-Z0-9_]+$), 1 to 255 characters',
        );
        assert.ok(r.stderr.includes(DENIED(POLICY_HOOK) + v.message), r.stderr);
        const twice = await apply(
          policy({ noPauseTraits: [HANA, HANA.toLowerCase()] }),
        );
        assert.notEqual(twice.code, 0);
        assert.ok(
          twice.stderr.includes(
            `${
              DENIED(POLICY_HOOK)
            }spec.noPauseTraits[1]: got "${HANA.toLowerCase()}"`,
          ),
          twice.stderr,
        );
      },
    );

    const risky = policy({
      maxConcurrentMigrations: 2,
      migrationTimeoutSeconds: 3600,
      convergence: { completionTimeoutPerGiB: 900, onTimeout: "ForceComplete" },
      traitLimits: [{
        trait: GPU,
        maxConcurrentMigrations: 2,
        convergence: { onTimeout: "Abort" },
      }],
      noPauseTraits: [HANA],
    });

    await t.step("a risky policy is stored with its warnings", async () => {
      const r = await apply(risky);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(warningsOf(r.stderr), [
        `spec.convergence.onTimeout: ForceComplete: ${FORCE_COMPLETE_EFFECT}; a force-completed copy still running after forceCompleteTimeoutSeconds is aborted`,
        "spec.convergence.completionTimeoutPerGiB: 900 is above Nova's default live_migration_completion_timeout (800 s per GiB): unless the hosts' nova.conf raises it, Nova acts first (its live_migration_timeout_action, abort by default)",
        `spec.noPauseTraits[0]: VMs on hosts with ${HANA} must never be paused, but hosts with ${HANA} resolve to onTimeout ForceComplete (spec.convergence.onTimeout): ${FORCE_COMPLETE_EFFECT}; give ${HANA} an entry in spec.traitLimits with convergence.onTimeout Abort or Report (the lowest risk wins)`,
        "spec.migrationTimeoutSeconds: deprecated beside convergence: a completionTimeoutPerGiB (spec.convergence, a trait's or the Eviction's) replaces this flat 3600 s timeout wherever it is set; set spec.convergence.completionTimeoutPerGiB and remove it",
      ]);
      await until(
        "the operator sees the policy",
        () =>
          hook.operator.cache(EvictionPolicyKind).get("default")?.spec
            .noPauseTraits?.[0] === HANA,
      );
    });

    await t.step("an Eviction's convergence is warned about", async () => {
      // node002 has the noPause trait: the policy's ForceComplete reaches it
      // (its GPU entry says Abort, and the lowest risk wins, so it is safe)
      const safe = await apply(
        eviction("node002", { hypervisor: "node002", reason: "kernel" }),
        "--dry-run=server",
      );
      assert.equal(safe.code, 0, safe.stderr);
      assert.deepEqual(warningsOf(safe.stderr), []);
      const forced = await apply(
        eviction("node002", {
          hypervisor: "node002",
          reason: "kernel",
          convergence: { onTimeout: "ForceComplete" },
        }),
        "--dry-run=server",
      );
      assert.equal(forced.code, 0, forced.stderr);
      assert.deepEqual(warningsOf(forced.stderr), [
        `spec.convergence.onTimeout: ForceComplete: ${FORCE_COMPLETE_EFFECT}; a force-completed copy still running after forceCompleteTimeoutSeconds is aborted`,
        `spec.convergence: VMs on this host must never be paused (EvictionPolicy spec.noPauseTraits: ${HANA}), but its drain resolves to onTimeout ForceComplete from spec.convergence.onTimeout: ${FORCE_COMPLETE_EFFECT}; set spec.convergence.onTimeout to Abort or Report`,
      ]);
      const plain = await apply(
        eviction("node001", {
          hypervisor: "node001",
          reason: "kernel",
          convergence: { completionTimeoutPerGiB: 1200 },
        }),
        "--dry-run=server",
      );
      assert.equal(plain.code, 0, plain.stderr);
      assert.deepEqual(warningsOf(plain.stderr), [
        "spec.convergence.completionTimeoutPerGiB: 1200 is above Nova's default live_migration_completion_timeout (800 s per GiB): unless the hosts' nova.conf raises it, Nova acts first (its live_migration_timeout_action, abort by default)",
      ]);
      assert.ok(!plain.stderr.includes(DENIED(EVICTION_HOOK)));
    });

    await t.step(
      "without the GPU entry's Abort, a HANA host resolves to ForceComplete",
      async () => {
        const r = await apply(
          policy({
            maxConcurrentMigrations: 2,
            convergence: { onTimeout: "ForceComplete" },
            noPauseTraits: [HANA],
          }),
        );
        assert.equal(r.code, 0, r.stderr);
        await until(
          "the operator sees the changed policy",
          () =>
            hook.operator.cache(EvictionPolicyKind).get("default")?.spec
              .traitLimits === undefined,
        );
        const e = await apply(
          eviction("node002", { hypervisor: "node002", reason: "kernel" }),
          "--dry-run=server",
        );
        assert.equal(e.code, 0, e.stderr);
        assert.deepEqual(warningsOf(e.stderr), [
          `spec.convergence: VMs on this host must never be paused (EvictionPolicy spec.noPauseTraits: ${HANA}), but its drain resolves to onTimeout ForceComplete from the EvictionPolicy (policy): ${FORCE_COMPLETE_EFFECT}; set spec.convergence.onTimeout to Abort or Report`,
        ]);
      },
    );
  } finally {
    await hook.stop();
    await env.stop();
  }
});
