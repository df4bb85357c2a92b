/**
 * Test helpers for the webhook: an operator with only the webhooks
 * registered, serving on loopback with a certificate from the envtest CA,
 * and the ValidatingWebhookConfiguration of `manifests/webhook/` pointed
 * at it (clientConfig.url instead of the Service, caBundle = the test CA).
 *
 * @module
 */
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
import { Operator } from "../framework/operator.ts";
import { silentLogger } from "../framework/logger.ts";
import type { LimitSettings } from "../limits/resolve.ts";
import { registerWebhooks } from "../webhooks/register.ts";
import type { Envtest } from "./harness/envtest.ts";

const MANIFEST = new URL(
  "../manifests/webhook/validating_webhook_configuration.yaml",
  import.meta.url,
);

/** A running webhook operator. */
export interface WebhookOperator {
  /** The operator (started). */
  readonly operator: Operator;
  /** `https://127.0.0.1:PORT` */
  readonly baseUrl: string;
  /** Stops the operator and removes its certificate files. */
  stop(): Promise<void>;
}

/**
 * Starts an operator against `env` with the webhooks registered, serving
 * on a free loopback port with a serving certificate from the test CA.
 */
export async function startWebhookOperator(
  env: Envtest,
  flagSettings: LimitSettings,
): Promise<WebhookOperator> {
  const dir = await Deno.makeTempDir({ prefix: "evictor-webhook-test-" });
  const pair = await env.servingCert(["127.0.0.1", "localhost"]);
  const certFile = `${dir}/tls.crt`;
  const keyFile = `${dir}/tls.key`;
  await Deno.writeTextFile(certFile, pair.certPem);
  await Deno.writeTextFile(keyFile, pair.keyPem);
  const operator = new Operator({
    name: "evictor-webhook-test",
    kubeconfigPath: env.kubeconfigPath,
    healthAddress: false,
    handleSignals: false,
    processMetrics: false,
    logger: silentLogger(),
    webhook: { address: "127.0.0.1:0", certFile, keyFile },
  });
  registerWebhooks(operator, { flagSettings });
  await operator.start();
  let stopped: Promise<void> | undefined;
  return {
    operator,
    baseUrl: `https://127.0.0.1:${operator.webhookPort}`,
    stop() {
      stopped ??= operator.stop().finally(() =>
        Deno.remove(dir, { recursive: true }).catch(() => {})
      );
      return stopped;
    },
  };
}

interface WebhookEntry {
  name?: string;
  clientConfig?: {
    service?: { path?: string };
    url?: string;
    caBundle?: string;
  };
}

/**
 * The ValidatingWebhookConfiguration of `manifests/webhook/`, unchanged but
 * for clientConfig: the path of the manifest's Service reference appended
 * to `baseUrl`, and `caPem` as the caBundle. So a path in the manifest that
 * the operator does not serve makes the tests fail.
 */
export async function webhookConfigurationYaml(
  baseUrl: string,
  caPem: string,
): Promise<string> {
  const doc = parseYaml(await Deno.readTextFile(MANIFEST)) as {
    metadata?: { annotations?: Record<string, string> };
    webhooks?: WebhookEntry[];
  };
  // cert-manager's CA injection is replaced by the caBundle set below
  delete doc.metadata?.annotations;
  for (const w of doc.webhooks ?? []) {
    const path = w.clientConfig?.service?.path;
    if (path === undefined) {
      throw new TypeError(
        `webhook ${JSON.stringify(w.name)} has no clientConfig.service.path`,
      );
    }
    w.clientConfig = { url: `${baseUrl}${path}`, caBundle: btoa(caPem) };
  }
  return stringifyYaml(doc);
}

/** YAML of one object (kubectl reads JSON as YAML). */
export function manifest(obj: unknown): string {
  return JSON.stringify(obj);
}

/** An EvictionPolicy object. */
export function policy(
  spec: Record<string, unknown>,
  name = "default",
): Record<string, unknown> {
  return {
    apiVersion: "kvm.cloud.sap/v1alpha1",
    kind: "EvictionPolicy",
    metadata: { name },
    spec,
  };
}

/** An Eviction object. */
export function eviction(
  name: string,
  spec: Record<string, unknown>,
): Record<string, unknown> {
  return {
    apiVersion: "kvm.cloud.sap/v1",
    kind: "Eviction",
    metadata: { name },
    spec,
  };
}

/** A Hypervisor object. */
export function hypervisor(name: string): Record<string, unknown> {
  return {
    apiVersion: "kvm.cloud.sap/v1",
    kind: "Hypervisor",
    metadata: { name },
    spec: {},
  };
}
