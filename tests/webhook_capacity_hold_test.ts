/**
 * The webhook warns, through a real API server and the real kubectl, when
 * an Eviction is created while the EvictionPolicy's capacityCheck is Hold.
 * The policy is a cluster singleton, so this file has its own API server.
 */
import assert from "node:assert/strict";
import { parseConcurrencyFlags } from "../limits/flags.ts";
import { EvictionPolicyKind } from "../controllers/kinds.ts";
import { HOLD_WARNING } from "../webhooks/eviction.ts";
import { startEnvtest } from "./harness/envtest.ts";
import { waitFor } from "./harness/eviction_env.ts";
import {
  eviction,
  hypervisor,
  manifest,
  policy,
  startWebhookOperator,
  webhookConfigurationYaml,
} from "./_webhook_fixture.ts";

Deno.test({
  name: "webhook: an Eviction created under capacityCheck Hold gets a warning",
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const env = await startEnvtest();
  const flags = parseConcurrencyFlags("2", []);
  if (!flags.ok) throw new Error(flags.error.message);
  const hook = await startWebhookOperator(env, flags.settings);
  try {
    const apply = (obj: unknown, ...extra: string[]) =>
      env.kubectl(["apply", ...extra, "-f", "-"], { stdin: manifest(obj) });
    assert.equal((await apply(hypervisor("node001"))).code, 0);
    const config = await webhookConfigurationYaml(hook.baseUrl, env.caCertPem);
    const installed = await env.kubectl(["apply", "-f", "-"], {
      stdin: config,
    });
    assert.equal(installed.code, 0, installed.stderr);
    const create = () =>
      apply(
        eviction("node001", { hypervisor: "node001", reason: "kernel" }),
        "--dry-run=server",
      );
    const warned = (stderr: string) =>
      stderr.split("\n").some((l) => l === `Warning: ${HOLD_WARNING}`);

    const hold = await apply(
      policy({ maxConcurrentMigrations: 2, capacityCheck: "Hold" }),
    );
    assert.equal(hold.code, 0, hold.stderr);
    // The API server calls the webhook once it has read its configuration.
    const r = await waitFor("the Hold warning", async () => {
      const x = await create();
      return warned(x.stderr) ? x : undefined;
    });
    assert.equal(r.code, 0, r.stderr);

    // Warn: no such warning.
    const warn = await apply(
      policy({ maxConcurrentMigrations: 2, capacityCheck: "Warn" }),
    );
    assert.equal(warn.code, 0, warn.stderr);
    await waitFor(
      "the webhook sees Warn",
      () =>
        hook.operator.cache(EvictionPolicyKind).get("default")?.spec
            .capacityCheck === "Warn"
          ? true
          : undefined,
    );
    const plain = await create();
    assert.equal(plain.code, 0, plain.stderr);
    assert.equal(warned(plain.stderr), false, plain.stderr);
  } finally {
    await hook.stop();
    await env.stop();
  }
});
