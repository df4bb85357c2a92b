/**
 * charts/evictor/ against manifests/, with the real Helm (hack/helm/) and
 * the real kubectl: with default values `helm template` renders exactly the
 * objects of `kubectl kustomize manifests/` and `manifests/monitoring/`
 * (Helm's own labels aside), the renderings apply server-side to a real API
 * server, `helm install`/`upgrade`/`uninstall` keep the credentials Secret
 * and update the EvictionPolicy hook in place, non-default values change
 * what they should and nothing else, and bad values are refused with a
 * message naming them.
 */
import assert from "node:assert/strict";
import { parse, parseAllDocuments } from "yaml";
import { staleChartCopies } from "../hack/sync_chart.ts";
import {
  type Envtest,
  envtestBinDir,
  startEnvtest,
} from "./harness/envtest.ts";
import { helm } from "./harness/helm.ts";

const ROOT = new URL("../", import.meta.url);
const CHART = "charts/evictor";
const NAMESPACE = "evictor-system";
const CUSTOM_VALUES = "tests/testdata/helm/custom_values.yaml";

/** A Kubernetes object as YAML gives it. */
interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  // deno-lint-ignore no-explicit-any
  spec?: any;
  [field: string]: unknown;
}

const chartYaml = parse(
  await Deno.readTextFile(new URL(`${CHART}/Chart.yaml`, ROOT)),
) as { version: string; appVersion: string };

/** Helm's labels on every templated object, and their values for `release`. */
function helmLabels(release: string): Record<string, string> {
  return {
    "app.kubernetes.io/instance": release,
    "app.kubernetes.io/managed-by": "Helm",
    "app.kubernetes.io/version": chartYaml.appVersion,
    "helm.sh/chart": `evictor-${chartYaml.version}`,
  };
}

function objectsOf(text: string, what: string): K8sObject[] {
  const objects: K8sObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) {
      throw new Error(`${what}: ${doc.errors.map(String).join("; ")}`);
    }
    const value = doc.toJS() as K8sObject | null;
    if (value !== null) objects.push(value);
  }
  return objects;
}

function keyOf(o: K8sObject): string {
  return `${o.kind} ${o.metadata.namespace ?? "-"}/${o.metadata.name}`;
}

/** Objects keyed and in key order, so that a difference shows as one object. */
function byKey(objects: K8sObject[]): Map<string, K8sObject> {
  const sorted = [...objects].sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
  const map = new Map<string, K8sObject>();
  for (const o of sorted) {
    assert.ok(!map.has(keyOf(o)), `rendered twice: ${keyOf(o)}`);
    map.set(keyOf(o), o);
  }
  return map;
}

/**
 * Checks that every object but the CRDs (Helm installs `crds/` untemplated)
 * carries Helm's four labels with the release's values, then removes
 * exactly those: whatever else differs from kustomize stays visible.
 */
function withoutHelmLabels(objects: K8sObject[], release: string) {
  const expected = helmLabels(release);
  return objects.map((o) => {
    if (o.kind === "CustomResourceDefinition") return o;
    const labels = { ...o.metadata.labels };
    for (const [name, value] of Object.entries(expected)) {
      assert.equal(labels[name], value, `${keyOf(o)}: label ${name}`);
      delete labels[name];
    }
    return { ...o, metadata: { ...o.metadata, labels } };
  });
}

async function render(
  args: string[] = [],
  release = "evictor",
): Promise<K8sObject[]> {
  const out = await helm([
    "template",
    release,
    CHART,
    "--namespace",
    NAMESPACE,
    "--include-crds",
    ...args,
  ]);
  assert.equal(out.code, 0, `helm template ${args.join(" ")}: ${out.stderr}`);
  return objectsOf(out.stdout, `helm template ${args.join(" ")}`);
}

async function kustomize(dir: string): Promise<K8sObject[]> {
  const kubectl = `${await envtestBinDir()}/kubectl`;
  const out = await new Deno.Command(kubectl, {
    args: ["kustomize", new URL(dir, ROOT).pathname],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  assert.ok(
    out.success,
    `kubectl kustomize ${dir}: ${text.decode(out.stderr)}`,
  );
  return objectsOf(text.decode(out.stdout), `kubectl kustomize ${dir}`);
}

function only(objects: K8sObject[], kind: string, name?: string): K8sObject {
  const found = objects.filter((o) =>
    o.kind === kind && (name === undefined || o.metadata.name === name)
  );
  assert.equal(found.length, 1, `one ${kind} ${name ?? ""}`);
  return found[0] as K8sObject;
}

Deno.test("the chart's CRDs, alert rules and dashboard are the files of manifests/", async () => {
  assert.deepEqual(await staleChartCopies(), [], "run `deno task gen:chart`");
});

Deno.test("Chart.yaml's appVersion is evictor's version (deno.json)", async () => {
  const deno = JSON.parse(
    await Deno.readTextFile(new URL("deno.json", ROOT)),
  ) as { version: string };
  assert.equal(chartYaml.appVersion, deno.version);
});

Deno.test("helm lint --strict passes with the default and the test's values", async () => {
  for (const args of [[], ["--values", CUSTOM_VALUES]]) {
    const out = await helm(["lint", "--strict", CHART, ...args]);
    assert.equal(out.code, 0, `${args.join(" ")}: ${out.stdout}${out.stderr}`);
    assert.match(out.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  }
});

Deno.test("with default values helm template renders the objects of kubectl kustomize manifests/ and manifests/monitoring/", async () => {
  const [rendered, main, monitoring] = await Promise.all([
    render(),
    kustomize("manifests"),
    kustomize("manifests/monitoring"),
  ]);
  // The release's namespace is made before `helm install` stores the
  // release in it, so the chart renders it only when told (below).
  const expected = [...main, ...monitoring].filter((o) =>
    o.kind !== "Namespace"
  );
  assert.deepEqual(
    byKey(withoutHelmLabels(rendered, "evictor")),
    byKey(expected),
  );

  const withNamespace = await render(["--set", "namespace.create=true"]);
  assert.deepEqual(
    withoutHelmLabels([only(withNamespace, "Namespace")], "evictor"),
    [only(main, "Namespace")],
  );
});

Deno.test("the test's values change what they should in the default rendering and nothing else", async () => {
  const [defaults, custom, sample] = await Promise.all([
    render(),
    render(["--values", CUSTOM_VALUES]),
    Deno.readTextFile(new URL("manifests/samples/eviction_policy.yaml", ROOT)),
  ]);
  // Off with the ServiceMonitor: its scraper account, token and binding.
  const expected = structuredClone(defaults).filter((o) =>
    o.kind !== "ServiceMonitor" && o.kind !== "PrometheusRule" &&
    !o.metadata.name.startsWith("evictor-metrics-scraper")
  );
  const deployment = only(expected, "Deployment").spec;
  deployment.replicas = 3;
  const pod = deployment.template.spec;
  pod.nodeSelector = { "node-role.kubernetes.io/control-plane": "" };
  pod.tolerations = [{
    key: "node-role.kubernetes.io/control-plane",
    operator: "Exists",
    effect: "NoSchedule",
  }];
  const manager = pod.containers[0];
  manager.image = "registry.example.com/cloud/evictor:0.1.0";
  manager.args = [
    ...manager.args.map((a: string) =>
      a === "--os-cloud=evictor" ? "--os-cloud=region-two" : a
    ),
    "--log-level=debug",
    "--discover-hypervisors",
  ];
  manager.resources = {
    requests: { cpu: "100m", memory: "256Mi" },
    limits: { memory: "1Gi" },
  };
  const openstack = pod.volumes.find((v: { name: string }) =>
    v.name === "openstack"
  );
  openstack.secret.secretName = "openstack-region-two";
  // Nova's notification URL comes from the same Secret.
  const notificationsUrl = manager.env.find((e: { name: string }) =>
    e.name === "EVICTOR_NOVA_NOTIFICATIONS_URL"
  );
  notificationsUrl.valueFrom.secretKeyRef.name = "openstack-region-two";
  // The policy: the sample's, created after the webhook serves.
  const policy = parse(sample) as K8sObject;
  policy.metadata.labels = {
    "app.kubernetes.io/name": "evictor",
    "app.kubernetes.io/part-of": "evictor",
    ...helmLabels("evictor"),
  };
  policy.metadata.annotations = {
    "helm.sh/hook": "post-install,post-upgrade",
    "helm.sh/hook-delete-policy": "hook-failed",
  };
  expected.push(policy);
  assert.deepEqual(byKey(custom), byKey(expected));
});

Deno.test("without cert-manager the webhook uses the given Secret and CA bundle", async () => {
  const caBundle = btoa("-----BEGIN CERTIFICATE-----\n...");
  const objects = await render([
    "--set",
    "certManager.enabled=false",
    "--set",
    "webhook.certSecretName=my-webhook-tls",
    "--set",
    `webhook.caBundle=${caBundle}`,
  ]);
  assert.deepEqual(
    objects.filter((o) => o.apiVersion.startsWith("cert-manager.io/")),
    [],
  );
  const config = only(objects, "ValidatingWebhookConfiguration");
  assert.equal(config.metadata.annotations, undefined);
  const webhooks = config["webhooks"] as {
    clientConfig: { caBundle?: string };
  }[];
  assert.equal(webhooks.length, 2);
  for (const w of webhooks) assert.equal(w.clientConfig.caBundle, caBundle);
  const volumes = only(objects, "Deployment").spec.template.spec.volumes;
  assert.deepEqual(
    volumes.find((v: { name: string }) => v.name === "webhook-certs"),
    { name: "webhook-certs", secret: { secretName: "my-webhook-tls" } },
  );
});

Deno.test("a release of another name names every object after it, its Lease included", async () => {
  const objects = await render([], "blue");
  for (const o of objects) {
    if (o.kind === "CustomResourceDefinition") continue;
    assert.match(o.metadata.name, /^blue-evictor(-|$)/, keyOf(o));
  }
  const args: string[] =
    only(objects, "Deployment").spec.template.spec.containers[0].args;
  assert.ok(args.includes("--leader-election-id=blue-evictor"), `${args}`);
  const role = only(objects, "Role", "blue-evictor-leader-election");
  const rules = role["rules"] as { resourceNames?: string[] }[];
  assert.deepEqual(rules.flatMap((r) => r.resourceNames ?? []), [
    "blue-evictor",
  ]);
  const dnsNames = only(objects, "Certificate", "blue-evictor-webhook").spec
    .dnsNames;
  assert.deepEqual(dnsNames, [
    `blue-evictor-webhook.${NAMESPACE}.svc`,
    `blue-evictor-webhook.${NAMESPACE}.svc.cluster.local`,
    `blue-evictor-metrics.${NAMESPACE}.svc`,
    `blue-evictor-metrics.${NAMESPACE}.svc.cluster.local`,
  ]);
  const endpoint = only(objects, "ServiceMonitor", "blue-evictor").spec
    .endpoints[0];
  assert.equal(
    endpoint.tlsConfig.serverName,
    `blue-evictor-metrics.${NAMESPACE}.svc`,
  );
  assert.equal(endpoint.tlsConfig.ca.secret.name, "blue-evictor-webhook-tls");
});

Deno.test("bad values are refused with a message naming the value and what is expected", async () => {
  const table: [string[], RegExp][] = [
    [["--set", "replicas=two"], /at '\/replicas': got string, want integer/],
    [["--set", "replica=3"], /additional properties 'replica' not allowed/],
    [["--set", "logLevel=verbose"], /at '\/logLevel'.*value must be one of/],
    [
      ["--set", "leaderElection.enabled=false"],
      /replicas=2 needs leaderElection\.enabled=true/,
    ],
    [
      ["--set", "certManager.enabled=false"],
      /webhook\.certSecretName: with certManager\.enabled=false/,
    ],
    [
      [
        "--set",
        "certManager.enabled=false",
        "--set",
        "webhook.certSecretName=x",
      ],
      /webhook\.caBundle: with certManager\.enabled=false/,
    ],
    [
      ["--set", "health.port=8443"],
      /metrics\.port=8443, health\.port=8443 and webhook\.port=9443 must differ/,
    ],
    [
      ["--set", "health.prot=8081"],
      /additional properties 'prot' not allowed/,
    ],
    [
      ["--set", "image.digest=latest"],
      /at '\/image\/digest'.*does not match pattern/,
    ],
  ];
  for (const [args, message] of table) {
    const out = await helm(["template", "evictor", CHART, ...args]);
    assert.notEqual(out.code, 0, `${args.join(" ")} was accepted`);
    assert.match(out.stderr, message, args.join(" "));
  }
});

/**
 * Readies a dedicated API server for the dry runs: the stand-in CRDs of
 * cert-manager and the Prometheus operator, and the release's namespace.
 */
async function prepare(e: Envtest): Promise<void> {
  for (
    const file of [
      "tests/testdata/cert_manager_crds.yaml",
      "tests/testdata/prometheus_operator_crds.yaml",
      "manifests/namespace.yaml",
    ]
  ) {
    const out = await e.kubectl(["apply", "-f", new URL(file, ROOT).pathname]);
    assert.equal(out.code, 0, `${file}: ${out.stderr}`);
  }
  const waited = await e.kubectl([
    "wait",
    "--for=condition=Established",
    "crd/issuers.cert-manager.io",
    "crd/certificates.cert-manager.io",
    "crd/servicemonitors.monitoring.coreos.com",
    "crd/prometheusrules.monitoring.coreos.com",
  ]);
  assert.equal(waited.code, 0, waited.stderr);
}

/** Renders with `args` and applies the result with `--dry-run=server`. */
async function dryRun(e: Envtest, args: string[]): Promise<void> {
  const out = await helm([
    "template",
    "evictor",
    CHART,
    "--namespace",
    NAMESPACE,
    "--include-crds",
    ...args,
  ]);
  assert.equal(out.code, 0, out.stderr);
  const objects = objectsOf(out.stdout, args.join(" "));
  const applied = await e.kubectl([
    "apply",
    "--server-side",
    "--dry-run=server",
    "-f",
    "-",
  ], { stdin: out.stdout });
  assert.equal(applied.code, 0, `${args.join(" ")}: ${applied.stderr}`);
  const lines = applied.stdout.trim().split("\n");
  assert.equal(lines.length, objects.length, applied.stdout);
  for (const line of lines) assert.match(line, / \(server dry run\)$/);
}

/** kubectl that must succeed; its output. */
async function kubectlOk(e: Envtest, args: string[]): Promise<string> {
  const out = await e.kubectl(args);
  assert.equal(out.code, 0, `kubectl ${args.join(" ")}: ${out.stderr}`);
  return out.stdout;
}

async function uidOf(e: Envtest, args: string[]): Promise<string> {
  return await kubectlOk(e, [...args, "-o", "jsonpath={.metadata.uid}"]);
}

Deno.test("the chart applies server-side and installs, upgrades and uninstalls with the real Helm", async (t) => {
  // Its own API server: Helm installs the CRDs from the chart's crds/, and
  // the stand-in CRDs are not for the shared one. The API server calls no
  // admission webhooks here: nothing serves the chart's (no kubelet runs
  // its pods), and the webhook would refuse the policy that the Helm hook
  // writes; the webhook's own tests are webhook_apiserver_test.ts.
  const e = await startEnvtest({
    installCrds: false,
    apiServerFlags: ["--disable-admission-plugins=ValidatingAdmissionWebhook"],
  });
  const kubeconfig = ["--kubeconfig", e.kubeconfigPath, "-n", NAMESPACE];
  try {
    await prepare(e);
    await t.step("default values: a server-side dry run", async () => {
      await dryRun(e, []);
    });

    await t.step(
      "helm install, upgrade and uninstall leave the credentials and the policy",
      async () => {
        await kubectlOk(e, [
          "-n",
          NAMESPACE,
          "create",
          "secret",
          "generic",
          "openstack-region-two",
          "--from-literal=clouds.yaml=clouds: {}",
        ]);
        const secret = [
          "-n",
          NAMESPACE,
          "get",
          "secret",
          "openstack-region-two",
        ];
        const secretUid = await uidOf(e, secret);
        const custom = ["--values", CUSTOM_VALUES];

        const installed = await helm([
          "install",
          "evictor",
          CHART,
          ...kubeconfig,
          ...custom,
        ]);
        assert.equal(installed.code, 0, installed.stderr);
        assert.equal(
          await kubectlOk(e, [
            "-n",
            NAMESPACE,
            "get",
            "deployment",
            "evictor",
            "-o",
            "jsonpath={.spec.replicas}",
          ]),
          "3",
        );
        const policy = ["get", "evictionpolicy", "default"];
        const policyUid = await uidOf(e, policy);
        const spec = async () =>
          JSON.parse(await kubectlOk(e, [...policy, "-o", "json"])).spec;
        const values = parse(await Deno.readTextFile(CUSTOM_VALUES)) as {
          policy: { spec: Record<string, unknown> };
        };
        // abortStuckMigrations: the CRD's default
        const installedSpec = {
          abortStuckMigrations: false,
          ...values.policy.spec,
        };
        assert.deepEqual(await spec(), installedSpec);

        const upgraded = await helm([
          "upgrade",
          "evictor",
          CHART,
          ...kubeconfig,
          ...custom,
          "--set",
          "policy.spec.maxConcurrentMigrations=8",
        ]);
        assert.equal(upgraded.code, 0, upgraded.stderr);
        assert.deepEqual(await spec(), {
          ...installedSpec,
          maxConcurrentMigrations: 8,
        });
        assert.equal(await uidOf(e, policy), policyUid, "updated in place");

        const uninstalled = await helm(["uninstall", "evictor", ...kubeconfig]);
        assert.equal(uninstalled.code, 0, uninstalled.stderr);
        const gone = await e.kubectl([
          "-n",
          NAMESPACE,
          "get",
          "deployment",
          "evictor",
        ]);
        assert.match(gone.stderr, /NotFound/);
        assert.equal(await uidOf(e, policy), policyUid, "the policy stays");
        assert.equal(await uidOf(e, secret), secretUid, "the Secret stays");
        await uidOf(e, ["get", "crd", "evictions.kvm.cloud.sap"]);
        // The other renderings' dry runs would set the policy's fields, which
        // Helm owns now.
        await kubectlOk(e, ["delete", ...policy.slice(1)]);
      },
    );

    await t.step(
      "the test's values and no cert-manager: server-side dry runs",
      async () => {
        await dryRun(e, ["--values", CUSTOM_VALUES]);
        await dryRun(e, [
          "--set",
          "certManager.enabled=false",
          "--set",
          "webhook.certSecretName=my-webhook-tls",
          "--set",
          `webhook.caBundle=${btoa("not checked by the API server")}`,
          "--set",
          "metrics.readerServiceAccounts[0].name=prometheus-k8s",
          "--set",
          "metrics.readerServiceAccounts[0].namespace=monitoring",
        ]);
      },
    );
  } finally {
    await e.stop();
  }
});
